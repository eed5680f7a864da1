"""The Prometheus catalogue: per-stage latency, chat and ingest counters, corpus and
message-graph gauges.

Collectors live in the default registry, so ``/metrics`` serves them with anything
else the process registers. The corpus gauges are computed at scrape time from
Postgres (documents, chunks, the stale flag) by :class:`CorpusCollector`, so they are
right even when ingest runs in Dagster's processes, not this one; the graph gauges
likewise from the graph's sidecars by :class:`GraphCollector` (the graph is built in
Dagster's processes too).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping
from typing import Generic, TypeVar

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Histogram
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

log = logging.getLogger(__name__)

# seconds; query stages run from ~0.1 ms (fusion) to tens of seconds (CPU generation)
_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)

STAGE_SECONDS = Histogram(
    "varagity_stage_seconds",
    "Latency of one query stage (embed, each arm, fusion, hydrate, rerank, hyde, "
    "condense, first_token, generate, total).",
    ["route", "stage"],
    buckets=_BUCKETS,
)
CHAT_TURNS = Counter(
    "varagity_chat_turns_total",
    "Chat turns by engine, retrieval method and outcome (ok, error, aborted).",
    ["engine", "method", "outcome"],
)
SEARCHES = Counter("varagity_searches_total", "Search requests by method.", ["method"])
INGEST_REQUESTS = Counter(
    "varagity_ingest_requests_total",
    "Ingest and reingest launches requested through the API, by outcome.",
    ["kind", "outcome"],
)
UPLOADED_FILES = Counter(
    "varagity_uploaded_files_total",
    "Uploaded files by outcome (stored, replaced, unchanged, refused).",
    ["outcome"],
)
DELETED_DOCUMENTS = Counter(
    "varagity_deleted_documents_total", "Documents deleted through the API."
)
PAGE_PREVIEWS = Counter(
    "varagity_page_previews_total",
    "Evidence page previews asked for, by outcome: shown, or the reason none was "
    "(not_paged, file_missing, file_changed, converter_missing, ...).",
    ["outcome"],
)
GRAPH_UPLOADED_FILES = Counter(
    "varagity_graph_uploaded_files_total",
    "Files uploaded into GRAPH_DOCS_PATH (message archives and their -wal/-shm) by outcome "
    "(stored, replaced, unchanged, refused).",
    ["outcome"],
)


def observe_stages(route: str, timings_ms: Mapping[str, float]) -> None:
    """Record every stage timing of one request (milliseconds in, seconds out)."""
    for stage, ms in timings_ms.items():
        STAGE_SECONDS.labels(route=route, stage=stage).observe(max(0.0, ms) / 1000.0)


def count_chat_turn(engine: str, method: str, outcome: str) -> None:
    """One chat turn finished with ``outcome`` (``ok``, ``error`` or ``aborted``)."""
    CHAT_TURNS.labels(engine=engine, method=method, outcome=outcome).inc()


R = TypeVar("R")


class _ScrapeCollector(Collector, Generic[R]):
    """Gauges computed from a reading taken at scrape time; a reading that fails (a
    store down, a file unreadable) or is None yields nothing, never a failed scrape."""

    #: What the gauges are of, for the log line of a failed reading.
    subject = ""

    def __init__(self, read: Callable[[], R | None]) -> None:
        self._read = read

    def collect(self) -> Iterator[GaugeMetricFamily]:
        """Yield the gauges of a fresh reading (nothing while it is unavailable)."""
        try:
            reading = self._read()
        except Exception as exc:  # a scrape must never fail because a reading does
            log.warning("%s gauges unavailable: %s", self.subject, exc)
            return
        if reading is not None:
            yield from self.gauges(reading)

    def gauges(self, reading: R) -> Iterator[GaugeMetricFamily]:
        """The gauges of one reading."""
        raise NotImplementedError


CorpusReading = tuple[int, int, bool]


class CorpusCollector(_ScrapeCollector[CorpusReading]):
    """Documents, chunks and the stale flag, read from the stores at scrape time
    (``read`` returns ``(documents, chunks, stale)``, or None while unavailable)."""

    subject = "corpus"

    def gauges(self, reading: CorpusReading) -> Iterator[GaugeMetricFamily]:
        """The three corpus gauges."""
        documents, chunks, stale = reading
        yield GaugeMetricFamily(
            "varagity_corpus_documents", "Documents in the index.", value=documents
        )
        yield GaugeMetricFamily("varagity_corpus_chunks", "Chunks in the index.", value=chunks)
        yield GaugeMetricFamily(
            "varagity_corpus_stale",
            "1 when ingest settings changed since the corpus was built.",
            value=1 if stale else 0,
        )


C = TypeVar("C", bound=Collector)


def _register(collector: C, registry: CollectorRegistry) -> C:
    """Register ``collector``, replacing one of its class a previous app registered."""
    for existing in list(getattr(registry, "_collector_to_names", {})):
        if type(existing) is type(collector):
            registry.unregister(existing)
    registry.register(collector)
    return collector


def register_corpus_collector(
    read: Callable[[], CorpusReading | None], registry: CollectorRegistry = REGISTRY
) -> CorpusCollector:
    """Register a corpus collector (replacing the one a previous app registered)."""
    return _register(CorpusCollector(read), registry)


#: documents by engine status (processed, pending, processing, failed), entities, relations
GraphGaugeReading = tuple[Mapping[str, int], int, int]


class GraphCollector(_ScrapeCollector[GraphGaugeReading]):
    """The message graph's size, read from its sidecars at scrape time (``read`` returns
    ``(documents by status, entities, relations)``, or None while the graph is switched
    off)."""

    subject = "graph"

    def gauges(self, reading: GraphGaugeReading) -> Iterator[GaugeMetricFamily]:
        """Documents by status, entities and relations."""
        statuses, entities, relations = reading
        documents = GaugeMetricFamily(
            "varagity_graph_documents",
            "Transcript days (conversation-days) in the message graph, by the engine's "
            "document status, as of the last build.",
            labels=["status"],
        )
        for status, count in statuses.items():
            documents.add_metric([status], count)
        yield documents
        yield GaugeMetricFamily(
            "varagity_graph_entities", "Entities in the message graph.", value=entities
        )
        yield GaugeMetricFamily(
            "varagity_graph_relations", "Relations in the message graph.", value=relations
        )


def register_graph_collector(
    read: Callable[[], GraphGaugeReading | None], registry: CollectorRegistry = REGISTRY
) -> GraphCollector:
    """Register a graph collector (replacing the one a previous app registered)."""
    return _register(GraphCollector(read), registry)
