"""The workdir sidecars: atomic writes, "absent" on anything unusable, the per-archive
diff, the update after an apply, and a grown archive costing only its new day."""

from __future__ import annotations

import json
import logging
import os
from datetime import UTC
from pathlib import Path

import pytest

from tests.support.chatdb import THREADS, grow_chat_db, write_chat_db
from varagity.graph import manifest as mf
from varagity.graph.base import ApplyReport
from varagity.graph.sources import read_archive
from varagity.graph.types import GraphDiff, ThreadDay


def _day(thread: str, span: str, text: str, source: str = "a/chat.db") -> ThreadDay:
    return ThreadDay(thread, f"name of {thread}", span, text, (f"{thread}-{span}-1",), source)


def _entries(*days: ThreadDay) -> mf.Manifest:
    return {d.doc_key: mf.ManifestEntry.of(d) for d in days}


def test_manifest_round_trip(tmp_path: Path) -> None:
    entries = _entries(_day("t1", "2026-03-02", "hello"), _day("t2", "2026-03-03", "olá"))
    mf.write_manifest(tmp_path, entries)
    assert mf.read_manifest(tmp_path) == entries
    payload = json.loads((tmp_path / mf.MANIFEST_FILE).read_text(encoding="utf-8"))
    assert payload["schema_version"] == mf.MANIFEST_SCHEMA
    assert payload["documents"]["t1::2026-03-02"]["message_guids"] == ["t1-2026-03-02-1"]
    assert sorted(os.listdir(tmp_path)) == [mf.MANIFEST_FILE]  # no temp file left
    assert mf.provenance(tmp_path, "t2::2026-03-03") == entries["t2::2026-03-03"]
    assert mf.provenance(tmp_path, "t3::2026-03-03") is None


def test_a_write_that_fails_leaves_the_old_manifest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    old = _entries(_day("t1", "2026-03-02", "hello"))
    mf.write_manifest(tmp_path, old)

    def crash(src: str, dst: str) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(mf.os, "replace", crash)
    with pytest.raises(OSError, match="disk full"):
        mf.write_manifest(tmp_path, _entries(_day("t9", "2026-03-09", "new")))
    monkeypatch.undo()
    assert mf.read_manifest(tmp_path) == old
    assert sorted(os.listdir(tmp_path)) == [mf.MANIFEST_FILE]


@pytest.mark.parametrize(
    "content",
    [
        "{not json",
        json.dumps({"schema_version": 99, "documents": {}}),
        json.dumps({"documents": {}}),
        json.dumps([1, 2]),
        json.dumps({"schema_version": 1, "documents": {"k::d": {"content_sha256": "x"}}}),
        json.dumps({"schema_version": 1, "documents": "nope"}),
    ],
    ids=["corrupt", "other-version", "no-version", "not-an-object", "bad-entry", "bad-docs"],
)
def test_an_unusable_manifest_reads_as_absent(
    tmp_path: Path, content: str, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / mf.MANIFEST_FILE).write_text(content, encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="varagity.graph.manifest"):
        assert mf.read_manifest(tmp_path) == {}
    assert "treating it as absent" in caplog.text


def test_a_missing_manifest_is_empty_without_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="varagity.graph.manifest"):
        assert mf.read_manifest(tmp_path / "never-built") == {}
        assert mf.read_summary(tmp_path / "never-built") is None
    assert caplog.text == ""


def test_diff_new_changed_removed_for_one_archive() -> None:
    kept, grown = _day("t1", "2026-03-02", "same"), _day("t1", "2026-03-03", "before")
    gone = _day("t2", "2026-03-02", "deleted later")
    others = _day("t3", "2026-03-02", "another archive's", source="b/chat.db")
    manifest = _entries(kept, grown, gone, others)
    now_grown = _day("t1", "2026-03-03", "before, and after")
    fresh = _day("t1", "2026-03-04", "a new day")
    result = mf.diff([kept, now_grown, fresh], manifest, source="a/chat.db")
    assert result.new == (fresh,)
    assert result.changed == (now_grown,)
    assert result.removed == (gone.doc_key,)  # b/chat.db's day is not this archive's
    assert mf.diff([kept, grown, gone], manifest, source="a/chat.db").empty
    assert mf.diff([], {}, source="a/chat.db").empty


