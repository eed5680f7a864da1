/**
 * The codebase map's data: the system's parts as cards, grouped, with edges that say
 * how one uses another. Curated by hand, not generated: edit this file when the
 * architecture changes (a new job, store, registry or entry point; a renamed or moved
 * definition). `codebaseMap.test.ts` resolves every card's `source` against the
 * repository and fails when a file is gone, shorter than the pinned line, or no longer
 * has `symbol` on that line; whether an edge still tells the truth it cannot check.
 *
 * Positions are in grid units (a card's column and row inside its group; a group's
 * origin on the canvas), so the picture stays the same from one load to the next.
 */

/** The containers the cards are drawn in. */
export type GroupId = "entry" | "ingestion" | "query" | "graph" | "observability" | "stores";

/** What a card stands for; decides its colour and the word under its title. */
export type CardKind =
  "entry" | "route" | "sensor" | "job" | "asset" | "registry" | "component" | "store" | "model";

/** Where a card is defined: a repository-relative file, the line, and what that line holds. */
export interface SourceRef {
  path: string;
  line: number;
  /** Text the pinned line contains (`def run_turn(`, `class PgVectorStore:`). */
  symbol: string;
}

export interface MapGroup {
  id: GroupId;
  label: string;
  description: string;
  /** The group's top-left on the canvas, in grid units. */
  at: readonly [number, number];
}

export interface MapCard {
  id: string;
  title: string;
  kind: CardKind;
  group: GroupId;
  /** One line: what it does. */
  description: string;
  source: SourceRef;
  /** Column and row inside the group. */
  at: readonly [number, number];
}

/** `from` uses, starts, feeds or writes `to`; `label` says which ("reranked composes a base retriever"). */
export interface MapEdge {
  from: string;
  to: string;
  label: string;
}

export const KIND_LABELS: Record<CardKind, string> = {
  entry: "entry point",
  route: "API route",
  sensor: "Dagster sensor",
  job: "Dagster job",
  asset: "Dagster asset",
  registry: "registry",
  component: "component",
  store: "store",
  model: "model server",
};

export const GROUPS: readonly MapGroup[] = [
  {
    id: "entry",
    label: "Entry points",
    description: "Where a person, a browser or a process comes in.",
    at: [1.2, 0],
  },
  {
    id: "ingestion",
    label: "Ingestion",
    description: "Files in DOCS_PATH to searchable chunks: one Dagster partition per file.",
    at: [0, 1.6],
  },
  {
    id: "stores",
    label: "Stores and model servers",
    description: "What every process attaches to: one Postgres, one sparse index, two model servers.",
    at: [3.2, 1.6],
  },
  {
    id: "query",
    label: "Query path",
    description: "A question to a streamed, cited answer: every front end runs the same turn.",
    at: [4.4, 1.6],
  },
  {
    id: "graph",
    label: "Graph corpus",
    description: "Message archives in GRAPH_DOCS_PATH to an entity graph answered by day.",
    at: [0, 6.1],
  },
  {
    id: "observability",
    label: "Observability",
    description: "Watching and keeping it: metrics, health, the doctor, evaluation gates, backups.",
    at: [4.4, 7.0],
  },
];

