"""Message-graph builds as the API shows them: Dagster runs of the graph jobs read into
:class:`~varagity_api.schemas.graph.GraphBuild`, and builds launched for archives.

Shared by the routes that launch builds (``/api/graph/builds``, an upload to
``/api/graph/sources``) and the one that lists those in flight (``/api/graph/status``);
routes import each other not at all.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from datetime import UTC, datetime
from pathlib import Path

from varagity.config import Settings
from varagity.dagster_client import (
    DagsterClient,
    DagsterError,
    GraphRun,
    GraphRunLog,
)
from varagity.graph.archives import scan_archives
from varagity.ingest.discovery import partition_key_for
from varagity_api.corpus_gate import refuse_beside
from varagity_api.deps import dagster_client
from varagity_api.errors import ApiError, dagster_error
from varagity_api.schemas.graph import (
    BuildState,
    GraphBuild,
    GraphBuildProgress,
    GraphBuildsLaunched,
)

log = logging.getLogger(__name__)

#: Dagster run status -> the state a followed run (a graph build, an export, a restore)
#: shows; a status Dagster adds later reads as running.
_STATES: dict[str, BuildState] = {
    "QUEUED": "queued",
    "NOT_STARTED": "queued",
    "STARTING": "queued",
    "STARTED": "running",
    "CANCELING": "running",
    "SUCCESS": "succeeded",
    "FAILURE": "failed",
    "CANCELED": "canceled",
}


def run_state(status: str) -> BuildState:
    """The state shown for a Dagster run status."""
    return _STATES.get(status, "running")


# An ended run's log and error never change: read them once per process.
_ENDED_KEPT = 500
_ended: OrderedDict[tuple[str, str], tuple[GraphRunLog, str | None]] = OrderedDict()
_ended_lock = threading.Lock()


def dagster_failure(exc: DagsterError) -> ApiError:
    """The HTTP error for a failed Dagster call about a graph build."""
    return dagster_error(exc, not_found="build_not_found", ended="build_ended")


def run_url(dagster_url: str, run_id: str) -> str:
    """The run's page in the Dagster UI."""
    return f"{dagster_url.rstrip('/')}/runs/{run_id}"


def _when(timestamp: float | None) -> datetime | None:
    return None if timestamp is None else datetime.fromtimestamp(timestamp, UTC)


def _details(client: DagsterClient, run: GraphRun) -> tuple[GraphRunLog, str | None]:
    """The run's log so far and, when it failed, why (cached once it has ended)."""
    key = (client.url, run.run_id)
    with _ended_lock:
        if key in _ended:
            return _ended[key]
    run_log = client.graph_run_log(run.run_id)
    error = client.run_error(run.run_id) if run.status == "FAILURE" else None
    if run.done:
        with _ended_lock:
            _ended[key] = (run_log, error)
            while len(_ended) > _ENDED_KEPT:
                _ended.popitem(last=False)
    return run_log, error


def build_of(client: DagsterClient, run: GraphRun, dagster_url: str) -> GraphBuild:
    """The wire form of a graph run: its state, progress, last log line and error.
    Blocking (it reads the run's log)."""
    run_log, error = _details(client, run)
    progress = run_log.progress
    return GraphBuild(
        run_id=run.run_id,
        kind=run.kind,
        path=run.relative_path if run.kind == "build" else None,
        state=run_state(run.status),
        status=run.status,
        done=run.done,
        source=run.source,
        created_at=datetime.fromtimestamp(run.created_at, UTC),
        started_at=_when(run.started_at),
        ended_at=_when(run.ended_at),
        progress=None
        if progress is None or progress.total == 0
        else GraphBuildProgress(
            total=progress.total,
            processed=progress.processed,
            processing=progress.processing,
            pending=progress.pending,
            failed=progress.failed,
        ),
        message=run_log.message,
        error=error,
        dagster_url=run_url(dagster_url, run.run_id),
    )


def in_flight_builds(settings: Settings) -> list[GraphBuild]:
    """The ``build_message_graph`` runs queued or running now, newest first (what
    ``GET /api/graph/status`` lists under ``building``). Blocking.

    Raises:
        DagsterError: Dagster cannot be reached or refused the request.
    """
    client = dagster_client(settings)
    return [build_of(client, run, settings.dagster_url) for run in client.in_flight_graph_builds()]


def launch_builds(settings: Settings, paths: list[str], *, source: str) -> GraphBuildsLaunched:
    """Launch one ``build_message_graph`` run per archive path (relative to
    ``GRAPH_DOCS_PATH``), tagged with ``source`` (api, upload); an archive whose build is
    already queued or running is reported in ``in_flight`` instead. Blocking (call it
    from a worker thread).

    Raises:
        DagsterError: Dagster cannot be reached or refused a launch.
    """
    refuse_beside(settings, "graph", kinds=("export", "restore"))
    client = dagster_client(settings)
    busy: dict[str, GraphRun] = {}
    for run in client.in_flight_graph_builds():  # newest first: keep the newest per archive
        if run.partition_key is not None:
            busy.setdefault(run.partition_key, run)
    launched: list[GraphBuild] = []
    waiting: list[GraphBuild] = []
    signatures = _signatures(settings.graph_docs_path, paths)
    for rel in dict.fromkeys(paths):
        key = partition_key_for(rel)
        if key in busy:
            waiting.append(build_of(client, busy[key], settings.dagster_url))
            continue
        run_id = client.launch_graph_build(key, source=source, archive_sha256=signatures.get(rel))
        log.info("graph build %s launched for %s (%s)", run_id, rel, source)
        launched.append(build_of(client, client.graph_run(run_id), settings.dagster_url))
    return GraphBuildsLaunched(launched=launched, in_flight=waiting)


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
