"""Text as the preview compares it: lower-case words, their trigrams, and search phrases.

A chunk's text and a page's text never match character for character: the chunk went
through the parser (a PDF's line ends, docling's Markdown for a deck, OCR's reading
order) and the chunker (it may start or end mid-line). Words survive all of that, so
pages are scored on the chunk's word trigrams, and highlights are searched phrase by
phrase.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import TypeVar

_WORD = re.compile(r"\w+", re.UNICODE)
# Markdown a parser adds around a line's words: headings, bullets, quotes, table bars,
# emphasis and code marks.
_MARKUP = re.compile(r"^[\s#>*+\-|•·]+|[\s|]+$")
_EDGE_MARKS = "*_`|"

T = TypeVar("T")


def words(text: str) -> list[str]:
    """The lower-case words of ``text`` (runs of letters, digits and underscores)."""
    return [w.lower() for w in _WORD.findall(text)]


def shingles(tokens: Sequence[str]) -> set[tuple[str, ...]]:
    """Word trigrams of ``tokens``; a text of one or two words is its single shingle."""
    if len(tokens) < 3:
        return {tuple(tokens)} if tokens else set()
    return {tuple(tokens[i : i + 3]) for i in range(len(tokens) - 2)}


def overlap(chunk: set[tuple[str, ...]], page: set[tuple[str, ...]]) -> float:
    """The share of the chunk's shingles the page holds (0 when the chunk has none)."""
    if not chunk:
        return 0.0
    return len(chunk & page) / len(chunk)


def phrases(text: str) -> list[list[str]]:
    """The chunk's lines as lists of searchable words, Markdown marks taken off.

    Words keep their inner punctuation (a PDF's text search matches characters), so
    only the marks a parser puts around them go.
    """
    out: list[list[str]] = []
    for line in text.splitlines():
        line = _MARKUP.sub("", line)
        tokens = [t.strip(_EDGE_MARKS) for t in line.split()]
        tokens = [t for t in tokens if t and t != "|" and set(t) != {"-"}]
        if tokens:
            out.append(tokens)
    return out


def find_runs(
    tokens: Sequence[str], search: Callable[[str], T | None], *, min_words: int
) -> list[T]:
    """Search ``tokens`` as one phrase; on a miss, search each half, down to ``min_words``.

    A phrase that crosses something the page spells differently (a hyphenated line
    break, a bullet glyph, a table cell) is found in the parts on either side of it.

    Args:
        tokens: The words of one chunk line, in order.
        search: Finds a phrase on the page (its match, or None).
        min_words: The shortest run worth searching (short runs match by chance).

    Returns:
        The matches, in the order of the tokens.
    """
    if len(tokens) < min_words or not tokens:
        return []
    match = search(" ".join(tokens))
    if match is not None:
        return [match]
    if len(tokens) < 2 * min_words:
        return []
    middle = len(tokens) // 2
    return find_runs(tokens[:middle], search, min_words=min_words) + find_runs(
        tokens[middle:], search, min_words=min_words
    )
