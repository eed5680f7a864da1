"""The Prometheus catalogue: per-stage latency, chat and ingest counters, corpus,
pipeline, infrastructure and message-graph gauges.

Collectors live in the default registry, so ``/metrics`` serves them with anything
else the process registers. The corpus gauges are computed at scrape time from
Postgres (documents, chunks, the stale flag) by :class:`CorpusCollector`, so they are
right even when ingest runs in Dagster's processes, not this one; the graph gauges
likewise from the graph's sidecars by :class:`GraphCollector` (the graph is built in
Dagster's processes too). The pipeline gauges (files by status, contextualization
progress, run queue, step durations, evaluation gates) and the infrastructure gauges
(model servers up, store sizes, the state folder's disk) are read the same way, by
:class:`PipelineCollector` and :class:`InfraCollector`. The API process's own memory and
CPU come from ``prometheus_client``'s process collector (``process_*``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Histogram
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from varagity.jobs import PipelineReading

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


def _labelled_gauge(
    name: str, documentation: str, label: str, values: Mapping[str, float]
) -> GaugeMetricFamily:
    """A gauge with one sample per key of ``values`` (in key order), labelled ``label``."""
    family = GaugeMetricFamily(name, documentation, labels=[label])
    for key, value in sorted(values.items()):
        family.add_metric([key], value)
    return family


class _ScrapeCollector(Collector, Generic[R]):
    """Gauges computed from a reading taken at scrape time; a reading that fails (a
    store down, a file unreadable) or is None yields nothing, never a failed scrape."""

    #: What the gauges are of, for the log line of a failed reading.
    subject = ""

    def __init__(self, read: Callable[[], R | None]) -> None:
        self._read = read

    def describe(self) -> list[GaugeMetricFamily]:
        """Nothing: without it, registering would take a reading (store queries, model
        server probes, a Dagster query) at startup just to learn the metric names."""
        return []

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
        yield _labelled_gauge(
            "varagity_graph_documents",
            "Transcript days (conversation-days) in the message graph, by the engine's "
            "document status, as of the last build.",
            "status",
            statuses,
        )
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


@dataclass(frozen=True, slots=True)
class IngestReading:
    """The corpus as the ingest pipeline leaves it, at scrape time."""

    files_by_status: Mapping[str, int]
    """Files and documents by corpus status (``indexed``, ``pending``, ``failed``, ...),
    every status present (0 when none)."""
    chunks_contextualized: int
    """Stored chunks that have their LLM blurb."""


@dataclass(frozen=True, slots=True)
class FullReading:
    """Everything :class:`PipelineCollector` reports: the corpus side (None while the
    stores are down) and Dagster's side (None while the webserver is)."""

    ingest: IngestReading | None
    dagster: PipelineReading | None


class PipelineCollector(_ScrapeCollector[FullReading]):
    """Files by status, contextualization progress, the run queue, recent step
    durations and the evaluation gates."""

    subject = "pipeline"

    def gauges(self, reading: FullReading) -> Iterator[GaugeMetricFamily]:
        """The pipeline gauges of whichever side could be read."""
        if reading.ingest is not None:
            yield _labelled_gauge(
                "varagity_corpus_files",
                "Corpus files and documents by status (indexed, no_text, pending, failed, "
                "outdated, missing).",
                "status",
                reading.ingest.files_by_status,
            )
            yield GaugeMetricFamily(
                "varagity_corpus_chunks_contextualized",
                "Stored chunks that have their LLM blurb (contextualization progress).",
                value=reading.ingest.chunks_contextualized,
            )
        if reading.dagster is not None:
            yield _labelled_gauge(
                "varagity_dagster_runs",
                "Dagster runs waiting or working, by status (the pipeline's queue).",
                "status",
                reading.dagster.runs_by_status,
            )
            yield _labelled_gauge(
                "varagity_pipeline_step_seconds",
                "Mean duration of each pipeline step (asset) over the newest finished "
                "ingest and contextualize runs.",
                "step",
                reading.dagster.step_seconds,
            )
            gates = GaugeMetricFamily(
                "varagity_eval_gate_passed",
                "1 when the evaluation gate (a blocking asset check) passed on its asset's "
                "latest materialization, 0 when it failed.",
                labels=["asset", "check"],
            )
            for (asset, check), passed in sorted(reading.dagster.eval_gates.items()):
                gates.add_metric([asset, check], 1 if passed else 0)
            yield gates


def register_pipeline_collector(
    read: Callable[[], FullReading | None], registry: CollectorRegistry = REGISTRY
) -> PipelineCollector:
    """Register a pipeline collector (replacing the one a previous app registered)."""
    return _register(PipelineCollector(read), registry)


@dataclass(frozen=True, slots=True)
class InfraReading:
    """Model servers, store sizes and the state folder's disk, at scrape time."""

    model_servers_up: Mapping[str, bool] = field(default_factory=dict)
    """Each model server the app uses (``llm``, ``embedding``, ``rerank``): answering?"""
    store_bytes: Mapping[str, int] = field(default_factory=dict)
    """On-disk size by store (``postgres``: the database; ``bm25``: the Tantivy index)."""
    bm25_entries: int | None = None
    state_disk: tuple[int, int] | None = None
    """``(free, total)`` bytes of the filesystem that holds VARAGITY_HOME."""


class InfraCollector(_ScrapeCollector[InfraReading]):
    """Model server health, store sizes and the state folder's disk."""

    subject = "infrastructure"

    def gauges(self, reading: InfraReading) -> Iterator[GaugeMetricFamily]:
        """The infrastructure gauges."""
        yield _labelled_gauge(
            "varagity_model_server_up",
            "1 when the model server answers its health probe, 0 when it does not.",
            "server",
            {server: int(ok) for server, ok in reading.model_servers_up.items()},
        )
        yield _labelled_gauge(
            "varagity_store_bytes",
            "On-disk size of each store, in bytes.",
            "store",
            reading.store_bytes,
        )
        if reading.bm25_entries is not None:
            yield GaugeMetricFamily(
                "varagity_bm25_entries", "Chunks in the BM25 index.", value=reading.bm25_entries
            )
        if reading.state_disk is not None:
            free, total = reading.state_disk
            yield GaugeMetricFamily(
                "varagity_state_disk_free_bytes",
                "Free bytes on the filesystem that holds the state folder (VARAGITY_HOME).",
                value=free,
            )
            yield GaugeMetricFamily(
                "varagity_state_disk_size_bytes",
                "Size of the filesystem that holds the state folder (VARAGITY_HOME).",
                value=total,
            )


def register_infra_collector(
    read: Callable[[], InfraReading | None], registry: CollectorRegistry = REGISTRY
) -> InfraCollector:
    """Register an infrastructure collector (replacing the one a previous app registered)."""
    return _register(InfraCollector(read), registry)
