/** Evidence shaped like the service's, for unit tests. */
import type {
  BackupRunInfo,
  BundleInfo,
  DaySource,
  DocumentInfo,
  DoneEvent,
  GraphBuild,
  GraphEvidence,
  RetrievalEvent,
  Source,
} from "../api/types";

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

export function day(n: number, overrides: Partial<DaySource> = {}): DaySource {
  return {
    n,
    doc_key: `iMessage;+;chat61820355471${n}::2026-03-0${n + 1}`,
    thread_name: "Lisbon trip",
    span: `2026-03-0${n + 1}`,
    excerpt: `[18:05] maya.chen@icloud.com: Okay team, Lisbon is happening! (${n})`,
    message_guids: ["G1", "G2", "G3"],
    ...overrides,
  };
}

export const GRAPH_FOUND: GraphEvidence = {
  mode: "mix",
  entities: [
    { name: "Maya Chen", type: "person", description: "Plans the trip.", doc_keys: ["k1"] },
    { name: "Lisbon", type: "location", description: "Where they go.", doc_keys: ["k1", "k2"] },
  ],
  relations: [
    {
      source: "Maya Chen",
      target: "Lisbon",
      description: "Maya books flights to Lisbon.",
      keywords: "trip, flights",
      weight: 2,
      doc_keys: ["k1"],
    },
  ],
};

/** A graph answer's retrieval event: days, no chunks. */
export function graphRetrieval(count: number, overrides: Partial<RetrievalEvent> = {}): RetrievalEvent {
  return retrieval(0, {
    query: "Who is going to Lisbon?",
    method: "graph",
    corpus: "graph",
    target_corpus: "graph",
    graph: GRAPH_FOUND,
    days: Array.from({ length: count }, (_, i) => day(i + 1)),
    ...overrides,
  });
}

export function graphBuild(overrides: Partial<GraphBuild> = {}): GraphBuild {
  return {
    run_id: "4f2a9c1e-0000-4000-8000-000000000001",
    kind: "build",
    path: "chat.db",
    first_day: null,
    last_day: null,
    state: "running",
    status: "STARTED",
    done: false,
    source: "upload",
    created_at: "2026-03-01T10:00:00Z",
    started_at: "2026-03-01T10:00:02Z",
    ended_at: null,
    progress: { total: 2, processed: 1, processing: 1, pending: 0, failed: 0 },
    message: "graph build: 1/2 transcripts processed",
    error: null,
    dagster_url: "http://127.0.0.1:3000/runs/4f2a9c1e",
    ...overrides,
  };
}

export function bundle(overrides: Partial<BundleInfo> = {}): BundleInfo {
  return {
    name: "varagity-rag-20261108-1312.zip",
    size_bytes: 1_400_000,
    ok: true,
    code: null,
    detail: null,
    created_at: "2026-11-08T13:12:00Z",
    counts: { chunks: 340, documents: 12 },
    stale: false,
    embedding_model: "all-MiniLM-L6-v2",
    embedding_dim: 384,
    engine: null,
    drift: [],
    ...overrides,
  };
}

export function backupRun(overrides: Partial<BackupRunInfo> = {}): BackupRunInfo {
  return {
    run_id: "9e1b0000-0000-4000-8000-000000000001",
    corpus: "rag",
    kind: "export",
    state: "running",
    status: "STARTED",
    done: false,
    source: "api",
    bundle: null,
    phase: "chunks",
    processed: 1200,
    total: 5000,
    message: "backup progress: chunks 1200/5000",
    error: null,
    created_at: "2026-11-08T13:12:00Z",
    started_at: "2026-11-08T13:12:01Z",
    ended_at: null,
    dagster_url: "http://127.0.0.1:3000/runs/9e1b",
    ...overrides,
  };
}

/** A corpus document as `GET /api/documents` lists it (indexed, two chunks). */
export function documentInfo(relative_path: string, overrides: Partial<DocumentInfo> = {}): DocumentInfo {
  return {
    doc_id: `id:${relative_path}`,
    relative_path,
    file_name: relative_path.split("/").pop() ?? relative_path,
    file_type: "md",
    status: "indexed",
    n_chunks: 2,
    n_contextualized: 2,
    contextualizing: false,
    extractions: ["text"],
    content_hash: "h",
    size_bytes: 10,
    file_created_at: null,
    file_modified_at: null,
    ingested_at: null,
    ...overrides,
  };
}

/** A Storage kept in a Map (the tests run in Node, which has no localStorage). */
export function memoryStorage(): Storage {
  const items = new Map<string, string>();
  return {
    get length() {
      return items.size;
    },
    clear: () => items.clear(),
    getItem: (key) => items.get(key) ?? null,
    key: (i) => [...items.keys()][i] ?? null,
    removeItem: (key) => void items.delete(key),
    setItem: (key, value) => void items.set(key, String(value)),
  };
}
