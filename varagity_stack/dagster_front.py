"""The Dagster UI's guarded front: the only way in to the Dagster webserver.

``dagster-webserver`` has no Host, Origin or authentication options of its own, and it
executes GraphQL mutations sent as ``GET /graphql?query=mutation{...}``: any web page a
user visits could launch, terminate or wipe runs with an image tag, and a page on a
rebound DNS name could read it. So the webserver listens on loopback only (in compose,
only on the internal network) and this front, on ``HOST:DAGSTER_PORT``, is what people
and clients open. Every request and websocket passes the API's own rules
(:mod:`varagity_api.guard`) and one of the front's:

* ``Host`` must be one of the API's names (``host_not_allowed``): no DNS rebinding.
* A POST, PUT, PATCH or DELETE, and every websocket (the UI's GraphQL subscriptions),
  must come from this front's own pages: a foreign ``Origin`` or a ``Sec-Fetch-Site``
  other than ``same-origin``/``none`` is refused (``cross_origin_refused``).
* A GraphQL operation other than a query in the URL of ``/graphql`` is refused, whatever
  the method (``graphql_mutation_in_url``, 405): mutations travel in a POST body, which
  the Origin rule covers. The ``query`` parameter is parsed with graphql-core, so
  comments, whitespace and named operations hide nothing; one that does not parse is
  refused (``graphql_unparseable``).
* With ``API_KEY`` set: ``Authorization: Bearer <API_KEY>`` (scripts, the API, the CLI),
  or the session cookie the front's sign-in page (:data:`LOGIN_PATH`) sets for a
  browser, which cannot add a header to the UI's own requests. The cookie is
  ``HttpOnly; SameSite=Strict`` and holds an expiry and an HMAC-SHA256 of it keyed
  with the API key, never the key itself; a new key invalidates every cookie. A
  browser navigation without it is sent to the sign-in page; anything else gets
  ``401 api_key_required``.

What passes is proxied as it comes: every method, streamed bodies both ways (nothing
is buffered), headers (less hop-by-hop ones and the front's own credentials), and
websockets frame by frame. Responses gain ``X-Frame-Options: DENY`` so no other page
can frame the UI and trick a click.

Run it with ``python -m varagity_stack.dagster_front --upstream http://127.0.0.1:PORT``
(``varagity up`` does); it reads the other settings (``HOST``, ``DAGSTER_PORT``,
``ALLOWED_HOSTS``, ``API_KEY``) from the environment like every Varagity process.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import hmac
import html
import logging
import time
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import parse_qsl, quote, urlsplit

import httpx
from graphql import GraphQLError, OperationDefinitionNode, OperationType, parse
from starlette.types import Message, Receive, Scope, Send
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake

from varagity.config import Settings, load_settings
from varagity.logging_setup import configure_logging
from varagity_api.guard import (
    UNSAFE_METHODS,
    Refusal,
    bearer_refusal,
    bearer_token,
    cross_site_refusal,
    host_refusal,
    refusal_response,
    request_headers,
    send_refusal,
)

log = logging.getLogger(__name__)

LOGIN_PATH = "/varagity-login"
"""The front's sign-in page (GET: the form; POST: the key, which sets the cookie)."""
LOGOUT_PATH = "/varagity-logout"
"""POST here forgets the session cookie."""
SESSION_COOKIE = "varagity_dagster_session"
SESSION_S = 7 * 24 * 3600
"""How long a browser stays signed in."""
MAX_QUERY_TOKENS = 20_000
"""The most GraphQL tokens a URL's query may hold (graphql-core stops parsing beyond)."""
GRAPHQL_WS = "graphql-ws"
"""The websocket subprotocol of the webserver's GraphQL subscriptions."""
_MAX_LOGIN_BODY = 16 * 1024
_HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "trailers",
        "transfer-encoding",
        "upgrade",
    }
)
# a websocket close code the ASGI server may send on (1005, 1006, 1015 are never sent)
_SENDABLE_CLOSE = frozenset({1000, 1001, 1002, 1003, 1007, 1008, 1009, 1010, 1011})


