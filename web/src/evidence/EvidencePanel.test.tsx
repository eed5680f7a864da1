import { renderToStaticMarkup } from "react-dom/server";
import { describe, expect, it } from "vitest";

import type { Turn } from "../turns/state";
import { retrieval, source } from "../test/fixtures";
import { EvidencePanel } from "./EvidencePanel";

function turn(overrides: Partial<Turn> = {}): Turn {
  return {
    id: "t1",
    question: "How long is the warranty?",
    target_corpus: "rag",
    status: "done",
    answer: "27 months [2].",
    reasoning: "",
    retrieval: retrieval(2),
    cited: [2],
    timings_ms: {},
    error: null,
    ...overrides,
  };
}

function parse(markup: string): string {
  // collapse React's text separators so assertions read like the page
  return markup.replace(/<!-- -->/g, "");
}

describe("EvidencePanel", () => {
  it("shows the searched-for query, badges, metadata, blurb and lineage link", () => {
    const evidence = retrieval(2, {
      condensed_query: "Tern K2 kettle warranty",
      sources: [
        source(1),
        source(2, {
          page: 4,
          extraction: "ocr",
          trace: {
            semantic_rank: 1,
            bm25_rank: 3,
            fused_score: 0.94,
            fused_rank: 1,
            rerank_delta: 2,
            final_rank: 2,
          },
        }),
      ],
    });
    const html = parse(
      renderToStaticMarkup(
        <EvidencePanel
          turn={turn({ retrieval: evidence })}
          focusedSource={2}
          dagsterUrl="http://127.0.0.1:3000"
        />,
      ),
    );
    expect(html).toContain("<q>Tern K2 kettle warranty</q>");
    expect(html).toContain('id="source-t1-2" class="source is-focused is-cited"');
    expect(html).toContain('aria-current="true"');
    for (const label of ["sem #1", "bm25 #3", "fused 0.94", "rerank +2"]) expect(html).toContain(label);
    expect(html).toContain("<dt>Page</dt><dd>4</dd>");
    expect(html).toContain("<dt>Extraction</dt><dd>ocr</dd>");
    expect(html).toContain("From file 2.");
    expect(html).toContain(
      'href="http://127.0.0.1:3000/assets/indexed_document?view=partitions&amp;partition=folder%2Ffile%202.md"',
    );
    // source 1 has no page and is neither cited nor focused
    expect(html).toContain('id="source-t1-1" class="source"');
  });

  it("falls back to the query and omits lineage links without a Dagster URL", () => {
    const html = parse(
      renderToStaticMarkup(<EvidencePanel turn={turn()} focusedSource={null} dagsterUrl={null} />),
    );
    expect(html).toContain("<q>kettle warranty</q>");
    expect(html).not.toContain("Lineage in Dagster");
    expect(html).not.toContain("is-focused");
  });
});
