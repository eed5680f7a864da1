"""The pure helpers of :mod:`varagity.pipeline` that shape ingest runs."""

from __future__ import annotations

from datetime import date

import pytest

from varagity.pipeline import (
    ANSWER_EVAL_JOB,
    BACKUP_ASSET,
    BACKUP_JOB,
    CORPUS_TAG,
    GRAPH_BUILD_JOB,
    GRAPH_FIRST_DAY,
    GRAPH_REBUILD_ASSET,
    GRAPH_REBUILD_JOB,
    GRAPH_RESET_JOB,
    GRAPH_STALENESS_JOB,
    INGEST_JOB,
    PARTITION_TAG,
    RANGE_END_TAG,
    RANGE_START_TAG,
    REINGEST_TAG,
    RESTORE_JOB,
    SOURCE_TAG,
    STAGE_TAG,
    AnswerFigures,
    answer_figures_line,
    backup_progress_line,
    contiguous_groups,
    corpus_of_run,
    graph_last_day,
    graph_rebuild_bounds,
    graph_rebuild_range,
    ingest_batches,
    parse_answer_figures,
    parse_answer_question,
    parse_backup_progress,
    run_partitions,
    span_in_range,
)


def test_a_burst_starts_with_two_short_runs_then_full_ones() -> None:
    items = list(range(12))
    assert [len(b) for b in ingest_batches(items, 5)] == [1, 3, 5, 3]
    assert [len(b) for b in ingest_batches(items, 4)] == [1, 3, 4, 4]
    assert [len(b) for b in ingest_batches(list(range(1000)), 200)] == [12, 112] + [200] * 4 + [76]
    assert [len(b) for b in ingest_batches(list(range(201)), 200)] == [12, 112, 77]
    assert [len(b) for b in ingest_batches(items, 1)] == [1] * 12
    # every item once, in order
    for size in (1, 2, 3, 4, 5, 11):
        assert [x for b in ingest_batches(items, size) for x in b] == items


def test_what_fits_one_run_stays_one_run() -> None:
    assert ingest_batches([1, 2, 3], 3) == [[1, 2, 3]]
    assert ingest_batches([7], 1) == [[7]]
    assert ingest_batches([], 4) == []
    assert [len(b) for b in ingest_batches(list(range(3)), 1)] == [1, 1, 1]


def test_a_batch_size_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        ingest_batches([1], 0)
    with pytest.raises(ValueError, match="max_weight must be at least 1"):
        ingest_batches([1, 2], 5, weight=lambda x: x, max_weight=0)


def test_runs_are_also_cut_by_the_bytes_of_their_files() -> None:
    # sizes in MiB-like units; a run holds at most 10 of them
    sizes = [4, 4, 4, 1, 1, 1, 1, 25, 3, 3]
    runs = ingest_batches(sizes, 200, weight=lambda s: s, max_weight=10)
    assert runs == [[4, 4], [4, 1, 1, 1, 1], [25], [3, 3]]
    assert all(sum(r) <= 10 or len(r) == 1 for r in runs)  # a heavier file runs alone
    # the count still cuts, and the byte cut only ever splits the count's runs
    many = [1] * 1000
    by_count = ingest_batches(many, 200)
    by_both = ingest_batches(many, 200, weight=lambda s: s, max_weight=100)
    assert [len(b) for b in by_both] == [12, 100, 12] + [100] * 8 + [76]
    assert [x for b in by_both for x in b] == many
    assert len(by_both) > len(by_count)
    # light files: the byte cap changes nothing
    assert ingest_batches(many, 200, weight=lambda s: s, max_weight=10**6) == by_count


def test_contiguous_groups_break_at_gaps_and_at_the_limit() -> None:
    position = {k: i for i, k in enumerate("abcdefg")}
    assert contiguous_groups(list("abcefg"), position, 2) == [["a", "b"], ["c"], ["e", "f"], ["g"]]


def test_a_runs_partitions_come_from_its_tags() -> None:
    ordered = ["a.md", "b.md", "c.md", "d.md"]
    assert run_partitions({PARTITION_TAG: "c.md"}, ordered) == ["c.md"]
    assert run_partitions({RANGE_START_TAG: "b.md", RANGE_END_TAG: "d.md"}, ordered) == [
        "b.md",
        "c.md",
        "d.md",
    ]
    # a range named backwards is the same range; a deleted end leaves the ends named
    assert run_partitions({RANGE_START_TAG: "c.md", RANGE_END_TAG: "a.md"}, ordered) == [
        "a.md",
        "b.md",
        "c.md",
    ]
    assert run_partitions({RANGE_START_TAG: "b.md", RANGE_END_TAG: "x.md"}, ordered) == [
        "b.md",
        "x.md",
    ]
    assert run_partitions({"other": "tag"}, ordered) is None


