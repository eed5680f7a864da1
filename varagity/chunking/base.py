"""The chunker contract and the registry ``CHUNKING_STRATEGY`` selects from.

A chunker splits a document's parsed text into :class:`ChunkSpan` objects whose
``char_start``/``char_end`` index that exact text (``text[start:end] == span.text``),
so every chunk can find its own page. ``chunk_size``/``chunk_overlap`` are in the
strategy's ``unit``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal, Protocol

from varagity.chunking.recursive_character import ChunkSpan, split_recursive
from varagity.config import Settings


class PassageEmbedder(Protocol):
    """What embedding-aware chunkers (``semantic``) need."""

    def embed_passages(self, texts: list[str]) -> list[list[float]]:
        """Vectors for passages, in order."""
        ...


class Chunker(Protocol):
    """Splits text into offset-carrying spans."""

    name: str
    unit: Literal["characters", "tokens"]

    def split(
        self, text: str, *, path: str | None = None, markdown: bool = False
    ) -> list[ChunkSpan]:
        """The document's chunks, in order.

        ``path`` (the document's relative path) and ``markdown`` (the parser produced
        Markdown) let structure-aware chunkers pick a parser; the others ignore them.
        """
        ...


ChunkerFactory = Callable[[Settings, "PassageEmbedder | None"], Chunker]
CHUNKERS: dict[str, ChunkerFactory] = {}


def register_chunker(name: str) -> Callable[[ChunkerFactory], ChunkerFactory]:
    """Decorator: register a factory under a ``CHUNKING_STRATEGY`` name."""

    def wrap(factory: ChunkerFactory) -> ChunkerFactory:
        if name in CHUNKERS:
            raise ValueError(f"chunking strategy {name!r} is registered twice")
        CHUNKERS[name] = factory
        return factory

    return wrap


class RecursiveCharacterChunker:
    """Paragraphs, then lines, sentences, words, characters (see ``split_recursive``)."""

    name = "recursive_character"
    unit: Literal["characters", "tokens"] = "characters"

    def __init__(self, chunk_size: int, chunk_overlap: int) -> None:
        """Validate eagerly: size positive, overlap smaller than size."""
        split_recursive("", chunk_size, chunk_overlap)
        self.chunk_size = chunk_size
        self.chunk_overlap = chunk_overlap

    def split(
        self, text: str, *, path: str | None = None, markdown: bool = False
    ) -> list[ChunkSpan]:
        """Recursive character split."""
        return split_recursive(text, self.chunk_size, self.chunk_overlap)


@register_chunker("recursive_character")
def _recursive(settings: Settings, _embedder: PassageEmbedder | None) -> Chunker:
    return RecursiveCharacterChunker(settings.CHUNK_SIZE, settings.CHUNK_OVERLAP)


_STRATEGY_MODULES: tuple[str, ...] = (
    "token_based",
    "markdown_aware",
    "semantic",
    "docling_hybrid",
    "structure_aware",
)


def build_chunker(settings: Settings, embedder: PassageEmbedder | None = None) -> Chunker:
    """The chunker ``CHUNKING_STRATEGY`` names."""
    import importlib

    for module in _STRATEGY_MODULES:
        importlib.import_module(f"varagity.chunking.{module}")
    factory = CHUNKERS.get(settings.CHUNKING_STRATEGY)
    if factory is None:
        raise ValueError(
            f"unknown CHUNKING_STRATEGY {settings.CHUNKING_STRATEGY!r}; "
            f"available: {', '.join(sorted(CHUNKERS))}"
        )
    return factory(settings, embedder)
