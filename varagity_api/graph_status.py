"""``GET /api/graph/status``'s answer: the graph's size from its sidecars, its days by
the engine's live status, the engine, the archives in ``GRAPH_DOCS_PATH``, the builds
(rebuilds, resets) in flight and the stale flag.

Nothing here fails the route for a part that is down: an engine that cannot open its
working directory leaves the day statuses the last build recorded (with a warning in
the log), and a Dagster that cannot be reached leaves ``building`` empty.
"""

from __future__ import annotations

import logging

from starlette.concurrency import run_in_threadpool

from varagity.config import Settings
from varagity.graph.folder import count_supported
from varagity.graph.progress import BuildProgress
from varagity.graph.service import GraphService, workdir_stamp
from varagity.graph.status import GraphReading, read_graph
from varagity.jobs import DagsterError
from varagity.jobs.graph import GraphJobs
from varagity.services import Services
from varagity.stores.corpus_state import GraphState
from varagity_api.deps import dagster_client
from varagity_api.schemas.graph import (
    DayCounts,
    GraphBuild,
    GraphEngineInfo,
    GraphStatus,
    build_from,
)
from varagity_api.schemas.settings import StaleFlag

log = logging.getLogger(__name__)


def day_statuses(graph: GraphService, reading: GraphReading) -> DayCounts:
    """The engine's documents by status now; the last build's record when the engine
    holds nothing yet (it is not opened then) or cannot be read."""
    if workdir_stamp(graph.workdir):
        try:
            return DayCounts.model_validate(
                BuildProgress.of(graph.statuses().values()), from_attributes=True
            )
        except Exception as exc:  # the status of an unreadable graph is still a status
            log.warning("graph status: the engine cannot be read (%s); last build's counts", exc)
    return DayCounts(**reading.statuses)


def _building(settings: Settings) -> list[GraphBuild]:
    try:
        return [build_from(run) for run in GraphJobs(dagster_client(settings)).in_flight()]
    except DagsterError as exc:
        log.warning("graph status: no builds listed, Dagster cannot be reached: %s", exc)
        return []


async def graph_status_of(services: Services) -> GraphStatus:
    """The graph's status for ``services``' settings (see the module)."""
    settings = services.settings
    graph = services.graph
    reading = await run_in_threadpool(read_graph, graph.workdir)
    statuses = await run_in_threadpool(day_statuses, graph, reading)
    engine = await run_in_threadpool(graph.engine_format)
    sources = await run_in_threadpool(count_supported, settings.graph_docs_path)
    building = await run_in_threadpool(_building, settings)
    flag = await run_in_threadpool(GraphState(services.pg).stale)
    return GraphStatus(
        engine=GraphEngineInfo.model_validate(engine, from_attributes=True),
        built=reading.days > 0 or statuses.processed > 0,
        entities=reading.entities,
        relations=reading.relations,
        days=reading.days,
        messages=reading.messages,
        day_statuses=statuses,
        sources=sources,
        refreshed_at=reading.refreshed_at,
        building=building,
        stale=StaleFlag(reason=flag.reason, since=flag.since) if flag else None,
    )
