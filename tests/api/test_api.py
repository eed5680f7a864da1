"""The HTTP API served by a real uvicorn, read with real HTTP and SSE clients."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from httpx_sse import connect_sse

from tests.support.api_server import index_files, serve
from varagity.config import Settings
from varagity_stack.model_servers import free_port

pytestmark = pytest.mark.integration


@pytest.fixture
def api(stack_settings: Settings) -> Iterator[str]:
    index_files(stack_settings)
    with serve(stack_settings) as base:
        yield base


def _events(base: str, body: dict) -> list[tuple[str, dict]]:
    with (
        httpx.Client(timeout=120) as client,
        connect_sse(client, "POST", f"{base}/api/chat", json=body) as source,
    ):
        assert source.response.status_code == 200
        assert source.response.headers["content-type"].startswith("text/event-stream")
        return [(e.event, json.loads(e.data)) for e in source.iter_sse()]


def test_health_reports_each_component(api: str) -> None:
    body = httpx.get(f"{api}/api/health", timeout=30).json()
    comps = body["components"]
    for name in ("postgres", "bm25", "embedding_server", "llm_server", "reader_server"):
        assert comps[name]["ok"], (name, comps[name])
    # no Dagster webserver runs in this test: health says so instead of failing
    assert comps["dagster"]["ok"] is False
    assert body["status"] == "degraded"


@pytest.mark.parametrize("method", ["semantic", "bm25", "hybrid"])
def test_search_returns_ranked_chunks_with_traces(api: str, method: str) -> None:
    r = httpx.post(
        f"{api}/api/search",
        json={"query": "kettle warranty months", "k": 3, "method": method},
        timeout=60,
    )
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["method"] == method
    top = body["results"][0]
    assert top["relative_path"] == "kettle.md"
    assert top["n"] == 1 and top["trace"]["final_rank"] == 1
    ranks = [x["trace"]["final_rank"] for x in body["results"]]
    assert ranks == list(range(1, len(ranks) + 1))
    if method == "hybrid":
        assert top["trace"]["semantic_rank"] is not None or top["trace"]["bm25_rank"] is not None
        assert 0 < top["trace"]["fused_score"] <= 1.0
    else:
        assert top["trace"][f"{method}_rank"] == 1
    assert body["timings_ms"]


def test_chat_streams_retrieval_tokens_done(api: str) -> None:
    events = _events(api, {"question": "How long is the warranty of the Tern K2 kettle?"})
    names = [name for name, _ in events]
    assert names[0] == "retrieval"
    assert names[-1] == "done"
    assert "token" in names and "error" not in names
    assert set(names[1:-1]) == {"token"}
    retrieval = events[0][1]
    assert retrieval["sources"][0]["relative_path"] == "kettle.md"
    assert [s["n"] for s in retrieval["sources"]] == list(range(1, len(retrieval["sources"]) + 1))
    answer = "".join(data["delta"] for name, data in events if name == "token")
    assert answer.strip()
    assert events[-1][1]["answer"] == answer
    assert all(1 <= n <= len(retrieval["sources"]) for n in events[-1][1]["cited"])


def test_chat_model_failure_is_an_in_band_error(api: str, stack_settings: Settings) -> None:
    # point a second app at a dead LLM port: the stream still opens and ends with `error`
    dead = stack_settings.model_copy(
        update={"LLM_BASE_URL": f"http://127.0.0.1:{free_port()}/v1", "MODEL_MAX_RETRIES": 0}
    )
    with serve(dead) as base:
        events = _events(base, {"question": "kettle warranty?"})
    assert events[0][0] == "retrieval"
    assert events[-1][0] == "error"
    assert events[-1][1]["code"] == "model_unavailable"
    assert "127.0.0.1" in events[-1][1]["message"]


def test_bad_requests_get_one_error_shape(api: str) -> None:
    r = httpx.post(f"{api}/api/search", json={"query": "", "k": 0}, timeout=10)
    assert r.status_code == 422
    body = r.json()
    assert body["code"] == "invalid_request"
    assert "query" in body["message"] and "k" in body["message"]
    r = httpx.post(f"{api}/api/search", json={"query": "x", "method": "magic"}, timeout=10)
    assert r.status_code == 422 and "method" in r.json()["message"]
    r = httpx.get(f"{api}/api/nope", timeout=10)
    assert r.status_code == 404 and r.json()["code"] == "not_found"


def test_index_page_links_the_dagster_ui(api: str) -> None:
    page = httpx.get(f"{api}/", timeout=10).text
    assert "Dagster UI" in page and "/docs" in page and "{{DAGSTER_URL}}" not in page


def test_store_outage_is_a_503(make_settings, model_urls: dict[str, str], tmp_path: Path) -> None:
    settings = make_settings(
        DATABASE_URL=f"postgresql://nobody@127.0.0.1:{free_port()}/none", **model_urls
    )
    with serve(settings) as base:
        r = httpx.post(f"{base}/api/search", json={"query": "x"}, timeout=30)
        health = httpx.get(f"{base}/api/health", timeout=30).json()
    assert r.status_code == 503
    assert r.json()["code"] == "stores_unavailable"
    assert "Cannot connect to Postgres" in r.json()["message"]
    assert health["components"]["postgres"]["ok"] is False
