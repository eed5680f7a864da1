"""Message-graph jobs: Dagster runs of ``build_message_graph`` (one archive each),
``remove_graph_sources``, ``reset_message_graph`` (the graph emptied, its archives kept)
and ``rebuild_message_graph`` (a range of days re-extracted from the archives). A build
resumes where a killed or failed one stopped (the engine's document statuses are the
ledger), so *resume* is launching again. Progress is read from the run's log (the
build's ``graph build: N/M transcripts processed ...`` lines,
:mod:`varagity.graph.progress`).

What a build request targets (:func:`build_targets`) is decided here too, for the API
and the command line alike.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path

from varagity.graph.archives import scan_archives
from varagity.graph.progress import BuildProgress, parse_progress
from varagity.graph.sources.base import UnsupportedArchiveError
from varagity.graph.sources.registry import is_companion, rejections
from varagity.ingest.discovery import partition_key_for, relative_path_for, resolve_in_corpus
from varagity.jobs.gate import BACKUPS, refuse_beside
from varagity.jobs.model import Kind, Run, run_kind
from varagity.jobs.runs import RunJobs
from varagity.jobs.transport import RunNode
from varagity.pipeline import (
    ARCHIVE_TAG,
    GRAPH_ASSETS,
    GRAPH_BUILD_JOB,
    GRAPH_PARTITIONS,
    GRAPH_REBUILD_JOB,
    GRAPH_REMOVE_JOB,
    GRAPH_RESET_JOB,
    PARTITION_TAG,
    RANGE_END_TAG,
    RANGE_START_TAG,
    REBUILD_ALL_TAG,
    SOURCE_TAG,
    STAGE_GRAPH,
    STAGE_TAG,
    graph_last_day,
    graph_rebuild_range,
)
from varagity.records import normalize_relative_path

log = logging.getLogger(__name__)

#: The jobs that write the message graph: build one archive, take removed ones out,
#: empty the graph, re-extract a range of days.
GRAPH_JOBS = (GRAPH_BUILD_JOB, GRAPH_REMOVE_JOB, GRAPH_RESET_JOB, GRAPH_REBUILD_JOB)
#: The kinds of the graph's runs (a rebuild backfilled from the Dagster UI runs as
#: Dagster's asset job: its asset says what it is).
GRAPH_KINDS: tuple[Kind, ...] = ("build", "remove", "reset", "rebuild")
#: The kinds listed as building (the status route's ``building``).
BUILDING_KINDS: tuple[Kind, ...] = ("build", "rebuild", "reset")
#: What a build or a rebuild is refused beside: an export or restore, or a reset (a
#: reset is refused beside any run of the graph).
BESIDE_A_BUILD: tuple[Kind, ...] = (*BACKUPS, "reset")


@dataclass(frozen=True, slots=True)
class GraphProgress:
    """What a graph run's tags and log say: the archive it builds, its latest progress
    line (parsed) and its latest log message."""

    partition_key: str | None
    path: str | None
    """The archive a build reads, relative to ``GRAPH_DOCS_PATH`` (None for the others)."""
    build: BuildProgress | None
    message: str | None
    first_day: str | None = None
    """A rebuild's first day partition (None for a rebuild of every day, and the others)."""
    last_day: str | None = None
    """A rebuild's last day partition."""


@dataclass(frozen=True, slots=True)
class Launched:
    """The builds a launch started, and those it found already queued or running."""

    launched: list[Run[GraphProgress]]
    in_flight: list[Run[GraphProgress]]


def _rebuild_days(node: RunNode) -> tuple[str | None, str | None]:
    """A rebuild run's first and last day partition (None, None: every day)."""
    tags = node.tags
    if tags.get(REBUILD_ALL_TAG) == "true":
        return None, None
    if tags.get(RANGE_START_TAG) and tags.get(RANGE_END_TAG):
        return tags[RANGE_START_TAG], tags[RANGE_END_TAG]
    key = tags.get(PARTITION_TAG)
    return key, key


