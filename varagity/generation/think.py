"""Separate a model's ``<think>…</think>`` reasoning from its answer, while streaming.

Reasoning models wrap their chain of thought in ``<think>`` tags before (or between)
answer text. The tags arrive split across deltas at arbitrary points (``"<thi"`` then
``"nk>"``), so :class:`ThinkSplitter` holds back any tail of a delta that could be the
start of the tag it is waiting for, and releases it as soon as the next delta decides.

Rules:

* text outside the tags is answer, text inside is reasoning; blocks may repeat;
* an unclosed ``<think>`` makes the rest of the stream reasoning (the model ran out of
  tokens while thinking);
* whitespace right after a tag is dropped (models put a blank line after
  ``</think>``); text with no tags at all passes through unchanged;
* tags are matched exactly, in lower case, as models emit them.
"""

from __future__ import annotations

from typing import Literal, NamedTuple

OPEN_TAG = "<think>"
CLOSE_TAG = "</think>"

PieceKind = Literal["reasoning", "answer"]


class Piece(NamedTuple):
    """A run of text of one kind."""

    kind: PieceKind
    text: str


def _partial_tag_length(text: str, tag: str) -> int:
    """Length of the longest suffix of ``text`` that is a proper prefix of ``tag``."""
    for size in range(min(len(tag) - 1, len(text)), 0, -1):
        if text.endswith(tag[:size]):
            return size
    return 0


class ThinkSplitter:
    """Feed it deltas; it returns the reasoning and answer pieces they complete."""

    def __init__(self) -> None:
        """Start outside any think block."""
        self._thinking = False
        self._held = ""
        self._after_tag = False

    def feed(self, delta: str) -> list[Piece]:
        """Classify one delta; text that might be part of a tag is held back."""
        text = self._held + delta
        self._held = ""
        pieces: list[Piece] = []
        while text:
            tag = CLOSE_TAG if self._thinking else OPEN_TAG
            at = text.find(tag)
            if at < 0:
                keep = _partial_tag_length(text, tag)
                self._emit(pieces, text[: len(text) - keep])
                self._held = text[len(text) - keep :]
                break
            self._emit(pieces, text[:at])
            text = text[at + len(tag) :]
            self._thinking = not self._thinking
            self._after_tag = True
        return pieces

    def flush(self) -> list[Piece]:
        """End of stream: release held-back text as whatever kind is current."""
        held, self._held = self._held, ""
        pieces: list[Piece] = []
        self._emit(pieces, held)
        return pieces

    def _emit(self, pieces: list[Piece], text: str) -> None:
        if self._after_tag:
            text = text.lstrip()
            if not text:
                return
            self._after_tag = False
        if not text:
            return
        kind: PieceKind = "reasoning" if self._thinking else "answer"
        if pieces and pieces[-1].kind == kind:
            pieces[-1] = Piece(kind, pieces[-1].text + text)
        else:
            pieces.append(Piece(kind, text))


def split_think(text: str) -> tuple[str, str]:
    """``(reasoning, answer)`` of a complete reply."""
    splitter = ThinkSplitter()
    pieces = splitter.feed(text) + splitter.flush()
    reasoning = "".join(p.text for p in pieces if p.kind == "reasoning")
    answer = "".join(p.text for p in pieces if p.kind == "answer")
    return reasoning, answer
