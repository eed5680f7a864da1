"""Chat history on a real Postgres: migration 003, turns, listing, groups, atomicity."""

from __future__ import annotations

import shutil
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import psycopg
import pytest

from varagity.records import ChunkRecord, Quote, RetrievalTrace, RetrievedChunk
from varagity.stores.conversation_store import (
    TITLE_MAX_CHARS,
    AssistantReply,
    ConversationNotFound,
    ConversationStore,
    GroupNotFound,
    new_id,
    title_from_question,
)
from varagity.stores.migrate import MIGRATIONS_DIR, apply_migrations
from varagity.stores.postgres import connect, ensure_database
from varagity.stores.vector_store import PgVectorStore

pytestmark = pytest.mark.integration

TABLES = ("conversation_groups", "conversations", "messages", "message_sources")
DIM = 384


def _chunk(n: int, text: str, *, score: float = 0.5) -> RetrievedChunk:
    rec = ChunkRecord(
        doc_id=f"doc{n}",
        chunk_id=f"doc{n}::{n}",
        original_index=n,
        chunk_index=n,
        source=f"/corpus/f{n}.pdf",
        relative_path=f"manuals/f{n}.pdf",
        file_name=f"f{n}.pdf",
        file_type="pdf",
        page=n + 1,
        content=text,
        context=f"Context of chunk {n}.",
        contextualized_content=text,
        chunk_size=800,
        chunk_overlap=100,
        chunking_strategy="recursive_character",
        embedding_model="m",
        n_tokens=5,
        content_hash="h",
        file_created_at=datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC),
        file_modified_at=datetime(2024, 2, 3, 4, 5, 6, tzinfo=UTC),
        extraction="ocr",
    )
    trace = RetrievalTrace(
        semantic_rank=n,
        semantic_score=0.9,
        bm25_rank=None,
        fused_score=score,
        fused_rank=n,
        final_rank=n,
    )
    return RetrievedChunk(record=rec, score=score, trace=trace)


def _reply(text: str = "The warranty is 27 months [1].", **overrides: object) -> AssistantReply:
    values: dict[str, object] = {
        "content": text,
        "sources": [_chunk(1, "27 months of warranty."), _chunk(2, "Descale monthly.")],
        "retrieval_method": "hybrid",
        "chat_engine": "condense_context",
        "latency_ms": {"embed": 3.5, "generate": 120.0},
        "reasoning": "Source 1 says so.",
        "condensed_query": "Tern K2 kettle warranty",
        "quotes": [Quote(1, "27 months", 0, 9)],
    }
    values.update(overrides)
    return AssistantReply(**values)  # type: ignore[arg-type]


@pytest.fixture
def pg(pg_url: str) -> Iterator[PgVectorStore]:
    store = PgVectorStore(pg_url, embedding_dim=DIM)
    yield store
    store.close()


@pytest.fixture
def store(pg: PgVectorStore) -> ConversationStore:
    return ConversationStore(pg)


def _schema(url: str) -> dict[str, list[tuple[object, ...]]]:
    with connect(url) as conn:
        return {
            "columns": conn.execute(
                "SELECT table_name, column_name, data_type, is_nullable, column_default,"
                " is_identity FROM information_schema.columns WHERE table_name = ANY(%s)"
                " ORDER BY 1, 2",
                (list(TABLES),),
            ).fetchall(),
            "constraints": conn.execute(
                "SELECT conrelid::regclass::text, conname, pg_get_constraintdef(oid)"
                " FROM pg_constraint WHERE conrelid::regclass::text = ANY(%s) ORDER BY 1, 2",
                (list(TABLES),),
            ).fetchall(),
            "indexes": conn.execute(
                "SELECT tablename, indexname, indexdef FROM pg_indexes"
                " WHERE tablename = ANY(%s) ORDER BY 1, 2",
                (list(TABLES),),
            ).fetchall(),
        }