class GraphJobs(RunJobs[GraphProgress]):
    """Launch, read, list and kill the graph's runs (builds, removals, resets and
    rebuilds)."""

    what = "a message-graph build"

    def _owns(self, node: RunNode) -> bool:
        return node.job in GRAPH_JOBS or run_kind(node.job, node.assets) in GRAPH_KINDS

    def _progress(self, node: RunNode, seen: GraphProgress | None) -> GraphProgress:
        key = node.tags.get(PARTITION_TAG)
        build, message = (seen.build, seen.message) if seen else (None, None)
        for message in self._new_log_messages(node.run_id):
            build = parse_progress(message) or build
        rebuild = run_kind(node.job, node.assets) == "rebuild"
        first, last = _rebuild_days(node) if rebuild else (None, None)
        return GraphProgress(
            partition_key=key,
            path=relative_path_for(key) if key and node.job == GRAPH_BUILD_JOB else None,
            build=build,
            message=message,
            first_day=first,
            last_day=last,
        )

    def recent(self, limit: int = 20) -> list[Run[GraphProgress]]:
        """The newest runs of the graph jobs, newest first."""
        return self._recent({"tags": [{"key": STAGE_TAG, "value": STAGE_GRAPH}]}, limit)

    def in_flight(self) -> list[Run[GraphProgress]]:
        """The builds, rebuilds and resets queued, starting or started now (at most one
        per archive is useful: a second only waits behind the first), newest first."""
        return [self._run(node) for node in self._in_flight_nodes(BUILDING_KINDS)]

    def _in_flight_nodes(self, kinds: Sequence[Kind] = ("build",)) -> list[RunNode]:
        nodes = [
            node
            for node in self.client.in_flight_runs()
            if run_kind(node.job, node.assets) in kinds
        ]
        return sorted(nodes, key=lambda node: -node.created_at)

    def launch(self, root: Path, paths: list[str], *, source: str) -> Launched:
        """Launch one build per archive path (relative to ``root``, ``GRAPH_DOCS_PATH``),
        tagged with ``source`` (api, upload) and the archive's content signature (which
        tells the graph-sources sensor these bytes are being built); an archive whose
        build is already queued or running is reported in ``in_flight`` instead.
        Refused beside an export, a restore or a reset of the graph. Blocking.

        Raises:
            CorpusBusy: An export, a restore or a reset of the graph is in flight.
            DagsterError: Dagster cannot be reached or refused a launch.
        """
        refuse_beside(self.client, "graph", kinds=BESIDE_A_BUILD)
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

    def launch_rebuild(
        self,
        first: str | None = None,
        last: str | None = None,
        *,
        held: tuple[str, str] | None = None,
        source: str,
        today: date | None = None,
    ) -> Launched:
        """Launch a rebuild: every day of the graph's archives from ``first`` to
        ``last`` (``YYYY-MM-DD``) re-extracted, the other days left as they are; both
        ``None``: every day of every archive (the day partitions it names are ``held``,
        the first and last day the graph holds now, so Dagster records no
        materialization for the years before them). A rebuild of the same days already
        queued or running is reported in ``in_flight`` instead. Refused beside an
        export, a restore or a reset of the graph. Blocking.

        Raises:
            ValueError: A day is not ``YYYY-MM-DD``, or ``first`` comes after ``last``.
            CorpusBusy: An export, a restore or a reset of the graph is in flight.
            DagsterError: Dagster cannot be reached or refused the launch.
        """
        today = today or datetime.now(UTC).date()
        every_day = first is None and last is None
        if not every_day:
            start, end = graph_rebuild_range(first, last, today=today)
        elif held:
            start, end = graph_rebuild_range(*held, today=today)
        else:  # a graph that holds nothing: the run names the last day partition
            start = end = graph_last_day(today)
        refuse_beside(self.client, "graph", kinds=BESIDE_A_BUILD)
        wanted = (None, None) if every_day else (start, end)
        for node in self._in_flight_nodes(("rebuild",)):
            if _rebuild_days(node) == wanted:
                return Launched(launched=[], in_flight=[self._run(node)])
        tags = {SOURCE_TAG: source, RANGE_START_TAG: start, RANGE_END_TAG: end}
        if every_day:
            tags[REBUILD_ALL_TAG] = "true"
        run_id = self.client.launch_run(GRAPH_REBUILD_JOB, tags)
        what = "every day" if every_day else f"days {start}..{end}"
        log.info("graph rebuild %s launched for %s (%s)", run_id, what, source)
        return Launched(launched=[self.read(run_id)], in_flight=[])

    def launch_reset(self, *, source: str) -> Run[GraphProgress]:
        """Launch a reset: the graph's working directory and sidecars emptied, its stale
        flag cleared, the archives kept. Refused beside any other run of the graph (a
        build, a rebuild, a removal, an export, a restore, a reset). Blocking.

        Raises:
            CorpusBusy: A run of the graph is in flight.
            DagsterError: Dagster cannot be reached or refused the launch.
        """
        refuse_beside(self.client, "graph")
        run_id = self.client.launch_run(GRAPH_RESET_JOB, {SOURCE_TAG: source})
        log.info("graph reset %s launched (%s)", run_id, source)
        return self.read(run_id)


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


