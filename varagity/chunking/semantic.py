"""Semantic chunking: cut between sentences whose embeddings drift apart.

1. The text is split into sentences by a regex that keeps offsets: after ``.``, ``!``,
   ``?`` or ``…`` (plus closing quotes/brackets) followed by whitespace, after CJK
   terminal punctuation (``。！？``), and at line breaks, except a line break followed
   by a lowercase letter (hard-wrapped prose continues). A sentence longer than
   ``chunk_size`` tokens is pre-split into token windows.
2. All sentences are embedded with one ``embed_passages`` call (the client batches).
3. The cosine distance between each pair of neighbouring sentences is computed, and
   the text is cut wherever it is above the ``breakpoint_percentile`` percentile of
   those distances.
4. Groups longer than ``chunk_size`` cl100k tokens are packed greedily, sentence by
   sentence, into chunks within the budget.

There is no overlap: chunks follow topic boundaries, so repeating text across a cut
would blur exactly what the strategy finds. ``CHUNK_OVERLAP`` is therefore ignored
(an overlap of 0 always satisfies it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

import numpy as np

from varagity.chunking.base import ChunkSpan
from varagity.chunking.token_based import count_tokens, split_token_windows
from varagity.models.protocols import PassageEmbedder

_SENTENCE_END = re.compile(
    r"[.!?…]+[\"'”’)\]]*(?=\s|$)"  # Latin sentence end before whitespace
    r"|[。！？]+[」』”’)）]*"  # CJK sentence end (no space follows)
    r"|\n(?![ \t]*[a-z])"  # a line break, unless wrapped prose continues
)

NO_EMBEDDER_MESSAGE = (
    "semantic chunking needs the embedding server (an embedder with embed_passages); "
    "pass one to build_chunker(settings, embedder) or choose another CHUNKING_STRATEGY"
)


@dataclass(frozen=True, slots=True)
class Sentence:
    """One sentence (or token window of an over-long one): where it sits in the text."""

    start: int
    end: int


def split_sentences(text: str) -> list[tuple[int, int]]:
    """Sentence offsets of ``text``, stripped of surrounding whitespace.

    Args:
        text: Any text.

    Returns:
        ``(start, end)`` pairs, in order, each a non-empty, stripped sentence.
    """
    out: list[tuple[int, int]] = []
    pos = 0
    ends = [m.end() for m in _SENTENCE_END.finditer(text)]
    for stop in [*ends, len(text)]:
        raw = text[pos:stop]
        body = raw.strip()
        if body:
            a = pos + len(raw) - len(raw.lstrip())
            out.append((a, a + len(body)))
        pos = stop
    return out


def _cosine_distances(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    unit = np.divide(vectors, norms, out=np.zeros_like(vectors), where=norms > 0)
    similarity = np.einsum("ij,ij->i", unit[:-1], unit[1:])
    return np.clip(1.0 - similarity, 0.0, 2.0)


class SemanticChunker:
    """Cut at embedding-distance peaks between sentences, then bound by tokens.

    Attributes:
        embedder: What embeds the sentences (the embedding server's client).
        chunk_size: Most cl100k tokens per chunk.
        breakpoint_percentile: Cut where the neighbour distance is above this percentile.
    """

    name = "semantic"
    unit: Literal["characters", "tokens"] = "tokens"

    def __init__(
        self, embedder: PassageEmbedder | None, chunk_size: int, breakpoint_percentile: float
    ) -> None:
        """Validate eagerly.

        Args:
            embedder: An object with ``embed_passages(list[str]) -> list[list[float]]``.
            chunk_size: Most tokens per chunk (positive).
            breakpoint_percentile: In ``(0, 100)``.

        Raises:
            ValueError: No embedder, or a bad size or percentile.
        """
        if embedder is None or not callable(getattr(embedder, "embed_passages", None)):
            raise ValueError(NO_EMBEDDER_MESSAGE)
        if chunk_size <= 0:
            raise ValueError(f"chunk_size must be a positive number of tokens, got {chunk_size}")
        if not 0 < breakpoint_percentile < 100:
            raise ValueError(
                f"breakpoint_percentile must be in (0, 100), got {breakpoint_percentile}"
            )
        self.embedder = embedder
        self.chunk_size = chunk_size
        self.breakpoint_percentile = float(breakpoint_percentile)

    def _sentences(self, text: str) -> list[Sentence]:
        out: list[Sentence] = []
        for a, b in split_sentences(text):
            if count_tokens(text[a:b]) <= self.chunk_size:
                out.append(Sentence(a, b))
                continue
            for w in split_token_windows(text, self.chunk_size, 0, start=a, end=b):
                out.append(Sentence(w.char_start, w.char_end))
        return out

    def _breakpoints(self, text: str, sentences: list[Sentence]) -> list[int]:
        """Indices ``i`` such that the text is cut between sentence ``i`` and ``i + 1``."""
        if len(sentences) < 2:
            return []
        vectors = self.embedder.embed_passages([text[s.start : s.end] for s in sentences])
        if len(vectors) != len(sentences):
            raise ValueError(
                f"embedder returned {len(vectors)} vectors for {len(sentences)} sentences"
            )
        distances = _cosine_distances(np.asarray(vectors, dtype=np.float64))
        threshold = float(np.percentile(distances, self.breakpoint_percentile))
        return [int(i) for i in np.flatnonzero(distances > threshold)]

    def split(
        self, text: str, *, path: str | None = None, markdown: bool = False
    ) -> list[ChunkSpan]:
        """Topic-coherent chunks of at most ``chunk_size`` tokens.

        Args:
            text: The parsed document.

        Returns:
            Its chunks, in order, without overlap.
        """
        sentences = self._sentences(text)
        if not sentences:
            return []
        cuts = set(self._breakpoints(text, sentences))
        chunks: list[ChunkSpan] = []
        group: list[Sentence] = []

        def emit() -> None:
            a, b = group[0].start, group[-1].end
            chunks.append(ChunkSpan(text[a:b], a, b))

        for i, sentence in enumerate(sentences):
            if group and count_tokens(text[group[0].start : sentence.end]) > self.chunk_size:
                emit()
                group = []
            group.append(sentence)
            if i in cuts:
                emit()
                group = []
        if group:
            emit()
        return chunks
