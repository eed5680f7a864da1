"""Chunking strategies, selected by ``CHUNKING_STRATEGY``."""

from varagity.chunking.base import ChunkSpan
from varagity.chunking.recursive_character import split_recursive

__all__ = ["ChunkSpan", "split_recursive"]
