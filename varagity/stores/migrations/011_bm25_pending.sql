-- Stored documents whose BM25 entries are not written yet. The ingest job stores a
-- file's documents row and chunks (indexed_document) with a row here in the same
-- transaction; its bm25_index step writes the entries from those chunk rows and deletes
-- the row in the transaction that holds the document's write lock. Until then the file
-- is not searchable by keyword, and the corpus listing says "pending", not "indexed".
-- A purge or a restore (which rebuilds the whole BM25 index from the rows) deletes the
-- documents row, and this one with it.
CREATE TABLE IF NOT EXISTS bm25_pending (
    doc_id TEXT PRIMARY KEY REFERENCES documents(doc_id) ON DELETE CASCADE,
    since  TIMESTAMPTZ NOT NULL DEFAULT now()
);