# --- the rules --------------------------------------------------------------------------


def is_graphql_path(path: str) -> bool:
    """Whether ``path`` reaches the webserver's GraphQL endpoint (also under a path
    prefix, with a trailing slash, in any case)."""
    return path.rstrip("/").lower().endswith("/graphql")


def graphql_url_refusal(path: str, query_string: bytes) -> Refusal | None:
    """The refusal of a GraphQL document in the URL of ``path`` that is not only queries.

    The webserver reads ``query`` from the URL for a GET, and for a POST whose body is
    neither JSON nor ``application/graphql``: a mutation there is one an ``<img>`` or a
    link on any page can send. Every ``query`` parameter is checked (the webserver
    takes one of them), decoded as Starlette decodes it.
    """
    if not is_graphql_path(path):
        return None
    pairs = parse_qsl(query_string.decode("latin-1"), keep_blank_values=True)
    for name, document in pairs:
        if name != "query":
            continue
        try:
            parsed = parse(document, no_location=True, max_tokens=MAX_QUERY_TOKENS)
        except GraphQLError as exc:
            return Refusal(
                400,
                "graphql_unparseable",
                f"The GraphQL document in the URL does not parse ({exc.message}); only "
                "queries may travel in a URL, anything else is POSTed as JSON",
            )
        kinds = {d.operation for d in parsed.definitions if isinstance(d, OperationDefinitionNode)}
        if kinds - {OperationType.QUERY}:
            names = ", ".join(sorted(k.value for k in kinds - {OperationType.QUERY}))
            return Refusal(
                405,
                "graphql_mutation_in_url",
                f"A GraphQL {names} in the URL is refused: any web page could send it with "
                "an image tag. POST it as JSON (Content-Type: application/json) instead",
            )
    return None


def session_value(api_key: str, expires: int) -> str:
    """The session cookie's value until ``expires`` (Unix seconds): the expiry and an
    HMAC-SHA256 of it keyed with ``api_key`` (which it does not reveal)."""
    mac = hmac.new(api_key.encode(), f"varagity-dagster-ui:{expires}".encode(), hashlib.sha256)
    return f"{expires}.{mac.hexdigest()}"


def session_valid(api_key: str, value: str, now: float) -> bool:
    """Whether ``value`` is a session cookie made with ``api_key`` that has not expired."""
    expires, _, _ = value.partition(".")
    if not expires.isdigit() or int(expires) < now:
        return False
    return hmac.compare_digest(value.encode(), session_value(api_key, int(expires)).encode())


def cookie(headers: dict[str, str], name: str) -> str | None:
    """The value of cookie ``name`` in the ``Cookie`` header, or None."""
    for part in headers.get("cookie", "").split(";"):
        key, sep, value = part.strip().partition("=")
        if sep and key == name:
            return value.strip().strip('"')
    return None


def key_refusal(settings: Settings, headers: dict[str, str], now: float) -> Refusal | None:
    """With ``API_KEY`` set, the refusal unless the request carries it as a bearer token
    or a valid session cookie."""
    key = settings.API_KEY
    if key is None:
        return None
    if bearer_token(headers) is not None:
        return bearer_refusal(headers, "API_KEY", key)
    session = cookie(headers, SESSION_COOKIE)
    if session is not None and session_valid(key, session, now):
        return None
    return Refusal(
        401,
        "api_key_required",
        f"The Dagster UI needs this stack's API_KEY: sign in at {LOGIN_PATH} in a browser, "
        "or send Authorization: Bearer <API_KEY>",
    )


def front_refusal(
    settings: Settings,
    method: str,
    path: str,
    query_string: bytes,
    headers: dict[str, str],
    *,
    websocket: bool = False,
    now: float | None = None,
) -> Refusal | None:
    """The front's refusal of a request (or a websocket, ``method`` GET), or None.

    In order: the Host, the sender (state-changing methods and websockets), GraphQL in
    the URL, the key (not asked on the sign-in and sign-out pages)."""
    refusal = host_refusal(settings, headers)
    if refusal is None and (websocket or method in UNSAFE_METHODS):
        refusal = cross_site_refusal("WebSocket" if websocket else method, headers)
    if refusal is None:
        refusal = graphql_url_refusal(path, query_string)
    if refusal is None and path not in (LOGIN_PATH, LOGOUT_PATH):
        refusal = key_refusal(settings, headers, time.time() if now is None else now)
    return refusal


