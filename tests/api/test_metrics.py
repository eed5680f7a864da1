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
