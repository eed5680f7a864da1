"""``/api/graph/builds``: launch, follow and kill message-graph builds (Dagster runs of
``build_message_graph``, one archive per run, over GraphQL).

A build resumes where a killed or failed one stopped (the engine's document statuses
are the ledger), so *resume* is launching again. Progress is read from the run's log
(the build's ``graph build: N/M transcripts processed ...`` lines,
:mod:`varagity.graph.progress`); ``/events`` streams it as SSE: ``progress`` whenever it
changes, then ``done``, or an in-band ``error``.
"""

from __future__ import annotations

import logging

from fastapi import APIRouter, Depends, Query, Request
from sse_starlette.sse import EventSourceResponse
from starlette.concurrency import run_in_threadpool

from varagity.config import Settings
from varagity.dagster_client import DagsterClient, DagsterError
from varagity.graph.archives import scan_archives
from varagity.graph.sources.base import UnsupportedArchiveError
from varagity.graph.sources.registry import is_companion, rejections
from varagity.ingest.discovery import resolve_in_corpus
from varagity.records import normalize_relative_path
from varagity_api.deps import SettingsDep, dagster_client, require_graph_enabled
from varagity_api.errors import DAGSTER_DOWN, DAGSTER_FAILED, ApiError
from varagity_api.graph_runs import (
    build_of,
    dagster_failure,
    launch_builds,
)
from varagity_api.schemas.common import ErrorBody
from varagity_api.schemas.graph import (
    GraphBuild,
    GraphBuildList,
    GraphBuildRequest,
    GraphBuildsLaunched,
)
from varagity_api.sse import PING_SECONDS, follow_job

router = APIRouter(
    prefix="/graph/builds",
    tags=["graph"],
    dependencies=[Depends(require_graph_enabled)],
    responses={403: {"model": ErrorBody, "description": "GRAPH_ENABLED is false."}},
)
log = logging.getLogger(__name__)

_NOT_FOUND = {"model": ErrorBody, "description": "No graph build has this run id."}


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
    try:
        return await run_in_threadpool(launch_builds, settings, targets, source="api")
    except DagsterError as exc:
        raise dagster_failure(exc) from exc


@router.get("", response_model=GraphBuildList, responses={502: DAGSTER_FAILED, 503: DAGSTER_DOWN})
async def list_graph_builds(
    settings: SettingsDep, limit: int = Query(default=20, ge=1, le=100)
) -> GraphBuildList:
    """Recent build and removal runs, newest first."""

    def read() -> GraphBuildList:
        client = dagster_client(settings)
        runs = client.graph_runs(limit)
        return GraphBuildList(builds=[build_of(client, run, settings.dagster_url) for run in runs])

    try:
        return await run_in_threadpool(read)
    except DagsterError as exc:
        raise dagster_failure(exc) from exc


def _read_build(client: DagsterClient, run_id: str, dagster_url: str) -> GraphBuild:
    return build_of(client, client.graph_run(run_id), dagster_url)


@router.get(
    "/{run_id}",
    response_model=GraphBuild,
    responses={404: _NOT_FOUND, 502: DAGSTER_FAILED, 503: DAGSTER_DOWN},
)
async def graph_build(run_id: str, settings: SettingsDep) -> GraphBuild:
    """A build's state, its days processed so far, and its error if it failed."""
    try:
        return await run_in_threadpool(
            _read_build, dagster_client(settings), run_id, settings.dagster_url
        )
    except DagsterError as exc:
        raise dagster_failure(exc) from exc


@router.get(
    "/{run_id}/events",
    response_class=EventSourceResponse,
    responses={
        200: {"content": {"text/event-stream": {}}, "description": "SSE stream"},
        404: _NOT_FOUND,
        502: DAGSTER_FAILED,
        503: DAGSTER_DOWN,
    },
)
async def graph_build_events(
    run_id: str, request: Request, settings: SettingsDep
) -> EventSourceResponse:
    """Stream a build: ``progress`` (a GraphBuild) whenever it changes, then ``done``
    with the final state; ``error`` ends the stream if Dagster stops answering."""
    client = dagster_client(settings)
    try:
        first = await run_in_threadpool(_read_build, client, run_id, settings.dagster_url)
    except DagsterError as exc:
        raise dagster_failure(exc) from exc
    url = settings.dagster_url

    async def read(build: GraphBuild) -> GraphBuild:
        return await run_in_threadpool(_read_build, client, build.run_id, url)

    events = follow_job(
        request,
        first,
        read,
        view=lambda build: build,
        done=lambda build: build.done,
        failure=dagster_failure,
        what=f"graph build events for {run_id}",
    )
    return EventSourceResponse(events, ping=PING_SECONDS)


@router.post(
    "/{run_id}/kill",
    response_model=GraphBuild,
    responses={
        404: _NOT_FOUND,
        409: {"model": ErrorBody, "description": "The build has already ended."},
        502: DAGSTER_FAILED,
        503: DAGSTER_DOWN,
    },
)
async def kill_graph_build(run_id: str, settings: SettingsDep) -> GraphBuild:
    """Stop a queued or running build; launching it again later resumes it."""

    def kill() -> GraphBuild:
        client = dagster_client(settings)
        run = client.terminate_graph_run(run_id)
        log.info("graph build %s: termination requested (now %s)", run_id, run.status)
        return build_of(client, run, settings.dagster_url)

    try:
        return await run_in_threadpool(kill)
    except DagsterError as exc:
        raise dagster_failure(exc) from exc
