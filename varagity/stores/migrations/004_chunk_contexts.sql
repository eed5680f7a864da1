-- The deferred blurb stage: a chunk is stored raw (header + content) first and
-- re-indexed with its LLM blurb later. contextualized_at says when that happened
-- (NULL: the chunk still waits for its blurb). Chunks written with a blurb before
-- the stage was deferred count as contextualized.
ALTER TABLE chunks ADD COLUMN IF NOT EXISTS contextualized_at TIMESTAMPTZ;
UPDATE chunks SET contextualized_at = created_at
    WHERE context IS NOT NULL AND contextualized_at IS NULL;
-- The blurb sensor asks every few seconds which documents still wait: with this
-- partial index that is a scan of the waiting chunks only.
CREATE INDEX IF NOT EXISTS chunks_awaiting_context_idx
    ON chunks(doc_id) WHERE contextualized_at IS NULL;
