-- Chat history: conversations (optionally filed in a group), their messages, and the
-- evidence each assistant answer was grounded on. Independent of the chunk tables:
-- message_sources.chunk_id is a soft reference and `trace` a snapshot, so history
-- survives a reingest that replaces every chunk row. Every statement is
-- IF NOT EXISTS-safe, so the file converges on any database the runner meets.

-- Sidebar folders. Organisation only: deleting one detaches its conversations.
CREATE TABLE IF NOT EXISTS conversation_groups (
    group_id    TEXT PRIMARY KEY,
    name        TEXT NOT NULL,
    created_at  TIMESTAMPTZ NOT NULL DEFAULT now()
);

CREATE TABLE IF NOT EXISTS conversations (
    conversation_id  TEXT PRIMARY KEY,
    title            TEXT NOT NULL,
    created_at       TIMESTAMPTZ NOT NULL DEFAULT now(),
    -- bumped by each new turn only; renaming or filing a conversation leaves it
    updated_at       TIMESTAMPTZ NOT NULL DEFAULT now(),
    group_id         TEXT REFERENCES conversation_groups(group_id) ON DELETE SET NULL
);

CREATE INDEX IF NOT EXISTS conversations_updated_at_idx ON conversations(updated_at DESC);
CREATE INDEX IF NOT EXISTS conversations_group_id_idx ON conversations(group_id);

CREATE TABLE IF NOT EXISTS messages (
    message_id       TEXT PRIMARY KEY,
    conversation_id  TEXT NOT NULL
        REFERENCES conversations(conversation_id) ON DELETE CASCADE,
    -- transcript order: a turn's two messages share one transaction, hence one now()
    seq              BIGINT GENERATED ALWAYS AS IDENTITY,
    role             TEXT NOT NULL CHECK (role IN ('user', 'assistant')),
    content          TEXT NOT NULL,
    created_at       TIMESTAMPTZ NOT NULL DEFAULT now(),
    -- how an assistant answer was produced (NULL on user messages)
    retrieval_method TEXT,
    latency_ms       JSONB,
    reasoning        TEXT,
    condensed_query  TEXT,
    chat_engine      TEXT,
    target_corpus    TEXT,
    graph_evidence   JSONB
);

CREATE INDEX IF NOT EXISTS messages_conversation_seq_idx ON messages(conversation_id, seq);

CREATE TABLE IF NOT EXISTS message_sources (
    message_id  TEXT NOT NULL REFERENCES messages(message_id) ON DELETE CASCADE,
    rank        INT  NOT NULL CHECK (rank >= 1),
    chunk_id    TEXT NOT NULL,
    trace       JSONB NOT NULL,
    PRIMARY KEY (message_id, rank)
);