export const CARDS: readonly MapCard[] = [
  // --- entry points -------------------------------------------------------------------
  {
    id: "dagster-location",
    title: "Dagster code location",
    kind: "entry",
    group: "entry",
    description:
      "varagity_assets: loads every module under defs/ and binds the varagity and artifacts resources.",
    source: { path: "varagity_assets/definitions.py", line: 17, symbol: "def build(" },
    at: [0, 0],
  },
  {
    id: "jobs-client",
    title: "Jobs client",
    kind: "component",
    group: "entry",
    description:
      "varagity.jobs: launches, follows and kills Dagster runs and backfills over GraphQL, through the guarded front.",
    source: { path: "varagity/jobs/transport.py", line: 400, symbol: "class DagsterClient:" },
    at: [1, 0],
  },
  {
    id: "stack",
    title: "varagity up",
    kind: "entry",
    group: "entry",
    description:
      "varagity_stack: supervises Postgres, the model servers, Dagster and the API as child processes; restarts what dies.",
    source: { path: "varagity_stack/supervisor.py", line: 413, symbol: "class Stack:" },
    at: [2, 0],
  },
  {
    id: "cli",
    title: "CLI",
    kind: "entry",
    group: "entry",
    description:
      "varagity_cli: the varagity command (up, ask, chat, search, reingest, backup, evaluation, doctor, eval, ...).",
    source: { path: "varagity_cli/main.py", line: 67, symbol: "def main(" },
    at: [3, 0],
  },
  {
    id: "api",
    title: "API",
    kind: "entry",
    group: "entry",
    description:
      "varagity_api: FastAPI app; stores and model clients opened in its lifespan; serves /api, /v1, /metrics and the web build.",
    source: { path: "varagity_api/main.py", line: 58, symbol: "def create_app(" },
    at: [4, 0],
  },
  {
    id: "web-client",
    title: "Web client",
    kind: "entry",
    group: "entry",
    description:
      "web/: the React app the API serves at /: chat with evidence, corpus, graph, settings and this map.",
    source: { path: "web/src/main.tsx", line: 10, symbol: "createRoot(root).render(" },
    at: [5, 0],
  },

  // --- ingestion ----------------------------------------------------------------------
  {
    id: "docs-sensor",
    title: "docs_folder_sensor",
    kind: "sensor",
    group: "ingestion",
    description:
      "Watches DOCS_PATH: a partition per new file, ingest runs in batches, purge runs for removed files.",
    source: { path: "varagity_assets/defs/ingest/sensors.py", line: 289, symbol: "def docs_folder_sensor(" },
    at: [0, 0],
  },
  {
    id: "ingest-job",
    title: "ingest_documents",
    kind: "job",
    group: "ingestion",
    description: "Parse, chunk, embed and index a batch of files with no LLM call: searchable when it ends.",
    source: {
      path: "varagity_assets/defs/ingest/jobs.py",
      line: 29,
      symbol: "ingest_documents_job = dg.define_asset_job(",
    },
    at: [1, 0],
  },
  {
    id: "purge",
    title: "purged_documents",
    kind: "asset",
    group: "ingestion",
    description:
      "The purge_documents job's asset: files deleted from DOCS_PATH leave both stores and their artifacts.",
    source: { path: "varagity_assets/defs/ingest/upkeep.py", line: 35, symbol: "def purged_documents(" },
    at: [2, 0],
  },
  {
    id: "staleness",
    title: "corpus_staleness",
    kind: "asset",
    group: "ingestion",
    description:
      "Sets the stale flag when ingest settings drift from the corpus's, clears it after a completed reingest.",
    source: { path: "varagity_assets/defs/ingest/upkeep.py", line: 89, symbol: "def corpus_staleness(" },
    at: [0, 3],
  },
  {
    id: "parsed",
    title: "parsed_document",
    kind: "asset",
    group: "ingestion",
    description:
      "Each file's extracted text and provenance; a version already indexed (same sha256) is skipped.",
    source: { path: "varagity_assets/defs/ingest/assets.py", line: 90, symbol: "def parsed_document(" },
    at: [0, 1],
  },
  {
    id: "chunks",
    title: "document_chunks",
    kind: "asset",
    group: "ingestion",
    description: "The document cut into chunks by CHUNKING_STRATEGY, CHUNK_SIZE and CHUNK_OVERLAP.",
    source: { path: "varagity_assets/defs/ingest/assets.py", line: 121, symbol: "def document_chunks(" },
    at: [1, 1],
  },
  {
    id: "embeddings",
    title: "chunk_embeddings",
    kind: "asset",
    group: "ingestion",
    description: "A vector per chunk from the embedding server, in passage mode.",
    source: { path: "varagity_assets/defs/ingest/assets.py", line: 200, symbol: "def chunk_embeddings(" },
    at: [2, 1],
  },
  {
    id: "indexed",
    title: "indexed_document",
    kind: "asset",
    group: "ingestion",
    description:
      "Writes the chunks and their vectors to Postgres with the documents row, the idempotency marker; BM25 follows.",
    source: { path: "varagity_assets/defs/ingest/assets.py", line: 251, symbol: "def indexed_document(" },
    at: [2, 2],
  },
  {
    id: "bm25-index",
    title: "bm25_index",
    kind: "asset",
    group: "ingestion",
    description:
      "A file's BM25 entries from its Postgres rows alone; the file is searchable once it lands. Run alone it rebuilds the index.",
    source: { path: "varagity_assets/defs/ingest/assets.py", line: 360, symbol: "def bm25_index(" },
    at: [2, 3],
  },
  {
    id: "parsers",
    title: "Parser families",
    kind: "registry",
    group: "ingestion",
    description:
      "Parsers by file suffix: text, PDF (with OCR), office, web, image; each suffix belongs to one family.",
    source: { path: "varagity/ingest/parsers/registry.py", line: 15, symbol: "def parsers(" },
    at: [0, 2],
  },
  {
    id: "chunkers",
    title: "Chunkers",
    kind: "registry",
    group: "ingestion",
    description:
      "Strategies by CHUNKING_STRATEGY: recursive_character, token_based, markdown_aware, semantic, docling_hybrid, structure_aware.",
    source: { path: "varagity/chunking/registry.py", line: 67, symbol: "def build_chunker(" },
    at: [1, 2],
  },
  {
    id: "contextualizer",
    title: "DocumentContextualizer",
    kind: "component",
    group: "ingestion",
    description:
      "Contextual Retrieval: a short blurb situating each chunk in its whole document, written by the chat model.",
    source: { path: "varagity/context/contextual.py", line: 120, symbol: "class DocumentContextualizer:" },
    at: [1, 3],
  },
  {
    id: "chunk-contexts",
    title: "chunk_contexts",
    kind: "asset",
    group: "ingestion",
    description:
      "The contextualize_documents job's asset: blurbs for stored chunks, re-embedded and re-indexed in place as they land.",
    source: { path: "varagity_assets/defs/ingest/assets.py", line: 434, symbol: "def chunk_contexts(" },
    at: [2, 4],
  },

  // --- stores and model servers -------------------------------------------------------
  {
    id: "postgres",
    title: "PostgreSQL + pgvector",
    kind: "store",
    group: "stores",
    description:
      "Documents and chunks with their vectors (HNSW); in the same server: conversations, overrides, Dagster's storage.",
    source: { path: "varagity/stores/vector_store.py", line: 90, symbol: "class PgVectorStore:" },
    at: [0, 0],
  },
  {
    id: "bm25",
    title: "BM25 index",
    kind: "store",
    group: "stores",
    description: "Embedded Tantivy under VARAGITY_HOME/bm25, or Elasticsearch when ELASTICSEARCH_URL is set.",
    source: { path: "varagity/stores/bm25/__init__.py", line: 11, symbol: "def open_bm25_store(" },
    at: [0, 1],
  },
  {
    id: "embedding-server",
    title: "Embedding server",
    kind: "model",
    group: "stores",
    description: "MiniLM-L6 behind /v1/embeddings and /v1/rerank (or whatever EMBEDDING_BASE_URL names).",
    source: { path: "varagity_stack/embedding_server.py", line: 314, symbol: "def create_app(" },
    at: [0, 2],
  },
  {
    id: "llm-server",
    title: "Chat model server",
    kind: "model",
    group: "stores",
    description:
      "llama_cpp.server on the LOCAL_LLM GGUF (or LLM_BASE_URL): OpenAI-compatible chat completions; a second one serves the graph reader (GRAPH_READER_LLM).",
    source: { path: "varagity_stack/model_servers.py", line: 446, symbol: "def llm_server_process(" },
    at: [0, 3],
  },
  {
    id: "graph-workdir",
    title: "Graph workdir",
    kind: "store",
    group: "stores",
    description:
      "GRAPH_STORAGE_PATH/<engine>: the graph engine's files, the build manifest and its sidecars.",
    source: { path: "varagity/graph/registry.py", line: 70, symbol: "def workdir_for(" },
    at: [0, 4],
  },

  // --- query path ---------------------------------------------------------------------
  {
    id: "chat-route",
    title: "POST /api/chat",
    kind: "route",
    group: "query",
    description:
      "Server-sent events over a turn (retrieval, queued, reasoning, token, done); saves the turn to its conversation.",
    source: { path: "varagity_api/routes/chat.py", line: 212, symbol: "async def chat(" },
    at: [0, 0],
  },
  {
    id: "openai-route",
    title: "/v1/chat/completions",
    kind: "route",
    group: "query",
    description:
      "OpenAI-compatible chat over a turn; the model name picks documents or messages; sources in a footer.",
    source: {
      path: "varagity_api/routes/openai_compat.py",
      line: 385,
      symbol: "async def chat_completions(",
    },
    at: [1, 0],
  },
  {
    id: "answer-queue",
    title: "AnswerQueue",
    kind: "component",
    group: "query",
    description:
      "A FIFO gate: at most LLM_CONCURRENCY answers generate at once; the rest wait, told their place.",
    source: { path: "varagity/chat/queue.py", line: 55, symbol: "class AnswerQueue:" },
    at: [2, 0],
  },
  {
    id: "generation",
    title: "stream_answer",
    kind: "component",
    group: "query",
    description:
      "The answer prompt (numbered passages, earlier turns, the question as asked) streamed from the chat model.",
    source: { path: "varagity/generation/answer.py", line: 161, symbol: "def stream_answer(" },
    at: [0, 2],
  },
  {
    id: "turn-runner",
    title: "run_turn",
    kind: "component",
    group: "query",
    description:
      "One turn as typed events: prepare the query, retrieve (documents or graph), wait for a slot, stream the checked answer.",
    source: { path: "varagity/chat/turn.py", line: 409, symbol: "def run_turn(" },
    at: [0, 1],
  },
  {
    id: "chat-engines",
    title: "Chat engines",
    kind: "registry",
    group: "query",
    description:
      "Engines by CHAT_ENGINE: simple searches the question as asked; condense_context rewrites follow-ups.",
    source: { path: "varagity/chat/registry.py", line: 14, symbol: "def build_chat_engine(" },
    at: [1, 1],
  },
  {
    id: "condense",
    title: "condense_context",
    kind: "component",
    group: "query",
    description:
      "One LLM call names what a follow-up refers to; retrieval searches the rewrite, the answer sees the question.",
    source: { path: "varagity/chat/condense.py", line: 33, symbol: "class CondenseContextEngine:" },
    at: [2, 1],
  },
  {
    id: "retrievers",
    title: "Retrievers",
    kind: "registry",
    group: "query",
    description: "Retrievers by RETRIEVAL_METHOD: semantic, bm25, hybrid (the default), reranked and hyde.",
    source: { path: "varagity/retrieval/__init__.py", line: 24, symbol: "def build_retriever(" },
    at: [1, 2],
  },
  {
    id: "reranked",
    title: "reranked",
    kind: "component",
    group: "query",
    description:
      "Over-fetches RERANK_CANDIDATES from a base method and re-orders them through a /v1/rerank client.",
    source: { path: "varagity/retrieval/reranked.py", line: 25, symbol: "class RerankedRetriever:" },
    at: [2, 3],
  },
  {
    id: "hyde",
    title: "hyde",
    kind: "component",
    group: "query",
    description:
      "An LLM-written hypothetical passage replaces the query of a semantic or hybrid base's dense arm.",
    source: { path: "varagity/retrieval/hyde.py", line: 64, symbol: "class HydeRetriever:" },
    at: [2, 2],
  },
  {
    id: "semantic",
    title: "semantic",
    kind: "component",
    group: "query",
    description: "The query embedding against pgvector's HNSW index; the score is cosine similarity.",
    source: { path: "varagity/retrieval/semantic.py", line: 11, symbol: "class SemanticRetriever:" },
    at: [0, 3],
  },
  {
    id: "hybrid",
    title: "hybrid",
    kind: "component",
    group: "query",
    description:
      "Both arms at once, fused by weighted reciprocal rank (SEMANTIC_WEIGHT, BM25_WEIGHT, RRF_K).",
    source: { path: "varagity/retrieval/hybrid.py", line: 15, symbol: "class HybridRetriever:" },
    at: [1, 3],
  },
  {
    id: "bm25-retriever",
    title: "bm25",
    kind: "component",
    group: "query",
    description: "The sparse index's identities and scores, the rows hydrated from Postgres.",
    source: { path: "varagity/retrieval/bm25.py", line: 10, symbol: "class BM25Retriever:" },
    at: [0, 4],
  },

  // --- graph corpus -------------------------------------------------------------------
  {
    id: "graph-sensor",
    title: "graph_sources_sensor",
    kind: "sensor",
    group: "graph",
    description:
      "Watches GRAPH_DOCS_PATH: a build run per new or changed archive, a removal run per archive removed.",
    source: { path: "varagity_assets/defs/graph/sensors.py", line: 176, symbol: "def graph_sources_sensor(" },
    at: [0, 0],
  },
  {
    id: "graph-build-job",
    title: "build_message_graph",
    kind: "job",
    group: "graph",
    description:
      "One run per archive: read it, diff its days against the manifest, apply the diff (the single writer).",
    source: {
      path: "varagity_assets/defs/graph/jobs.py",
      line: 22,
      symbol: "build_message_graph_job = dg.define_asset_job(",
    },
    at: [1, 0],
  },
  {
    id: "graph-removed",
    title: "graph_removed_sources",
    kind: "asset",
    group: "graph",
    description:
      "The remove_graph_sources job's asset: the days of archives removed from the folder leave the graph.",
    source: { path: "varagity_assets/defs/graph/assets.py", line: 311, symbol: "def graph_removed_sources(" },
    at: [2, 0],
  },
  {
    id: "graph-archive",
    title: "graph_archive",
    kind: "asset",
    group: "graph",
    description:
      "One archive's thread-day transcripts, read from a snapshot with its -wal/-shm; handles named from contacts.",
    source: { path: "varagity_assets/defs/graph/assets.py", line: 191, symbol: "def graph_archive(" },
    at: [0, 1],
  },
  {
    id: "graph-transcripts",
    title: "graph_transcripts",
    kind: "asset",
    group: "graph",
    description: "The archive's days diffed against the manifest: new, changed and removed.",
    source: { path: "varagity_assets/defs/graph/assets.py", line: 240, symbol: "def graph_transcripts(" },
    at: [1, 1],
  },
  {
    id: "graph-workdir-asset",
    title: "graph_workdir",
    kind: "asset",
    group: "graph",
    description:
      "The diff applied to the engine's working directory (pool graph, one at a time); a killed run resumes.",
    source: { path: "varagity_assets/defs/graph/assets.py", line: 273, symbol: "def graph_workdir(" },
    at: [2, 1],
  },
  {
    id: "message-sources",
    title: "Message sources",
    kind: "registry",
    group: "graph",
    description: "Sources asked in order, each judging a file by its content: today the iMessage chat.db.",
    source: { path: "varagity/graph/sources/registry.py", line: 19, symbol: "def message_sources(" },
    at: [0, 2],
  },
  {
    id: "graph-service",
    title: "GraphService",
    kind: "component",
    group: "graph",
    description:
      "The message graph of one process: a cached reader for turns and the Graph screen, the single writer for builds.",
    source: { path: "varagity/graph/service.py", line: 149, symbol: "class GraphService:" },
    at: [1, 2],
  },
  {
    id: "lightrag",
    title: "LightRAG engine",
    kind: "component",
    group: "graph",
    description:
      "GRAPH_ENGINE lightrag: extracts entities and relations from each day, finds the days a question needs.",
    source: { path: "varagity/graph/lightrag_engine.py", line: 483, symbol: "class LightRAGEngine:" },
    at: [2, 2],
  },
  {
    id: "graph-rebuild",
    title: "graph_rebuilt_days",
    kind: "asset",
    group: "graph",
    description:
      "Partitioned by day: a range of days (or every day) extracted again from the archives, the others untouched; a rebuild of every day clears the stale flag.",
    source: { path: "varagity_assets/defs/graph/upkeep.py", line: 106, symbol: "def graph_rebuilt_days(" },
    at: [3, 0],
  },
  {
    id: "graph-reset",
    title: "graph_reset",
    kind: "asset",
    group: "graph",
    description:
      "The reset_message_graph job's asset: the working directory and its sidecars emptied, the stale flag forgotten, the archives kept.",
    source: { path: "varagity_assets/defs/graph/upkeep.py", line: 60, symbol: "def graph_reset(" },
    at: [3, 1],
  },
  {
    id: "graph-staleness",
    title: "graph_staleness",
    kind: "asset",
    group: "graph",
    description:
      "Flags the graph stale when the chat model or the extraction settings drift from those it was built with.",
    source: { path: "varagity_assets/defs/graph/upkeep.py", line: 256, symbol: "def graph_staleness(" },
    at: [3, 2],
  },

  // --- observability ------------------------------------------------------------------
  {
    id: "metrics",
    title: "GET /metrics",
    kind: "route",
    group: "observability",
    description:
      "Prometheus exposition: turns and stage timings; corpus, graph, pipeline and infrastructure gauges.",
    source: { path: "varagity_api/routes/metrics.py", line: 140, symbol: "async def metrics(" },
    at: [0, 0],
  },
  {
    id: "health",
    title: "GET /api/health",
    kind: "route",
    group: "observability",
    description:
      "Probes Postgres, BM25, both model servers, Dagster and stuck runs; degraded names what is down.",
    source: { path: "varagity_api/routes/health.py", line: 45, symbol: "def check_all(" },
    at: [1, 0],
  },
  {
    id: "doctor",
    title: "varagity doctor",
    kind: "component",
    group: "observability",
    description:
      "Every file indexed exactly once, both stores agreeing, every stored file searchable, no stuck run, no trace of a forgotten source; --repair launches the fixes.",
    source: { path: "varagity/doctor.py", line: 506, symbol: "def run_doctor(" },
    at: [2, 0],
  },
  {
    id: "eval-index",
    title: "evaluate_index",
    kind: "job",
    group: "observability",
    description:
      "The golden suite scored on the live index, released when every gate passes; evaluate_answers runs its answers alone.",
    source: {
      path: "varagity_assets/defs/evaluation/jobs.py",
      line: 16,
      symbol: "evaluate_index_job = dg.define_asset_job(",
    },
    at: [0, 1],
  },
  {
    id: "eval-graph",
    title: "evaluate_graph",
    kind: "job",
    group: "observability",
    description:
      "The graph suite answered from a graph of its own; graph answering released when its gate passes.",
    source: {
      path: "varagity_assets/defs/evaluation/jobs.py",
      line: 30,
      symbol: "evaluate_graph_job = dg.define_asset_job(",
    },
    at: [1, 1],
  },
  {
    id: "backup",
    title: "backup_bundle",
    kind: "asset",
    group: "observability",
    description:
      "The export_bundle job's asset: a zip of one corpus in its varagity-exports/ folder, written whole, then verified.",
    source: { path: "varagity_assets/defs/backup/assets.py", line: 90, symbol: "def backup_bundle(" },
    at: [0, 2],
  },
  {
    id: "restore",
    title: "restore_bundle",
    kind: "job",
    group: "observability",
    description:
      "Replaces a corpus with a checked bundle: rows in one transaction and BM25 rebuilt, or the graph workdir swapped.",
    source: { path: "varagity_assets/defs/backup/jobs.py", line: 109, symbol: "def restore_bundle_job(" },
    at: [1, 2],
  },
];

