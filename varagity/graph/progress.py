"""A graph build's progress line: written by the build into its run's log, read back by
whoever follows the run (the API's build routes, through the Dagster client).

The build logs ``graph build: N/M transcripts processed, P processing, Q pending, F
failed`` whenever the engine's document statuses change. The format and its parser
live here together, so the producer and the reader cannot drift apart.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from varagity.graph.base import FAILED, PENDING, PROCESSED, PROCESSING

#: What starts every progress line of a build's log.
PROGRESS_PREFIX = "graph build: "

_LINE_RE = re.compile(
    r"(?P<processed>\d+)/(?P<total>\d+) transcripts processed, (?P<processing>\d+) processing, "
    r"(?P<pending>\d+) pending, (?P<failed>\d+) failed"
)


@dataclass(frozen=True)
class BuildProgress:
    """The transcript days the engine holds and where they stand."""

    total: int
    processed: int
    processing: int
    pending: int
    failed: int

    @classmethod
    def of(cls, statuses: Iterable[str]) -> BuildProgress:
        """Counts of engine statuses (PROCESSED / PENDING / PROCESSING / FAILED)."""
        counts = {PROCESSED: 0, PENDING: 0, PROCESSING: 0, FAILED: 0}
        for status in statuses:
            counts[status] = counts.get(status, 0) + 1
        return cls(
            total=sum(counts.values()),
            processed=counts[PROCESSED],
            processing=counts[PROCESSING],
            pending=counts[PENDING],
            failed=counts[FAILED],
        )

    def line(self) -> str:
        """The progress text without :data:`PROGRESS_PREFIX` (what the engine reports)."""
        return (
            f"{self.processed}/{self.total} transcripts processed, {self.processing} processing, "
            f"{self.pending} pending, {self.failed} failed"
        )

    def log_line(self) -> str:
        """The full line a build writes to its run's log."""
        return PROGRESS_PREFIX + self.line()


def parse_progress(message: str) -> BuildProgress | None:
    """The progress a build's log line reports; None for any other line."""
    if not message.startswith(PROGRESS_PREFIX):
        return None
    match = _LINE_RE.match(message, len(PROGRESS_PREFIX))
    if match is None:
        return None
    return BuildProgress(**{name: int(value) for name, value in match.groupdict().items()})
