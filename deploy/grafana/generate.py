"""The Grafana dashboards as code: Query, Ingestion and Infra, over the metrics
``GET /metrics`` exports (varagity/observability/metrics.py) and Prometheus's own.

``make dashboards`` (``python deploy/grafana/generate.py``) writes one JSON file per
dashboard into deploy/grafana/dashboards/, which compose.yaml's Grafana service loads
through deploy/grafana/provisioning/. The JSON is committed; tests/test_dashboards.py
fails when it differs from what this file generates, and tests/stack/test_live_stack.py
runs every panel's query through a real Prometheus scraping a live stack.

Built with grafana-foundation-sdk (pinned in pyproject.toml's dev extra).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grafana_foundation_sdk.builders import bargauge, gauge, prometheus, stat, timeseries
from grafana_foundation_sdk.builders import common as common_builders
from grafana_foundation_sdk.builders.dashboard import Dashboard, Row
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models import common
from grafana_foundation_sdk.models.dashboard import DataSourceRef

OUT = Path(__file__).with_name("dashboards")
# the uid the provisioned datasource declares (provisioning/datasources/prometheus.yaml)
DATASOURCE = DataSourceRef(type_val="prometheus", uid="varagity-prometheus")
# the scrape job of the API in deploy/prometheus/prometheus.yml
API_JOB = 'job="varagity-api"'
RATE = "$__rate_interval"


@dataclass(frozen=True)
class Query:
    """One PromQL target of a panel and its legend."""

    expr: str
    legend: str = ""


def _targets(panel: Any, queries: list[Query]) -> Any:
    for ref, q in zip("ABCDEFGH", queries, strict=False):
        target = prometheus.Dataquery().expr(q.expr).ref_id(ref).datasource(DATASOURCE)
        if q.legend:
            target = target.legend_format(q.legend)
        panel = panel.with_target(target)
    return panel.datasource(DATASOURCE)


def series(
    title: str,
    description: str,
    queries: list[Query],
    unit: str,
    *,
    stacked: bool = False,
    width: int = 12,
) -> Any:
    """A time series panel."""
    panel = (
        timeseries.Panel()
        .title(title)
        .description(description)
        .unit(unit)
        .span(width)
        .height(8)
        .fill_opacity(10)
        .legend(
            common_builders.VizLegendOptions()
            .display_mode(common.LegendDisplayMode.TABLE)
            .placement(common.LegendPlacement.BOTTOM)
            .show_legend(True)
        )
    )
    if stacked:
        panel = panel.stacking(common_builders.StackingConfig().mode(common.StackingMode.NORMAL))
    return _targets(panel, queries)


def single(title: str, description: str, queries: list[Query], unit: str, *, width: int = 6) -> Any:
    """A stat panel (the latest value of each series)."""
    panel = (
        stat.Panel()
        .title(title)
        .description(description)
        .unit(unit)
        .span(width)
        .height(5)
        .graph_mode(common.BigValueGraphMode.AREA)
        .reduce_options(common_builders.ReduceDataOptions().calcs(["lastNotNull"]))
    )
    return _targets(panel, queries)


def bars(title: str, description: str, queries: list[Query], unit: str, *, width: int = 12) -> Any:
    """A bar gauge (the latest value of each series, one bar each)."""
    panel = (
        bargauge.Panel()
        .title(title)
        .description(description)
        .unit(unit)
        .span(width)
        .height(8)
        .display_mode(common.BarGaugeDisplayMode.GRADIENT)
        .orientation(common.VizOrientation.HORIZONTAL)
        .reduce_options(common_builders.ReduceDataOptions().calcs(["lastNotNull"]))
    )
    return _targets(panel, queries)


def dial(title: str, description: str, queries: list[Query], unit: str, *, width: int = 6) -> Any:
    """A gauge between 0 and 1."""
    panel = (
        gauge.Panel()
        .title(title)
        .description(description)
        .unit(unit)
        .min(0)
        .max(1)
        .span(width)
        .height(5)
        .reduce_options(common_builders.ReduceDataOptions().calcs(["lastNotNull"]))
    )
    return _targets(panel, queries)


def _quantile(q: float, route: str) -> Query:
    return Query(
        f"histogram_quantile({q}, sum by (stage, le) "
        f'(rate(varagity_stage_seconds_bucket{{route="{route}"}}[{RATE}])))',
        "{{stage}}",
    )


def query_dashboard() -> Dashboard:
    """Answering questions: latency per stage, method mix, errors."""
    return (
        _dashboard("varagity-query", "Varagity / Query", "Latency per stage, method mix, errors.")
        .with_row(Row("Latency per stage"))
        .with_panel(
            series(
                "Chat latency per stage (p50)",
                "Median time of each stage of a chat turn (retrieval arms, fusion, rerank, "
                "first token, generation, total).",
                [_quantile(0.5, "chat")],
                "s",
            )
        )
        .with_panel(
            series(
                "Chat latency per stage (p95)",
                "95th percentile of each stage of a chat turn.",
                [_quantile(0.95, "chat")],
                "s",
            )
        )
        .with_panel(
            series(
                "Search latency per stage (p50)",
                "Median time of each stage of POST /api/search.",
                [_quantile(0.5, "search")],
                "s",
            )
        )
        .with_panel(
            series(
                "Search latency per stage (p95)",
                "95th percentile of each stage of POST /api/search.",
                [_quantile(0.95, "search")],
                "s",
            )
        )
        .with_row(Row("Method mix"))
        .with_panel(
            series(
                "Chat turns by retrieval method",
                "Chat turns a second, by engine and retrieval method.",
                [
                    Query(
                        f"sum by (engine, method) (rate(varagity_chat_turns_total[{RATE}]))",
                        "{{engine}} {{method}}",
                    )
                ],
                "reqps",
                stacked=True,
            )
        )
        .with_panel(
            series(
                "Searches by retrieval method",
                "Searches a second, by retrieval method.",
                [Query(f"sum by (method) (rate(varagity_searches_total[{RATE}]))", "{{method}}")],
                "reqps",
                stacked=True,
            )
        )
        .with_row(Row("Errors"))
        .with_panel(
            series(
                "Chat turns that failed or were aborted",
                "Chat turns a second that ended in an error or were aborted by the client.",
                [
                    Query(
                        "sum by (outcome) "
                        f'(rate(varagity_chat_turns_total{{outcome!="ok"}}[{RATE}]))',
                        "{{outcome}}",
                    )
                ],
                "reqps",
            )
        )
        .with_panel(
            single(
                "Chat error ratio",
                "Share of chat turns that ended in an error, over the last hour.",
                [
                    Query(
                        'sum(increase(varagity_chat_turns_total{outcome="error"}[1h])) / '
                        "clamp_min(sum(increase(varagity_chat_turns_total[1h])), 1)"
                    )
                ],
                "percentunit",
            )
        )
        .with_panel(
            single(
                "Refused ingest requests and uploads",
                "Ingest launches and uploads the API refused over the last hour.",
                [
                    Query(
                        'sum(increase(varagity_ingest_requests_total{outcome!="launched"}[1h]))',
                        "ingest requests",
                    ),
                    Query(
                        'sum(increase(varagity_uploaded_files_total{outcome="refused"}[1h]))',
                        "uploads",
                    ),
                ],
                "short",
            )
        )
        .with_panel(
            series(
                "Page previews by outcome",
                "Evidence-panel page previews a second: shown, or unavailable by reason "
                "(file gone, changed since indexing, not a paged format, ...).",
                [
                    Query(
                        f"sum by (outcome) (rate(varagity_page_previews_total[{RATE}]))",
                        "{{outcome}}",
                    )
                ],
                "reqps",
            )
        )
    )


def ingestion_dashboard() -> Dashboard:
    """The pipeline: files by status, throughput, step durations, queue, blurbs."""
    return (
        _dashboard(
            "varagity-ingestion",
            "Varagity / Ingestion",
            "Files by status, throughput, step durations, queue depth, contextualization.",
        )
        .with_row(Row("Corpus"))
        .with_panel(
            bars(
                "Files by status",
                "Corpus files and documents by status: indexed, no_text (stored without "
                "text), pending, failed, outdated (changed since indexed), missing.",
                [Query("varagity_corpus_files", "{{status}}")],
                "short",
            )
        )
        .with_panel(
            single(
                "Failed files",
                "Files whose last ingest failed (the corpus listing names the stage and "
                "the reason). Alert: VaragityIngestFailures.",
                [Query('varagity_corpus_files{status="failed"}')],
                "short",
            )
        )
        .with_panel(
            dial(
                "Contextualization progress",
                "Share of stored chunks that have their LLM blurb.",
                [
                    Query(
                        "varagity_corpus_chunks_contextualized / "
                        "clamp_min(varagity_corpus_chunks, 1)"
                    )
                ],
                "percentunit",
            )
        )
        .with_row(Row("Throughput"))
        .with_panel(
            series(
                "Indexed per minute",
                "Documents and chunks added to the index a minute (net of removals).",
                [
                    Query("deriv(varagity_corpus_documents[10m]) * 60", "documents"),
                    Query("deriv(varagity_corpus_chunks[10m]) * 60", "chunks"),
                    Query("deriv(varagity_corpus_chunks_contextualized[10m]) * 60", "blurbs"),
                ],
                "short",
            )
        )
        .with_panel(
            series(
                "Uploads",
                "Uploaded files a second, by outcome.",
                [
                    Query(
                        f"sum by (outcome) (rate(varagity_uploaded_files_total[{RATE}]))",
                        "{{outcome}}",
                    )
                ],
                "reqps",
            )
        )
        .with_row(Row("Pipeline"))
        .with_panel(
            bars(
                "Step durations",
                "Mean duration of each pipeline step over the newest finished ingest and "
                "contextualize runs.",
                [Query("varagity_pipeline_step_seconds", "{{step}}")],
                "s",
            )
        )
        .with_panel(
            series(
                "Queue depth",
                "Dagster runs waiting or working, and files waiting for their ingest.",
                [
                    Query("sum by (status) (varagity_dagster_runs)", "runs {{status}}"),
                    Query('varagity_corpus_files{status="pending"}', "files pending"),
                ],
                "short",
                stacked=False,
            )
        )
        .with_panel(
            bars(
                "Evaluation gates",
                "1: the gate passed on its asset's latest materialization; 0: it failed "
                "(alert: VaragityEvalGateFailing).",
                [Query("varagity_eval_gate_passed", "{{asset}} {{check}}")],
                "bool",
            )
        )
    )


def infra_dashboard() -> Dashboard:
    """Processes, model servers and stores."""
    return (
        _dashboard(
            "varagity-infra",
            "Varagity / Infra",
            "Process memory and CPU, model server health, store sizes, the state disk.",
        )
        .with_row(Row("API process"))
        .with_panel(
            series(
                "API memory",
                "Resident and virtual memory of the API process.",
                [
                    Query(f"process_resident_memory_bytes{{{API_JOB}}}", "resident"),
                    Query(f"process_virtual_memory_bytes{{{API_JOB}}}", "virtual"),
                ],
                "bytes",
            )
        )
        .with_panel(
            series(
                "API CPU",
                "CPU seconds a second the API process uses (1 = one core).",
                [Query(f"rate(process_cpu_seconds_total{{{API_JOB}}}[{RATE}])", "cpu")],
                "short",
            )
        )
        .with_row(Row("Model servers"))
        .with_panel(
            bars(
                "Model servers up",
                "1 when the model server answers the API's probe (llm, embedding, and "
                "rerank when RERANK_BASE_URL is set). Alert: VaragityModelServerDown.",
                [Query("varagity_model_server_up", "{{server}}")],
                "bool",
            )
        )
        .with_panel(
            bars(
                "Scrape targets up",
                "1 when Prometheus scraped the target (the API, and in compose.yaml the "
                "llm and embeddings servers' own /metrics).",
                [Query("up", "{{job}}")],
                "bool",
            )
        )
        .with_row(Row("Stores"))
        .with_panel(
            series(
                "Store sizes",
                "On-disk size of the Postgres database and the Tantivy BM25 index.",
                [Query("varagity_store_bytes", "{{store}}")],
                "bytes",
            )
        )
        .with_panel(
            series(
                "Index entries",
                "Chunks in pgvector and in the BM25 index (they should match).",
                [
                    Query("varagity_corpus_chunks", "pgvector chunks"),
                    Query("varagity_bm25_entries", "bm25 entries"),
                ],
                "short",
            )
        )
        .with_panel(
            dial(
                "State folder disk used",
                "Share of the filesystem holding VARAGITY_HOME in use. Alert: "
                "VaragityStateDiskNearlyFull.",
                [Query("1 - varagity_state_disk_free_bytes / varagity_state_disk_size_bytes")],
                "percentunit",
            )
        )
    )


def _dashboard(uid: str, title: str, description: str) -> Dashboard:
    return (
        Dashboard(title)
        .uid(uid)
        .description(description)
        .tags(["varagity"])
        .refresh("30s")
        .time("now-6h", "now")
        .timezone("browser")
        .readonly()
    )


DASHBOARDS: dict[str, Callable[[], Dashboard]] = {
    "query": query_dashboard,
    "ingestion": ingestion_dashboard,
    "infra": infra_dashboard,
}


def render(name: str) -> str:
    """The JSON of one dashboard, as committed."""
    model = DASHBOARDS[name]().build()
    for number, panel in enumerate(model.panels or [], start=1):
        # stable, unique ids: Grafana links to and embeds panels by them
        if hasattr(panel, "id_val"):
            panel.id_val = number
        else:
            panel.id = number
    return json.dumps(model, cls=JSONEncoder, indent=2, sort_keys=True) + "\n"


def main(argv: list[str]) -> int:
    """Write every dashboard's JSON into :data:`OUT` (``--check``: only compare)."""
    check = "--check" in argv
    stale = []
    for name in DASHBOARDS:
        path = OUT / f"{name}.json"
        text = render(name)
        if check:
            if not path.is_file() or path.read_text(encoding="utf-8") != text:
                stale.append(path)
        else:
            path.write_text(text, encoding="utf-8")
            print(f"wrote {path}")
    for path in stale:
        print(f"{path} differs from deploy/grafana/generate.py: run `make dashboards`")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