def safe_next(target: str) -> str:
    """``target`` if it is a path on this front (no other site, no scheme), else ``/``."""
    if (
        not target.startswith("/")
        or target.startswith(("//", "/\\"))
        or any(c in target for c in "\r\n\t\\")
        or urlsplit(target).netloc
    ):
        return "/"
    return target


# --- the sign-in page --------------------------------------------------------------------

_LOGIN_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Dagster UI: sign in (Varagity)</title>
<style>
body {{ font-family: system-ui, sans-serif; display: grid; place-items: center;
  min-height: 90vh; margin: 0; color: #1f2430; background: #f6f7f9; }}
form {{ background: #fff; padding: 2rem; border-radius: 8px; width: min(24rem, 90vw);
  box-shadow: 0 1px 4px rgba(0, 0, 0, .12); }}
h1 {{ font-size: 1.25rem; margin-top: 0; }}
label {{ display: block; margin-bottom: .4rem; }}
input {{ width: 100%; box-sizing: border-box; padding: .5rem; font: inherit; }}
button {{ margin-top: 1rem; padding: .5rem 1.2rem; font: inherit; }}
.error {{ color: #b00020; }}
</style></head>
<body><form method="post" action="{action}">
<h1>Dagster UI</h1>
<p>This Varagity stack has an API key. Enter it to open the Dagster UI.</p>
{error}
<label for="key">API key</label>
<input id="key" name="key" type="password" autocomplete="current-password" required autofocus>
<input type="hidden" name="next" value="{next}">
<button type="submit">Sign in</button>
</form></body></html>
"""
_PAGE_HEADERS = [
    (b"content-type", b"text/html; charset=utf-8"),
    (b"cache-control", b"no-store"),
    (b"x-frame-options", b"DENY"),
    (
        b"content-security-policy",
        b"default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; "
        b"frame-ancestors 'none'",
    ),
]


def login_page(next_path: str, error: str | None = None) -> bytes:
    """The sign-in form, returning to ``next_path``, with ``error`` above the field."""
    shown = f'<p class="error" role="alert">{html.escape(error)}</p>' if error else ""
    page = _LOGIN_PAGE.format(
        action=LOGIN_PATH, next=html.escape(safe_next(next_path), quote=True), error=shown
    )
    return page.encode()


def _is_navigation(method: str, headers: dict[str, str]) -> bool:
    """Whether a person's browser asks for a page (so a sign-in page, not JSON, answers)."""
    if method not in ("GET", "HEAD"):
        return False
    mode = headers.get("sec-fetch-mode")
    if mode is not None:
        return mode == "navigate"
    return "text/html" in headers.get("accept", "")


def _path_and_query(scope: Scope) -> str:
    query = scope.get("query_string", b"").decode("latin-1")
    return scope["path"] + (f"?{query}" if query else "")


def _redirect(location: str, extra: list[tuple[bytes, bytes]] | None = None) -> Message:
    return {
        "type": "http.response.start",
        "status": 303,
        "headers": [
            (b"location", location.encode("latin-1", "replace")),
            (b"content-length", b"0"),
            (b"cache-control", b"no-store"),
            *(extra or []),
        ],
    }


# --- the proxy --------------------------------------------------------------------------


class DagsterFront:
    """The ASGI app in front of the webserver at ``upstream`` (an ``http://`` base URL)."""

    def __init__(self, upstream: str, settings: Settings) -> None:
        """Guard with ``settings`` (``HOST``, ``ALLOWED_HOSTS``, ``API_KEY``) and forward
        what passes to ``upstream``; the HTTP client is made on first use."""
        if not upstream.startswith(("http://", "https://")):
            raise ValueError(f"upstream {upstream!r} is not an http(s):// URL")
        self.upstream = upstream.rstrip("/")
        self.ws_upstream = "ws" + self.upstream.removeprefix("http")
        self.settings = settings
        self._client: httpx.AsyncClient | None = None

    def client(self) -> httpx.AsyncClient:
        """The pooled client to the webserver (no read timeout: responses may stream)."""
        if self._client is None:
            self._client = httpx.AsyncClient(
                timeout=httpx.Timeout(connect=10.0, read=None, write=60.0, pool=30.0),
                limits=httpx.Limits(max_connections=200, max_keepalive_connections=20),
                follow_redirects=False,
                trust_env=False,
            )
        return self._client

    async def aclose(self) -> None:
        """Close the HTTP client."""
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Guard, then forward, one HTTP request or websocket."""
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        headers = request_headers(scope)
        websocket = scope["type"] == "websocket"
        method = "GET" if websocket else scope["method"]
        path = scope["path"]
        refusal = front_refusal(
            self.settings,
            method,
            path,
            scope.get("query_string", b""),
            headers,
            websocket=websocket,
        )
        if refusal is not None:
            log.warning(
                "refused %s %s (%s): %s", method, path, refusal.code, headers.get("host", "")
            )
        if websocket:
            await self._websocket(scope, receive, send, refusal)
        elif refusal is not None:
            if refusal.code == "api_key_required" and _is_navigation(method, headers):
                location = f"{LOGIN_PATH}?next={quote(_path_and_query(scope), safe='')}"
                await send(_redirect(location))
                await send({"type": "http.response.body", "body": b""})
            else:
                await send_refusal(send, refusal, [(b"x-frame-options", b"DENY")])
        elif path in (LOGIN_PATH, LOGOUT_PATH):
            await self._sign_in(scope, receive, send)
        else:
            await self._http(scope, receive, send)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.aclose()
                await send({"type": "lifespan.shutdown.complete"})
                return

    # --- sign-in ---

    async def _sign_in(self, scope: Scope, receive: Receive, send: Send) -> None:
        method, path = scope["method"], scope["path"]
        query = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1")))
        key = self.settings.API_KEY
        if method in ("GET", "HEAD") and path == LOGIN_PATH:
            target = safe_next(query.get("next", "/"))
            if key is None:  # nothing to sign in to
                await send(_redirect(target))
                await send({"type": "http.response.body", "body": b""})
                return
            await self._page(send, 200, login_page(target))
            return
        if method != "POST":
            await send_refusal(
                send, Refusal(405, "method_not_allowed", f"{path} takes GET (the form) or POST")
            )
            return
        secure = "; Secure" if scope.get("scheme") in ("https", "wss") else ""
        if path == LOGOUT_PATH:
            gone = f"{SESSION_COOKIE}=; Max-Age=0; Path=/; HttpOnly; SameSite=Strict{secure}"
            await send(_redirect(LOGIN_PATH, [(b"set-cookie", gone.encode())]))
            await send({"type": "http.response.body", "body": b""})
            return
        body = await _read_body(receive, _MAX_LOGIN_BODY)
        if body is None:
            await send_refusal(send, Refusal(413, "body_too_large", "The sign-in form is small"))
            return
        form = dict(parse_qsl(body.decode("utf-8", "replace"), keep_blank_values=True))
        target = safe_next(form.get("next", "/"))
        if key is None:
            await send(_redirect(target))
        elif hmac.compare_digest(form.get("key", "").strip().encode(), key.encode()):
            expires = int(time.time()) + SESSION_S
            value = session_value(key, expires)
            set_cookie = (
                f"{SESSION_COOKIE}={value}; Max-Age={SESSION_S}; Path=/; HttpOnly; "
                f"SameSite=Strict{secure}"
            )
            log.info("signed in from %s", (scope.get("client") or ("?",))[0])
            await send(_redirect(target, [(b"set-cookie", set_cookie.encode())]))
        else:
            log.warning("a wrong key was entered from %s", (scope.get("client") or ("?",))[0])
            page = login_page(target, "That is not this stack's API key.")
            await self._page(send, 401, page)
            return
        await send({"type": "http.response.body", "body": b""})

    @staticmethod
    async def _page(send: Send, status: int, page: bytes) -> None:
        headers = [*_PAGE_HEADERS, (b"content-length", str(len(page)).encode())]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": page})

    # --- HTTP ---

    def _target(self, base: str, scope: Scope) -> str:
        raw = scope.get("raw_path") or scope["path"].encode()
        query = scope.get("query_string", b"")
        return base + raw.decode("latin-1") + (f"?{query.decode('latin-1')}" if query else "")

    def _forwarded_headers(self, scope: Scope) -> list[tuple[str, str]]:
        """The request's headers for the webserver: no hop-by-hop ones, none naming the
        front's credentials (bearer key, session cookie), plus ``X-Forwarded-*``."""
        raw = [(k.decode("latin-1").lower(), v.decode("latin-1")) for k, v in scope["headers"]]
        named = {t.strip().lower() for k, v in raw if k == "connection" for t in v.split(",") if t}
        out: list[tuple[str, str]] = []
        for name, value in raw:
            if name in _HOP_BY_HOP or name in named or name == "authorization":
                continue
            if name == "cookie":
                value = "; ".join(
                    p.strip()
                    for p in value.split(";")
                    if p.strip() and p.strip().partition("=")[0] != SESSION_COOKIE
                )
                if not value:
                    continue
            out.append((name, value))
        if not any(name == "accept-encoding" for name, _ in out):
            out.append(("accept-encoding", "identity"))  # not httpx's default: gzip
        client = scope.get("client")
        if client:
            out.append(("x-forwarded-for", str(client[0])))
        out.append(("x-forwarded-proto", str(scope.get("scheme", "http"))))
        host = next((v for k, v in raw if k == "host"), None)
        if host:
            out.append(("x-forwarded-host", host))
        return out

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = self._forwarded_headers(scope)
        has_body = any(k in ("content-length", "transfer-encoding") for k, _ in _raw(scope))
        request = self.client().build_request(
            scope["method"],
            self._target(self.upstream, scope),
            headers=headers,
            content=_body(receive) if has_body else None,
        )
        try:
            response = await self.client().send(request, stream=True)
        except ConnectionAbortedError:  # the browser left while sending its body
            return
        except httpx.HTTPError as exc:
            log.warning("the webserver at %s does not answer: %s", self.upstream, exc)
            await send_refusal(
                send,
                Refusal(
                    502,
                    "dagster_unavailable",
                    "The Dagster webserver behind this front does not answer "
                    f"({type(exc).__name__})",
                ),
            )
            return
        try:
            out = [
                (k.lower(), v)
                for k, v in response.headers.raw
                if k.decode("latin-1").lower() not in _HOP_BY_HOP
            ]
            if not any(k == b"x-frame-options" for k, _ in out):
                out.append((b"x-frame-options", b"DENY"))
            await send(
                {"type": "http.response.start", "status": response.status_code, "headers": out}
            )
            async for chunk in response.aiter_raw():
                if chunk:
                    await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await send({"type": "http.response.body", "body": b""})
        finally:
            await response.aclose()

    # --- websockets ---

    async def _websocket(
        self, scope: Scope, receive: Receive, send: Send, refusal: Refusal | None
    ) -> None:
        connect_message = await receive()
        if connect_message["type"] != "websocket.connect":
            return
        if refusal is not None:
            await _deny(scope, send, refusal)
            return
        # the webserver answers with graphql-ws whatever was offered, which a client
        # offering nothing would refuse: offer it then, and tell the browser none
        offered = list(scope.get("subprotocols") or [])
        try:
            upstream = await connect(
                self._target(self.ws_upstream, scope),
                subprotocols=offered or [GRAPHQL_WS],
                proxy=None,
                compression=None,
                max_size=None,
                open_timeout=10,
                user_agent_header=None,
            )
        except (OSError, InvalidHandshake, TimeoutError) as exc:
            log.warning("the webserver's websocket at %s failed: %s", self.ws_upstream, exc)
            await _deny(
                scope,
                send,
                Refusal(502, "dagster_unavailable", "The Dagster webserver refused the websocket"),
            )
            return
        async with upstream:
            chosen = upstream.subprotocol if upstream.subprotocol in offered else None
            await send({"type": "websocket.accept", "subprotocol": chosen})
            tasks = [
                asyncio.create_task(_browser_to_webserver(receive, upstream)),
                asyncio.create_task(_webserver_to_browser(upstream, send)),
            ]
            done, pending = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)
            for task in done:
                if task.exception() is not None:
                    log.debug("websocket ended: %r", task.exception())


def _raw(scope: Scope) -> list[tuple[str, str]]:
    return [(k.decode("latin-1").lower(), v.decode("latin-1")) for k, v in scope["headers"]]


async def _body(receive: Receive) -> AsyncIterator[bytes]:
    """The request body as it arrives."""
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise ConnectionAbortedError("the client went away mid-request")
        if message.get("body"):
            yield message["body"]
        if not message.get("more_body", False):
            return


async def _read_body(receive: Receive, limit: int) -> bytes | None:
    """The whole (small) request body, or None past ``limit`` bytes."""
    parts: list[bytes] = []
    size = 0
    async for part in _body(receive):
        size += len(part)
        if size > limit:
            return None
        parts.append(part)
    return b"".join(parts)


async def _deny(scope: Scope, send: Send, refusal: Refusal) -> None:
    """Refuse a websocket handshake: with the JSON refusal where the server can send an
    HTTP response, else a plain 403 close."""
    if "websocket.http.response" in scope.get("extensions", {}):
        headers, body = refusal_response(refusal)
        await send(
            {"type": "websocket.http.response.start", "status": refusal.status, "headers": headers}
        )
        await send({"type": "websocket.http.response.body", "body": body})
    else:
        await send({"type": "websocket.close", "code": 1008})


async def _browser_to_webserver(receive: Receive, upstream: ClientConnection) -> None:
    while True:
        message = await receive()
        if message["type"] == "websocket.disconnect":
            return
        if message["type"] != "websocket.receive":
            continue
        data: Any = message.get("text")
        if data is None:
            data = message.get("bytes")
        if data is not None:
            await upstream.send(data)


async def _webserver_to_browser(upstream: ClientConnection, send: Send) -> None:
    with contextlib.suppress(ConnectionClosed):
        async for data in upstream:
            if isinstance(data, str):
                await send({"type": "websocket.send", "text": data})
            else:
                await send({"type": "websocket.send", "bytes": data})
    code = upstream.close_code
    with contextlib.suppress(Exception):  # the browser may be gone already
        await send(
            {
                "type": "websocket.close",
                "code": code if code in _SENDABLE_CLOSE or 3000 <= (code or 0) < 5000 else 1000,
            }
        )


def main(argv: list[str] | None = None) -> int:
    """``python -m varagity_stack.dagster_front --upstream URL [--host H] [--port P]``."""
    import uvicorn

    settings = load_settings()
    parser = argparse.ArgumentParser(
        description="The Dagster UI's guarded front (Host, Origin, API key, no GraphQL "
        "mutations in URLs) before the webserver at --upstream."
    )
    parser.add_argument("--upstream", required=True, help="the webserver's http:// base URL")
    parser.add_argument("--host", default=settings.HOST, help="address to listen on (HOST)")
    parser.add_argument(
        "--port", type=int, default=settings.DAGSTER_PORT, help="port (DAGSTER_PORT)"
    )
    args = parser.parse_args(argv)
    configure_logging(settings.LOG_LEVEL)  # httpx at WARNING: not a line per proxied request
    log.info(
        "Dagster UI front on %s:%s -> %s (API key %s)",
        args.host,
        args.port,
        args.upstream,
        "required" if settings.API_KEY else "not set",
    )
    uvicorn.run(
        DagsterFront(args.upstream, settings),
        host=args.host,
        port=args.port,
        log_level=settings.LOG_LEVEL.lower(),
        access_log=False,
        timeout_graceful_shutdown=5,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
