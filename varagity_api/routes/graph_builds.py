"""``/api/graph/builds``: launch, follow and kill message-graph builds (Dagster runs of
``build_message_graph``, one archive per run, over GraphQL) and rebuilds (one run of
``rebuild_message_graph`` that re-extracts a range of days, or every day); the reset's
run (``POST /api/graph/reset``) is read, followed and killed here too.

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
from varagity.graph.manifest import day_span, read_manifest
from varagity.graph.registry import workdir_for
from varagity.jobs import DagsterError
from varagity.jobs.graph import BuildTargetsRefused, GraphJobs, Launched, build_targets
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


def _targets(settings: Settings, paths: list[str] | None) -> list[str]:
    """:func:`~varagity.jobs.graph.build_targets` of ``GRAPH_DOCS_PATH``, its refusal as
    the HTTP error (409 ``no_archives``, 422 ``invalid_paths``)."""
    try:
        return build_targets(settings.graph_docs_path, paths)
    except BuildTargetsRefused as exc:
        raise ApiError(409 if exc.code == "no_archives" else 422, exc.code, str(exc)) from exc


def _rebuild(settings: Settings, body: GraphBuildRequest) -> Launched:
    """Launch the rebuild ``body`` asks for: its days, or every day (named by the days
    the graph holds now). Blocking."""
    jobs = GraphJobs(dagster_client(settings))
    first = body.first_day.isoformat() if body.first_day else None
    last = body.last_day.isoformat() if body.last_day else None
    every_day = first is None and last is None
    held = day_span(read_manifest(workdir_for(settings))) if every_day else None
    return jobs.launch_rebuild(first, last, held=held, source="api")


@router.post(
    "",
    status_code=202,
    response_model=GraphBuildsLaunched,
    responses={
        409: {
            "model": ErrorBody,
            "description": "No supported archive to build, or an export, a restore or a "
            "reset of the graph is in flight (corpus_busy).",
        },
        422: {
            "model": ErrorBody,
            "description": "Some paths are not supported archives, or a day range that is not one.",
        },
        502: DAGSTER_FAILED,
        503: DAGSTER_DOWN,
    },
)
async def launch_graph_builds(
    body: GraphBuildRequest, settings: SettingsDep
) -> GraphBuildsLaunched:
    """Build (or resume building) archives of ``GRAPH_DOCS_PATH``, one run each; an
    archive whose build is already queued or running is reported, not launched again.

    With ``rebuild`` (or a ``from``/``to`` day), one rebuild run instead: every day of
    every archive in that range (all days without one) is extracted again, whatever the
    manifest says of it, and the days outside it are left as they are. A rebuild of
    every day that succeeds clears the graph's stale flag."""
    jobs = GraphJobs(dagster_client(settings))
    try:
        if body.rebuilds:
            await run_in_threadpool(_targets, settings, None)  # 409 when nothing to read
            launched = await run_in_threadpool(_rebuild, settings, body)
        else:
            targets = await run_in_threadpool(_targets, settings, body.paths)
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
    read_doc="A build's (removal's, rebuild's, reset's) state, its days processed so far, "
    "and its error if it failed.",
    events_doc="""Stream a build (or a removal, a rebuild, a reset): ``progress`` (a GraphBuild)
    whenever it changes, then ``done`` with the final state; ``error`` ends the stream if
    Dagster stops answering.""",
    kill_doc="Stop a queued or running build; launching it again later resumes it.",
    ended="The build has already ended.",
)
