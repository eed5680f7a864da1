"""Chunking strategies, selected by ``CHUNKING_STRATEGY``."""

from varagity.chunking.recursive_character import ChunkSpan, split_recursive

__all__ = ["ChunkSpan", "split_recursive"]
