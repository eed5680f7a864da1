"""The Dagster UI's guarded front over real HTTP and websockets, before a real upstream.

The upstream is a small Starlette app standing in for ``dagster-webserver``: it executes
nothing, but records every GraphQL document that reaches it, echoes websocket frames
under the ``graphql-ws`` subprotocol, and streams. So each test can say both what the
front answered and that a refused request never reached the webserver. The real
webserver behind the front is driven in ``tests/web/test_app_e2e.py``.
"""

from __future__ import annotations

import asyncio
import hashlib
import socket
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from urllib.parse import quote

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, StreamingResponse
from starlette.routing import Route, WebSocketRoute
from starlette.websockets import WebSocket
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect as ws_connect

from tests.conftest import SettingsFactory
from tests.support.api_server import serve_app
from varagity.config import Settings
from varagity_stack.dagster_front import (
    LOGIN_PATH,
    SESSION_COOKIE,
    DagsterFront,
    graphql_url_refusal,
    safe_next,
    session_value,
)

pytestmark = pytest.mark.integration

EVIL = "http://evil.example"
KEY = "front-k3y-for-the-tests-only"
PROBE = "/graphql?query=mutation{reloadWorkspace{__typename}}"  # the bug report's


@dataclass
class Upstream:
    """What reached the stand-in webserver."""

    graphql: list[tuple[str, str]] = field(default_factory=list)  # (method, document)
    headers: list[dict[str, str]] = field(default_factory=list)
    release: threading.Event = field(default_factory=threading.Event)  # ends /stream


def upstream_app(seen: Upstream) -> Starlette:
    """The stand-in webserver."""

    async def graphql(request: Request) -> JSONResponse:
        seen.headers.append(dict(request.headers))
        if request.method == "POST" and "json" in request.headers.get("content-type", ""):
            document = (await request.json())["query"]
        else:
            document = request.query_params.get("query", "")
        seen.graphql.append((request.method, document))
        return JSONResponse({"data": {"executed": document}})

    async def echo(request: Request) -> JSONResponse:
        digest = hashlib.sha256()
        size = 0
        async for chunk in request.stream():
            digest.update(chunk)
            size += len(chunk)
        return JSONResponse({"size": size, "sha256": digest.hexdigest()})

    async def stream(request: Request) -> StreamingResponse:
        async def body() -> AsyncIterator[bytes]:
            yield b"first\n"
            for _ in range(300):  # until the test has read the first part, 30 s at most
                if seen.release.is_set():
                    break
                await asyncio.sleep(0.1)
            yield b"x" * 2_000_000

        return StreamingResponse(body(), media_type="text/plain")

    async def socket(websocket: WebSocket) -> None:
        await websocket.accept(subprotocol="graphql-ws")
        while True:
            try:
                text = await websocket.receive_text()
            except Exception:
                return
            await websocket.send_text(f"echo:{text}")

    return Starlette(
        routes=[
            Route("/graphql", graphql, methods=["GET", "POST"]),
            Route("/echo", echo, methods=["POST", "PUT"]),
            Route("/stream", stream),
            WebSocketRoute("/graphql", socket),
        ]
    )


@dataclass
class Front:
    """A running front (its base URL and port) and what its upstream saw."""

    base: str
    port: int
    seen: Upstream
    settings: Settings


@contextmanager
def _front(settings: Settings) -> Iterator[Front]:
    seen = Upstream()
    with (
        serve_app(upstream_app(seen)) as upstream_port,
        serve_app(DagsterFront(f"http://127.0.0.1:{upstream_port}", settings)) as port,
    ):
        yield Front(f"http://127.0.0.1:{port}", port, seen, settings)
    seen.release.set()


@pytest.fixture
def front(make_settings: SettingsFactory) -> Iterator[Front]:
    """The front without an API key (the loopback default)."""
    with _front(make_settings(ALLOWED_HOSTS="rag.lan")) as running:
        yield running


@pytest.fixture
def keyed_front(make_settings: SettingsFactory) -> Iterator[Front]:
    """The front of a stack with API_KEY set."""
    with _front(make_settings(API_KEY=KEY)) as running:
        yield running


def _gql_get(base: str, document: str, **headers: str) -> httpx.Response:
    return httpx.get(f"{base}/graphql", params={"query": document}, headers=headers, timeout=30)


