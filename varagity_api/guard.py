"""Who may come in: the Host, Origin and API-key checks every request passes first.

* ``Host`` must name the API itself (127.0.0.1, localhost, ``HOST`` or one of
  ``ALLOWED_HOSTS``), so a page on a rebound DNS name cannot read the API.
* A state-changing request (POST, PUT, PATCH, DELETE) whose ``Origin`` is not the
  API's own is refused, so another web page cannot upload, delete or chat through a
  visitor's browser. A request without ``Origin`` (curl, the CLI) passes.
* With ``API_KEY`` set, every route but health, metrics and the web client's own
  files needs ``Authorization: Bearer <API_KEY>``.
* With ``METRICS_API_KEY`` set, health and metrics need ``Authorization: Bearer`` with
  that key (or ``API_KEY``): they can be closed to the network separately from the API,
  or left open to probes and scrapers while the API is not.

A plain ASGI middleware (not ``BaseHTTPMiddleware``), so event streams pass untouched.
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

from starlette.types import ASGIApp, Receive, Scope, Send

from varagity.config import Settings

_LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "::1"})
_UNSAFE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
# answer without API_KEY: probes and scrapers (METRICS_API_KEY limits them), and the
# page that asks for the key
_PROBE_PATHS = frozenset({"/api/health", "/metrics"})
_OPEN_PATHS = frozenset({*_PROBE_PATHS, "/", "/favicon.ico"})
_OPEN_PREFIXES = ("/assets/",)


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why a request is not let in."""

    status: int
    code: str
    message: str


def host_name(host: str) -> str:
    """The name part of a ``Host`` header value (no port, no IPv6 brackets), lowercased."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1 : host.find("]")] if "]" in host else host
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def allowed_hosts(settings: Settings) -> frozenset[str] | None:
    """The names the API answers to, or None when ``ALLOWED_HOSTS`` is ``*``."""
    extra = {h.strip().lower() for h in settings.ALLOWED_HOSTS.split(",") if h.strip()}
    if "*" in extra:
        return None
    # HOST itself too, even a wildcard: `varagity up` probes http://HOST:API_PORT
    return frozenset({*_LOOPBACK_NAMES, host_name(settings.HOST), *map(host_name, extra)})


def check(settings: Settings, method: str, path: str, headers: dict[str, str]) -> Refusal | None:
    """The refusal for a request with these lowercase-named ``headers``, or None."""
    hosts = allowed_hosts(settings)
    host = headers.get("host", "")
    if hosts is not None and host_name(host) not in hosts:
        return Refusal(
            400,
            "host_not_allowed",
            f"Host {host!r} is not a name of this API; add it to ALLOWED_HOSTS if it is",
        )
    origin = headers.get("origin")
    foreign = origin is not None and (
        origin == "null" or urlsplit(origin).netloc.lower() != host.lower()
    )
    if method in _UNSAFE_METHODS and foreign:
        return Refusal(
            403,
            "cross_origin_refused",
            f"{method} from the page at {origin!r} is refused: only this API's own web "
            "client may change state from a browser",
        )
    if path in _PROBE_PATHS:
        if settings.METRICS_API_KEY is None:
            return None
        return _bearer_refusal(
            headers, "METRICS_API_KEY", settings.METRICS_API_KEY, settings.API_KEY
        )
    if settings.API_KEY is None or path in _OPEN_PATHS or path.startswith(_OPEN_PREFIXES):
        return None
    return _bearer_refusal(headers, "API_KEY", settings.API_KEY)


def _bearer_refusal(headers: dict[str, str], name: str, *keys: str | None) -> Refusal | None:
    """The refusal unless ``Authorization: Bearer`` carries one of ``keys`` (named ``name``)."""
    scheme, _, token = headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return Refusal(
            401,
            "api_key_required",
            f"This route needs its key: send Authorization: Bearer <{name}>",
        )
    sent = token.strip().encode()
    if not any(k is not None and hmac.compare_digest(sent, k.encode()) for k in keys):
        return Refusal(401, "api_key_invalid", f"The key sent is not this API's {name}")
    return None


class RequestGuard:
    """Refuses, in the one error shape, what :func:`check` refuses."""

    def __init__(self, app: ASGIApp, settings: Callable[[], Settings]) -> None:
        """Wrap ``app``; ``settings`` gives the app's settings once it has started."""
        self.app = app
        self.settings = settings

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Check an HTTP request, then pass it on or answer the refusal."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        refusal = check(self.settings(), scope["method"], scope["path"], headers)
        if refusal is None:
            await self.app(scope, receive, send)
            return
        body = json.dumps({"code": refusal.code, "message": refusal.message}).encode()
        response_headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
        ]
        if refusal.status == 401:
            response_headers.append((b"www-authenticate", b'Bearer realm="varagity"'))
        await send(
            {"type": "http.response.start", "status": refusal.status, "headers": response_headers}
        )
        await send({"type": "http.response.body", "body": body})
