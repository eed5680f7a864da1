import type { ReactElement } from "react";
import { renderToStaticMarkup } from "react-dom/server";
import { describe, expect, it } from "vitest";

import type { DocumentInfo } from "../api/types";
import { buildTree } from "./tree";
import { DocumentTree } from "./DocumentTree";

function html(element: ReactElement): string {
  return renderToStaticMarkup(element).replace(/<!-- -->/g, "");
}

describe("DocumentTree", () => {
  const doc = (
    relative_path: string,
    status: DocumentInfo["status"],
    doc_id: string | null,
    n_contextualized: number | null = doc_id ? 3 : null,
  ): DocumentInfo => ({
    doc_id,
    relative_path,
    file_name: relative_path.split("/").pop() ?? relative_path,
    file_type: "md",
    status,
    n_chunks: doc_id ? 3 : null,
    n_contextualized,
    contextualizing: doc_id !== null && n_contextualized !== 3,
    extractions: doc_id ? ["text", "ocr"] : [],
    content_hash: null,
    size_bytes: 1,
    file_created_at: null,
    file_modified_at: null,
    ingested_at: null,
  });
  const tree = buildTree([doc("a/one.md", "indexed", "1"), doc("a/two.md", "pending", null)]);

  it("shows folders with their status counts and files with their details", () => {
    const page = html(<DocumentTree root={tree} selected={new Set(["a/one.md"])} onToggle={() => {}} />);
    expect(page).toContain('aria-label="Select everything in a/"');
    expect(page).toContain("1 indexed</span>");
    expect(page).toContain("1 pending</span>");
    expect(page).toMatch(
      /data-path="a\/one.md" data-status="indexed"[\s\S]*checked=""[\s\S]*<td class="num">3<\/td><td>md<\/td><td>text, ocr<\/td>/,
    );
    // a pending file has nothing to delete yet
    expect(page).toMatch(/aria-label="Select a\/two.md" disabled=""/);
    // every chunk of one.md has its blurb: no progress shown
    expect(page).not.toContain("contextualized");
  });

  it("shows blurb progress on a searchable file still being contextualized", () => {
    const blurbing = buildTree([doc("b.md", "indexed", "2", 1)]);
    const page = html(<DocumentTree root={blurbing} selected={new Set()} onToggle={() => {}} />);
    expect(page).toMatch(
      /status-indexed[^>]*>indexed<\/span><span class="ctx-progress muted"[^>]*> contextualized 1\/3<\/span>/,
    );
  });

  it("marks the document an address names (the palette went to it)", () => {
    const page = html(
      <DocumentTree root={tree} selected={new Set()} onToggle={() => {}} focusPath="a/two.md" />,
    );
    expect(page).toContain(
      '<tr class="file-row is-spotlit" data-path="a/two.md" data-status="pending" aria-current="true" tabindex="-1">',
    );
    expect(page).toContain('<tr class="file-row" data-path="a/one.md" data-status="indexed">');
  });
});
