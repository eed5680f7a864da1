"""Who may come in: the Host, Origin and API-key checks every request passes first.

* ``Host`` must name the API itself (127.0.0.1, localhost, ``HOST`` or one of
  ``ALLOWED_HOSTS``), so a page on a rebound DNS name cannot read the API.
* A state-changing request (POST, PUT, PATCH, DELETE) whose ``Origin`` is not the
  API's own, or whose ``Sec-Fetch-Site`` says another origin sent it, is refused, so
  another web page cannot upload, delete or chat through a visitor's browser. A request
  without either header (curl, the CLI) passes.
* With ``API_KEY`` set, every route but health, metrics and the web client's own
  files needs ``Authorization: Bearer <API_KEY>``.
* With ``METRICS_API_KEY`` set, health and metrics need ``Authorization: Bearer`` with
  that key (or ``API_KEY``): they can be closed to the network separately from the API,
  or left open to probes and scrapers while the API is not.

Each rule is a plain function (:func:`host_refusal`, :func:`cross_site_refusal`,
:func:`bearer_refusal`) that the Dagster UI's front (:mod:`varagity_stack.dagster_front`)
applies too; :func:`check` is the API's combination of them. A plain ASGI middleware
(not ``BaseHTTPMiddleware``), so event streams pass untouched.
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

from starlette.types import ASGIApp, Receive, Scope, Send

from varagity.config import Settings

_LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "::1"})
UNSAFE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
"""The methods that change state: they must not come from another web page."""
# what a browser's Sec-Fetch-Site says for a request of the page's own origin, or one the
# user made (typed address, bookmark); cross-site, same-site (another port) are refused
_OWN_FETCH_SITES = frozenset({"same-origin", "none"})
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


def host_refusal(settings: Settings, headers: dict[str, str]) -> Refusal | None:
    """The refusal of a ``Host`` that is not one of :func:`allowed_hosts` (DNS rebinding)."""
    hosts = allowed_hosts(settings)
    host = headers.get("host", "")
    if hosts is None or host_name(host) in hosts:
        return None
    return Refusal(
        400,
        "host_not_allowed",
        f"Host {host!r} is not a name of this server; add it to ALLOWED_HOSTS if it is",
    )


def cross_site_refusal(what: str, headers: dict[str, str]) -> Refusal | None:
    """The refusal of a state-changing request (``what``: its method, or "WebSocket")
    that another web page sent: an ``Origin`` other than the ``Host`` it reached, or a
    ``Sec-Fetch-Site`` other than ``same-origin`` or ``none``. Without either header
    (curl, scripts, the CLI) it passes."""
    origin = headers.get("origin")
    host = headers.get("host", "")
    if origin is not None and (origin == "null" or urlsplit(origin).netloc.lower() != host.lower()):
        sender = f"the page at {origin!r}"
    elif headers.get("sec-fetch-site", "none").lower() not in _OWN_FETCH_SITES:
        sender = f"a {headers['sec-fetch-site'].lower()} page"
    else:
        return None
    return Refusal(
        403,
        "cross_origin_refused",
        f"{what} from {sender} is refused: only this server's own pages may change state "
        "from a browser",
    )


def bearer_refusal(headers: dict[str, str], name: str, *keys: str | None) -> Refusal | None:
    """The refusal unless ``Authorization: Bearer`` carries one of ``keys`` (named ``name``)."""
    sent = bearer_token(headers)
    if sent is None:
        return Refusal(
            401,
            "api_key_required",
            f"This route needs its key: send Authorization: Bearer <{name}>",
        )
    if not any(k is not None and hmac.compare_digest(sent.encode(), k.encode()) for k in keys):
        return Refusal(401, "api_key_invalid", f"The key sent is not this server's {name}")
    return None


def bearer_token(headers: dict[str, str]) -> str | None:
    """The token of an ``Authorization: Bearer`` header, or None without one."""
    scheme, _, token = headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return token.strip()


def check(settings: Settings, method: str, path: str, headers: dict[str, str]) -> Refusal | None:
    """The API's refusal for a request with these lowercase-named ``headers``, or None."""
    refusal = host_refusal(settings, headers)
    if refusal is None and method in UNSAFE_METHODS:
        refusal = cross_site_refusal(method, headers)
    if refusal is not None:
        return refusal
    if path in _PROBE_PATHS:
        if settings.METRICS_API_KEY is None:
            return None
        return bearer_refusal(
            headers, "METRICS_API_KEY", settings.METRICS_API_KEY, settings.API_KEY
        )
    if settings.API_KEY is None or path in _OPEN_PATHS or path.startswith(_OPEN_PREFIXES):
        return None
    return bearer_refusal(headers, "API_KEY", settings.API_KEY)


def request_headers(scope: Scope) -> dict[str, str]:
    """An ASGI connection's headers by lowercase name (the last of repeated ones)."""
    return {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}


def refusal_response(
    refusal: Refusal, extra: Iterable[tuple[bytes, bytes]] = ()
) -> tuple[list[tuple[bytes, bytes]], bytes]:
    """The headers and JSON body (``{"code", "message"}``) that answer ``refusal``."""
    body = json.dumps({"code": refusal.code, "message": refusal.message}).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        *extra,
    ]
    if refusal.status == 401:
        headers.append((b"www-authenticate", b'Bearer realm="varagity"'))
    return headers, body


async def send_refusal(
    send: Send, refusal: Refusal, extra: Iterable[tuple[bytes, bytes]] = ()
) -> None:
    """Answer an HTTP request with :func:`refusal_response`."""
    headers, body = refusal_response(refusal, extra)
    await send({"type": "http.response.start", "status": refusal.status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


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
        refusal = check(self.settings(), scope["method"], scope["path"], request_headers(scope))
        if refusal is None:
            await self.app(scope, receive, send)
            return
        await send_refusal(send, refusal)
