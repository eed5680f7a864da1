-- Feedback on answers, and the index state each answer was given from.
--
-- message_feedback: a thumbs up or down on an assistant message as a whole
-- (source IS NULL) or on one of its numbered sources (source = the [n] it cites). One
-- row per (message, source): a new rating replaces the old one. A thumbs-down on the
-- answer may say which of the turn's sources does answer (answered_by = its rank) or
-- that none does (none_answers); those rows are the questions of the corpus's
-- feedback suite (varagity/eval/feedback.py). Deleting the message (its conversation)
-- deletes its feedback.
CREATE TABLE IF NOT EXISTS message_feedback (
    feedback_id   TEXT PRIMARY KEY,
    message_id    TEXT NOT NULL REFERENCES messages(message_id) ON DELETE CASCADE,
    source        INT CHECK (source >= 1),
    rating        TEXT NOT NULL CHECK (rating IN ('up', 'down')),
    answered_by   INT CHECK (answered_by >= 1),
    none_answers  BOOLEAN NOT NULL DEFAULT false,
    comment       TEXT,
    created_at    TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at    TIMESTAMPTZ NOT NULL DEFAULT now(),
    CONSTRAINT message_feedback_one_per_target UNIQUE NULLS NOT DISTINCT (message_id, source),
    -- which passage answers is said of a wrong answer only, and only one way
    CONSTRAINT message_feedback_marks_check CHECK (
        (answered_by IS NULL AND NOT none_answers)
        OR (rating = 'down' AND source IS NULL AND (answered_by IS NULL) = none_answers)
    )
);

-- the feedback suite reads the marked thumbs-downs only
CREATE INDEX IF NOT EXISTS message_feedback_suite_idx ON message_feedback(created_at)
    WHERE answered_by IS NOT NULL OR none_answers;

-- "Index as of": the newest documents.ingested_at when the answer was retrieved (NULL
-- on user messages, graph answers and history written before this column).
ALTER TABLE messages ADD COLUMN IF NOT EXISTS index_as_of TIMESTAMPTZ;

-- max(ingested_at) is read once per chat turn: with this index it is one index probe
-- (the backward end of the btree), not a scan of every document row.
CREATE INDEX IF NOT EXISTS documents_ingested_at_idx ON documents(ingested_at);
