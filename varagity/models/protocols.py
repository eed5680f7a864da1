"""The model seams: what the domain code needs of a chat, embedding or rerank model.

Callers depend on these protocols, never on a client class, so a test can pass any
object with the method and the clients (:mod:`varagity.models.chat`,
:mod:`varagity.models.embeddings`, :mod:`varagity.models.rerank`) stay swappable. The
value types that cross the seams (:class:`Decoding`, :class:`RerankResult`) live here
too.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

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
        response_format: OpenAI's ``response_format`` (``{"type": "json_object"}``;
            llama.cpp also takes a ``"schema"`` there and constrains the reply to it).
    """

    repeat_penalty: float = 1.0
    frequency_penalty: float = 0.0
    presence_penalty: float = 0.0
    stop: tuple[str, ...] = ()
    response_format: Mapping[str, Any] | None = None

    def params(self) -> dict[str, Any]:
        """The request fields this adds (``extra_body`` for the non-OpenAI ones)."""
        out: dict[str, Any] = {}
        if self.frequency_penalty:
            out["frequency_penalty"] = self.frequency_penalty
        if self.presence_penalty:
            out["presence_penalty"] = self.presence_penalty
        if self.stop:
            out["stop"] = list(self.stop)
        if self.response_format is not None:
            out["response_format"] = dict(self.response_format)
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


class Streamer(Protocol):
    """Streamed chat completions, what answer generation needs (``ChatClient`` has it)."""

    def stream(
        self,
        messages: list[dict[str, str]],
        max_tokens: int | None = None,
        temperature: float | None = None,
        *,
        decoding: Decoding | None = None,
    ) -> Generator[str, None, str | None]:
        """Token deltas of one chat completion; returns the server's finish reason."""
        ...


class QueryEmbedder(Protocol):
    """The query side of an embedding model (retrieval's dense arm)."""

    def embed_query(self, text: str) -> list[float]:
        """Vector for a search query."""
        ...


class PassageEmbedder(Protocol):
    """The document side of an embedding model (ingest, semantic chunking, HyDE)."""

    def embed_passages(self, texts: Sequence[str]) -> list[list[float]]:
        """Vectors for passages, in order."""
        ...


class Embedder(QueryEmbedder, PassageEmbedder, Protocol):
    """Both sides (HyDE embeds a passage and searches with it)."""


@dataclass(frozen=True, slots=True)
class RerankResult:
    """One document's relevance to the query.

    Attributes:
        index: Position of the document in the list that was sent.
        score: Relevance score (higher is more relevant; the scale is the server's).
    """

    index: int
    score: float


class RerankScorer(Protocol):
    """What the reranked retriever needs of a reranker."""

    def rerank(
        self, query: str, documents: Sequence[str], top_n: int | None = None
    ) -> list[RerankResult]:
        """Results best first; ``index`` points into ``documents``."""
        ...
