import { describe, expect, it } from "vitest";

import { formatScore, formatTrace, traceBadges } from "./trace";

describe("formatTrace", () => {
  it("shows every part of a reranked hybrid trace", () => {
    const trace = {
      semantic_rank: 1,
      semantic_score: 0.83,
      bm25_rank: 3,
      bm25_score: 7.25,
      fused_score: 0.9412,
      fused_rank: 3,
      rerank_score: 0.71,
      rerank_delta: 2,
      final_rank: 1,
    };
    expect(formatTrace(trace)).toBe("sem #1 \u00b7 bm25 #3 \u00b7 fused 0.94 \u00b7 rerank +2");
    const titles = traceBadges(trace).map((b) => b.title);
    expect(titles).toEqual([
      "Semantic (vector) search rank 1, score 0.83",
      "BM25 keyword search rank 3, score 7.25",
      "Fused score 0.94, rank 3 before reranking",
      "Reranker moved up 2 to rank 1, score 0.71",
    ]);
  });

  it("shows only the parts present", () => {
    expect(
      formatTrace({ bm25_rank: 2, bm25_score: 3.1, fused_score: 3.1, fused_rank: 2, final_rank: 2 }),
    ).toBe("bm25 #2 \u00b7 fused 3.10");
    expect(formatTrace({ semantic_rank: 4, fused_score: 0.0164, fused_rank: 4, final_rank: 4 })).toBe(
      "sem #4 \u00b7 fused 0.016",
    );
    expect(formatTrace(null)).toBe("");
  });

  it("signs rerank moves down and unchanged, and falls back to the rerank score", () => {
    const base = { fused_score: 0.5, fused_rank: 1, final_rank: 3 };
    expect(formatTrace({ ...base, rerank_delta: -2 })).toBe("fused 0.50 \u00b7 rerank \u22122");
    expect(traceBadges({ ...base, rerank_delta: -2 })[1]?.title).toBe("Reranker moved down 2 to rank 3");
    expect(formatTrace({ ...base, rerank_delta: 0 })).toBe("fused 0.50 \u00b7 rerank \u00b10");
    expect(formatTrace({ ...base, rerank_score: 0.25 })).toBe("fused 0.50 \u00b7 rerank 0.25");
  });
});

describe("formatScore", () => {
  it("keeps two decimals, or two significant digits for small scores", () => {
    expect(formatScore(0.9412)).toBe("0.94");
    expect(formatScore(12.345)).toBe("12.35");
    expect(formatScore(0.03279)).toBe("0.033");
    expect(formatScore(-0.5)).toBe("-0.50");
    expect(formatScore(0)).toBe("0");
  });
});