# --- Host: DNS rebinding -------------------------------------------------------------------


def test_a_rebinding_host_is_refused(front: Front) -> None:
    for host in ("evil.example", f"evil.example:{front.port}", "127.0.0.1.evil.example"):
        r = _gql_get(front.base, "{ version }", host=host)
        assert r.status_code == 400, (host, r.text)
        assert r.json()["code"] == "host_not_allowed" and "ALLOWED_HOSTS" in r.json()["message"]
        page = httpx.get(f"{front.base}/runs", headers={"host": host}, timeout=30)
        assert page.status_code == 400
    assert front.seen.graphql == []
    for host in (f"127.0.0.1:{front.port}", f"localhost:{front.port}", "RAG.lan"):
        r = _gql_get(front.base, "{ version }", host=host)
        assert r.status_code == 200, (host, r.text)
    assert len(front.seen.graphql) == 3


# --- GraphQL mutations in URLs ---------------------------------------------------------------


def test_the_reported_get_mutation_is_refused(front: Front) -> None:
    # exactly the bug report's probe, raw (httpx would not re-encode the braces' meaning)
    r = httpx.get(f"{front.base}{PROBE}", timeout=30)
    assert r.status_code == 405, r.text
    assert r.json()["code"] == "graphql_mutation_in_url"
    assert "POST" in r.json()["message"]
    assert front.seen.graphql == [], "the mutation reached the webserver"


@pytest.mark.parametrize(
    "document",
    [
        "mutation{reloadWorkspace{__typename}}",
        "  # a comment first\n\tmutation { reloadWorkspace { __typename } }",
        "mutation Reload { reloadWorkspace { __typename } }",
        "query Harmless { version } mutation Wipe { wipeAssets(assetPartitionRanges: []) "
        "{ __typename } }",
        'subscription { pipelineRunLogs(runId: "x") { __typename } }',
    ],
)
def test_any_non_query_operation_in_the_url_is_refused(front: Front, document: str) -> None:
    for path in ("/graphql", "/graphql/", "/GraphQL"):
        for method in ("GET", "HEAD", "POST"):
            # a POST whose body is neither JSON nor application/graphql: the webserver
            # reads the URL's query then
            r = httpx.request(
                method,
                f"{front.base}{path}",
                params={"query": document},
                content=b"x" if method == "POST" else None,
                headers={"content-type": "text/plain"} if method == "POST" else {},
                timeout=30,
            )
            assert r.status_code == 405, (method, path, document, r.text)
    # percent-encoded by hand, and a second `query` parameter behind a harmless one
    encoded = quote(document, safe="")
    for url in (
        f"{front.base}/graphql?query={encoded}",
        f"{front.base}/graphql?query=%7Bversion%7D&query={encoded}",
    ):
        assert httpx.get(url, timeout=30).status_code == 405, url
    assert front.seen.graphql == []


def test_an_unparseable_url_query_is_refused(front: Front) -> None:
    for document in ("mutation{", "not graphql at all", "{ version "):
        r = _gql_get(front.base, document)
        assert r.status_code == 400 and r.json()["code"] == "graphql_unparseable", r.text
    assert front.seen.graphql == []


def test_get_queries_and_posted_mutations_pass(front: Front) -> None:
    for document in ("{ version }", "query Named { version }", "# hi\n{ __typename }"):
        r = _gql_get(front.base, document)
        assert r.status_code == 200 and r.json() == {"data": {"executed": document}}, r.text
    # the UI's (and the API's) way: mutations POSTed as JSON, same origin or no Origin
    mutation = "mutation { reloadWorkspace { __typename } }"
    for headers in ({}, {"origin": front.base, "sec-fetch-site": "same-origin"}):
        r = httpx.post(f"{front.base}/graphql", json={"query": mutation}, headers=headers)
        assert r.status_code == 200, r.text
    assert [m for m, _ in front.seen.graphql] == ["GET", "GET", "GET", "POST", "POST"]


def test_the_url_rule_reads_every_query_parameter() -> None:
    assert graphql_url_refusal("/runs", b"query=mutation{x}") is None  # not GraphQL
    assert graphql_url_refusal("/graphql", b"") is None  # GraphiQL's page
    assert graphql_url_refusal("/prefix/graphql", b"query=mutation+%7Bx%7D") is not None
    refused = graphql_url_refusal("/graphql", b"variables=%7B%7D&query=mutation%7Bx%7D")
    assert refused is not None and refused.status == 405


