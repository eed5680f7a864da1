-- The chunk side of the data model: one row per document (the idempotency marker)
-- and one row per chunk with its embedding. {EMBEDDING_DIM} is filled in by the runner.
CREATE EXTENSION IF NOT EXISTS vector;

CREATE TABLE IF NOT EXISTS documents (
    doc_id        TEXT PRIMARY KEY,
    source        TEXT NOT NULL,
    relative_path TEXT NOT NULL,
    file_type     TEXT NOT NULL,
    content_hash  TEXT NOT NULL,
    n_chunks      INT  NOT NULL,
    ingested_at   TIMESTAMPTZ NOT NULL DEFAULT now()
);

CREATE INDEX IF NOT EXISTS documents_relative_path_idx ON documents(relative_path);

CREATE TABLE IF NOT EXISTS chunks (
    chunk_id               TEXT PRIMARY KEY,
    doc_id                 TEXT NOT NULL REFERENCES documents(doc_id) ON DELETE CASCADE,
    original_index         INT  NOT NULL,
    chunk_index            INT  NOT NULL,
    content                TEXT NOT NULL,
    context                TEXT,
    contextualized_content TEXT NOT NULL,
    embedding              vector({EMBEDDING_DIM}) NOT NULL,
    metadata               JSONB NOT NULL,
    created_at             TIMESTAMPTZ NOT NULL DEFAULT now()
);

CREATE INDEX IF NOT EXISTS chunks_embedding_hnsw
    ON chunks USING hnsw (embedding vector_cosine_ops);
CREATE INDEX IF NOT EXISTS chunks_doc_id_idx ON chunks(doc_id);
-- (doc_id, original_index) is the fusion identity across both stores.
CREATE UNIQUE INDEX IF NOT EXISTS chunks_doc_orig_uidx ON chunks(doc_id, original_index);

-- original_index is allocated from this sequence: monotonic across concurrent writers.
CREATE SEQUENCE IF NOT EXISTS chunk_original_index_seq MINVALUE 0 START WITH 0;