class BuildTargetsRefused(ValueError):
    """A build request that names nothing buildable: ``code`` is ``no_archives`` (the
    folder holds no supported archive) or ``invalid_paths`` (naming every path that is
    not a supported archive, and why)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def build_targets(root: Path, paths: Sequence[str] | None) -> list[str]:
    """The archives a build request targets, relative to ``root`` (``GRAPH_DOCS_PATH``)
    and sorted; ``None`` stands for every supported archive, a folder for the supported
    archives below it. Blocking (it reads each candidate's header).

    Raises:
        BuildTargetsRefused: ``invalid_paths`` naming every path that is not a supported
            archive of the folder; ``no_archives`` when the folder holds none at all.
    """
    archives = {a.relative_path: a for a in scan_archives(root)}
    verdicts: dict[str, str | None] = {}

    def refused(rel: str) -> str | None:
        if rel not in verdicts:
            path = archives[rel].path
            found = rejections(path)
            verdicts[rel] = UnsupportedArchiveError(path, found).reason if found else None
        return verdicts[rel]

    if paths is None:
        supported = [rel for rel in archives if refused(rel) is None]
        if not supported:
            raise BuildTargetsRefused(
                "no_archives",
                f"Nothing to build: the message folder {root} holds no supported archive "
                "(an iMessage chat.db, with its -wal and -shm).",
            )
        return sorted(supported)
    chosen: dict[str, None] = {}
    problems: list[str] = []
    for raw in paths:
        if "\x00" in raw:
            problems.append(f"{raw!r}: a path cannot contain a NUL character")
            continue
        try:
            rel = normalize_relative_path(raw)
            absolute = resolve_in_corpus(root, rel)
        except ValueError:
            problems.append(f"{raw!r}: not a path inside the message folder {root}")
            continue
        if rel in archives:
            why = refused(rel)
            if why is None:
                chosen[rel] = None
            else:
                problems.append(f"{raw!r}: {why}")
            continue
        try:
            is_dir, is_file = absolute.is_dir(), absolute.is_file()
        except OSError as exc:  # a name too long, a folder we may not enter...
            problems.append(f"{raw!r}: cannot be read ({exc.strerror})")
            continue
        if is_dir:
            below = [a for a in archives if a.startswith(f"{rel}/") and refused(a) is None]
            if below:
                chosen.update(dict.fromkeys(below))
            else:
                problems.append(f"{raw!r}: the folder holds no supported message archive")
        elif is_file and is_companion(absolute):
            problems.append(
                f"{raw!r}: part of the archive beside it (build the database it belongs to)"
            )
        elif is_file:
            problems.append(
                f"{raw!r}: never read as an archive (hidden files and the varagity-exports "
                "folder are not looked at)"
            )
        else:
            problems.append(f"{raw!r}: no such archive or folder in {root}")
    if problems:
        raise BuildTargetsRefused(
            "invalid_paths",
            f"{len(problems)} path(s) cannot be built: " + "; ".join(problems),
        )
    return sorted(chosen)
