"""Recursive character splitting with overlap, keeping offsets into the parsed text.

The text is cut at the coarsest separator that yields pieces no longer than
``chunk_size`` (paragraphs, then lines, then sentences, then words, then characters);
neighbouring pieces are then packed greedily into chunks of at most ``chunk_size``
characters, each chunk repeating up to ``chunk_overlap`` characters of the previous
one's tail. Pieces are spans of the original text, so every chunk knows its
``char_start``/``char_end``.
"""

from __future__ import annotations

from typing import Literal

from varagity.chunking.base import ChunkSpan

SEPARATORS: tuple[str, ...] = ("\n\n", "\n", ". ", " ", "")


def _pieces(
    text: str, start: int, end: int, seps: tuple[str, ...], size: int
) -> list[tuple[int, int]]:
    if end - start <= size:
        return [(start, end)]
    for i, sep in enumerate(seps):
        if sep == "":
            return [(s, min(s + size, end)) for s in range(start, end, size)]
        if text.find(sep, start, end) == -1:
            continue
        out: list[tuple[int, int]] = []
        pos = start
        while pos < end:
            idx = text.find(sep, pos, end)
            stop = end if idx == -1 else idx + len(sep)
            if stop - pos <= size:
                out.append((pos, stop))
            else:
                out.extend(_pieces(text, pos, stop, seps[i + 1 :], size))
            pos = stop
        return out
    return [(start, end)]


def split_recursive(text: str, chunk_size: int, chunk_overlap: int) -> list[ChunkSpan]:
    """Split ``text`` into overlapping chunks of at most ``chunk_size`` characters."""
    if chunk_size <= 0:
        raise ValueError(f"chunk_size must be positive, got {chunk_size}")
    if not 0 <= chunk_overlap < chunk_size:
        raise ValueError(f"chunk_overlap must be in [0, chunk_size), got {chunk_overlap}")
    pieces = _pieces(text, 0, len(text), SEPARATORS, chunk_size)
    chunks: list[ChunkSpan] = []
    window: list[tuple[int, int]] = []

    def emit() -> None:
        start, end = window[0][0], window[-1][1]
        raw = text[start:end]
        lead = len(raw) - len(raw.lstrip())
        body = raw.strip()
        if body:
            span = ChunkSpan(body, start + lead, start + lead + len(body))
            if not chunks or chunks[-1].char_end < span.char_end:
                chunks.append(span)

    for piece in pieces:
        if window and piece[1] - window[0][0] > chunk_size:
            emit()
            # keep a tail of whole pieces no longer than the overlap that still fits
            while window and (
                window[-1][1] - window[0][0] > chunk_overlap or piece[1] - window[0][0] > chunk_size
            ):
                window.pop(0)
        window.append(piece)
    if window:
        emit()
    return chunks


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
