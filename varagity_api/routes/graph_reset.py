"""``POST /api/graph/reset``: empty the message graph as a Dagster run of
``reset_message_graph`` (over GraphQL).

The run empties the engine's working directory and its sidecars (the build manifest,
the size summary, the engine's LLM response cache) and clears the graph's stale flag;
the archives in ``GRAPH_DOCS_PATH`` stay, and building them again gives the graph back
(``POST /api/graph/builds``). It is one of the graph's runs: read, followed (SSE) and
killed at ``/api/graph/builds/{run_id}`` like a build. The one-writer gate refuses it
beside any other run of the graph (``409 corpus_busy``), and the run itself holds the
graph's write lock.
"""

from __future__ import annotations

from fastapi import APIRouter, Depends
from starlette.concurrency import run_in_threadpool

from varagity.jobs import DagsterError
from varagity.jobs.graph import GraphJobs
from varagity_api.deps import SettingsDep, dagster_client, require_graph_enabled
from varagity_api.errors import DAGSTER_DOWN, DAGSTER_FAILED, dagster_error
from varagity_api.schemas.common import ErrorBody
from varagity_api.schemas.graph import GraphBuild, build_from

router = APIRouter(
    prefix="/graph",
    tags=["graph"],
    dependencies=[Depends(require_graph_enabled)],
    responses={403: {"model": ErrorBody, "description": "GRAPH_ENABLED is false."}},
)


@router.post(
    "/reset",
    status_code=202,
    response_model=GraphBuild,
    responses={
        409: {
            "model": ErrorBody,
            "description": "A run of the graph (a build, a rebuild, a removal, an export, a "
            "restore, another reset) is in flight (corpus_busy).",
        },
        502: DAGSTER_FAILED,
        503: DAGSTER_DOWN,
    },
)
async def reset_graph(settings: SettingsDep) -> GraphBuild:
    """Empty the message graph (its working directory, manifest, caches and stale flag)
    in a Dagster run, keeping the archives; follow it at
    ``/api/graph/builds/{run_id}/events``. Build the archives again to get it back."""
    jobs = GraphJobs(dagster_client(settings))
    try:
        run = await run_in_threadpool(jobs.launch_reset, source="api")
    except DagsterError as exc:
        raise dagster_error(exc, not_found="build_not_found", ended="build_ended") from exc
    return build_from(run)
