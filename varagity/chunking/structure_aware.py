"""Chunks that follow a document's own structure, chosen by what the document is.

* Source code (a suffix in :data:`~varagity.chunking.code.LANGUAGES`) is cut at
  function and class boundaries from a tree-sitter parse
  (:func:`~varagity.chunking.code.split_code`); each chunk carries the definitions
  enclosing it. A grammar that is missing or a parser that fails falls back to the
  recursive character split, with a warning.
* Markdown is cut at its headings; neighbouring sections under a common heading that
  fit together in ``chunk_size`` are merged (the chunk carries the breadcrumb they
  share), and a section too long for one chunk is split recursively inside itself.
* Anything else is split recursively (paragraphs, lines, sentences, words).

Sizes are characters, offsets index the parsed text exactly.
"""

from __future__ import annotations

import logging
from itertools import pairwise
from pathlib import PurePosixPath
from typing import Literal

from varagity.chunking.base import ChunkSpan
from varagity.chunking.code import CodeParseError, language_for, split_code
from varagity.chunking.headings import heading_index
from varagity.chunking.recursive_character import split_recursive

log = logging.getLogger(__name__)

_MARKDOWN_SUFFIXES = frozenset({".md", ".markdown"})
_CRUMB = " > "


def _shared_breadcrumb(a: str | None, b: str | None) -> str | None:
    if a is None or b is None:
        return None
    left, right = a.split(_CRUMB), b.split(_CRUMB)
    n = 0
    while n < min(len(left), len(right)) and left[n] == right[n]:
        n += 1
    return _CRUMB.join(left[:n]) or None


def split_markdown_sections(text: str, chunk_size: int, chunk_overlap: int) -> list[ChunkSpan]:
    """Heading sections packed up to ``chunk_size`` characters; long ones split inside.

    Args:
        text: Markdown text.
        chunk_size: Most characters per chunk.
        chunk_overlap: Overlap inside a section split recursively.

    Returns:
        Chunks in order with the breadcrumb of the section(s) they hold.
    """
    index = heading_index(text)
    edges = [0, *index.starts, len(text)]
    paths: list[str | None] = [None, *index.paths]
    chunks: list[ChunkSpan] = []
    current: ChunkSpan | None = None
    for (start, end), path in zip(pairwise(edges), paths, strict=True):
        section = text[start:end]
        body = section.strip()
        if not body:
            continue
        lead = start + len(section) - len(section.lstrip())
        span = ChunkSpan(body, lead, lead + len(body), path)
        if len(body) <= chunk_size:
            shared = _shared_breadcrumb(current.heading_path, path) if current else None
            related = current is not None and (
                shared is not None or current.heading_path is path is None
            )
            if current is not None and related and span.char_end - current.char_start <= chunk_size:
                current = ChunkSpan(
                    text[current.char_start : span.char_end],
                    current.char_start,
                    span.char_end,
                    shared,
                )
                continue
            if current is not None:
                chunks.append(current)
            current = span
            continue
        if current is not None:
            chunks.append(current)
            current = None
        for piece in split_recursive(section, chunk_size, chunk_overlap):
            chunks.append(
                ChunkSpan(piece.text, start + piece.char_start, start + piece.char_end, path)
            )
    if current is not None:
        chunks.append(current)
    return chunks


class StructureAwareChunker:
    """Code by syntax, Markdown by headings, other text recursively.

    Attributes:
        chunk_size: Most characters per chunk.
        chunk_overlap: Characters shared where text is cut without structure.
    """

    name = "structure_aware"
    unit: Literal["characters", "tokens"] = "characters"

    def __init__(self, chunk_size: int, chunk_overlap: int) -> None:
        """Validate eagerly.

        Raises:
            ValueError: A bad size or overlap.
        """
        split_recursive("", chunk_size, chunk_overlap)  # raises on bad parameters
        self.chunk_size = chunk_size
        self.chunk_overlap = chunk_overlap

    def split(
        self, text: str, *, path: str | None = None, markdown: bool = False
    ) -> list[ChunkSpan]:
        """Chunks of one document.

        Args:
            text: The parsed document.
            path: Its relative path; the suffix picks the code grammar.
            markdown: Whether the parser produced Markdown (office files, HTML, ``.md``).

        Returns:
            Its chunks, in order.
        """
        language = language_for(path)
        if language is not None:
            try:
                return split_code(text, language, self.chunk_size, self.chunk_overlap)
            except CodeParseError as exc:
                log.warning("%s: %s; splitting it as plain text", path, exc)
        elif markdown or (path and PurePosixPath(path).suffix.lower() in _MARKDOWN_SUFFIXES):
            return split_markdown_sections(text, self.chunk_size, self.chunk_overlap)
        return split_recursive(text, self.chunk_size, self.chunk_overlap)
