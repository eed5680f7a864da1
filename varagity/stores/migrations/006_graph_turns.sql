-- The graph-targeted turn: which corpus an assistant answer was asked of, and what the
-- message graph gave back. Both columns are nullable and assistant-only:
--   target_corpus  'rag' | 'graph' (the ask, not the outcome: a graph turn degraded to
--                  a document answer still says 'graph'); NULL on user messages and on
--                  history written before graph turns (read as 'rag');
--   graph_evidence {"entities": [...], "relations": [...], "mode": ...}; NULL on
--                  document turns and on degraded graph turns.
-- A graph turn's cited days are message_sources rows (chunk_id = the day's doc_key,
-- trace {"kind": "graph_transcript", ...}), so no table changes for them.
-- 003 already creates both columns on a fresh database; these statements keep any
-- database converging, and the constraints keep the vocabulary honest.
ALTER TABLE messages ADD COLUMN IF NOT EXISTS target_corpus  TEXT;
ALTER TABLE messages ADD COLUMN IF NOT EXISTS graph_evidence JSONB;

ALTER TABLE messages DROP CONSTRAINT IF EXISTS messages_target_corpus_check;
ALTER TABLE messages ADD CONSTRAINT messages_target_corpus_check
    CHECK (target_corpus IN ('rag', 'graph'));

ALTER TABLE messages DROP CONSTRAINT IF EXISTS messages_graph_evidence_check;
ALTER TABLE messages ADD CONSTRAINT messages_graph_evidence_check
    CHECK (graph_evidence IS NULL OR (role = 'assistant' AND target_corpus = 'graph'));
