"""``/metrics``: Prometheus text with stage histograms, counters and corpus gauges."""

from __future__ import annotations

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.support.api_server import index_files, serve
from varagity.config import Settings
from varagity.services import Services

pytestmark = pytest.mark.integration


def _samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def test_metrics_report_stages_counters_and_corpus(stack_settings: Settings) -> None:
    index_files(
        stack_settings,
        {
            "a.md": "# Pumps\n\nThe Orca pump moves 12 litres a minute.\n",
            "b.txt": "Basil needs six hours of sun.\n",
        },
    )
    services = Services.open(stack_settings)
    try:
        chunks = services.pg.count_chunks()
    finally:
        services.close()

    with serve(stack_settings) as base:
        before = _samples(httpx.get(f"{base}/metrics", timeout=30).text)
        searched = httpx.post(
            f"{base}/api/search", json={"query": "Orca pump", "method": "hybrid"}, timeout=60
        )
        assert searched.status_code == 200
        response = httpx.get(f"{base}/metrics", timeout=30)

    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    after = _samples(response.text)
    assert after[("varagity_corpus_documents", ())] == 2
    assert after[("varagity_corpus_chunks", ())] == chunks
    assert after[("varagity_corpus_stale", ())] == 0
    key = ("varagity_searches_total", (("method", "hybrid"),))
    assert after[key] == before.get(key, 0) + 1
    for stage in ("embed", "semantic", "bm25", "fusion"):
        count = ("varagity_stage_seconds_count", (("route", "search"), ("stage", stage)))
        assert after[count] == before.get(count, 0) + 1, stage


def test_metrics_report_pipeline_and_infrastructure(stack_settings: Settings) -> None:
    index_files(stack_settings, {"a.md": "# Pumps\n\nThe Orca pump moves 12 litres a minute.\n"})
    (stack_settings.docs_path / "waiting.txt").write_text("Not ingested yet.\n")
    services = Services.open(stack_settings)
    try:
        chunks = services.pg.count_chunks()
    finally:
        services.close()

    with serve(stack_settings) as base:
        samples = _samples(httpx.get(f"{base}/metrics", timeout=30).text)

    files = {
        labels[0][1]: v for (name, labels), v in samples.items() if name == "varagity_corpus_files"
    }
    assert files == {
        "indexed": 1,
        "pending": 1,
        "no_text": 0,
        "failed": 0,
        "outdated": 0,
        "missing": 0,
    }
    # CONTEXTUALIZE is on by default but nothing ran the blurb stage here
    assert samples[("varagity_corpus_chunks_contextualized", ())] == 0
    assert samples[("varagity_model_server_up", (("server", "llm"),))] == 1
    assert samples[("varagity_model_server_up", (("server", "embedding"),))] == 1
    assert samples[("varagity_store_bytes", (("store", "postgres"),))] > 0
    assert samples[("varagity_store_bytes", (("store", "bm25"),))] > 0
    assert samples[("varagity_bm25_entries", ())] == chunks
    free = samples[("varagity_state_disk_free_bytes", ())]
    assert 0 < free <= samples[("varagity_state_disk_size_bytes", ())]
    # the process collector: the API's own memory and CPU
    assert samples[("process_resident_memory_bytes", ())] > 0
    # no Dagster webserver answers here: its gauges are left out, the scrape still works
    assert not any(name == "varagity_dagster_runs" for name, _ in samples)


def test_a_model_server_that_does_not_answer_reads_as_down(stack_settings: Settings) -> None:
    settings = stack_settings.model_copy(update={"LLM_BASE_URL": "http://127.0.0.1:9/v1"})
    with serve(settings) as base:
        samples = _samples(httpx.get(f"{base}/metrics", timeout=30).text)
    assert samples[("varagity_model_server_up", (("server", "llm"),))] == 0
    assert samples[("varagity_model_server_up", (("server", "embedding"),))] == 1