# --- other web pages -------------------------------------------------------------------------


def test_a_cross_site_post_is_refused(front: Front) -> None:
    mutation = {"query": "mutation { reloadWorkspace { __typename } }"}
    for headers in (
        {"origin": EVIL},
        {"origin": "null"},
        {"origin": f"http://127.0.0.1:{front.port + 1}"},  # same site, another port
        {"sec-fetch-site": "cross-site"},
        {"sec-fetch-site": "same-site"},
        {"origin": front.base, "sec-fetch-site": "cross-site"},
    ):
        for method in ("POST", "PUT", "DELETE"):
            r = httpx.request(method, f"{front.base}/graphql", json=mutation, headers=headers)
            assert r.status_code == 403, (headers, r.text)
            assert r.json()["code"] == "cross_origin_refused"
    assert front.seen.graphql == []
    # reading cross-site is the browser's business (no CORS header is granted)
    r = _gql_get(front.base, "{ version }", origin=EVIL, **{"sec-fetch-site": "cross-site"})
    assert r.status_code == 200 and "access-control-allow-origin" not in r.headers
    assert r.headers["x-frame-options"] == "DENY"  # nor may another page frame the UI


def test_a_websocket_from_another_page_is_refused(front: Front) -> None:
    url = f"ws://127.0.0.1:{front.port}/graphql"
    for kwargs in (
        {"origin": EVIL},
        {"origin": "null"},
        {"origin": front.base, "additional_headers": {"sec-fetch-site": "cross-site"}},
    ):
        with pytest.raises(InvalidStatus) as refused:
            ws_connect(url, subprotocols=["graphql-ws"], open_timeout=10, **kwargs)
        assert refused.value.response.status_code == 403, kwargs
        assert b"cross_origin_refused" in refused.value.response.body
    # a page on a rebound name, even one claiming its own origin
    rebound = f"http://evil.example:{front.port}"
    with (
        socket.create_connection(("127.0.0.1", front.port)) as sock,
        pytest.raises(InvalidStatus) as refused,
    ):
        ws_connect(f"ws://evil.example:{front.port}/graphql", sock=sock, origin=rebound)
    assert refused.value.response.status_code == 400
    assert b"host_not_allowed" in refused.value.response.body
    # the UI's own page (and a client without Origin) get the webserver's websocket
    for origin in (front.base, None):
        with ws_connect(url, origin=origin, subprotocols=["graphql-ws"], open_timeout=10) as ws:
            assert ws.subprotocol == "graphql-ws"
            ws.send('{"type": "connection_init"}')
            assert ws.recv(timeout=10) == 'echo:{"type": "connection_init"}'


# --- the proxy itself -------------------------------------------------------------------------


def test_bodies_stream_both_ways(front: Front) -> None:
    upload = bytes(range(256)) * 40_000  # 10 MB
    r = httpx.post(f"{front.base}/echo", content=upload, timeout=60)
    assert r.json() == {"size": len(upload), "sha256": hashlib.sha256(upload).hexdigest()}

    def chunks() -> Iterator[bytes]:  # chunked transfer encoding, no Content-Length
        for i in range(0, len(upload), 1 << 20):
            yield upload[i : i + (1 << 20)]

    r = httpx.put(f"{front.base}/echo", content=chunks(), timeout=60)
    assert r.json()["size"] == len(upload), r.text
    # the response's first part arrives while the webserver still holds back the rest
    with httpx.stream("GET", f"{front.base}/stream", timeout=30) as response:
        parts = response.iter_raw()
        assert next(parts).startswith(b"first")
        front.seen.release.set()
        assert sum(len(p) for p in parts) >= 2_000_000


def test_safe_next_stays_on_the_front() -> None:
    assert safe_next("/runs?x=1") == "/runs?x=1"
    for target in ("//evil.example/x", "/\\evil.example", "https://evil.example/", "runs", ""):
        assert safe_next(target) == "/", target


# --- the API key -------------------------------------------------------------------------------


