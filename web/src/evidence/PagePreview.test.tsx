import type { ReactElement } from "react";
import { renderToStaticMarkup } from "react-dom/server";
import { describe, expect, it } from "vitest";

import type { ChunkPreview } from "../api/types";
import { PageFigure, PageZoom } from "./PagePreview";

function html(element: ReactElement): string {
  return renderToStaticMarkup(element).replace(/<!-- -->/g, "");
}

const SHOWN: ChunkPreview = {
  chunk_id: "doc::1",
  available: true,
  page: 2,
  page_count: 3,
  image_url: "/api/previews/abc/p2-0123456789abcdef.png",
  width: 1191,
  height: 1684,
  extraction: "text",
  highlights: [
    { x: 0.05, y: 0.04, width: 0.8, height: 0.015 },
    { x: 0.05, y: 0.06, width: 0.4, height: 0.015 },
  ],
};

describe("PageFigure", () => {
  it("shows the highlighted page beside the text, as a button that zooms it", () => {
    const page = html(
      <PageFigure
        state={{ status: "ready", preview: SHOWN, src: "blob:page" }}
        fileName="report.pdf"
        onZoom={() => {}}
      />,
    );
    expect(page).toContain('<figure class="page-preview" data-page="2">');
    expect(page).toContain('<button type="button" class="page-thumb" title="Zoom the page">');
    expect(page).toMatch(/<img src="blob:page" alt="Page 2 of 3 of report.pdf, the passage highlighted"/);
    expect(page.match(/class="page-mark"/g)).toHaveLength(2);
    expect(page).toContain("left:5.000%;top:4.000%;width:80.000%;height:1.500%");
    expect(page).toContain("<figcaption>Page 2 of 3</figcaption>");
  });

  it("falls back to the text with the reason when the page cannot be shown", () => {
    const gone: ChunkPreview = {
      chunk_id: "doc::1",
      available: false,
      reason: "file_missing",
      message: "report.pdf is no longer in the corpus folder (deleted or moved)",
    };
    const page = html(
      <PageFigure state={{ status: "unavailable", preview: gone }} fileName="report.pdf" onZoom={() => {}} />,
    );
    expect(page).toContain('role="note" data-reason="file_missing"');
    expect(page).toContain(
      "<strong>The file is gone.</strong> report.pdf is no longer in the corpus folder (deleted or moved). The",
    );
    expect(page).toContain("text is shown instead");
    expect(page).not.toContain("<img");
  });

  it("adds nothing for formats without pages or while loading", () => {
    const md: ChunkPreview = { chunk_id: "n::0", available: false, reason: "not_paged", message: "no pages" };
    expect(
      html(<PageFigure state={{ status: "unavailable", preview: md }} fileName="n.md" onZoom={() => {}} />),
    ).toBe("");
    expect(html(<PageFigure state={{ status: "loading" }} fileName="n.md" onZoom={() => {}} />)).toBe("");
  });

  it("says when the preview request itself failed", () => {
    const page = html(
      <PageFigure
        state={{ status: "error", message: "Cannot reach the API" }}
        fileName="a.pdf"
        onZoom={() => {}}
      />,
    );
    expect(page).toContain("The page preview failed.");
    expect(page).toContain("Cannot reach the API");
  });
});

describe("PageZoom", () => {
  it("opens fitted, with zoom controls and the highlight boxes over the page", () => {
    const page = html(<PageZoom preview={SHOWN} src="blob:page" fileName="deck.pptx" onClose={() => {}} />);
    expect(page).toContain('<h2 id="page-zoom-title">Slide 2 of 3 <span class="muted">deck.pptx</span></h2>');
    expect(page).toContain('<div class="page-zoom-page" style="width:100%">');
    expect(page).toMatch(
      /<button type="button" disabled=""><span aria-hidden="true">−<\/span><span class="visually-hidden">Zoom out/,
    );
    expect(page).toContain('<output aria-live="polite">100%</output>');
    expect(page).toContain('<span class="visually-hidden">Zoom in</span>');
    expect(page.match(/class="page-mark"/g)).toHaveLength(2);
  });
});
