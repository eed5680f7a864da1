-- What one step of the documents pipeline hands the next (a file's parsed text, its
-- chunk drafts, its vectors), keyed by asset and partition, when ARTIFACT_STORE=postgres:
-- the steps of one run may execute on different hosts (STEP_EXECUTOR=celery), which
-- share this database and nothing on disk. A value is replaced by the next
-- materialization of its partition and deleted when the file is purged.
CREATE TABLE IF NOT EXISTS step_artifacts (
    asset_key     TEXT NOT NULL,
    partition_key TEXT NOT NULL,
    value         BYTEA NOT NULL,
    written_at    TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (asset_key, partition_key)
);
CREATE INDEX IF NOT EXISTS step_artifacts_partition ON step_artifacts (partition_key);
