"""HyDE: search the dense arm with the embedding of a hypothetical answer passage.

Hypothetical Document Embeddings (Gao et al. 2022):

1. one non-streaming LLM call writes a short passage that would answer the query
   (``<think>`` blocks and a leading label such as ``Passage:`` are stripped; an
   overlong passage is truncated to ``HYDE_MAX_TOKENS``);
2. the passage is embedded in *passage* mode (``embed_passages``, the paper's
   document-encoder choice), so it lands among the corpus's own chunk vectors;
3. the base retriever (``HYDE_BASE_METHOD``: semantic or hybrid) runs with the raw
   query text plus that vector: only the dense arm uses it, a hybrid base's BM25 arm
   keeps the exact keywords of the query, and traces pass through untouched.

``HYDE_ENABLED=false`` and every generation failure (a :class:`ModelError`, an empty
passage) degrade to the base's raw-query retrieval with a WARNING log.
"""

from __future__ import annotations

import logging
import re

from varagity.models.base import ModelError
from varagity.models.protocols import Completer, PassageEmbedder
from varagity.retrieval.base import Retrieval, check_k, timed
from varagity.retrieval.hybrid import HybridRetriever
from varagity.retrieval.semantic import SemanticRetriever
from varagity.tokens import count_tokens, truncate_tokens

log = logging.getLogger(__name__)

HYDE_PROMPT = (
    "Write a short passage, as it would appear in a document, that answers the "
    "question below. Answer with the passage only.\n\nQuestion: {query}"
)

_THINK = re.compile(r"<think>.*?(</think>|$)", re.DOTALL | re.IGNORECASE)
_LABEL = re.compile(
    r"^\s*(?:\*\*)?(?:hypothetical\s+)?(?:passage|document|answer|response|text)"
    r"(?:\*\*)?\s*:(?:\*\*)?\s*",
    re.IGNORECASE,
)


def clean_passage(raw: str, max_tokens: int) -> str:
    """Strip reasoning blocks, a leading label and quotes; cap the length.

    Args:
        raw: The model's reply.
        max_tokens: Most tokens kept (longer passages are truncated).

    Returns:
        The passage ("" when nothing usable remains).
    """
    text = _THINK.sub("", raw).strip()
    text = _LABEL.sub("", text, count=1).strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        text = text[1:-1].strip()
    if text and count_tokens(text) > max_tokens:
        text = truncate_tokens(text, max_tokens).strip()
    return text


class HydeRetriever:
    """A semantic or hybrid retriever whose dense arm searches a hypothetical passage."""

    method = "hyde"

    def __init__(
        self,
        base: SemanticRetriever | HybridRetriever,
        chat: Completer,
        embedder: PassageEmbedder,
        *,
        enabled: bool = True,
        max_tokens: int = 160,
        temperature: float | None = 0.0,
    ) -> None:
        """Wire the base retriever and the two model clients.

        Args:
            base: A semantic or hybrid retriever (the ones with a dense arm).
            chat: Writes the hypothetical passage.
            embedder: Embeds it in passage mode.
            enabled: ``HYDE_ENABLED``: False searches with the raw query.
            max_tokens: ``HYDE_MAX_TOKENS``: generation cap, and the truncation guard.
            temperature: Sampling temperature (0: the same query, the same passage).

        Raises:
            TypeError: The base has no dense arm.
        """
        if not isinstance(base, SemanticRetriever | HybridRetriever):
            raise TypeError(
                f"HyDE needs a semantic or hybrid base, got {type(base).__name__} "
                "(bm25 ignores query vectors)"
            )
        self.base = base
        self.chat = chat
        self.embedder = embedder
        self.enabled = enabled
        self.max_tokens = max_tokens
        self.temperature = temperature

    def hypothesize(self, query: str, timings: dict[str, float]) -> str:
        """Write the hypothetical passage (may be "" when the model gave nothing usable).

        Args:
            query: The user's query.
            timings: Stage timings; ``hyde_generate`` is recorded.

        Returns:
            The cleaned passage.

        Raises:
            ModelError: The chat call failed.
        """
        messages = [{"role": "user", "content": HYDE_PROMPT.format(query=query)}]
        raw = timed(
            timings,
            "hyde_generate",
            lambda: self.chat.complete(
                messages, max_tokens=self.max_tokens, temperature=self.temperature
            ),
        )
        return clean_passage(raw, self.max_tokens)

    def retrieve(self, query: str, k: int) -> Retrieval:
        """The base's top ``k`` with the dense arm searching the hypothetical passage.

        Args:
            query: The user's query (BM25 and the trace keep it verbatim).
            k: Results wanted.

        Returns:
            The retrieval; ``hypothetical`` holds the passage searched (None when degraded).
        """
        check_k(k)
        timings: dict[str, float] = {}
        passage: str | None = None
        vector: list[float] | None = None
        if not self.enabled:
            log.warning("HYDE_ENABLED=false: %r searches with the raw query", self.method)
        else:
            try:
                passage = self.hypothesize(query, timings)
                if not passage:
                    raise ValueError("the model wrote an empty passage")
                text = passage
                vector = timed(
                    timings, "hyde_embed", lambda: self.embedder.embed_passages([text])[0]
                )
            except (ModelError, ValueError) as exc:
                log.warning("HyDE degraded to the raw query %r: %s", query, exc)
                passage, vector = None, None
        result = self.base.retrieve(query, k, query_vector=vector)
        timings.update(result.timings_ms)
        return Retrieval(self.method, query, result.chunks, timings, passage)
