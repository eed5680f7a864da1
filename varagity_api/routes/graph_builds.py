"""``/api/graph/builds``: launch, follow and kill message-graph builds (Dagster runs of
``build_message_graph``, one archive per run, over GraphQL).

A build resumes where a killed or failed one stopped (the engine's document statuses
are the ledger), so *resume* is launching again. Progress is read from the run's log
(the build's ``graph build: N/M transcripts processed ...`` lines,
:mod:`varagity.graph.progress`); ``/events`` streams it as SSE: ``progress`` whenever it
changes, then ``done``, or an in-band ``error``. The launch goes through
:class:`~varagity.jobs.graph.GraphJobs`; reading, following and killing a build are
routes of :func:`~varagity_api.job_routes.add_job_routes`.
"""

from __future__ import annotations

from fastapi import APIRouter, Depends, Query
from starlette.concurrency import run_in_threadpool

from varagity.config import Settings
from varagity.graph.archives import scan_archives
from varagity.graph.sources.base import UnsupportedArchiveError
from varagity.graph.sources.registry import is_companion, rejections
from varagity.ingest.discovery import resolve_in_corpus
from varagity.jobs import DagsterError
from varagity.jobs.graph import GraphJobs
from varagity.records import normalize_relative_path
from varagity_api.deps import SettingsDep, dagster_client, require_graph_enabled
from varagity_api.errors import DAGSTER_DOWN, DAGSTER_FAILED, ApiError, dagster_error
from varagity_api.job_routes import Job, add_job_routes
from varagity_api.schemas.common import ErrorBody
from varagity_api.schemas.graph import (
    GraphBuild,
    GraphBuildList,
    GraphBuildRequest,
    GraphBuildsLaunched,
    build_from,
    launched_from,
)

router = APIRouter(
    prefix="/graph/builds",
    tags=["graph"],
    dependencies=[Depends(require_graph_enabled)],
    responses={403: {"model": ErrorBody, "description": "GRAPH_ENABLED is false."}},
)


def dagster_failure(exc: DagsterError) -> ApiError:
    """The HTTP error for a failed Dagster call about a graph build."""
    return dagster_error(exc, not_found="build_not_found", ended="build_ended")


def build_targets(settings: Settings, paths: list[str] | None) -> list[str]:
    """The archives a build request targets, relative to ``GRAPH_DOCS_PATH`` and
    sorted; a folder stands for the supported archives below it. Blocking (it reads
    each candidate's header).

    Raises:
        ApiError: 422 naming every path that is not a supported archive of the folder;
            409 when the folder holds no supported archive at all.
    """
    root = settings.graph_docs_path
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
            raise ApiError(
                409,
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
        raise ApiError(
            422,
            "invalid_paths",
            f"{len(problems)} path(s) cannot be built: " + "; ".join(problems),
        )
    return sorted(chosen)


@router.post(
    "",
    status_code=202,
    response_model=GraphBuildsLaunched,
    responses={
        409: {
            "model": ErrorBody,
            "description": "No supported archive to build, or an export or restore of the "
            "graph is in flight (corpus_busy).",
        },
        422: {"model": ErrorBody, "description": "Some paths are not supported archives."},
        502: DAGSTER_FAILED,
        503: DAGSTER_DOWN,
    },
)
async def launch_graph_builds(
    body: GraphBuildRequest, settings: SettingsDep
) -> GraphBuildsLaunched:
    """Build (or resume building) archives of ``GRAPH_DOCS_PATH``, one run each; an
    archive whose build is already queued or running is reported, not launched again."""
    targets = await run_in_threadpool(build_targets, settings, body.paths)
    jobs = GraphJobs(dagster_client(settings))
    try:
        launched = await run_in_threadpool(
            jobs.launch, settings.graph_docs_path, targets, source="api"
        )
    except DagsterError as exc:
        raise dagster_failure(exc) from exc
    return launched_from(launched)


@router.get("", response_model=GraphBuildList, responses={502: DAGSTER_FAILED, 503: DAGSTER_DOWN})
async def list_graph_builds(
    settings: SettingsDep, limit: int = Query(default=20, ge=1, le=100)
) -> GraphBuildList:
    """Recent build and removal runs, newest first."""

    def read() -> GraphBuildList:
        runs = GraphJobs(dagster_client(settings)).recent(limit)
        return GraphBuildList(builds=[build_from(run) for run in runs])

    try:
        return await run_in_threadpool(read)
    except DagsterError as exc:
        raise dagster_failure(exc) from exc


def _build(run_id: str, settings: SettingsDep) -> Job:
    jobs = GraphJobs(dagster_client(settings))
    return Job(run_id, lambda: jobs.read(run_id), lambda: jobs.kill(run_id))


add_job_routes(
    router,
    "/{run_id}",
    job_of=_build,
    view=build_from,
    model=GraphBuild,
    failure=dagster_failure,
    name="graph_build",
    what="graph build",
    not_found="No graph build has this run id.",
    read_doc="A build's state, its days processed so far, and its error if it failed.",
    events_doc="""Stream a build: ``progress`` (a GraphBuild) whenever it changes, then ``done``
    with the final state; ``error`` ends the stream if Dagster stops answering.""",
    kill_doc="Stop a queued or running build; launching it again later resumes it.",
    ended="The build has already ended.",
)