def test_runs_are_told_apart_by_the_corpus_they_write() -> None:
    assert corpus_of_run(INGEST_JOB, {PARTITION_TAG: "a.md"}) == "rag"
    assert corpus_of_run("contextualize_documents", {}) == "rag"
    # the API's ingest backfills run as Dagster's asset job, tagged by their source
    backfill = {"dagster/backfill": "abc", SOURCE_TAG: "api"}
    assert corpus_of_run("__ASSET_JOB", backfill) == "rag"
    assert corpus_of_run("__ASSET_JOB", {"dagster/backfill": "x", REINGEST_TAG: "true"}) == "rag"
    assert corpus_of_run(GRAPH_BUILD_JOB, {PARTITION_TAG: "phone%2Fchat.db"}) == "graph"
    assert corpus_of_run(RESTORE_JOB, {CORPUS_TAG: "graph"}) == "graph"
    assert corpus_of_run(BACKUP_JOB, {PARTITION_TAG: "rag", STAGE_TAG: "backup"}) == "rag"
    # an export materialized from the Dagster UI: only its asset and partition say so
    assert corpus_of_run("__ASSET_JOB", {PARTITION_TAG: "graph"}, (BACKUP_ASSET,)) == "graph"
    # a reset and a rebuild write the graph; so does a rebuild backfilled from the UI
    assert corpus_of_run(GRAPH_RESET_JOB, {SOURCE_TAG: "api"}) == "graph"
    assert corpus_of_run(GRAPH_REBUILD_JOB, {RANGE_START_TAG: "2026-03-03"}) == "graph"
    ui_backfill = {"dagster/backfill": "x", SOURCE_TAG: "ui"}
    assert corpus_of_run("__ASSET_JOB", ui_backfill, (GRAPH_REBUILD_ASSET,)) == "graph"
    assert corpus_of_run(GRAPH_STALENESS_JOB, {STAGE_TAG: "staleness"}) is None
    # an answer evaluation reads the documents throughout: no restore goes beside it
    assert corpus_of_run(ANSWER_EVAL_JOB, {SOURCE_TAG: "api"}) == "rag"
    # evaluation and staleness runs write neither corpus; neither does another tool's backfill
    assert corpus_of_run("evaluate_index", {}) is None
    assert corpus_of_run("refresh_corpus_staleness", {STAGE_TAG: "staleness"}) is None
    assert corpus_of_run("__ASSET_JOB", {"dagster/backfill": "x"}) is None


def test_backup_progress_lines_read_back() -> None:
    line = backup_progress_line("chunks", 1200, 5000)
    assert line == "backup progress: chunks 1200/5000"
    assert parse_backup_progress(line) == ("chunks", 1200, 5000)
    assert parse_backup_progress(backup_progress_line("graph files", 3, 9)) == ("graph files", 3, 9)
    for other in ("backup progress: chunks", "backup progress: 1/2", "graph build: 1/2", "x 1/2"):
        assert parse_backup_progress(other) is None


def test_answer_evaluation_lines_read_back() -> None:
    figures = AnswerFigures(40, 0.95, 0.9, 0.975, 1.0, 0, 3612.5)
    line = answer_figures_line(figures)
    assert line.startswith("answer eval figures: {")
    assert parse_answer_figures(line) == figures
    for other in ("answer eval figures: {", 'answer eval figures: {"n": 1}', "figures: {}"):
        assert parse_answer_figures(other) is None
    # a question line as varagity.eval.answers words it; the feedback suite's are not one
    asked = "  [3/40] q07: facts 2/2, citations 1/1 valid (first token 3.1s, answer 6.0s)"
    assert parse_answer_question(asked) == (3, 40, "q07")
    for other in ("feedback:  [1/3] fb1: facts 0/0", "graph build: 1/2", "[x/2] q: y"):
        assert parse_answer_question(other) is None


TODAY = date(2026, 3, 10)


def test_a_rebuild_range_is_clamped_to_the_day_partitions() -> None:
    assert graph_last_day(TODAY) == "2026-03-11"  # a day past today: zones ahead of UTC
    assert graph_rebuild_range("2026-03-03", "2026-03-04", today=TODAY) == (
        "2026-03-03",
        "2026-03-04",
    )
    # open ends, and days before the first partition or after the last
    assert graph_rebuild_range(None, None, today=TODAY) == (GRAPH_FIRST_DAY, "2026-03-11")
    assert graph_rebuild_range("1998-05-01", "2030-01-01", today=TODAY) == (
        GRAPH_FIRST_DAY,
        "2026-03-11",
    )
    assert graph_rebuild_range("2026-03-03", None, today=TODAY) == ("2026-03-03", "2026-03-11")
    with pytest.raises(ValueError, match="comes after"):
        graph_rebuild_range("2026-03-05", "2026-03-04", today=TODAY)
    with pytest.raises(ValueError):
        graph_rebuild_range("2026-3-5", None, today=TODAY)


def test_the_first_partition_and_a_range_reaching_today_are_open() -> None:
    assert graph_rebuild_bounds("2026-03-03", "2026-03-04", today=TODAY) == (
        "2026-03-03",
        "2026-03-04",
    )
    assert graph_rebuild_bounds(GRAPH_FIRST_DAY, "2026-03-04", today=TODAY) == (
        None,
        "2026-03-04",
    )
    assert graph_rebuild_bounds("2026-03-03", "2026-03-10", today=TODAY) == ("2026-03-03", None)
    assert graph_rebuild_bounds(GRAPH_FIRST_DAY, "2026-03-11", today=TODAY) == (None, None)


def test_a_span_meets_a_range_when_one_of_its_days_is_in_it() -> None:
    assert span_in_range("2026-03-03", "2026-03-03", "2026-03-04")
    assert not span_in_range("2026-03-02", "2026-03-03", "2026-03-04")
    assert not span_in_range("2026-03-05", "2026-03-03", "2026-03-04")
    assert span_in_range("2026-03-01..2026-03-03", "2026-03-03", None)
    assert span_in_range("2026-03-04..2026-03-09", None, "2026-03-04")
    assert span_in_range("1999-01-01", None, None)
