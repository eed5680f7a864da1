"""The chunker contract: what every ``CHUNKING_STRATEGY`` returns.

One strategy per module; :mod:`varagity.chunking.registry` builds the one the
settings name.

A chunker splits a document's parsed text into :class:`ChunkSpan` objects whose
``char_start``/``char_end`` index that exact text (``text[start:end] == span.text``),
so every chunk can find its own page. ``chunk_size``/``chunk_overlap`` are in the
strategy's ``unit``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol


@dataclass(frozen=True, slots=True)
class ChunkSpan:
    """One chunk: its text, where it sits in the parsed text, and its context.

    ``heading_path`` is the Markdown breadcrumb of its section (``"Operations >
    Dredging"``); ``symbol_path`` the code definitions enclosing it (``"class Pump >
    def start"``). Either is None where the chunker does not know it.
    """

    text: str
    char_start: int
    char_end: int
    heading_path: str | None = None
    symbol_path: str | None = None


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
