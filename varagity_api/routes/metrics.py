"""``GET /metrics``: the Prometheus exposition of :mod:`varagity.observability.metrics`."""

from __future__ import annotations

from fastapi import APIRouter, Response
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, generate_latest
from starlette.concurrency import run_in_threadpool

from varagity.config import Settings
from varagity.graph.registry import workdir_for
from varagity.graph.status import read_graph
from varagity.observability.metrics import CorpusReading, GraphGaugeReading
from varagity.services import Services
from varagity.stores.corpus_state import CorpusState

router = APIRouter(tags=["metrics"])


def corpus_reading(services: Services | None) -> CorpusReading | None:
    """Documents, chunks and the stale flag from the app's stores (None while down)."""
    if services is None:
        return None
    documents = len(services.pg.list_documents())
    return documents, services.pg.count_chunks(), CorpusState(services.pg).stale() is not None


def graph_gauges(settings: Settings) -> GraphGaugeReading | None:
    """Documents by status, entities and relations from the graph's sidecars (no engine
    is opened); None while GRAPH_ENABLED=false."""
    if not settings.GRAPH_ENABLED:
        return None
    reading = read_graph(workdir_for(settings))
    return reading.statuses, reading.entities, reading.relations


@router.get(
    "/metrics",
    response_class=Response,
    responses={200: {"content": {"text/plain": {}}, "description": "Prometheus text format"}},
)
async def metrics() -> Response:
    """Latency histograms, chat/ingest counters, corpus and graph gauges (registered by
    the app's lifespan, read from the stores and the graph's sidecars at scrape time)
    for Prometheus."""
    body = await run_in_threadpool(generate_latest, REGISTRY)
    return Response(body, media_type=CONTENT_TYPE_LATEST)
