"""``varagity forget`` on real stores: a thread of a Messages archive built into the real
graph (the in-process graph build, skeleton extraction, the packaged embedding server)
and a document ingested into real Postgres + Tantivy, each forgotten from the command
line; the receipt printed as a table or as JSON; nothing matched and a receipt that is
not verified exit 1. The archive and the helpers are the API test's
(:mod:`tests.support.forget_fixtures`)."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from tests.conftest import SettingsFactory
from tests.support.forget_fixtures import (
    KEPT,
    MARKER,
    OTHER,
    SECRET,
    file_hits,
    forget_settings,
    postgres_hits,
    write_thread_archive,
)
from tests.support.graph_pipeline import GraphHarness
from varagity.config import Settings
from varagity.forget import BackupHolding, ForgetReceipt, StoreReceipt
from varagity.graph.manifest import read_manifest
from varagity.graph.registry import workdir_for
from varagity.services import Services, ingest_file
from varagity_cli.commands.forget import print_receipt
from varagity_cli.main import main

pytestmark = [pytest.mark.integration, pytest.mark.timeout(1200)]


@pytest.fixture
def settings(make_settings: SettingsFactory, pg_url: str, model_urls: dict[str, str]) -> Settings:
    return forget_settings(make_settings, pg_url, model_urls)


def test_forget_thread_prints_a_verified_receipt_and_leaves_no_byte_of_it(
    settings: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    write_thread_archive(settings.graph_docs_path / "phone" / "chat.db")
    harness = GraphHarness()
    [run] = harness.run_graph(harness.tick())
    assert run.success, harness.logs(run)
    workdir = workdir_for(settings)
    assert len([k for k in read_manifest(workdir) if k.startswith(SECRET)]) == 2
    capsys.readouterr()

    assert main(["forget", "thread", SECRET]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].startswith(f"Forgot thread {SECRET} (thread, verified; forget ")
    assert lines[1].split() == ["store", "removed", "updated", "remaining", "verified"]
    days = next(line for line in lines if line.startswith("Transcript days (graph engine)"))
    assert days.split()[-4:] == ["2", "0", "0", "yes"]
    assert "No backup holds it." in out
    assert "the archives keep them" in out
    assert file_hits([settings.home, workdir], MARKER) == []
    assert postgres_hits(settings.DATABASE_URL or "", MARKER) == []
    assert file_hits([workdir], KEPT)

    # the same thread again: nothing matches, and nothing is written
    assert main(["forget", "thread", SECRET]) == 1
    said = capsys.readouterr()
    assert said.out == ""
    assert "error: nothing matched: no archive of the graph folder holds" in said.err

    # a day of the other thread, as JSON
    assert main(["forget", "days", "2026-03-02", "2026-03-02", "--thread", OTHER, "--json"]) == 0
    receipt = json.loads(capsys.readouterr().out)
    assert receipt["kind"] == "messages" and receipt["verified"], receipt
    stores = {s["store"]: s for s in receipt["stores"]}
    assert stores["graph_days"]["removed"] == 1
    assert not [k for k in read_manifest(workdir) if k.startswith(OTHER)]
    assert file_hits([workdir], KEPT) == []

    # a reversed range is refused before anything is done
    assert main(["forget", "days", "2026-03-04", "2026-03-02"]) == 2
    assert "invalid_range" in capsys.readouterr().err


def test_forget_document_by_path_prints_the_receipt_as_json(
    settings: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    (settings.docs_path / "notes.md").write_text(
        f"# Notes\n\nThe ferry leaves at nine from pier four, code {MARKER}.\n"
    )
    (settings.docs_path / "kept.md").write_text(f"# Kept\n\nDinner at {KEPT}.\n")
    services = Services.open(settings)
    try:
        notes = ingest_file(services, "notes.md")
        ingest_file(services, "kept.md")
        chunks = len(services.pg.chunks_of(notes.doc_id))
    finally:
        services.close()
    assert chunks > 0

    assert main(["forget", "document", "notes.md", "--json"]) == 0
    receipt = json.loads(capsys.readouterr().out)
    assert receipt["kind"] == "documents" and receipt["target"] == "notes.md"
    assert receipt["verified"], receipt
    stores = {s["store"]: s for s in receipt["stores"]}
    assert stores["documents"]["removed"] == 1
    assert stores["chunks"]["removed"] == chunks
    assert stores["bm25"]["removed"] == chunks
    assert postgres_hits(settings.DATABASE_URL or "", MARKER) == []
    assert file_hits([settings.home], MARKER) == []
    assert postgres_hits(settings.DATABASE_URL or "", KEPT)
    assert (settings.docs_path / "notes.md").exists()  # no --remove-file

    assert main(["forget", "document", "notes.md"]) == 1
    said = capsys.readouterr()
    assert "error: nothing matched: no stored document has the id or path 'notes.md'" in said.err


def test_a_receipt_that_is_not_verified_exits_1_naming_the_store(
    capsys: pytest.CaptureFixture[str],
) -> None:
    receipt = ForgetReceipt(
        "f" * 32,
        "documents",
        "notes.md",
        datetime(2026, 3, 2, tzinfo=UTC),
        stores=[
            StoreReceipt("chunks", "Chunks (Postgres)", 4, 0),
            StoreReceipt("bm25", "BM25 entries (tantivy)", 4, 1, note="one entry left"),
        ],
        backups=[BackupHolding("rag", "rag-2026-03-01.zip", None, "1 document")],
        notes=["the files stay in the corpus folder"],
    )
    assert print_receipt(receipt, as_json=False) == 1
    said = capsys.readouterr()
    lines = said.out.splitlines()
    assert lines[0].startswith("Forgot notes.md (documents, NOT VERIFIED;")
    assert lines[2].split()[-4:] == ["4", "0", "0", "yes"]
    assert lines[3].split()[-4:] == ["4", "0", "1", "NO"]
    assert "  BM25 entries (tantivy): one entry left" in said.out
    assert "  rag/rag-2026-03-01.zip: 1 document" in said.out
    assert "Note: the files stay in the corpus folder" in said.out
    assert "error: not verified: bm25 still hold(s) part of notes.md" in said.err
