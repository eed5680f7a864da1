"""The build's progress line: what the engine reports and the build logs is what the
API's build routes read back (one format, one parser)."""

from __future__ import annotations

from varagity.graph.base import FAILED, PENDING, PROCESSED, PROCESSING
from varagity.graph.progress import PROGRESS_PREFIX, BuildProgress, parse_progress


def test_a_logged_line_reads_back_as_the_counts_it_was_written_from() -> None:
    progress = BuildProgress.of([PROCESSED, PENDING, PROCESSING, FAILED, PROCESSED, PENDING])
    assert progress == BuildProgress(total=6, processed=2, processing=1, pending=2, failed=1)
    line = progress.log_line()
    assert line == ("graph build: 2/6 transcripts processed, 1 processing, 2 pending, 1 failed")
    assert parse_progress(line) == progress
    assert parse_progress(PROGRESS_PREFIX + BuildProgress.of([]).line()) == BuildProgress(
        0, 0, 0, 0, 0
    )


def test_other_log_lines_are_not_progress() -> None:
    for line in (
        "graph build done in 12.0 s: 2 day(s) in, 0 out, 0 failed; 9 entities, 4 relations",
        "applying 2 new, 0 changed and 0 removed transcript day(s) to /tmp/graph",
        "2/6 transcripts processed, 1 processing, 2 pending, 1 failed",  # no prefix
        "graph build: 2/6 transcripts processed",  # truncated
        "",
    ):
        assert parse_progress(line) is None, line