export const EDGES: readonly MapEdge[] = [
  // entry points
  { from: "web-client", to: "api", label: "calls /api over HTTP and server-sent events" },
  { from: "cli", to: "stack", label: "varagity up starts the stack" },
  { from: "cli", to: "turn-runner", label: "ask and chat run turns in-process" },
  { from: "cli", to: "jobs-client", label: "reingest, backup and evaluation launch and follow runs" },
  { from: "cli", to: "doctor", label: "varagity doctor checks and repairs" },
  { from: "stack", to: "postgres", label: "starts the embedded Postgres" },
  { from: "stack", to: "llm-server", label: "starts llama_cpp.server" },
  { from: "stack", to: "embedding-server", label: "starts the embedding server" },
  { from: "stack", to: "dagster-location", label: "starts its code server, webserver and daemon" },
  { from: "stack", to: "api", label: "starts uvicorn" },
  { from: "api", to: "chat-route", label: "serves" },
  { from: "api", to: "openai-route", label: "serves" },
  { from: "api", to: "metrics", label: "serves" },
  { from: "api", to: "health", label: "serves" },
  { from: "api", to: "jobs-client", label: "launches ingests, builds, backups and evaluations" },
  { from: "dagster-location", to: "docs-sensor", label: "the daemon ticks its sensors" },
  { from: "dagster-location", to: "graph-sensor", label: "the daemon ticks its sensors" },
  { from: "dagster-location", to: "staleness", label: "corpus_staleness_sensor requests its runs" },
  { from: "jobs-client", to: "ingest-job", label: "launches uploads' runs and re-ingest backfills" },
  { from: "jobs-client", to: "graph-build-job", label: "launches builds" },
  { from: "jobs-client", to: "graph-rebuild", label: "launches rebuilds of days" },
  { from: "jobs-client", to: "graph-reset", label: "launches resets" },
  { from: "jobs-client", to: "backup", label: "launches exports" },
  { from: "jobs-client", to: "restore", label: "launches restores" },
  { from: "jobs-client", to: "eval-index", label: "launches answer evaluations (evaluate_answers)" },

  // ingestion
  { from: "docs-sensor", to: "ingest-job", label: "requests runs for new and changed files, in batches" },
  { from: "docs-sensor", to: "purge", label: "requests purge runs for removed files" },
  { from: "ingest-job", to: "parsed", label: "materializes" },
  { from: "parsed", to: "chunks", label: "feeds" },
  { from: "chunks", to: "embeddings", label: "feeds" },
  { from: "embeddings", to: "indexed", label: "feeds" },
  { from: "parsed", to: "parsers", label: "picks the family by suffix" },
  { from: "chunks", to: "chunkers", label: "cuts with CHUNKING_STRATEGY" },
  { from: "embeddings", to: "embedding-server", label: "embeds the passages" },
  { from: "indexed", to: "postgres", label: "writes the rows, marked as waiting for BM25" },
  { from: "indexed", to: "bm25-index", label: "feeds (through the stored rows)" },
  { from: "bm25-index", to: "postgres", label: "reads the chunk rows, clears the mark" },
  { from: "bm25-index", to: "bm25", label: "replaces the file's entries (on the Tantivy host's queue)" },
  {
    from: "bm25-index",
    to: "chunk-contexts",
    label: "chunks without a blurb: chunk_contexts_sensor requests runs",
  },
  { from: "chunk-contexts", to: "contextualizer", label: "writes blurbs with" },
  { from: "contextualizer", to: "llm-server", label: "one call per chunk, in pool llm" },
  { from: "chunk-contexts", to: "embedding-server", label: "re-embeds blurbed chunks" },
  { from: "chunk-contexts", to: "postgres", label: "replaces the chunks" },
  { from: "chunk-contexts", to: "bm25", label: "replaces the chunks" },
  { from: "purge", to: "postgres", label: "deletes the rows" },
  { from: "purge", to: "bm25", label: "deletes the entries" },
  { from: "staleness", to: "postgres", label: "sets or clears the stale flag" },

  // query path
  { from: "chat-route", to: "turn-runner", label: "adapts over (server-sent events)" },
  { from: "openai-route", to: "turn-runner", label: "adapts over (OpenAI chunks)" },
  { from: "chat-route", to: "postgres", label: "saves the turn to its conversation" },
  { from: "turn-runner", to: "chat-engines", label: "prepares the search query with CHAT_ENGINE" },
  { from: "chat-engines", to: "condense", label: "builds condense_context" },
  {
    from: "condense",
    to: "llm-server",
    label: "condense calls the same llama.cpp server the answer generator does",
  },
  { from: "turn-runner", to: "retrievers", label: "retrieves with RETRIEVAL_METHOD" },
  { from: "turn-runner", to: "graph-service", label: "asks the message graph (corpus graph)" },
  { from: "turn-runner", to: "answer-queue", label: "waits for an answer slot" },
  {
    from: "turn-runner",
    to: "generation",
    label: "streams the answer through the repetition guard and quote check",
  },
  { from: "generation", to: "llm-server", label: "streams chat completions" },
  { from: "retrievers", to: "semantic", label: "builds" },
  { from: "retrievers", to: "bm25-retriever", label: "builds" },
  { from: "retrievers", to: "hybrid", label: "builds" },
  { from: "retrievers", to: "reranked", label: "builds" },
  { from: "retrievers", to: "hyde", label: "builds" },
  { from: "hybrid", to: "semantic", label: "fuses by weighted reciprocal rank" },
  { from: "hybrid", to: "bm25-retriever", label: "fuses by weighted reciprocal rank" },
  {
    from: "reranked",
    to: "hybrid",
    label: "reranked composes a base retriever (RERANK_BASE_METHOD, default hybrid)",
  },
  { from: "reranked", to: "embedding-server", label: "rescores through /v1/rerank (or RERANK_BASE_URL)" },
  { from: "hyde", to: "hybrid", label: "hyde composes a semantic or hybrid base (HYDE_BASE_METHOD)" },
  { from: "hyde", to: "llm-server", label: "writes the hypothetical passage" },
  { from: "semantic", to: "embedding-server", label: "embeds the query" },
  { from: "semantic", to: "postgres", label: "HNSW cosine search" },
  { from: "bm25-retriever", to: "bm25", label: "searches search_text" },
  { from: "bm25-retriever", to: "postgres", label: "hydrates the rows" },

  // graph corpus
  { from: "graph-sensor", to: "graph-build-job", label: "requests a build per new or changed archive" },
  { from: "graph-sensor", to: "graph-removed", label: "requests removal runs" },
  { from: "graph-build-job", to: "graph-archive", label: "materializes" },
  { from: "graph-archive", to: "message-sources", label: "reads the archive with" },
  { from: "graph-archive", to: "graph-transcripts", label: "feeds" },
  { from: "graph-transcripts", to: "graph-workdir-asset", label: "feeds the diff" },
  { from: "graph-workdir-asset", to: "graph-service", label: "applies through the single writer" },
  { from: "graph-removed", to: "graph-service", label: "deletes days through the single writer" },
  {
    from: "graph-rebuild",
    to: "graph-service",
    label: "deletes and reinserts days through the single writer",
  },
  { from: "graph-reset", to: "graph-workdir", label: "empties it, holding the write lock" },
  { from: "dagster-location", to: "graph-staleness", label: "graph_staleness_sensor requests its runs" },
  { from: "graph-staleness", to: "postgres", label: "sets the graph's stale flag" },
  { from: "graph-service", to: "lightrag", label: "opens GRAPH_ENGINE" },
  { from: "lightrag", to: "graph-workdir", label: "reads and writes" },
  { from: "lightrag", to: "llm-server", label: "extracts entities and relations" },
  { from: "lightrag", to: "embedding-server", label: "embeds entities, relations and days" },

  // observability
  { from: "metrics", to: "postgres", label: "reads the corpus gauges" },
  { from: "metrics", to: "jobs-client", label: "reads the pipeline gauges from Dagster" },
  { from: "health", to: "postgres", label: "probes" },
  { from: "health", to: "bm25", label: "probes" },
  { from: "health", to: "llm-server", label: "probes" },
  { from: "health", to: "embedding-server", label: "probes" },
  { from: "doctor", to: "postgres", label: "checks every file is indexed exactly once" },
  { from: "doctor", to: "bm25", label: "checks both stores agree" },
  { from: "doctor", to: "jobs-client", label: "finds stuck runs, launches repairs" },
  { from: "eval-index", to: "retrievers", label: "scores the golden suite's retrieval" },
  { from: "eval-index", to: "turn-runner", label: "answers the golden suite" },
  { from: "eval-graph", to: "graph-archive", label: "builds a graph of its own through the graph assets" },
  { from: "eval-graph", to: "turn-runner", label: "answers the graph suite" },
  { from: "backup", to: "postgres", label: "exports documents, chunks and vectors" },
  { from: "backup", to: "graph-workdir", label: "exports the graph workdir" },
  { from: "restore", to: "postgres", label: "replaces the rows" },
  { from: "restore", to: "bm25", label: "rebuilds the index" },
  { from: "restore", to: "graph-workdir", label: "swaps in the bundle's workdir" },
];
