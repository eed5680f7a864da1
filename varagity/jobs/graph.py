"""Message-graph jobs: Dagster runs of ``build_message_graph`` (one archive each) and
``remove_graph_sources``. A build resumes where a killed or failed one stopped (the
engine's document statuses are the ledger), so *resume* is launching again. Progress is
read from the run's log (the build's ``graph build: N/M transcripts processed ...``
lines, :mod:`varagity.graph.progress`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from varagity.graph.archives import scan_archives
from varagity.graph.progress import BuildProgress, parse_progress
from varagity.ingest.discovery import partition_key_for, relative_path_for
from varagity.jobs.gate import BACKUPS, refuse_beside
from varagity.jobs.model import Run
from varagity.jobs.runs import RunJobs
from varagity.jobs.transport import RunNode
from varagity.pipeline import (
    ARCHIVE_TAG,
    GRAPH_ASSETS,
    GRAPH_BUILD_JOB,
    GRAPH_PARTITIONS,
    GRAPH_REMOVE_JOB,
    PARTITION_TAG,
    SOURCE_TAG,
    STAGE_GRAPH,
    STAGE_TAG,
)

log = logging.getLogger(__name__)

#: The jobs that write the message graph: build one archive, take removed ones out.
GRAPH_JOBS = (GRAPH_BUILD_JOB, GRAPH_REMOVE_JOB)


@dataclass(frozen=True, slots=True)
class GraphProgress:
    """What a graph run's tags and log say: the archive it builds, its latest progress
    line (parsed) and its latest log message."""

    partition_key: str | None
    path: str | None
    """The archive a build reads, relative to ``GRAPH_DOCS_PATH`` (None for a removal)."""
    build: BuildProgress | None
    message: str | None


@dataclass(frozen=True, slots=True)
class Launched:
    """The builds a launch started, and those it found already queued or running."""

    launched: list[Run[GraphProgress]]
    in_flight: list[Run[GraphProgress]]


class GraphJobs(RunJobs[GraphProgress]):
    """Launch, read, list and kill the graph's runs (builds and removals)."""

    what = "a message-graph build"

    def _owns(self, node: RunNode) -> bool:
        return node.job in GRAPH_JOBS

    def _progress(self, node: RunNode, seen: GraphProgress | None) -> GraphProgress:
        key = node.tags.get(PARTITION_TAG)
        build, message = (seen.build, seen.message) if seen else (None, None)
        for message in self._new_log_messages(node.run_id):
            build = parse_progress(message) or build
        return GraphProgress(
            partition_key=key,
            path=relative_path_for(key) if key and node.job == GRAPH_BUILD_JOB else None,
            build=build,
            message=message,
        )

    def recent(self, limit: int = 20) -> list[Run[GraphProgress]]:
        """The newest runs of the graph jobs (builds and removals), newest first."""
        return self._recent({"tags": [{"key": STAGE_TAG, "value": STAGE_GRAPH}]}, limit)

    def in_flight(self) -> list[Run[GraphProgress]]:
        """The builds queued, starting or started now (at most one per archive is
        useful: a second only waits behind the first), newest first."""
        return [self._run(node) for node in self._in_flight_nodes()]

    def _in_flight_nodes(self) -> list[RunNode]:
        nodes = self.client.in_flight_runs({"pipelineName": GRAPH_BUILD_JOB})
        return sorted(nodes, key=lambda node: -node.created_at)

    def launch(self, root: Path, paths: list[str], *, source: str) -> Launched:
        """Launch one build per archive path (relative to ``root``, ``GRAPH_DOCS_PATH``),
        tagged with ``source`` (api, upload) and the archive's content signature (which
        tells the graph-sources sensor these bytes are being built); an archive whose
        build is already queued or running is reported in ``in_flight`` instead.
        Refused beside an export or a restore of the graph. Blocking.

        Raises:
            CorpusBusy: An export or a restore of the graph is in flight.
            DagsterError: Dagster cannot be reached or refused a launch.
        """
        refuse_beside(self.client, "graph", kinds=BACKUPS)
        busy: dict[str, RunNode] = {}
        for node in self._in_flight_nodes():  # newest first: keep the newest per archive
            if PARTITION_TAG in node.tags:
                busy.setdefault(node.tags[PARTITION_TAG], node)
        launched: list[Run[GraphProgress]] = []
        waiting: list[Run[GraphProgress]] = []
        signatures = _signatures(root, paths)
        for rel in dict.fromkeys(paths):
            key = partition_key_for(rel)
            if key in busy:
                waiting.append(self._run(busy[key]))
                continue
            self.client.add_dynamic_partitions(GRAPH_PARTITIONS, GRAPH_ASSETS[0], [key])
            tags = {SOURCE_TAG: source, PARTITION_TAG: key}
            if rel in signatures:
                tags[ARCHIVE_TAG] = signatures[rel]
            run_id = self.client.launch_run(GRAPH_BUILD_JOB, tags)
            log.info("graph build %s launched for %s (%s)", run_id, rel, source)
            launched.append(self.read(run_id))
        return Launched(launched=launched, in_flight=waiting)


def _signatures(root: Path, paths: list[str]) -> dict[str, str]:
    """Each archive's content signature as it is now (what the graph-sources sensor
    compares, so it requests no second build of the same bytes); an archive that cannot
    be read is left out, and its build is launched untagged."""
    wanted = set(paths)
    signatures: dict[str, str] = {}
    for archive in scan_archives(root):
        if archive.relative_path in wanted:
            try:
                signatures[archive.relative_path] = archive.content_sha256()
            except OSError as exc:
                log.warning("cannot read %s for its signature: %s", archive.relative_path, exc)
    return signatures
