"""Token windows: ``CHUNK_SIZE`` cl100k tokens per chunk, ``CHUNK_OVERLAP`` tokens shared.

The text is encoded once with the offline cl100k encoding (the one
:mod:`varagity.tokens` counts with), cut into windows of token indices, and each window
is mapped back to character offsets through the tokens' UTF-8 bytes. A token boundary
that falls inside a multi-byte character (cl100k splits emoji and some CJK characters
into several byte-level tokens) is moved to the end of that character, for window
starts and ends alike, so no character is ever split and neighbouring windows without
overlap share their boundary exactly.

Re-encoding a window's text on its own can give a slightly different token count than
the window had inside the document (byte-pair merges depend on the neighbours), so
every chunk is re-counted and shrunk a token at a time until it fits; the overlap is
checked the same way. Chunks are stripped of surrounding whitespace.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Literal

import numpy as np
import tiktoken

from varagity.chunking.base import ChunkSpan
from varagity.tokens import ENCODING


@lru_cache(maxsize=1)
def _encoding() -> tiktoken.Encoding:
    return tiktoken.get_encoding(ENCODING)


def count_tokens(text: str) -> int:
    """cl100k tokens of ``text`` (special-token text counts as plain text).

    Args:
        text: Any text.

    Returns:
        The token count, as :func:`varagity.tokens.count_tokens` gives it.
    """
    return len(_encoding().encode(text, disallowed_special=()))


def _char_bounds(tokens: list[int]) -> np.ndarray:
    """Character offset of each token boundary, snapped up to a whole character.

    Args:
        tokens: The encoding of some text.

    Returns:
        ``len(tokens) + 1`` non-decreasing offsets; entry ``k`` is the first character
        starting at or after token ``k``'s first byte, the last entry the text length.
    """
    pieces = _encoding().decode_tokens_bytes(tokens)
    lengths = np.fromiter((len(p) for p in pieces), dtype=np.int64, count=len(pieces))
    byte_starts = np.zeros(len(pieces) + 1, dtype=np.int64)
    np.cumsum(lengths, out=byte_starts[1:])
    raw = np.frombuffer(b"".join(pieces), dtype=np.uint8)
    # a character starts at every byte that is not a UTF-8 continuation byte
    lead = (raw & 0xC0) != 0x80
    chars_before = np.zeros(len(raw) + 1, dtype=np.int64)
    np.cumsum(lead, out=chars_before[1:])
    return chars_before[byte_starts]


def _stripped(text: str, start: int, end: int) -> tuple[int, int]:
    raw = text[start:end]
    body = raw.strip()
    if not body:
        return start, start
    lead = len(raw) - len(raw.lstrip())
    return start + lead, start + lead + len(body)


def split_token_windows(
    text: str, chunk_size: int, chunk_overlap: int, *, start: int = 0, end: int | None = None
) -> list[ChunkSpan]:
    """Split ``text[start:end]`` into windows of at most ``chunk_size`` cl100k tokens.

    Args:
        text: The whole document (offsets index it).
        chunk_size: Most tokens per chunk (positive).
        chunk_overlap: Most tokens a chunk repeats from the previous one
            (``0 <= chunk_overlap < chunk_size``).
        start: First character of the region to split.
        end: End of the region (the text's end when None).

    Returns:
        Stripped, non-empty spans in document order. A chunk exceeds ``chunk_size`` only
        when a single token-level piece does (one character cl100k spells with more
        tokens than the budget).

    Raises:
        ValueError: Bad ``chunk_size``/``chunk_overlap``.
    """
    _check_sizes(chunk_size, chunk_overlap)
    end = len(text) if end is None else end
    region = text[start:end]
    if not region.strip():
        return []
    tokens = _encoding().encode(region, disallowed_special=())
    bounds = (_char_bounds(tokens) + start).tolist()
    n = len(tokens)
    chunks: list[ChunkSpan] = []
    s = 0
    while s < n:
        e = min(s + chunk_size, n)
        while True:
            a, b = _stripped(text, bounds[s], bounds[e])
            if e - s <= 1 or a == b or count_tokens(text[a:b]) <= chunk_size:
                break
            e -= 1
        if a < b and (not chunks or chunks[-1].char_end < b):
            chunks.append(ChunkSpan(text[a:b], a, b))
        if e >= n:
            break
        nxt = max(e - chunk_overlap, s + 1)
        while nxt < e and count_tokens(text[bounds[nxt] : bounds[e]].strip()) > chunk_overlap:
            nxt += 1
        s = nxt
    return chunks


def _check_sizes(chunk_size: int, chunk_overlap: int) -> None:
    if chunk_size <= 0:
        raise ValueError(f"chunk_size must be a positive number of tokens, got {chunk_size}")
    if not 0 <= chunk_overlap < chunk_size:
        raise ValueError(
            f"chunk_overlap must be in [0, chunk_size) tokens, got {chunk_overlap} "
            f"with chunk_size {chunk_size}"
        )


class TokenChunker:
    """Fixed windows of cl100k tokens with a token overlap.

    Attributes:
        chunk_size: Most tokens per chunk.
        chunk_overlap: Most tokens shared by neighbouring chunks.
    """

    name = "token_based"
    unit: Literal["characters", "tokens"] = "tokens"

    def __init__(self, chunk_size: int, chunk_overlap: int) -> None:
        """Validate eagerly.

        Args:
            chunk_size: Most tokens per chunk (positive).
            chunk_overlap: Tokens repeated from the previous chunk (``< chunk_size``).

        Raises:
            ValueError: A bad size or overlap.
        """
        _check_sizes(chunk_size, chunk_overlap)
        self.chunk_size = chunk_size
        self.chunk_overlap = chunk_overlap

    def split(
        self, text: str, *, path: str | None = None, markdown: bool = False
    ) -> list[ChunkSpan]:
        """Token windows over ``text``.

        Args:
            text: The parsed document.

        Returns:
            Its chunks, in order.
        """
        return split_token_windows(text, self.chunk_size, self.chunk_overlap)
