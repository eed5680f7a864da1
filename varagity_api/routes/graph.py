"""``/api/graph``: the message graph's status and its view data (entities, an entity's
neighbourhood, the transcript days they come from).

Reads only: the graph is written by Dagster runs (``graph_builds``), and a read never
waits for one (the process's :class:`~varagity.graph.service.GraphService` reader
reopens when a build changed the working directory).
"""

from __future__ import annotations

from fastapi import APIRouter, Depends, Query

from varagity_api.deps import ServicesDep, require_graph_enabled
from varagity_api.errors import ApiError
from varagity_api.schemas.common import ErrorBody
from varagity_api.schemas.graph import (
    GraphDay,
    GraphEntityList,
    GraphNeighbourhood,
    GraphStatus,
)

router = APIRouter(
    prefix="/graph",
    tags=["graph"],
    dependencies=[Depends(require_graph_enabled)],
    responses={403: {"model": ErrorBody, "description": "GRAPH_ENABLED is false."}},
)


@router.get("/status", response_model=GraphStatus)
async def graph_status(services: ServicesDep) -> GraphStatus:
    """The graph's size (entities, relations, days, messages), its days by engine
    status, the engine, the archives in ``GRAPH_DOCS_PATH`` and the builds in flight."""
    raise ApiError(501, "not_implemented", "graph status")


@router.get("/entities", response_model=GraphEntityList)
async def graph_entities(
    services: ServicesDep,
    q: str | None = Query(default=None, max_length=200, description="Name contains this."),
    limit: int = Query(default=50, ge=1, le=500),
) -> GraphEntityList:
    """Entities whose name contains ``q`` (case-insensitive), or the most connected ones."""
    raise ApiError(501, "not_implemented", "graph entities")


@router.get(
    "/neighbourhood",
    response_model=GraphNeighbourhood,
    responses={404: {"model": ErrorBody, "description": "No entity has this name."}},
)
async def graph_neighbourhood(
    services: ServicesDep,
    entity: str = Query(min_length=1, max_length=500),
    depth: int = Query(default=1, ge=1, le=3),
    limit: int = Query(default=50, ge=1, le=300),
) -> GraphNeighbourhood:
    """``entity`` and what lies within ``depth`` hops of it, with the days they come from."""
    raise ApiError(501, "not_implemented", "graph neighbourhood")


@router.get(
    "/days/{doc_key:path}",
    response_model=GraphDay,
    responses={404: {"model": ErrorBody, "description": "The graph holds no such day."}},
)
async def graph_day(doc_key: str, services: ServicesDep) -> GraphDay:
    """One transcript day as the engine was given it (the drill-down from an entity)."""
    raise ApiError(501, "not_implemented", "graph day")
