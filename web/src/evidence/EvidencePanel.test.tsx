import { renderToStaticMarkup } from "react-dom/server";
import { describe, expect, it } from "vitest";

import type { Turn } from "../turns/state";
import { graphRetrieval, retrieval, source } from "../test/fixtures";
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

describe("EvidencePanel in developer mode", () => {
  const reranked = retrieval(2, {
    method: "reranked",
    sources: [
      source(1, {
        trace: {
          semantic_rank: 3,
          semantic_score: 0.81,
          bm25_rank: 1,
          bm25_score: 7.31,
          fused_score: 0.0325,
          fused_rank: 2,
          rerank_score: 4.2,
          rerank_delta: 1,
          final_rank: 1,
        },
      }),
      source(2, {
        page: 4,
        trace: {
          semantic_rank: 1,
          semantic_score: 0.93,
          fused_score: 0.0328,
          fused_rank: 1,
          rerank_score: -1.5,
          rerank_delta: -1,
          final_rank: 2,
        },
      }),
    ],
  });
  const built = turn({
    retrieval: reranked,
    timings_ms: { semantic: 12.25, bm25: 3.5, rerank: 40, first_token: 210, generate: 900, total: 1000 },
    debug: {
      messages: [
        { role: "system", content: "You answer questions using only the numbered sources provided." },
        { role: "user", content: "Question: How long is the warranty?\n\nSources:\n\n[1] Passage 1." },
      ],
      raw_output: "<think>check [1]</think>It is 27 months. The kettle is red.",
    },
  });
  const panel = (developerMode?: boolean) =>
    parse(
      renderToStaticMarkup(
        <EvidencePanel turn={built} focusedSource={null} dagsterUrl={null} developerMode={developerMode} />,
      ),
    );

  it("shows the trace table, the stage timings, the prompt and the raw output", () => {
    const html = panel(true);
    expect(html).toContain("How this answer was built");
    const headers = [...html.matchAll(/<th[^>]*>([^<]*)<\/th>/g)].map((m) => m[1]);
    expect(headers).toEqual(
      expect.arrayContaining([
        "n",
        "Source",
        "Semantic",
        "BM25",
        "Fused",
        "Fused rank",
        "Rerank",
        "Moved",
        "Final",
      ]),
    );
    // each passage's row: ranks and scores per arm, fused, reranker's score and move, final rank
    expect(html).toContain(
      '<td class="num">1</td><td>folder/file 1.md #0</td><td>#3 (0.81)</td><td>#1 (7.31)</td>' +
        '<td class="num">0.033</td><td class="num">2</td><td class="num">4.20</td><td class="num">+1</td>' +
        '<td class="num">1</td>',
    );
    expect(html).toContain("<td>folder/file 2.md p.4 #0</td><td>#1 (0.93)</td><td>\u2013</td>");
    expect(html).toContain('<td class="num">\u22121</td>');
    // stage timings in the order they ran
    const stages = [...html.matchAll(/<tr><td>([a-z0-9_]+)<\/td><td class="num">([\d.]+)<\/td><\/tr>/g)];
    expect(stages.map((m) => [m[1], m[2]])).toEqual([
      ["semantic", "12.3"],
      ["bm25", "3.5"],
      ["rerank", "40.0"],
      ["first_token", "210.0"],
      ["generate", "900.0"],
      ["total", "1000.0"],
    ]);
    expect(html).toContain("Prompt sent to the model (2 messages)");
    expect(html).toContain(
      "<h5>system</h5><pre>You answer questions using only the numbered sources provided.</pre>",
    );
    expect(html).toContain("<h5>user</h5><pre>Question: How long is the warranty?");
    expect(html).toContain("Raw model output (before quote checks and citation cleaning)");
    expect(html).toContain(
      "<pre>&lt;think&gt;check [1]&lt;/think&gt;It is 27 months. The kettle is red.</pre>",
    );
  });

  it("shows none of it when developer mode is off", () => {
    for (const html of [panel(false), panel(undefined)]) {
      expect(html).toContain("sem #3"); // the badges every user sees stay
      for (const hidden of [
        "How this answer was built",
        "Retrieval trace",
        "Stage timings",
        "Fused rank",
        "Prompt sent to the model",
        "Raw model output",
        "&lt;think&gt;",
      ]) {
        expect(html).not.toContain(hidden);
      }
    }
  });

  it("leaves the rerank columns out where no reranker ran, and says when the prompt was not kept", () => {
    const html = parse(
      renderToStaticMarkup(
        <EvidencePanel
          turn={turn({ timings_ms: { retrieve: 12.5 } })}
          focusedSource={null}
          dagsterUrl={null}
          developerMode
        />,
      ),
    );
    expect(html).toContain("<th>Semantic</th>");
    expect(html).not.toContain(">Rerank</th>");
    expect(html).not.toContain(">Moved</th>");
    expect(html).toContain(
      "The prompt and raw output are kept only for answers asked while developer mode is on.",
    );
    expect(html).not.toContain("Prompt sent to the model");
  });

  it("shows a graph answer's timings without a passage trace", () => {
    const html = parse(
      renderToStaticMarkup(
        <EvidencePanel
          turn={turn({
            target_corpus: "graph",
            retrieval: { ...graphRetrieval(1), sources: [] },
            timings_ms: { graph: 80 },
          })}
          focusedSource={null}
          dagsterUrl={null}
          developerMode
        />,
      ),
    );
    expect(html).toContain("How this answer was built");
    expect(html).not.toContain("Retrieval trace");
    expect(html).toContain('<tr><td>graph</td><td class="num">80.0</td></tr>');
  });
});
