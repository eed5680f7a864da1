"""Who may come in: foreign Origins, foreign Host names and a missing API key are
refused over real HTTP before any route runs."""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import urlsplit

import httpx
import pytest
from httpx_sse import connect_sse

from tests.conftest import SettingsFactory
from tests.support.api_server import serve
from varagity.config import Settings, SettingsError, load_settings

pytestmark = pytest.mark.integration

EVIL = "http://evil.example"
KEY = "k3y-for-the-tests-only"


@pytest.fixture
def open_api(make_settings: SettingsFactory, pg_url: str) -> Iterator[tuple[str, Settings]]:
    """The API on loopback without a key (the default)."""
    settings = make_settings(DATABASE_URL=pg_url, ALLOWED_HOSTS="rag.lan")
    with serve(settings) as base:
        yield base, settings


@pytest.fixture
def keyed_api(make_settings: SettingsFactory, pg_url: str) -> Iterator[str]:
    """The API with API_KEY set and a database URL carrying a query-string password."""
    with serve(
        make_settings(
            DATABASE_URL=pg_url + ("&" if "?" in pg_url else "?") + "password=hunter2", API_KEY=KEY
        )
    ) as base:
        yield base


def _upload(base: str, headers: dict[str, str]) -> httpx.Response:
    return httpx.post(
        f"{base}/api/documents/upload",
        files=[("files", ("planted.md", b"# planted\n"))],
        headers=headers,
        timeout=30,
    )


def _values(base: str, headers: dict[str, str]) -> dict[str, object]:
    r = httpx.get(f"{base}/api/settings", headers=headers, timeout=30)
    assert r.status_code == 200, r.text
    return {f["name"]: f["value"] for f in r.json()["settings"]}


def test_a_foreign_origin_cannot_change_state(open_api: tuple[str, Settings]) -> None:
    base, settings = open_api
    refused = [
        _upload(base, {"origin": EVIL}),
        _upload(base, {"origin": "null"}),
        httpx.post(
            f"{base}/api/documents/delete", json={"doc_ids": ["x"]}, headers={"origin": EVIL}
        ),
        httpx.delete(f"{base}/api/documents/x", headers={"origin": EVIL}),
        httpx.patch(f"{base}/api/settings", json={"TOP_K": 3}, headers={"origin": EVIL}),
        httpx.post(f"{base}/api/chat", json={"question": "hi"}, headers={"origin": EVIL}),
        httpx.post(
            f"{base}/v1/chat/completions",
            json={"model": "varagity", "messages": [{"role": "user", "content": "hi"}]},
            headers={"origin": EVIL},
        ),
    ]
    for r in refused:
        assert r.status_code == 403, r.text
        assert r.json()["code"] == "cross_origin_refused"
        assert "evil.example" in r.json()["message"] or "'null'" in r.json()["message"]
    assert not settings.docs_path.exists() or list(settings.docs_path.iterdir()) == []
    assert _values(base, {})["TOP_K"] != 3
    # the API's own page, and a client sending no Origin (curl, the CLI), may
    own = _upload(base, {"origin": base})
    assert own.status_code == 200 and own.json()["counts"] == {"stored": 1}, own.text
    plain = httpx.post(f"{base}/api/documents/delete", json={"doc_ids": ["x"]}, timeout=30)
    assert plain.status_code == 200 and plain.json()["not_found"] == ["x"]
    # reading cross-origin is the browser's CORS business: no CORS header is granted
    read = httpx.get(f"{base}/api/documents", headers={"origin": EVIL}, timeout=30)
    assert read.status_code == 200 and "access-control-allow-origin" not in read.headers


def test_only_the_apis_own_host_names_are_answered(open_api: tuple[str, Settings]) -> None:
    base, _ = open_api
    port = urlsplit(base).port
    for host in ("evil.example", f"evil.example:{port}", "127.0.0.1.evil.example"):
        r = httpx.get(f"{base}/api/documents", headers={"host": host}, timeout=30)
        assert r.status_code == 400, (host, r.text)
        assert r.json()["code"] == "host_not_allowed" and "ALLOWED_HOSTS" in r.json()["message"]
    for host in (f"localhost:{port}", f"127.0.0.1:{port}", "rag.lan", f"RAG.lan:{port}"):
        r = httpx.get(f"{base}/api/documents", headers={"host": host}, timeout=30)
        assert r.status_code == 200, (host, r.text)


