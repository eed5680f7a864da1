"""A folder of bad input next to good files: every good file is searchable, every bad
one is reported by name with a specific reason, nothing else is disturbed."""

from __future__ import annotations

import os

import dagster as dg
import pytest

from tests.support.pipeline import Harness, search_paths, write_file
from varagity.config import Settings
from varagity.services import Services, ingest_file

pytestmark = pytest.mark.integration


def _failure_messages(runs: list[dg.ExecuteInProcessResult]) -> str:
    return "\n".join(
        str(e.event_specific_data.error.message)
        for r in runs
        for e in r.all_events
        if e.event_type_value == "STEP_FAILURE"
    )


def test_bad_input_folder(make_settings, pg_url: str, model_urls: dict[str, str]) -> None:
    settings: Settings = make_settings(DATABASE_URL=pg_url, MAX_FILE_BYTES=10_000_000, **model_urls)
    docs = settings.docs_path
    write_file(docs / "good one.md", "# Lighthouses\n\nFresnel lenses focus the beam.\n")
    write_file(docs / "ünïcode dir/naïve café.txt", "Espresso crema forms from emulsified oils.\n")
    (docs / "empty.txt").write_bytes(b"")
    (docs / "blank.md").write_text("   \n\n  \t\n")
    (docs / "binary.txt").write_bytes(bytes(range(256)) * 64)
    with (docs / "huge.txt").open("wb") as handle:  # 50 MB, over the 10 MB limit set here
        handle.truncate(50 * 1024 * 1024)
    outside = docs.parent / "outside-secret.md"
    outside.write_text("top secret outside the corpus")
    os.symlink(outside, docs / "sneaky-link.md")

    h = Harness()
    first = h.tick()
    runs = h.run_requests(first)
    runs += h.run_requests(h.tick())  # the failed batch is isolated file by file
    messages = _failure_messages(runs)
    assert "binary.txt: contains NUL bytes - binary content, not text" in messages
    assert "huge.txt: 52428800 bytes is over MAX_FILE_BYTES (10000000)" in messages
    # the symlink is never a partition, and the sensor said why
    assert "sneaky-link.md" not in h.partitions()
    assert "outside the corpus" in h.reported_skips()["sneaky-link.md"]

    assert search_paths(settings, "Fresnel lenses", "bm25") == ["good one.md"]
    assert search_paths(settings, "espresso crema", "bm25") == ["ünïcode dir/naïve café.txt"]
    assert "top secret" not in " ".join(search_paths(settings, "top secret", "bm25"))
    services = Services.open(settings)
    try:
        rows = {d.relative_path: d.n_chunks for d in services.pg.list_documents()}
        # textless files are recorded as seen, with zero chunks; failed files not at all
        assert rows == {
            "good one.md": 1,
            "ünïcode dir/naïve café.txt": 1,
            "empty.txt": 0,
            "blank.md": 0,
        }
    finally:
        services.close()
    logged = [
        entry.user_message
        for r in runs
        for entry in h.instance.all_logs(r.run_id)
        if entry.level >= 30  # warnings and errors, as the UI shows them
    ]
    assert any("empty.txt has no extractable text" in m for m in logged)
    assert any("blank.md has no extractable text" in m for m in logged)
    assert any("parse failed for binary.txt" in m for m in logged)


def test_file_deleted_mid_ingest(stack_settings: Settings) -> None:
    docs = stack_settings.docs_path
    write_file(docs / "keep.md", "Keep this file about glaciers.\n")
    write_file(docs / "vanishing.md", "This file disappears before its run.\n")
    h = Harness()
    request = h.tick()
    (docs / "vanishing.md").unlink()
    runs = h.run_requests(request)
    assert "vanishing.md: no such file" in _failure_messages(runs)
    assert search_paths(stack_settings, "glaciers", "bm25") == ["keep.md"]
    h.tick()  # the folder no longer has it: its partition goes away
    assert "vanishing.md" not in h.partitions()


def test_crash_before_the_postgres_commit_leaves_nothing_half_done(
    stack_settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    from varagity.stores.vector_store import PgVectorStore

    write_file(stack_settings.docs_path / "a.md", "Tidal turbines in the strait.\n\nMore text.\n")
    services = Services.open(stack_settings)
    try:
        real = PgVectorStore.write_document

        def crash(self: PgVectorStore, *args: object, **kwargs: object) -> None:
            raise RuntimeError("simulated crash before COMMIT")

        monkeypatch.setattr(PgVectorStore, "write_document", crash)
        with pytest.raises(RuntimeError, match="simulated crash"):
            ingest_file(services, "a.md")
        assert services.pg.list_documents() == []  # no marker: the file will be redone
        assert services.bm25.count() == 0  # BM25 is written from the stored rows: none yet
        monkeypatch.setattr(PgVectorStore, "write_document", real)
        result = ingest_file(services, "a.md")
        assert services.pg.count_chunks() == result.n_chunks
        assert services.bm25.count() == result.n_chunks
        assert services.pg.awaiting_bm25() == set()
    finally:
        services.close()


def test_crash_between_the_rows_and_the_bm25_entries_is_finished_from_the_rows(
    stack_settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The rows committed, then the process died before the BM25 write: the marker is
    there (the file is not parsed again) and so is its waiting mark; writing the entries
    from the rows finishes the file, without duplicates."""
    from varagity.ingest import stages

    write_file(stack_settings.docs_path / "a.md", "Tidal turbines in the strait.\n\nMore text.\n")
    services = Services.open(stack_settings)
    try:
        real = stages.write_bm25_entries

        def crash(*args: object, **kwargs: object) -> dict[str, int]:
            raise RuntimeError("simulated crash before the BM25 write")

        monkeypatch.setattr(stages, "write_bm25_entries", crash)
        with pytest.raises(RuntimeError, match="simulated crash"):
            ingest_file(services, "a.md")
        [doc] = services.pg.list_documents()
        assert services.pg.awaiting_bm25() == {doc.doc_id}
        assert services.bm25.count() == 0
        monkeypatch.setattr(stages, "write_bm25_entries", real)
        [result] = stages.index_stored_paths(
            ["a.md"], pg=services.pg, bm25=services.bm25, force=False
        ).values()
        assert result is not None and result.written and result.doc_id == doc.doc_id
        assert services.bm25.count() == services.pg.count_chunks() == doc.n_chunks
        assert services.pg.awaiting_bm25() == set()
        # written: an ingest leaves it alone now
        [again] = stages.index_stored_paths(
            ["a.md"], pg=services.pg, bm25=services.bm25, force=False
        ).values()
        assert again is not None and not again.written
        assert services.bm25.count() == doc.n_chunks
    finally:
        services.close()
