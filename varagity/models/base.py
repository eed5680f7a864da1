"""What every model client shares: the endpoint, the retry policy, the error type.

Every client (:mod:`~varagity.models.chat`, :mod:`~varagity.models.embeddings`,
:mod:`~varagity.models.rerank`) is built one way: the :class:`Endpoint` keywords, or
``from_settings``, which reads the shared ``MODEL_*`` settings and the client's own
(:meth:`RetryingClient.settings_options`). The chat and embedding clients talk to any
server that speaks the OpenAI HTTP API (the packaged llama.cpp and embedding servers of
the embedded stack, vLLM, TEI, infinity, OpenAI itself). Transient failures (connection
errors, timeouts, 408, 429, 5xx) are retried with exponential backoff by tenacity;
anything else (400, 401, 404, ...) raises at once.
Every failure surfaces as :class:`ModelError`, which names the server URL and model and
says whether it was transient: a Dagster step that meets one once these retries are
spent is retried after longer waits (``varagity_assets/retries.py``).

Retry budget: ``MODEL_MAX_RETRIES`` is the number of *retries* after the first try,
so a call makes at most ``MODEL_MAX_RETRIES + 1`` attempts (0 disables retrying).
The SDK's own retry loop is switched off so the two never multiply.
"""

from __future__ import annotations

import functools
import ssl
from collections.abc import Callable
from typing import Any, NotRequired, Required, Self, TypedDict, TypeVar, Unpack

import openai
from tenacity import (
    RetryError,
    Retrying,
    retry_if_exception,
    stop_after_attempt,
    wait_exponential,
)

from varagity.config import Settings, get_settings

T = TypeVar("T")


@functools.cache
def tls_context() -> ssl.SSLContext:
    """The verifying TLS context every client's connection pool shares in this process.

    Each HTTP client would otherwise build its own, loading the CA store again (~20 ms
    of CPU each; an ingest run opens several clients). The code server's forkserver
    builds it once, so run workers forked from it start with it.
    """
    return ssl.create_default_context()


class Endpoint(TypedDict):
    """Where a client calls and how patiently: the constructor arguments every model
    client takes.

    Keys:
        base_url: Server base URL, ending in ``/v1``.
        model: Model name sent with every request.
        api_key: Bearer token (local servers ignore it; default ``sk-local``).
        timeout: Per-request timeout in seconds (default 120).
        max_retries: Retries of transient failures after the first attempt (default 3).
        backoff_s: First backoff interval; doubles per retry (default 0.5).
        backoff_max_s: Cap on one backoff interval (default 8).
    """

    base_url: Required[str]
    model: Required[str]
    api_key: NotRequired[str]
    timeout: NotRequired[float]
    max_retries: NotRequired[int]
    backoff_s: NotRequired[float]
    backoff_max_s: NotRequired[float]


class ModelError(RuntimeError):
    """A model server call failed (after any retries).

    Attributes:
        url: Base URL of the server that failed.
        model: Model name the call asked for.
        attempts: How many attempts were made (1 when the error is not transient).
        transient: The last attempt failed for the server's state, not the request's
            content (no connection, a timeout, 408/409/425/429, a 5xx answer): the
            server is down, restarting or overloaded, so a caller may wait and try again
            rather than blame its input.
    """

    def __init__(
        self, message: str, *, url: str, model: str, attempts: int = 1, transient: bool = False
    ) -> None:
        """Build the error.

        Args:
            message: What went wrong.
            url: Base URL of the server.
            model: Model name.
            attempts: Attempts made before giving up.
            transient: The last attempt failed for the server's state.
        """
        tries = f" after {attempts} attempts" if attempts > 1 else ""
        super().__init__(f"model {model!r} at {url}{tries}: {message}")
        self.url = url
        self.model = model
        self.attempts = attempts
        self.transient = transient


def is_transient(exc: BaseException) -> bool:
    """Whether an SDK error is worth retrying.

    Args:
        exc: The exception raised by the OpenAI SDK (or by our own code).

    Returns:
        True for connection errors, timeouts, 408/409/425/429 and 5xx responses.
    """
    if isinstance(exc, openai.APIConnectionError):  # includes APITimeoutError
        return True
    if isinstance(exc, openai.APIStatusError):
        return exc.status_code in TRANSIENT_STATUS or exc.status_code >= 500
    return False


