"""The pure helpers of :mod:`varagity.pipeline` that shape ingest runs."""

from __future__ import annotations

import pytest

from varagity.pipeline import (
    PARTITION_TAG,
    RANGE_END_TAG,
    RANGE_START_TAG,
    contiguous_groups,
    ingest_batches,
    run_partitions,
)


def test_a_burst_starts_with_a_half_size_run_then_full_ones() -> None:
    items = list(range(12))
    assert [len(b) for b in ingest_batches(items, 5)] == [3, 5, 4]
    assert [len(b) for b in ingest_batches(items, 4)] == [2, 4, 4, 2]
    # every item once, in order
    assert [x for b in ingest_batches(items, 5) for x in b] == items


def test_what_fits_one_run_stays_one_run() -> None:
    assert ingest_batches([1, 2, 3], 3) == [[1, 2, 3]]
    assert ingest_batches([7], 1) == [[7]]
    assert ingest_batches([], 4) == []
    assert [len(b) for b in ingest_batches(list(range(3)), 1)] == [1, 1, 1]


def test_a_batch_size_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        ingest_batches([1], 0)


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