def test_binding_beyond_loopback_without_a_key_is_refused(tmp_path: object) -> None:
    with pytest.raises(SettingsError, match="API_KEY is required"):
        load_settings(HOST="0.0.0.0", API_KEY=None)
    with pytest.raises(SettingsError, match="API_KEY is required"):
        load_settings(HOST="192.168.1.20", API_KEY="   ")
    assert load_settings(HOST="0.0.0.0", API_KEY=KEY).API_KEY == KEY
    assert load_settings(HOST="::1", API_KEY=None).API_KEY is None


def test_the_api_key_is_required_on_every_route_but_health_and_metrics(keyed_api: str) -> None:
    base = keyed_api
    assert httpx.get(f"{base}/api/health", timeout=30).status_code == 200
    assert httpx.get(f"{base}/metrics", timeout=30).status_code == 200
    assert httpx.get(f"{base}/", timeout=30).status_code == 200  # the page that asks for it
    for method, path in (
        ("GET", "/api/documents"),
        ("GET", "/api/settings"),
        ("GET", "/api/conversations"),
        ("GET", "/v1/models"),
        ("GET", "/openapi.json"),
        ("POST", "/api/documents/delete"),
    ):
        r = httpx.request(method, f"{base}{path}", json={"doc_ids": ["x"]}, timeout=30)
        assert r.status_code == 401, (path, r.text)
        assert r.json()["code"] == "api_key_required"
        assert r.headers["www-authenticate"].startswith("Bearer")
    wrong = httpx.get(f"{base}/api/documents", headers={"authorization": "Bearer nope"}, timeout=30)
    assert wrong.status_code == 401 and wrong.json()["code"] == "api_key_invalid"
    auth = {"authorization": f"Bearer {KEY}"}
    assert httpx.get(f"{base}/api/documents", headers=auth, timeout=30).status_code == 200
    # the key is never shown back, nor a password in the database URL's query string
    values = _values(base, auth)
    assert values["API_KEY"] == "********" and KEY not in str(values)
    assert "hunter2" not in values["DATABASE_URL"] and "password=***" in values["DATABASE_URL"]
    health = httpx.get(f"{base}/api/health", timeout=30).text
    assert "hunter2" not in health and KEY not in health
    # event streams carry it too: a whitespace-only question reaches the route's own check
    with (
        httpx.Client(timeout=30) as client,
        connect_sse(
            client, "POST", f"{base}/api/chat", json={"question": "   "}, headers=auth
        ) as source,
    ):
        assert source.response.status_code == 422


METRICS_KEY = "metrics-k3y-for-the-tests-only"


@pytest.mark.parametrize("api_key", [None, KEY])
def test_metrics_api_key_limits_health_and_metrics_separately(
    make_settings: SettingsFactory, pg_url: str, api_key: str | None
) -> None:
    """METRICS_API_KEY closes health and metrics, with or without API_KEY on the rest."""
    settings = make_settings(DATABASE_URL=pg_url, API_KEY=api_key, METRICS_API_KEY=METRICS_KEY)
    with serve(settings) as base:
        for path in ("/api/health", "/metrics"):
            r = httpx.get(f"{base}{path}", timeout=30)
            assert r.status_code == 401 and r.json()["code"] == "api_key_required", r.text
            assert "METRICS_API_KEY" in r.json()["message"]
            wrong = httpx.get(f"{base}{path}", headers={"authorization": "Bearer x"}, timeout=30)
            assert wrong.status_code == 401 and wrong.json()["code"] == "api_key_invalid"
            for key in (METRICS_KEY, api_key):
                if key is not None:  # its own key, or the API's
                    auth = {"authorization": f"Bearer {key}"}
                    ok = httpx.get(f"{base}{path}", headers=auth, timeout=30)
                    assert ok.status_code == 200, (path, ok.text)
        # the metrics key opens nothing else
        r = httpx.get(
            f"{base}/api/documents",
            headers={"authorization": f"Bearer {METRICS_KEY}"},
            timeout=30,
        )
        assert r.status_code == (401 if api_key else 200), r.text


def test_openapi_documents_both_bearer_schemes() -> None:
    from varagity_api.openapi import render_openapi

    document = render_openapi()
    schemes = document["components"]["securitySchemes"]
    assert schemes["apiKey"] == {**schemes["apiKey"], "type": "http", "scheme": "bearer"}
    assert schemes["metricsKey"]["scheme"] == "bearer"
    for path, operations in document["paths"].items():
        for operation in operations.values():
            wanted = "metricsKey" if path in ("/api/health", "/metrics") else "apiKey"
            assert operation["security"] == [{}, {wanted: []}], path
            assert "401" in operation["responses"], path
