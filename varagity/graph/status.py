"""The graph's size and state as its sidecars record them, for the status route and the
Prometheus gauges: entities and relations from the size summary, days and messages from
the build manifest, documents by status from the summary (as the engine counted them
when the last build ended).

Nothing here opens the engine: a scrape or a status poll costs two small JSON reads,
never a LightRAG load, and nothing couples to the engine's own file formats. The
sidecars are written by the graph build only, at the end of each build, so a build
still running (or one killed mid-way) shows as what the last build left; the status
route asks the engine for its live document statuses when the engine holds a graph.
A graph nothing has built yet reads as zeros.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from varagity.graph.base import FAILED, PENDING, PROCESSED, PROCESSING
from varagity.graph.manifest import read_manifest, read_summary

#: The engine's document statuses, in the order they are reported.
STATUSES = (PROCESSED, PENDING, PROCESSING, FAILED)


def status_counts(statuses: Mapping[str, int] | None = None) -> dict[str, int]:
    """Documents for each of :data:`STATUSES` (0 for those ``statuses`` lacks)."""
    given = statuses or {}
    return {status: int(given.get(status, 0)) for status in STATUSES}


@dataclass(frozen=True)
class GraphReading:
    """The graph's size as its sidecars record it."""

    entities: int
    relations: int
    days: int
    messages: int
    statuses: dict[str, int]
    refreshed_at: datetime | None


def read_graph(workdir: Path) -> GraphReading:
    """What the sidecars in ``workdir`` say of the graph (zeros when nothing was built).

    A summary written before statuses were recorded counts the manifest's days as
    processed (the manifest holds only days the engine processed).
    """
    manifest = read_manifest(workdir)
    summary = read_summary(workdir)
    days = len(manifest)
    messages = sum(len(entry.message_guids) for entry in manifest.values())
    if summary is None:
        return GraphReading(0, 0, days, messages, status_counts({PROCESSED: days}), None)
    statuses = summary.statuses if summary.statuses is not None else {PROCESSED: days}
    try:
        refreshed_at: datetime | None = datetime.fromisoformat(summary.refreshed_at)
    except ValueError:
        refreshed_at = None
    return GraphReading(
        entities=summary.entities,
        relations=summary.relations,
        days=days,
        messages=messages,
        statuses=status_counts(statuses),
        refreshed_at=refreshed_at,
    )
