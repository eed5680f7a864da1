"""The chat-engine contract; :mod:`varagity.chat.registry` builds the engine
``CHAT_ENGINE`` names.

A chat engine runs before retrieval and decides what string the retriever searches
with. The split is the invariant every engine keeps: :attr:`PreparedQuery.search_query`
drives retrieval (query embedding and BM25), while the user's original question is
what the answer prompt always receives.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import NamedTuple, Protocol


class Turn(NamedTuple):
    """One earlier exchange of the conversation."""

    question: str
    answer: str


@dataclass(frozen=True, slots=True)
class PreparedQuery:
    """What an engine decided for one turn.

    Attributes:
        question: The user's words, unchanged; the answer prompt gets these.
        search_query: What retrieval searches with.
        condensed_query: The rewrite when one drove retrieval; None when the question
            was searched as asked (first turn, simple engine, kill switch, fallback).
        engine: Registry name of the engine, reported even when it degraded.
        history: Earlier turns the answer prompt should see (empty: none).
        timings_ms: Stage timings, e.g. ``condense`` when an LLM call was made.
    """

    question: str
    search_query: str
    condensed_query: str | None
    engine: str
    history: tuple[Turn, ...] = ()
    timings_ms: dict[str, float] = field(default_factory=dict)


class ChatEngine(Protocol):
    """Turns a question and its conversation into a :class:`PreparedQuery`."""

    name: str

    def prepare(self, question: str, history: Sequence[Turn]) -> PreparedQuery:
        """Decide the search query for ``question`` given earlier ``history`` (oldest first)."""
        ...
