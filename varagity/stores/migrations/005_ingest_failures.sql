-- Why a file is not indexed: the last failed ingest of each path (the stage and its
-- error), recorded by the ingest job and cleared when the path is stored or purged.
-- The corpus listing shows such a file as "failed" with this reason until the file
-- changes (its modification time passes failed_at) or a later ingest stores it.
CREATE TABLE IF NOT EXISTS ingest_failures (
    relative_path TEXT PRIMARY KEY,
    stage         TEXT NOT NULL,
    reason        TEXT NOT NULL,
    run_id        TEXT,
    failed_at     TIMESTAMPTZ NOT NULL DEFAULT now()
);
