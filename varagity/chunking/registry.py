"""The chunking strategies by ``CHUNKING_STRATEGY`` name, and the factory that builds one.

Each strategy is imported only when it is built (docling and the tree-sitter grammars
load slowly).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType

from varagity.chunking.base import Chunker
from varagity.config import Settings
from varagity.models.protocols import PassageEmbedder

ChunkerFactory = Callable[[Settings, PassageEmbedder | None], Chunker]


def _recursive_character(settings: Settings, _embedder: PassageEmbedder | None) -> Chunker:
    from varagity.chunking.recursive_character import RecursiveCharacterChunker

    return RecursiveCharacterChunker(settings.CHUNK_SIZE, settings.CHUNK_OVERLAP)


def _token_based(settings: Settings, _embedder: PassageEmbedder | None) -> Chunker:
    from varagity.chunking.token_based import TokenChunker

    return TokenChunker(settings.CHUNK_SIZE, settings.CHUNK_OVERLAP)


def _markdown_aware(settings: Settings, _embedder: PassageEmbedder | None) -> Chunker:
    from varagity.chunking.markdown_aware import MarkdownAwareChunker

    return MarkdownAwareChunker(settings.CHUNK_SIZE, settings.CHUNK_OVERLAP)


def _semantic(settings: Settings, embedder: PassageEmbedder | None) -> Chunker:
    from varagity.chunking.semantic import SemanticChunker

    return SemanticChunker(embedder, settings.CHUNK_SIZE, settings.SEMANTIC_BREAKPOINT_PERCENTILE)


def _docling_hybrid(settings: Settings, _embedder: PassageEmbedder | None) -> Chunker:
    from varagity.chunking.docling_hybrid import DoclingHybridChunker

    return DoclingHybridChunker(settings.CHUNK_SIZE)


def _structure_aware(settings: Settings, _embedder: PassageEmbedder | None) -> Chunker:
    from varagity.chunking.structure_aware import StructureAwareChunker

    return StructureAwareChunker(settings.CHUNK_SIZE, settings.CHUNK_OVERLAP)


CHUNKERS: Mapping[str, ChunkerFactory] = MappingProxyType(
    {
        "recursive_character": _recursive_character,
        "token_based": _token_based,
        "markdown_aware": _markdown_aware,
        "semantic": _semantic,
        "docling_hybrid": _docling_hybrid,
        "structure_aware": _structure_aware,
    }
)


def build_chunker(settings: Settings, embedder: PassageEmbedder | None = None) -> Chunker:
    """The chunker ``CHUNKING_STRATEGY`` names (``semantic`` needs ``embedder``)."""
    factory = CHUNKERS.get(settings.CHUNKING_STRATEGY)
    if factory is None:
        raise ValueError(
            f"unknown CHUNKING_STRATEGY {settings.CHUNKING_STRATEGY!r}; "
            f"available: {', '.join(sorted(CHUNKERS))}"
        )
    return factory(settings, embedder)
