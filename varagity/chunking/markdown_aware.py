"""Markdown sections first, recursive character splitting inside long ones.

The text is cut at its ATX headings (``#`` … ``######``; headings inside fenced code
blocks do not count, see :mod:`varagity.chunking.headings`). Each section runs from its
heading line to the next heading, so the heading line stays with its body. A section of
at most ``CHUNK_SIZE`` characters (after stripping) is one chunk; a longer one is split
with :func:`~varagity.chunking.recursive_character.split_recursive`, whose overlap
never crosses a section boundary. Sections are not merged, so every chunk carries the
breadcrumb (``"Operations > Dredging"``) of exactly one section; text before the first
heading, and text without headings at all, has ``heading_path`` None.
"""

from __future__ import annotations

from itertools import pairwise
from typing import Literal

from varagity.chunking.base import ChunkSpan
from varagity.chunking.headings import heading_index
from varagity.chunking.recursive_character import split_recursive


class MarkdownAwareChunker:
    """Heading sections, each split to ``chunk_size`` characters when needed.

    Attributes:
        chunk_size: Most characters per chunk.
        chunk_overlap: Most characters shared by neighbouring chunks of one section.
    """

    name = "markdown_aware"
    unit: Literal["characters", "tokens"] = "characters"

    def __init__(self, chunk_size: int, chunk_overlap: int) -> None:
        """Validate eagerly.

        Args:
            chunk_size: Most characters per chunk (positive).
            chunk_overlap: Characters repeated inside a long section (``< chunk_size``).

        Raises:
            ValueError: A bad size or overlap.
        """
        split_recursive("", chunk_size, chunk_overlap)  # raises on bad parameters
        self.chunk_size = chunk_size
        self.chunk_overlap = chunk_overlap

    def split(
        self, text: str, *, path: str | None = None, markdown: bool = False
    ) -> list[ChunkSpan]:
        """Section-aligned chunks with heading breadcrumbs.

        Args:
            text: The parsed document (Markdown or not).

        Returns:
            Its chunks, in order.
        """
        index = heading_index(text)
        edges = [0, *index.starts, len(text)]
        paths: list[str | None] = [None, *index.paths]
        chunks: list[ChunkSpan] = []
        for (start, end), path in zip(pairwise(edges), paths, strict=True):
            section = text[start:end]
            body = section.strip()
            if not body:
                continue
            if len(body) <= self.chunk_size:
                lead = start + len(section) - len(section.lstrip())
                chunks.append(ChunkSpan(body, lead, lead + len(body), path))
                continue
            for piece in split_recursive(section, self.chunk_size, self.chunk_overlap):
                chunks.append(
                    ChunkSpan(piece.text, start + piece.char_start, start + piece.char_end, path)
                )
        return chunks