def test_the_api_key_is_required_and_a_browser_signs_in(keyed_front: Front) -> None:
    base, seen = keyed_front.base, keyed_front.seen
    r = _gql_get(base, "{ version }")
    assert r.status_code == 401 and r.json()["code"] == "api_key_required", r.text
    assert LOGIN_PATH in r.json()["message"]
    # a person's browser opening the UI is sent to the sign-in page, and back after
    page = httpx.get(
        f"{base}/assets?view=lineage",
        headers={"accept": "text/html", "sec-fetch-mode": "navigate"},
        timeout=30,
    )
    assert page.status_code == 303
    assert page.headers["location"] == f"{LOGIN_PATH}?next=%2Fassets%3Fview%3Dlineage"
    form = httpx.get(f"{base}{page.headers['location']}", timeout=30)
    assert form.status_code == 200 and 'name="key"' in form.text
    assert 'value="/assets?view=lineage"' in form.text
    assert form.headers["x-frame-options"] == "DENY"

    wrong = httpx.post(f"{base}{LOGIN_PATH}", data={"key": "nope", "next": "/runs"}, timeout=30)
    assert wrong.status_code == 401 and "not this stack" in wrong.text
    assert "set-cookie" not in wrong.headers
    # another page cannot sign the visitor in (or out)
    forged = httpx.post(
        f"{base}{LOGIN_PATH}", data={"key": KEY}, headers={"origin": EVIL}, timeout=30
    )
    assert forged.status_code == 403 and "set-cookie" not in forged.headers

    signed = httpx.post(
        f"{base}{LOGIN_PATH}",
        data={"key": KEY, "next": "/runs"},
        headers={"origin": base, "sec-fetch-site": "same-origin"},
        timeout=30,
    )
    assert signed.status_code == 303 and signed.headers["location"] == "/runs"
    set_cookie = signed.headers["set-cookie"]
    attributes = {a.strip().split("=")[0].lower() for a in set_cookie.split(";")}
    assert {"httponly", "samesite", "path", "max-age"} <= attributes
    assert "samesite=strict" in set_cookie.lower()
    value = set_cookie.split(";")[0].split("=", 1)[1]
    assert KEY not in set_cookie and value != KEY
    cookie = {"cookie": f"other=1; {SESSION_COOKIE}={value}"}
    r = _gql_get(base, "{ version }", **cookie)
    assert r.status_code == 200, r.text
    # the front's credentials stay at the front
    assert SESSION_COOKIE not in seen.headers[-1].get("cookie", "")
    assert seen.headers[-1]["cookie"] == "other=1"

    # a websocket of the signed-in page, and none without the cookie
    url = f"ws://127.0.0.1:{keyed_front.port}/graphql"
    with ws_connect(url, origin=base, additional_headers=cookie, open_timeout=10) as ws:
        ws.send("hi")
        assert ws.recv(timeout=10) == "echo:hi"
    with pytest.raises(InvalidStatus) as refused:
        ws_connect(url, origin=base, open_timeout=10)
    assert refused.value.response.status_code == 401


def _tampered(value: str) -> str:
    """``value`` with its last signature digit changed (to another digit, always)."""
    return value[:-1] + ("1" if value.endswith("0") else "0")


def test_scripts_send_the_key_and_forged_cookies_fail(keyed_front: Front) -> None:
    base, seen = keyed_front.base, keyed_front.seen
    r = _gql_get(base, "{ version }", authorization=f"Bearer {KEY}")
    assert r.status_code == 200, r.text
    assert "authorization" not in seen.headers[-1]
    wrong = _gql_get(base, "{ version }", authorization="Bearer nope")
    assert wrong.status_code == 401 and wrong.json()["code"] == "api_key_invalid"
    now = int(time.time())
    for value in (
        KEY,  # the raw key is not a session
        session_value("another-key", now + 3600),
        session_value(KEY, now - 1),  # expired
        _tampered(session_value(KEY, now + 3600)),
        f"{now + 10**9}.{session_value(KEY, now + 3600).split('.')[1]}",  # expiry moved
    ):
        r = _gql_get(base, "{ version }", cookie=f"{SESSION_COOKIE}={value}")
        assert r.status_code == 401, value
    # the key does not open the rules: a GET mutation stays refused with it
    r = httpx.get(f"{base}{PROBE}", headers={"authorization": f"Bearer {KEY}"}, timeout=30)
    assert r.status_code == 405
    assert [m for m, _ in seen.graphql] == ["GET"]