def describe_error(exc: BaseException) -> str:
    """A one-line account of an SDK error for :class:`ModelError` messages."""
    if isinstance(exc, openai.APIStatusError):
        return f"HTTP {exc.status_code}: {exc.message}"
    if isinstance(exc, openai.APITimeoutError):
        return "request timed out"
    if isinstance(exc, openai.APIConnectionError):
        cause = exc.__cause__ or exc.__context__
        return f"cannot connect ({cause or exc})"
    return f"{type(exc).__name__}: {exc}"


#: Status codes worth another try: request timeout, rate limiting, server errors.
TRANSIENT_STATUS = frozenset({408, 409, 425, 429})


class RetryingClient:
    """What every model client shares: identity, the retry policy, the error wrapping.

    Subclasses name the exceptions their transport raises (``_wrapped``), which of them
    are transient (``_transient``) and how to describe one (``_explain``).
    """

    kind = "model"
    _wrapped: tuple[type[BaseException], ...] = (RetryError,)

    def __init__(self, **endpoint: Unpack[Endpoint]) -> None:
        """Remember where to call and how patiently, then open the transport.

        Args:
            endpoint: The :class:`Endpoint` fields (``base_url`` and ``model`` required).
        """
        self.base_url = endpoint["base_url"].rstrip("/")
        self.model = endpoint["model"]
        self.timeout = endpoint.get("timeout", 120.0)
        self.max_retries = max(0, endpoint.get("max_retries", 3))
        self.backoff_s = endpoint.get("backoff_s", 0.5)
        self.backoff_max_s = endpoint.get("backoff_max_s", 8.0)
        self._open(endpoint.get("api_key") or "sk-local")

    @classmethod
    def from_settings(cls, settings: Settings | None = None) -> Self:
        """Build the client from its settings (the process-wide ones when omitted):
        the ``MODEL_*`` timeout and retries every client shares, plus
        :meth:`settings_options`."""
        s = settings or get_settings()
        return cls(
            timeout=s.MODEL_TIMEOUT_S, max_retries=s.MODEL_MAX_RETRIES, **cls.settings_options(s)
        )

    @classmethod
    def settings_options(cls, settings: Settings) -> dict[str, Any]:
        """The constructor arguments this kind of client reads from ``settings``
        (``base_url``, ``model``, ``api_key`` and its own options)."""
        raise NotImplementedError

    def _open(self, api_key: str) -> None:
        """Create the transport (an HTTP or SDK client) with the bearer token."""
        raise NotImplementedError

    def close(self) -> None:
        """Close the transport's connection pool."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}(base_url={self.base_url!r}, model={self.model!r})"

    def _transient(self, exc: BaseException) -> bool:
        return is_transient(exc)

    def _explain(self, exc: BaseException) -> str:
        return describe_error(exc)

    def _error(self, message: str, attempts: int = 1, transient: bool = False) -> ModelError:
        return ModelError(
            f"{self.kind} call failed: {message}",
            url=self.base_url,
            model=self.model,
            attempts=attempts,
            transient=transient,
        )

    def _retrying(self) -> Retrying:
        return Retrying(
            stop=stop_after_attempt(self.max_retries + 1),
            wait=wait_exponential(multiplier=self.backoff_s, max=self.backoff_max_s),
            retry=retry_if_exception(self._transient),
            reraise=True,
        )

    def _call(self, fn: Callable[[], T]) -> T:
        """Run ``fn`` under the retry policy, turning failures into :class:`ModelError`."""
        retrying = self._retrying()
        try:
            return retrying(fn)
        except ModelError:
            raise
        except self._wrapped as exc:
            attempts = retrying.statistics.get("attempt_number", 1)
            raise self._error(self._explain(exc), attempts, self._transient(exc)) from exc


class OpenAICompatibleClient(RetryingClient):
    """The OpenAI-compatible clients: the SDK with its own retries off (ours apply)."""

    _wrapped = (openai.OpenAIError, RetryError)

    def _open(self, api_key: str) -> None:
        self._sdk = openai.OpenAI(
            base_url=self.base_url,
            api_key=api_key,
            timeout=self.timeout,
            max_retries=0,
            http_client=openai.DefaultHttpxClient(verify=tls_context(), timeout=self.timeout),
        )

    def close(self) -> None:
        """Close the underlying HTTP connection pool."""
        self._sdk.close()

    def ping(self) -> list[str]:
        """Ask the server which models it serves (``GET /v1/models``).

        Returns:
            The model ids the server lists.

        Raises:
            ModelError: The server is unreachable or answered with an error.
        """
        page = self._call(lambda: self._sdk.models.list())
        return [m.id for m in page.data]
