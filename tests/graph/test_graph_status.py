"""The graph's size as its sidecars record it (what the status route and the gauges read):
the summary's per-status document counts, and older or damaged summaries."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from varagity.graph.folder import held_by_source
from varagity.graph.manifest import (
    SUMMARY_FILE,
    ManifestEntry,
    read_summary,
    summarize,
    write_manifest,
    write_summary,
)
from varagity.graph.status import read_graph

MANIFEST = {
    "t1::2026-03-02": ManifestEntry("a", ("g1", "g2"), "Maya", "2026-03-02", "phone/chat.db"),
    "t1::2026-03-05": ManifestEntry("b", ("g3",), "Maya", "2026-03-05", "phone/chat.db"),
    "t2::2026-03-01..2026-03-03": ManifestEntry(
        "c", ("g4", "g5", "g6"), "Book club", "2026-03-01..2026-03-03", "phone/chat.db"
    ),
    "t3::2026-01-09": ManifestEntry("d", ("g7",), "Dad", "2026-01-09", "old.db"),
}


def test_nothing_built_reads_as_zeros(tmp_path: Path) -> None:
    reading = read_graph(tmp_path / "missing")
    assert (reading.entities, reading.relations, reading.days, reading.messages) == (0, 0, 0, 0)
    assert reading.statuses == {"processed": 0, "pending": 0, "processing": 0, "failed": 0}
    assert reading.refreshed_at is None


def test_the_summary_carries_documents_by_status(tmp_path: Path) -> None:
    write_manifest(tmp_path, MANIFEST)
    statuses = {"processed": 4, "failed": 2, "pending": 1}
    write_summary(tmp_path, summarize(MANIFEST, entities=11, relations=6, statuses=statuses))
    summary = read_summary(tmp_path)
    assert summary is not None and summary.statuses == statuses
    reading = read_graph(tmp_path)
    assert (reading.entities, reading.relations, reading.days, reading.messages) == (11, 6, 4, 7)
    assert reading.statuses == {"processed": 4, "pending": 1, "processing": 0, "failed": 2}
    assert reading.refreshed_at is not None


@pytest.mark.parametrize("statuses", [None, {"processed": -1}, {"processed": "4"}, [4]])
def test_a_summary_without_usable_statuses_counts_the_manifest_as_processed(
    tmp_path: Path, statuses: object
) -> None:
    write_manifest(tmp_path, MANIFEST)
    write_summary(tmp_path, summarize(MANIFEST, entities=3, relations=1))
    payload = json.loads((tmp_path / SUMMARY_FILE).read_text())
    assert "statuses" not in payload  # a summary written before statuses were recorded
    if statuses is not None:
        payload["statuses"] = statuses
        (tmp_path / SUMMARY_FILE).write_text(json.dumps(payload))
    summary = read_summary(tmp_path)
    assert summary is not None and summary.statuses is None and summary.entities == 3
    assert read_graph(tmp_path).statuses["processed"] == 4


def test_what_the_graph_holds_of_each_archive() -> None:
    held = held_by_source(MANIFEST)
    phone = held["phone/chat.db"]
    assert (phone.days, phone.threads, phone.messages) == (3, 2, 6)
    assert (phone.first_day, phone.last_day) == ("2026-03-01", "2026-03-05")
    assert (held["old.db"].days, held["old.db"].first_day) == (1, "2026-01-09")
