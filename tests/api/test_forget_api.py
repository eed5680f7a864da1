"""Forgetting with a receipt, over real HTTP on real stores: a thread of a Messages
archive (built into the real LightRAG graph by the in-process graph build, skeleton
extraction, the packaged embedding server), documents (real Postgres + pgvector,
Tantivy, a real page preview), the backups that still hold them, and the doctor check
that finds a trace of a forgotten source.

The thread's messages carry a marker no other text has; after the forget every store
is searched for it byte by byte: every text and JSON column of every Postgres table,
every file under ``VARAGITY_HOME`` (the Tantivy index, the preview cache, the graph's
working directory with its sidecars and LLM reply cache) and the graph workdir.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import psycopg
import pytest

from tests.conftest import SettingsFactory
from tests.support.api_server import serve
from tests.support.forget_fixtures import (
    KEPT,
    MARKER,
    MESSAGES,
    OTHER,
    SECRET,
    day,
    file_hits,
    forget_settings,
    postgres_hits,
    write_thread_archive,
)
from tests.support.graph_pipeline import GraphHarness
from tests.support.previews import wide_pdf
from varagity.backup.graph import export_graph
from varagity.backup.rag import export_rag
from varagity.config import Settings
from varagity.doctor import check_forgotten
from varagity.graph.manifest import ManifestEntry, read_manifest, write_manifest
from varagity.graph.registry import workdir_for
from varagity.graph.sources.imessage_writer import (
    apple_date,
    insert_chat,
    insert_handle,
    insert_message,
    write_archive,
)
from varagity.graph.sources.registry import read_archive
from varagity.graph.types import DayCard
from varagity.preview.service import cache_root, preview_chunk
from varagity.records import RetrievedChunk
from varagity.services import Services, ingest_file
from varagity.stores.bm25 import open_bm25_store
from varagity.stores.conversation_store import AssistantReply, ConversationStore

pytestmark = [pytest.mark.integration, pytest.mark.timeout(1200)]


@pytest.fixture
def settings(make_settings: SettingsFactory, pg_url: str, model_urls: dict[str, str]) -> Settings:
    return forget_settings(make_settings, pg_url, model_urls)


@pytest.fixture
def api(settings: Settings) -> Iterator[str]:
    with serve(settings) as base:
        yield base


def _store(settings: Settings) -> tuple[Services, ConversationStore]:
    services = Services.open(settings)
    return services, ConversationStore(services.pg)


# --- a thread -------------------------------------------------------------------------


def test_forgetting_a_thread_leaves_no_byte_of_its_text_in_any_store(
    settings: Settings, api: str
) -> None:
    root = settings.graph_docs_path
    write_thread_archive(root / "phone" / "chat.db")
    harness = GraphHarness()
    [run] = harness.run_graph(harness.tick())
    assert run.success, harness.logs(run)
    workdir = workdir_for(settings)
    manifest = read_manifest(workdir)
    secret_days = sorted(k for k in manifest if k.startswith(SECRET))
    assert len(secret_days) == 2 and any(k.startswith(OTHER) for k in manifest)
    assert file_hits([workdir], MARKER), "the build put the thread in the graph"

    # a conversation that cited the thread, one that cited the other, and a backup
    services, conversations = _store(settings)
    try:
        day = DayCard(
            secret_days[0],
            "kim",
            "2026-03-02",
            f"[09:00] kim: {MESSAGES[0][3]}",
            ("GUID-0", "GUID-1"),
        )
        evidence = {
            "entities": [
                {
                    "name": "Vault",
                    "type": "",
                    "description": f"code {MARKER}",
                    "doc_keys": [secret_days[0]],
                }
            ],
            "relations": [],
            "mode": "mix",
        }
        conversations.append_turn(
            "c-secret",
            "What is the vault code?",
            AssistantReply(
                content=f"The vault code is {MARKER} [1].",
                sources=(),
                retrieval_method="graph",
                chat_engine="simple",
                target_corpus="graph",
                graph_evidence=evidence,
                days=(day,),
            ),
        )
        kept_day = next(k for k in manifest if k.startswith(OTHER))
        conversations.append_turn(
            "c-kept",
            "Where is dinner?",
            AssistantReply(
                content=f"At {KEPT} [1].",
                sources=(),
                retrieval_method="graph",
                chat_engine="simple",
                target_corpus="graph",
                graph_evidence={"entities": [], "relations": [], "mode": "mix"},
                days=(DayCard(kept_day, "lee", "2026-03-02", f"Dinner at {KEPT}", ("GUID-3",)),),
            ),
        )
        bundle = export_graph(settings).path.name
    finally:
        services.close()
    assert postgres_hits(settings.DATABASE_URL or "", MARKER)

    r = httpx.delete(f"{api}/api/graph/messages/threads/{quote(SECRET, safe='')}", timeout=600)
    assert r.status_code == 200, r.text
    receipt = r.json()
    stores = {s["store"]: s for s in receipt["stores"]}
    assert receipt["kind"] == "thread" and receipt["verified"], receipt
    assert stores["graph_days"]["removed"] == 2
    assert stores["snapshots"]["removed"] == 1
    assert stores["reply_cache"]["removed"] > 0
    assert stores["graph_entities"]["removed"] > 0
    assert all(s["verified"] and s["remaining"] == 0 for s in receipt["stores"])
    assert [b["name"] for b in receipt["backups"]] == [bundle]

    # no store holds a byte of it
    assert postgres_hits(settings.DATABASE_URL or "", MARKER) == []
    assert file_hits([settings.home, workdir], MARKER) == []
    bm25 = open_bm25_store(settings)
    try:
        assert bm25.search(MARKER, 10) == []
    finally:
        bm25.close()
    assert set(read_manifest(workdir)) == set(manifest) - set(secret_days)
    # the other thread is all there
    assert file_hits([workdir], KEPT)
    assert postgres_hits(settings.DATABASE_URL or "", KEPT)
    # the archive keeps the messages; no read of it renders them again
    assert MARKER.encode() in (root / "phone" / "chat.db").read_bytes()
    assert not [d for d in read_archive(root, "phone/chat.db") if MARKER in d.text]
    assert any(KEPT in d.text for d in read_archive(root, "phone/chat.db"))

    # doctor: clean, then a planted trace (the forgotten day back in the manifest)
    bm25 = open_bm25_store(settings)
    try:
        url = settings.DATABASE_URL or ""
        assert check_forgotten(url, bm25, settings).ok
        planted = dict(read_manifest(workdir))
        planted[secret_days[0]] = ManifestEntry(
            "0" * 64, ("GUID-0",), "kim", "2026-03-02", "phone/chat.db"
        )
        write_manifest(workdir, planted)
        report = check_forgotten(url, bm25, settings)
    finally:
        bm25.close()
    assert [p.invariant for p in report.problems] == ["nothing_forgotten"]
    assert "manifest" in report.problems[0].detail


GROUP = "iMessage;+;chat77"


def _write_group_archive(path: Path) -> None:
    """One group thread of one day: Kim's messages carry the marker, Lee's do not."""

    def fill(conn: Any) -> None:
        kim, lee = insert_handle(conn, "kim@example.com"), insert_handle(conn, "lee@example.com")
        chat = insert_chat(conn, GROUP, [kim, lee], display_name="Climbing")
        rows = (
            (kim, day(0, 8), f"Bring the rope, the locker code is {MARKER} this week"),
            (lee, day(0, 8, 5), f"I'll drive, meet at {KEPT} at nine sharp"),
            (kim, day(0, 8, 9), f"Great, and remember {MARKER} for the locker room"),
        )
        for i, (handle, when, text) in enumerate(rows):
            insert_message(
                conn,
                chat,
                guid=f"GRP-{i}",
                date=apple_date(when),
                text=text,
                handle_id=handle,
                is_from_me=False,
            )

    write_archive(path, fill)


def test_forgetting_a_handle_extracts_its_days_again_without_its_messages(
    settings: Settings, api: str
) -> None:
    root = settings.graph_docs_path
    _write_group_archive(root / "chat.db")
    harness = GraphHarness()
    [run] = harness.run_graph(harness.tick())
    assert run.success, harness.logs(run)
    workdir = workdir_for(settings)
    [day] = read_manifest(workdir)
    assert file_hits([workdir], MARKER)

    r = httpx.delete(f"{api}/api/graph/messages/handles/kim%40example.com", timeout=600)
    assert r.status_code == 200, r.text
    receipt = r.json()
    stores = {s["store"]: s for s in receipt["stores"]}
    assert receipt["kind"] == "handle" and receipt["verified"], receipt
    # the day keeps Lee's message: extracted again without Kim's, not deleted
    assert (stores["graph_days"]["removed"], stores["graph_days"]["updated"]) == (0, 1)
    assert stores["graph_days"]["note"] and "extracted again" in stores["graph_days"]["note"]
    assert read_manifest(workdir)[day].message_guids == ("GRP-1",)
    assert file_hits([settings.home, workdir], MARKER) == []
    assert postgres_hits(settings.DATABASE_URL or "", MARKER) == []
    assert file_hits([workdir], KEPT)
    bm25 = open_bm25_store(settings)
    try:
        assert check_forgotten(settings.DATABASE_URL or "", bm25, settings).ok
    finally:
        bm25.close()


def test_forgetting_nothing_answers_404_and_writes_no_rule(settings: Settings, api: str) -> None:
    write_thread_archive(settings.graph_docs_path / "chat.db")
    r = httpx.delete(f"{api}/api/graph/messages/handles/nobody%40example.com", timeout=60)
    assert r.status_code == 404, r.text
    assert not (settings.graph_docs_path / ".varagity-forgotten.json").exists()
    r = httpx.delete(
        f"{api}/api/graph/messages", params={"from": "2026-03-04", "to": "2026-03-02"}, timeout=60
    )
    assert r.status_code == 422, r.text


# --- documents ------------------------------------------------------------------------


def _chunk_counts(url: str, doc_id: str) -> tuple[int, int, int]:
    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT count(*), count(embedding), count(*) FILTER (WHERE context <> '')"
            " FROM chunks WHERE doc_id = %s",
            (doc_id,),
        ).fetchone()
    assert row is not None
    return int(row[0]), int(row[1]), int(row[2])


def test_a_document_delete_answers_a_receipt_that_matches_what_was_indexed(
    settings: Settings, api: str
) -> None:
    docs = settings.docs_path
    wide_pdf(docs / "reports" / "harbour.pdf")
    (docs / "notes.md").write_text("# Notes\n\nThe ferry leaves at nine from pier four.\n")
    services, conversations = _store(settings)
    try:
        pdf = ingest_file(services, "reports/harbour.pdf").doc_id
        notes = ingest_file(services, "notes.md").doc_id
        records = services.pg.chunks_of(pdf)
        preview_chunk(settings, records[0])  # a real cached page preview
        conversations.append_turn(
            "c-doc",
            "What about the breakwater?",
            AssistantReply(
                content="Forty armour units are cracked [1].",
                sources=(RetrievedChunk(record=records[0], score=0.9),),
                retrieval_method="hybrid",
                chat_engine="simple",
                target_corpus="rag",
            ),
        )
        bundle = export_rag(settings, services.pg).path.name
        bm25_entries = len(services.bm25.chunk_ids([pdf]))
    finally:
        services.close()
    url = settings.DATABASE_URL or ""
    chunks, vectors, blurbs = _chunk_counts(url, pdf)
    previews = [p for p in (cache_root(settings) / "pages").rglob("*") if p.is_file()]
    assert chunks > 0 and bm25_entries == chunks and previews

    r = httpx.delete(f"{api}/api/documents/{pdf}", params={"remove_file": "true"}, timeout=120)
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["deleted"] == [pdf]
    receipt = body["receipt"]
    stores = {s["store"]: s for s in receipt["stores"]}
    assert receipt["kind"] == "documents" and receipt["verified"], receipt
    assert receipt["target"] == "reports/harbour.pdf"
    assert stores["documents"]["removed"] == 1
    assert stores["chunks"]["removed"] == chunks
    assert stores["vectors"]["removed"] == vectors
    assert stores["blurbs"]["removed"] == blurbs
    assert stores["bm25"]["removed"] == bm25_entries
    assert stores["previews"]["removed"] == len(previews)
    assert stores["snapshots"]["removed"] == 1
    assert all(s["remaining"] == 0 for s in receipt["stores"])
    assert [(b["corpus"], b["name"]) for b in receipt["backups"]] == [("rag", bundle)]
    # gone from each store, asked independently; the other document stays
    assert _chunk_counts(url, pdf) == (0, 0, 0)
    assert _chunk_counts(url, notes)[0] > 0
    assert not any(p.is_file() for p in (cache_root(settings) / "pages").rglob("*"))
    with psycopg.connect(url) as conn:
        [trace] = [r[0] for r in conn.execute("SELECT trace FROM message_sources")]
        [answer] = [
            r[0] for r in conn.execute("SELECT content FROM messages WHERE role = 'assistant'")
        ]
    assert trace["forgotten"] == receipt["forget_id"] and "armour" not in json.dumps(trace)
    assert "armour" not in answer

    # doctor: clean, then a planted trace of the forgotten document
    bm25 = open_bm25_store(settings)
    try:
        assert check_forgotten(url, bm25, settings).ok
        with psycopg.connect(url) as conn:
            conn.execute(
                "INSERT INTO documents (doc_id, source, relative_path, file_type, content_hash,"
                " n_chunks) VALUES (%s, 'x', 'reports/harbour.pdf', 'pdf', 'h', 0)",
                (pdf,),
            )
        report = check_forgotten(url, bm25, settings)
    finally:
        bm25.close()
    assert [(p.invariant, "documents" in p.detail) for p in report.problems] == [
        ("nothing_forgotten", True)
    ]
