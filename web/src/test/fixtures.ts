/** Evidence shaped like the service's, for unit tests. */
import type { DoneEvent, RetrievalEvent, Source } from "../api/types";

export function source(n: number, overrides: Partial<Source> = {}): Source {
  return {
    n,
    chunk_id: `doc${n}::0`,
    doc_id: `doc${n}`,
    relative_path: `folder/file ${n}.md`,
    file_name: `file ${n}.md`,
    file_type: "md",
    page: null,
    extraction: "text",
    chunk_index: 0,
    content: `Passage ${n}.`,
    context: `From file ${n}.`,
    score: 1 / n,
    trace: { semantic_rank: n, semantic_score: 0.9, fused_score: 0.5, fused_rank: n, final_rank: n },
    ...overrides,
  };
}

export function retrieval(count: number, overrides: Partial<RetrievalEvent> = {}): RetrievalEvent {
  return {
    query: "kettle warranty",
    method: "hybrid",
    sources: Array.from({ length: count }, (_, i) => source(i + 1)),
    timings_ms: { retrieve: 12.5 },
    chat_engine: "simple",
    condensed_query: null,
    conversation_id: "c1",
    corpus: "rag",
    target_corpus: "rag",
    degraded: null,
    graph: null,
    days: [],
    ...overrides,
  };
}

export function done(answer: string, overrides: Partial<DoneEvent> = {}): DoneEvent {
  return {
    answer,
    cited: [],
    stop_reason: "finished",
    timings_ms: {},
    reasoning: null,
    conversation_id: "c1",
    message_id: "m1",
    ...overrides,
  };
}
