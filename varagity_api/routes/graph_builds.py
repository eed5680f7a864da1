"""``/api/graph/builds``: launch, follow and kill message-graph builds (Dagster runs of
``build_message_graph``, one archive per run, over GraphQL).

A build resumes where a killed or failed one stopped (the engine's document statuses
are the ledger), so *resume* is launching again. Progress is read from the run's log
(the build's ``graph build: N/M transcripts processed ...`` lines); ``/events`` streams
it as SSE: ``progress`` whenever it changes, then ``done``, or an in-band ``error``.
"""

from __future__ import annotations

from varagity.config import Settings
from fastapi import APIRouter, Depends, Query, Request
from sse_starlette.sse import EventSourceResponse

from varagity_api.deps import ServicesDep, SettingsDep, require_graph_enabled
from varagity_api.errors import ApiError
from varagity_api.schemas.common import ErrorBody
from varagity_api.schemas.graph import (
    GraphBuild,
    GraphBuildList,
    GraphBuildRequest,
    GraphBuildsLaunched,
)

router = APIRouter(
    prefix="/graph/builds",
    tags=["graph"],
    dependencies=[Depends(require_graph_enabled)],
    responses={403: {"model": ErrorBody, "description": "GRAPH_ENABLED is false."}},
)

_DAGSTER_DOWN = {"model": ErrorBody, "description": "The Dagster webserver is unreachable."}
_DAGSTER_FAILED = {"model": ErrorBody, "description": "Dagster refused or failed the request."}
_NOT_FOUND = {"model": ErrorBody, "description": "No graph build has this run id."}


def launch_builds(settings: Settings, paths: list[str], *, source: str) -> GraphBuildsLaunched:
    """Launch one ``build_message_graph`` run per archive path (relative to
    ``GRAPH_DOCS_PATH``), tagged with ``source`` (api, upload); an archive whose build is
    already queued or running is reported in ``in_flight`` instead. Blocking (call it
    from a worker thread).

    Raises:
        DagsterError: Dagster cannot be reached or refused a launch.
    """
    raise NotImplementedError("graph build launch")


@router.post(
    "",
    status_code=202,
    response_model=GraphBuildsLaunched,
    responses={
        409: {"model": ErrorBody, "description": "No supported archive to build."},
        422: {"model": ErrorBody, "description": "Some paths are not supported archives."},
        502: _DAGSTER_FAILED,
        503: _DAGSTER_DOWN,
    },
)
async def launch_graph_builds(body: GraphBuildRequest, settings: SettingsDep) -> GraphBuildsLaunched:
    """Build (or resume building) archives of ``GRAPH_DOCS_PATH``, one run each; an
    archive whose build is already queued or running is reported, not launched again."""
    raise ApiError(501, "not_implemented", "graph build launch")


@router.get("", response_model=GraphBuildList, responses={502: _DAGSTER_FAILED, 503: _DAGSTER_DOWN})
async def list_graph_builds(
    settings: SettingsDep, limit: int = Query(default=20, ge=1, le=100)
) -> GraphBuildList:
    """Recent build and removal runs, newest first."""
    raise ApiError(501, "not_implemented", "graph build list")


@router.get(
    "/{run_id}",
    response_model=GraphBuild,
    responses={404: _NOT_FOUND, 502: _DAGSTER_FAILED, 503: _DAGSTER_DOWN},
)
async def graph_build(run_id: str, settings: SettingsDep) -> GraphBuild:
    """A build's state, its days processed so far, and its error if it failed."""
    raise ApiError(501, "not_implemented", "graph build")


@router.get(
    "/{run_id}/events",
    response_class=EventSourceResponse,
    responses={
        200: {"content": {"text/event-stream": {}}, "description": "SSE stream"},
        404: _NOT_FOUND,
        502: _DAGSTER_FAILED,
        503: _DAGSTER_DOWN,
    },
)
async def graph_build_events(
    run_id: str, request: Request, services: ServicesDep
) -> EventSourceResponse:
    """Stream a build: ``progress`` (a GraphBuild) whenever it changes, then ``done``
    with the final state; ``error`` ends the stream if Dagster stops answering."""
    raise ApiError(501, "not_implemented", "graph build events")


@router.post(
    "/{run_id}/kill",
    response_model=GraphBuild,
    responses={
        404: _NOT_FOUND,
        409: {"model": ErrorBody, "description": "The build has already ended."},
        502: _DAGSTER_FAILED,
        503: _DAGSTER_DOWN,
    },
)
async def kill_graph_build(run_id: str, settings: SettingsDep) -> GraphBuild:
    """Stop a queued or running build; launching it again later resumes it."""
    raise ApiError(501, "not_implemented", "graph build kill")
