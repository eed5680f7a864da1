-- The ledger of forgotten sources (varagity/forget.py): what each forget removed, by
-- identifier only (doc_ids, chunk ids, content hashes, paths, transcript-day keys,
-- message guids, the graph engine's chunk ids), never by text, so `varagity doctor`
-- can check that no store holds any of it again. `receipt` is what the forget
-- answered (per-store counts and the backups still holding the source).
CREATE TABLE IF NOT EXISTS forgotten_sources (
    forget_id    TEXT PRIMARY KEY,
    kind         TEXT NOT NULL
                 CHECK (kind IN ('documents', 'archive', 'thread', 'handle', 'messages')),
    target       TEXT NOT NULL,
    forgotten_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    identifiers  JSONB NOT NULL,
    receipt      JSONB NOT NULL
);
CREATE INDEX IF NOT EXISTS forgotten_sources_at_idx ON forgotten_sources (forgotten_at);
