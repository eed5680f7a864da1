"""``GET /metrics``: the Prometheus exposition of :mod:`varagity.observability.metrics`."""

from __future__ import annotations

import logging
import shutil
from collections import Counter
from pathlib import Path
from typing import Any, get_args

from fastapi import APIRouter, Response
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, generate_latest
from starlette.concurrency import run_in_threadpool

from varagity.config import Settings
from varagity.corpus import DocumentStatus, list_corpus
from varagity.graph.registry import workdir_for
from varagity.graph.status import read_graph
from varagity.jobs import DagsterClient, DagsterError
from varagity.models.base import RetryingClient
from varagity.models.chat import ChatClient
from varagity.models.embeddings import EmbeddingClient
from varagity.models.rerank import RerankClient
from varagity.observability.metrics import (
    CorpusReading,
    FullReading,
    GraphGaugeReading,
    InfraReading,
    IngestReading,
)
from varagity.services import Services
from varagity.stores.corpus_state import CorpusState

router = APIRouter(tags=["metrics"])
log = logging.getLogger(__name__)

# a scrape waits this long at most for Dagster's answer (Prometheus times out at 10 s)
_DAGSTER_TIMEOUT_S = 4.0


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


def ingest_reading(services: Services) -> IngestReading:
    """Files by status and contextualized chunks, from the corpus listing."""
    entries = list_corpus(
        services.pg, services.settings.docs_path, contextualize=services.settings.CONTEXTUALIZE
    )
    counts = Counter(e.status for e in entries)
    return IngestReading(
        files_by_status={status: counts.get(status, 0) for status in get_args(DocumentStatus)},
        chunks_contextualized=sum(e.n_contextualized or 0 for e in entries),
    )


def pipeline_gauges(services: Services | None, settings: Settings) -> FullReading:
    """The corpus side (None while the stores are down) and Dagster's side (None while
    its webserver does not answer) of the pipeline gauges."""
    ingest = None
    if services is not None:
        try:
            ingest = ingest_reading(services)
        except Exception as exc:  # the other side still reports
            log.warning("corpus gauges unavailable: %s", exc)
    try:
        client = DagsterClient.for_settings(settings, timeout=_DAGSTER_TIMEOUT_S)
        dagster = client.pipeline_reading()
    except DagsterError as exc:
        log.warning("Dagster gauges unavailable: %s", exc)
        dagster = None
    return FullReading(ingest=ingest, dagster=dagster)


# a model server's probe: one try, a short wait (a scrape probes every server in turn)
_PROBE_TIMEOUT_S = 2.0


def _answers(kind: type[RetryingClient], options: dict[str, Any]) -> bool:
    """Whether the server of a ``kind`` client built with ``options`` answers its ping."""
    client = kind(timeout=_PROBE_TIMEOUT_S, max_retries=0, **options)
    try:
        client.ping()  # type: ignore[attr-defined]
    except Exception:  # a down server is the reading, not a failed scrape
        return False
    finally:
        client.close()
    return True


def _tree_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def infra_reading(services: Services | None, settings: Settings) -> InfraReading:
    """Model servers up, store sizes, BM25 entries and the state folder's disk."""
    servers: dict[str, bool] = {}
    sizes: dict[str, int] = {}
    entries = None
    if services is not None:
        servers["llm"] = _answers(ChatClient, ChatClient.settings_options(settings))
        reader = ChatClient.reader_options(settings)
        if reader is not None:  # None: the chat model reads graph exchanges
            servers["reader"] = _answers(ChatClient, reader)
        servers["embedding"] = _answers(EmbeddingClient, EmbeddingClient.settings_options(settings))
        if settings.RERANK_BASE_URL:  # unset: the stand-in is the embedding server
            servers["rerank"] = _answers(RerankClient, RerankClient.settings_options(settings))
        sizes["postgres"] = services.pg.database_bytes()
        entries = services.bm25.count()
        if not settings.ELASTICSEARCH_URL and settings.bm25_path.is_dir():
            sizes["bm25"] = _tree_bytes(settings.bm25_path)
    home = settings.home
    usage = shutil.disk_usage(home) if home.is_dir() else None
    return InfraReading(
        model_servers_up=servers,
        store_bytes=sizes,
        bm25_entries=entries,
        state_disk=(usage.free, usage.total) if usage else None,
    )


@router.get(
    "/metrics",
    response_class=Response,
    responses={200: {"content": {"text/plain": {}}, "description": "Prometheus text format"}},
)
async def metrics() -> Response:
    """Latency histograms, chat/ingest counters, and the corpus, pipeline, infrastructure
    and graph gauges (registered by the app's lifespan, read from the stores, Dagster,
    the model servers and the graph's sidecars at scrape time) for Prometheus."""
    body = await run_in_threadpool(generate_latest, REGISTRY)
    return Response(body, media_type=CONTENT_TYPE_LATEST)