def test_migration_converges_from_empty_and_from_existing_chunk_tables(
    pg_url: str, pg_server_url: str, tmp_path: Path
) -> None:
    # an empty database: the whole runner
    with connect(pg_url, autocommit=True) as conn:
        applied = apply_migrations(conn, embedding_dim=DIM)
    assert "003_conversations.sql" in applied
    fresh = _schema(pg_url)
    assert {row[0] for row in fresh["columns"]} == set(TABLES)

    # a database that already holds the chunk-side tables (and a chunk) from 001/002
    older = tmp_path / "older"
    older.mkdir()
    for name in ("001_chunks.sql", "002_app_settings.sql"):
        shutil.copy(MIGRATIONS_DIR / name, older / name)
    name = f"t_{uuid.uuid4().hex[:12]}"
    upgraded_url = ensure_database(pg_server_url, name)
    try:
        with connect(upgraded_url, autocommit=True) as conn:
            assert apply_migrations(conn, embedding_dim=DIM, directory=older) == [
                "001_chunks.sql",
                "002_app_settings.sql",
            ]
            conn.execute("INSERT INTO documents VALUES ('d', '/s', 'a.md', 'md', 'h', 0, now())")
            later = sorted(p.name for p in MIGRATIONS_DIR.glob("*.sql"))[2:]
            assert later[0] == "003_conversations.sql"
            assert apply_migrations(conn, embedding_dim=DIM) == later
            assert apply_migrations(conn, embedding_dim=DIM) == []  # re-running: a no-op
            # the file itself is IF NOT EXISTS-safe, even outside the runner's bookkeeping
            conn.execute((MIGRATIONS_DIR / "003_conversations.sql").read_bytes())
            kept = conn.execute("SELECT count(*) FROM documents").fetchone()
        assert kept == (1,)
        assert _schema(upgraded_url) == fresh
    finally:
        with connect(pg_server_url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def test_title_from_question() -> None:
    assert title_from_question("  What is\n the  warranty? ") == "What is the warranty?"
    assert title_from_question(" \n ") == "New conversation"
    long = "How long is the warranty of the Tern K2 kettle when it is bought second hand abroad?"
    title = title_from_question(long)
    assert title.endswith("…") and len(title) <= TITLE_MAX_CHARS
    assert long.startswith(title[:-1])
    assert not title[:-1].endswith(" ")
    assert title_from_question("x" * 200) == "x" * (TITLE_MAX_CHARS - 1) + "…"


def test_first_turn_creates_the_conversation_with_provenance_and_snapshots(
    store: ConversationStore,
) -> None:
    cid = new_id()
    turn = store.append_turn(cid, "What is the\nwarranty of the Tern K2?", _reply())
    assert turn.created and turn.conversation_id == cid
    conversation = store.get_conversation(cid)
    assert conversation.summary.title == "What is the warranty of the Tern K2?"
    assert conversation.summary.message_count == 2
    assert conversation.summary.group_id is None
    user, assistant = conversation.messages
    assert (user.role, user.message_id, user.content) == (
        "user",
        turn.user_message_id,
        "What is the\nwarranty of the Tern K2?",
    )
    assert user.retrieval_method is user.chat_engine is user.latency_ms is None
    assert user.sources == ()
    assert assistant.message_id == turn.assistant_message_id
    assert assistant.content == "The warranty is 27 months [1]."
    assert assistant.retrieval_method == "hybrid"
    assert assistant.chat_engine == "condense_context"
    assert assistant.condensed_query == "Tern K2 kettle warranty"
    assert assistant.reasoning == "Source 1 says so."
    assert assistant.latency_ms == {"embed": 3.5, "generate": 120.0}
    assert [s.rank for s in assistant.sources] == [1, 2]
    first = assistant.sources[0]
    assert first.chunk_id == "doc1::1"  # a soft reference: no chunk row exists at all
    expected = _chunk(1, "27 months of warranty.")
    assert first.snapshot == {
        "score": 0.5,
        "doc_id": "doc1",
        "chunk_index": 1,
        "content": "27 months of warranty.",
        "context": "Context of chunk 1.",
        "relative_path": "manuals/f1.pdf",
        "file_name": "f1.pdf",
        "file_type": "pdf",
        "page": 2,
        "extraction": "ocr",
        "file_created_at": "2024-01-02T03:04:05+00:00",
        "file_modified_at": "2024-02-03T04:05:06+00:00",
        "trace": expected.trace.model_dump(mode="json") if expected.trace else None,
        "quotes": [{"text": "27 months", "start": 0, "end": 9}],  # the answer's, of this one
    }
    assert RetrievalTrace.model_validate(first.snapshot["trace"]) == expected.trace
    assert assistant.sources[1].snapshot["quotes"] == []


def test_later_turns_keep_the_title_bump_recency_and_feed_history(
    store: ConversationStore,
) -> None:
    cid = new_id()
    store.append_turn(cid, "Kettle warranty?", _reply("27 months [1]."))
    before = store.get_conversation(cid).summary
    second = store.append_turn(
        cid, "Who makes it?", _reply("Tern [2].", reasoning=None, condensed_query=None, sources=[])
    )
    assert not second.created
    after = store.get_conversation(cid)
    assert after.summary.title == "Kettle warranty?"
    assert after.summary.updated_at > before.updated_at
    assert after.summary.created_at == before.created_at
    assert [(m.role, m.content) for m in after.messages] == [
        ("user", "Kettle warranty?"),
        ("assistant", "27 months [1]."),
        ("user", "Who makes it?"),
        ("assistant", "Tern [2]."),
    ]
    assert after.messages[-1].reasoning is None and after.messages[-1].sources == ()
    assert store.history(cid, 5) == [
        ("Kettle warranty?", "27 months [1]."),
        ("Who makes it?", "Tern [2]."),
    ]
    assert store.history(cid, 1) == [("Who makes it?", "Tern [2].")]
    assert store.history(cid, 0) == []


def test_list_orders_by_recency_and_filters_by_title_and_group(store: ConversationStore) -> None:
    ids = [new_id() for _ in range(3)]
    for cid, question in zip(
        ids, ["Kettle warranty?", "Aurora wind power", "Is 100% cotton OK?"], strict=True
    ):
        store.append_turn(cid, question, _reply())
    assert [c.conversation_id for c in store.list_conversations()] == ids[::-1]
    store.append_turn(ids[0], "And the lid?", _reply())  # a new turn moves it to the top
    listed = store.list_conversations()
    assert [c.conversation_id for c in listed] == [ids[0], ids[2], ids[1]]
    assert listed[0].message_count == 4
    assert [c.title for c in store.list_conversations(query="kETTLE")] == ["Kettle warranty?"]
    assert [c.title for c in store.list_conversations(query="%")] == ["Is 100% cotton OK?"]
    assert store.list_conversations(query="nothing like this") == []
    assert len(store.list_conversations(query="  ")) == 3
    assert len(store.list_conversations(limit=2)) == 2
    group = store.create_group("Energy")
    store.update_conversation(ids[1], group_id=group.group_id)
    assert [c.conversation_id for c in store.list_conversations(group_id=group.group_id)] == [
        ids[1]
    ]
    with pytest.raises(GroupNotFound, match="nope"):
        store.list_conversations(group_id="nope")


def test_rename_and_move_never_bump_updated_at(store: ConversationStore) -> None:
    cid = new_id()
    store.append_turn(cid, "Kettle warranty?", _reply())
    original = store.get_conversation(cid).summary
    group = store.create_group("Appliances")
    renamed = store.update_conversation(cid, title="  Kettle   notes ")
    assert renamed.title == "Kettle notes"
    moved = store.update_conversation(cid, group_id=group.group_id)
    assert moved.group_id == group.group_id and moved.title == "Kettle notes"
    assert store.list_groups()[0].conversation_count == 1
    with pytest.raises(GroupNotFound, match="missing-group"):
        store.update_conversation(cid, group_id="missing-group")
    with pytest.raises(ValueError, match="title must not be blank"):
        store.update_conversation(cid, title="   ")
    ungrouped = store.update_conversation(cid, group_id=None)
    assert ungrouped.group_id is None
    both = store.update_conversation(cid, title="Both", group_id=group.group_id)
    assert (both.title, both.group_id) == ("Both", group.group_id)
    unchanged = store.update_conversation(cid)
    assert unchanged == both
    for summary in (renamed, moved, ungrouped, both):
        assert summary.updated_at == original.updated_at


def test_groups_crud_and_deleting_one_detaches_its_conversations(
    store: ConversationStore,
) -> None:
    work = store.create_group("  Work   stuff ")
    home = store.create_group("home")
    assert work.name == "Work stuff" and work.conversation_count == 0
    assert [g.name for g in store.list_groups()] == ["home", "Work stuff"]
    assert store.rename_group(home.group_id, "Allotment").name == "Allotment"
    with pytest.raises(ValueError, match="group name must not be blank"):
        store.create_group(" ")
    cid = new_id()
    store.append_turn(cid, "Kettle warranty?", _reply())
    store.update_conversation(cid, group_id=work.group_id)
    before = store.get_conversation(cid)
    store.delete_group(work.group_id)
    after = store.get_conversation(cid)
    assert after.summary.group_id is None
    assert after.messages == before.messages  # history intact
    assert after.summary.updated_at == before.summary.updated_at
    assert [g.group_id for g in store.list_groups()] == [home.group_id]
    for call in (
        lambda: store.rename_group(work.group_id, "x"),
        lambda: store.delete_group(work.group_id),
    ):
        with pytest.raises(GroupNotFound, match=work.group_id):
            call()


def test_delete_cascades_to_messages_and_sources(
    store: ConversationStore, pg: PgVectorStore
) -> None:
    keep, drop = new_id(), new_id()
    store.append_turn(keep, "Keep me", _reply())
    store.append_turn(drop, "Drop me", _reply())
    store.delete_conversation(drop)
    with pg.connection() as conn:
        counts = conn.execute(
            "SELECT (SELECT count(*) FROM messages), (SELECT count(*) FROM message_sources)"
        ).fetchone()
    assert counts == (2, 2)  # only the kept conversation's turn and its two sources
    with pytest.raises(ConversationNotFound):
        store.get_conversation(drop)
    assert [c.conversation_id for c in store.list_conversations()] == [keep]


def test_unknown_conversation_ids_raise(store: ConversationStore) -> None:
    for call in (
        lambda: store.get_conversation("nope"),
        lambda: store.history("nope", 3),
        lambda: store.update_conversation("nope", title="x"),
        lambda: store.update_conversation("nope"),
        lambda: store.delete_conversation("nope"),
    ):
        with pytest.raises(ConversationNotFound, match="'nope'"):
            call()


def test_a_failing_turn_leaves_nothing_behind(store: ConversationStore, pg: PgVectorStore) -> None:
    # Postgres refuses NaN in JSONB; it fails on the last statement of the transaction
    broken = _reply(sources=[_chunk(1, "fine"), _chunk(2, "broken", score=float("nan"))])
    cid = new_id()
    with pytest.raises(psycopg.Error):
        store.append_turn(cid, "First question", broken)
    with pytest.raises(ConversationNotFound):
        store.get_conversation(cid)
    store.append_turn(cid, "First question", _reply())
    before = store.get_conversation(cid)
    with pytest.raises(psycopg.Error):
        store.append_turn(cid, "Second question", broken)
    after = store.get_conversation(cid)
    assert after == before  # same messages, same updated_at
    with pg.connection() as conn:
        assert conn.execute("SELECT count(*) FROM messages").fetchone() == (2,)
