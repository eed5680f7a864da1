/** Rank badges from a RetrievalTrace: "sem #1 · bm25 #3 · fused 0.94 · rerank +2". */
import type { RetrievalTrace } from "../api/types";

/** One badge: the short label shown and a sentence for its tooltip and screen readers. */
export interface Badge {
  kind: "semantic" | "bm25" | "fused" | "rerank";
  label: string;
  title: string;
}

/** A score at a readable precision: two decimals, or two significant digits below 0.1. */
export function formatScore(score: number): string {
  if (score === 0) return "0";
  return Math.abs(score) < 0.1 ? score.toPrecision(2) : score.toFixed(2);
}

function signed(delta: number): string {
  if (delta > 0) return `+${delta}`;
  if (delta < 0) return `\u2212${-delta}`;
  return "\u00b10";
}

function withScore(text: string, score: number | null | undefined): string {
  return score == null ? text : `${text}, score ${formatScore(score)}`;
}

/** The badges for the parts of a trace that are present, in pipeline order. */
export function traceBadges(trace: RetrievalTrace | null): Badge[] {
  if (trace === null) return [];
  const badges: Badge[] = [];
  if (trace.semantic_rank != null) {
    badges.push({
      kind: "semantic",
      label: `sem #${trace.semantic_rank}`,
      title: withScore(`Semantic (vector) search rank ${trace.semantic_rank}`, trace.semantic_score),
    });
  }
  if (trace.bm25_rank != null) {
    badges.push({
      kind: "bm25",
      label: `bm25 #${trace.bm25_rank}`,
      title: withScore(`BM25 keyword search rank ${trace.bm25_rank}`, trace.bm25_score),
    });
  }
  badges.push({
    kind: "fused",
    label: `fused ${formatScore(trace.fused_score)}`,
    title: `Fused score ${formatScore(trace.fused_score)}, rank ${trace.fused_rank} before reranking`,
  });
  if (trace.rerank_delta != null) {
    const moved =
      trace.rerank_delta === 0
        ? "kept its place"
        : `moved ${trace.rerank_delta > 0 ? "up" : "down"} ${Math.abs(trace.rerank_delta)}`;
    badges.push({
      kind: "rerank",
      label: `rerank ${signed(trace.rerank_delta)}`,
      title: withScore(`Reranker ${moved} to rank ${trace.final_rank}`, trace.rerank_score),
    });
  } else if (trace.rerank_score != null) {
    badges.push({
      kind: "rerank",
      label: `rerank ${formatScore(trace.rerank_score)}`,
      title: `Reranker score ${formatScore(trace.rerank_score)}, final rank ${trace.final_rank}`,
    });
  }
  return badges;
}

/** The badges as one line of text. */
export function formatTrace(trace: RetrievalTrace | null): string {
  return traceBadges(trace)
    .map((badge) => badge.label)
    .join(" \u00b7 ");
}