def test_a_day_another_archive_owns_is_left_to_it(caplog: pytest.LogCaptureFixture) -> None:
    owned = _day("t1", "2026-03-02", "from b", source="b/chat.db")
    same_key = _day("t1", "2026-03-02", "from a, differently")
    with caplog.at_level(logging.WARNING, logger="varagity.graph.manifest"):
        result = mf.diff([same_key], _entries(owned), source="a/chat.db")
    assert result.empty
    assert "already belongs to b/chat.db" in caplog.text
    with pytest.raises(ValueError, match="rendered from"):
        mf.diff([owned], {}, source="a/chat.db")


def test_the_manifest_records_only_what_was_applied(tmp_path: Path) -> None:
    kept = _day("t1", "2026-03-01", "kept")
    old_changed = _day("t1", "2026-03-02", "old")
    old_failed_change = _day("t1", "2026-03-03", "old too")
    gone = _day("t2", "2026-03-02", "gone")
    mf.write_manifest(tmp_path, _entries(kept, old_changed, old_failed_change, gone))
    changed = _day("t1", "2026-03-02", "new text")
    failed_change = _day("t1", "2026-03-03", "new text too")
    new_ok, new_failed = _day("t3", "2026-03-05", "fine"), _day("t3", "2026-03-06", "boom")
    diff = GraphDiff(
        new=(new_ok, new_failed), changed=(changed, failed_change), removed=(gone.doc_key,)
    )
    report = ApplyReport(
        inserted=(new_ok.doc_key, changed.doc_key),
        deleted=(changed.doc_key, failed_change.doc_key, gone.doc_key),
        failed={new_failed.doc_key: "LLM timeout", failed_change.doc_key: "LLM timeout"},
    )
    updated = mf.update_after_apply(tmp_path, diff, report)
    assert updated == mf.read_manifest(tmp_path)
    assert updated == _entries(kept, changed, new_ok)
    # the next diff redoes exactly what failed
    again = mf.diff([kept, changed, failed_change, new_ok, new_failed], updated, source="a/chat.db")
    assert again.new == (failed_change, new_failed)
    assert again.changed == () and again.removed == ()
    with pytest.raises(ValueError, match="does not hold"):
        mf.record_apply(updated, GraphDiff(), ApplyReport(inserted=("x::2026-01-01",)))


def test_summary_round_trip_and_absent_when_unusable(tmp_path: Path) -> None:
    entries = _entries(_day("t1", "2026-03-02", "a"), _day("t2", "2026-03-02", "b"))
    summary = mf.summarize(entries, entities=12, relations=7)
    assert (summary.docs, summary.message_guids) == (2, 2)
    mf.write_summary(tmp_path, summary)
    assert mf.read_summary(tmp_path) == summary
    path = tmp_path / mf.SUMMARY_FILE
    path.write_text(json.dumps({**json.loads(path.read_text()), "schema_version": 2}))
    assert mf.read_summary(tmp_path) is None
    path.write_text(json.dumps({"schema_version": 1, "entities": -1}))
    assert mf.read_summary(tmp_path) is None


def test_a_grown_archive_costs_exactly_its_new_day(tmp_path: Path) -> None:
    root, workdir = tmp_path / "graph-docs", tmp_path / "workdir"
    archive = write_chat_db(root)
    first = read_archive(root, "chat.db", tz=UTC)
    initial = mf.diff(first, mf.read_manifest(workdir), source="chat.db")
    assert len(initial.new) == len(first) and not initial.changed and not initial.removed
    everything = tuple(d.doc_key for d in initial.new)
    mf.update_after_apply(workdir, initial, ApplyReport(inserted=everything))
    assert mf.diff(
        read_archive(root, "chat.db", tz=UTC), mf.read_manifest(workdir), source="chat.db"
    ).empty

    grown = grow_chat_db(archive)
    assert grown.days == archive.days + 1
    later = mf.diff(
        read_archive(root, "chat.db", tz=UTC), mf.read_manifest(workdir), source="chat.db"
    )
    assert [d.doc_key for d in later.new] == [f"{THREADS['maya'].guid}::2026-03-09"]
    assert later.changed == () and later.removed == ()
    assert {r.guid for r in grown.wal_rows} == set(later.new[0].message_guids)
