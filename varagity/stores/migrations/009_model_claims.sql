-- Who uses or wants the chat model now, across processes and hosts: a chat turn
-- (kind 'turn', from the moment it is ready to generate until its answer ends) or a
-- contextualization blurb request under way (kind 'blurb'). Blurb passes yield while a
-- turn claim is live; a turn says it waits for the model while a blurb claim is live.
-- A claim lives until expires_at, which its process renews while it holds it, so the
-- claims of a process or host that died expire on their own. UNLOGGED: a lease table
-- needs no crash safety (its rows are seconds old) and writes no WAL.
CREATE UNLOGGED TABLE IF NOT EXISTS model_claims (
    claim_id   UUID PRIMARY KEY,
    model      TEXT NOT NULL,
    kind       TEXT NOT NULL CHECK (kind IN ('turn', 'blurb')),
    holder     TEXT NOT NULL,
    claimed_at TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp(),
    expires_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX IF NOT EXISTS model_claims_live ON model_claims (model, kind, expires_at);
