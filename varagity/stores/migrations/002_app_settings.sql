-- Runtime settings overrides (one row per overridden setting) and app metadata under
-- keys starting with "_": _ingest_settings (the reingest-affecting settings the corpus
-- was built with) and _corpus_stale (why the corpus no longer matches them).
CREATE TABLE IF NOT EXISTS app_settings (
    key        TEXT PRIMARY KEY,
    value      TEXT NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
