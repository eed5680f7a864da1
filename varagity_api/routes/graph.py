"""``/api/graph``: the message graph's status and its view data (entities, an entity's
neighbourhood, the transcript days they come from).

Reads only: the graph is written by Dagster runs (``graph_builds``), and a read never
waits for one (the process's :class:`~varagity.graph.service.GraphService` reader
reopens when a build changed the working directory).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from fastapi import APIRouter, Depends, Query
from starlette.concurrency import run_in_threadpool

from varagity.graph.base import GraphEngineError
from varagity.graph.manifest import ManifestEntry, provenance, read_manifest
from varagity.graph.service import GraphService
from varagity_api.deps import ServicesDep, require_graph_enabled
from varagity_api.errors import ApiError
from varagity_api.graph_status import graph_status_of
from varagity_api.schemas.common import ErrorBody, EvidenceEntity, EvidenceRelation
from varagity_api.schemas.graph import (
    GraphDay,
    GraphDayRef,
    GraphEntityInfo,
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
    return await graph_status_of(services)


# --- the graph view: entities, an entity's neighbourhood, one day ----------------------
_T = TypeVar("_T")


async def _view(graph: GraphService, read: Callable[[GraphService], _T]) -> _T:
    """A read of the graph in a worker thread (it never waits for a build); 503 when
    the engine cannot open its working directory."""
    try:
        return await run_in_threadpool(read, graph)
    except GraphEngineError as exc:
        raise ApiError(
            503, "graph_unavailable", f"the message graph cannot be read: {exc}"
        ) from exc


def _day_ref(doc_key: str, entry: ManifestEntry | None) -> GraphDayRef:
    """A day named from its build-manifest entry (thread, span, messages); a day the
    manifest does not record yet (a build in progress) by its doc_key alone."""
    if entry is None:
        return GraphDayRef(doc_key=doc_key, thread_name="", span=_span(doc_key), messages=0)
    return GraphDayRef(
        doc_key=doc_key,
        thread_name=entry.thread_name,
        span=entry.span,
        messages=len(entry.message_guids),
    )


def _span(doc_key: str) -> str:
    """The span part of ``thread_id::span``."""
    return doc_key.rpartition("::")[2]


@router.get("/entities", response_model=GraphEntityList)
async def graph_entities(
    services: ServicesDep,
    q: str | None = Query(default=None, max_length=200, description="Name contains this."),
    limit: int = Query(default=50, ge=1, le=500),
) -> GraphEntityList:
    """Entities whose name contains ``q`` (case-insensitive), or the most connected ones."""
    found, total = await _view(services.graph, lambda graph: graph.entities(q, limit=limit))
    return GraphEntityList(
        entities=[
            GraphEntityInfo(
                name=e.name,
                type=e.type,
                description=e.description,
                degree=e.degree,
                days=len(e.doc_keys),
            )
            for e in found
        ],
        total=total,
    )


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

    def read(graph: GraphService) -> GraphNeighbourhood | None:
        found = graph.neighbourhood(entity, depth=depth, limit=limit)
        if found is None:
            return None
        manifest = read_manifest(graph.workdir)
        return GraphNeighbourhood(
            center=found.center,
            depth=depth,
            entities=[
                EvidenceEntity.model_validate(e, from_attributes=True) for e in found.entities
            ],
            relations=[
                EvidenceRelation.model_validate(r, from_attributes=True) for r in found.relations
            ],
            days=[_day_ref(key, manifest.get(key)) for key in found.doc_keys],
            truncated=found.truncated,
        )

    neighbourhood = await _view(services.graph, read)
    if neighbourhood is None:
        raise ApiError(
            404,
            "entity_not_found",
            f"the message graph has no entity named {entity!r} (GET /api/graph/entities?q= "
            "finds names)",
        )
    return neighbourhood


@router.get(
    "/days/{doc_key:path}",
    response_model=GraphDay,
    responses={404: {"model": ErrorBody, "description": "The graph holds no such day."}},
)
async def graph_day(doc_key: str, services: ServicesDep) -> GraphDay:
    """One transcript day as the engine was given it (the drill-down from an entity)."""

    def read(graph: GraphService) -> GraphDay | None:
        day = graph.day(doc_key)
        if day is None:
            return None
        entry = provenance(graph.workdir, doc_key)
        return GraphDay(
            doc_key=doc_key,
            thread_name=entry.thread_name if entry else day.thread_name,
            span=entry.span if entry else _span(doc_key),
            source=entry.source if entry else "",
            text=day.text,
            message_guids=list(entry.message_guids) if entry else [],
            status=day.status,
        )

    found = await _view(services.graph, read)
    if found is None:
        raise ApiError(
            404, "day_not_found", f"the message graph holds no transcript day {doc_key!r}"
        )
    return found
