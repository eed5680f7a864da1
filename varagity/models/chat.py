"""Chat completions over an OpenAI-compatible server (llama.cpp, vLLM, OpenAI itself)."""

from __future__ import annotations

from collections.abc import Generator, Iterator, Sequence
from typing import Any, Unpack

import httpx
import openai

from varagity.config import Settings
from varagity.local_models import LOCAL_MODELS
from varagity.models.base import Endpoint, OpenAICompatibleClient, describe_error
from varagity.models.protocols import Decoding, Message


class ChatClient(OpenAICompatibleClient):
    """Chat completions over an OpenAI-compatible server."""

    kind = "chat"

    def __init__(
        self, *, max_tokens: int = 384, temperature: float = 0.2, **endpoint: Unpack[Endpoint]
    ) -> None:
        """Create the client.

        Args:
            max_tokens: Default cap on generated tokens.
            temperature: Default sampling temperature.
            endpoint: Where to call and how patiently (:class:`~varagity.models.base.Endpoint`).
        """
        super().__init__(**endpoint)
        self.max_tokens = max_tokens
        self.temperature = temperature

    @classmethod
    def settings_options(cls, settings: Settings) -> dict[str, Any]:
        """``LLM_*``: the server, model, key and the generation defaults."""
        return {
            "base_url": settings.llm_url,
            "model": settings.LLM_MODEL,
            "api_key": settings.LLM_API_KEY,
            "max_tokens": settings.LLM_MAX_TOKENS,
            "temperature": settings.LLM_TEMPERATURE,
        }

    @classmethod
    def reader_options(cls, settings: Settings) -> dict[str, Any] | None:
        """The constructor arguments of the graph reader's client (``GRAPH_READER_*``),
        or None when the chat model reads (:attr:`~varagity.config.Settings.reader_url`).
        It writes short replies at temperature 0, so no generation default of
        ``LLM_*`` is taken."""
        url = settings.reader_url
        if url is None:
            return None
        return {
            "base_url": url,
            "model": LOCAL_MODELS[settings.GRAPH_READER_LLM].alias,
            "api_key": settings.LLM_API_KEY,
        }

    @classmethod
    def reader_from_settings(cls, settings: Settings) -> ChatClient | None:
        """The graph reader's client, or None when the chat model reads
        (:meth:`reader_options`)."""
        options = cls.reader_options(settings)
        if options is None:
            return None
        return cls(
            timeout=settings.MODEL_TIMEOUT_S, max_retries=settings.MODEL_MAX_RETRIES, **options
        )

    def count_tokens(self, text: str) -> int | None:
        """``text``'s length in the served model's own tokens, or None when the server
        has no tokenize endpoint (llama-cpp-python's ``/extras/tokenize/count``, the C++
        llama-server's ``/tokenize``; an OpenAI-style server has neither).

        Raises:
            ModelError: The server could not be reached.
        """
        root = self.base_url.removesuffix("/v1")
        probes = (
            ("/extras/tokenize/count", {"input": text, "model": self.model}, "count"),
            ("/tokenize", {"content": text, "add_special": False}, "tokens"),
        )

        def call() -> int | None:
            for path, body, field in probes:
                try:
                    resp = httpx.post(root + path, json=body, timeout=self.timeout)
                    if resp.status_code in (404, 405):
                        continue
                    resp.raise_for_status()
                    value = resp.json()[field]
                except (httpx.HTTPError, ValueError, KeyError) as exc:
                    raise self._error(f"{path} failed: {exc}") from exc
                return value if isinstance(value, int) else len(value)
            return None

        return self._call(call)

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
                raise self._error(
                    f"stream broke after the first token: {describe_error(exc)}",
                    transient=self._transient(exc),
                ) from exc
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
