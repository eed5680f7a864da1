"""One chat turn end to end, shared by the SSE chat route and the OpenAI-compatible one.

:func:`ground` runs the chat engine and retrieval (the engine's search query drives
retrieval); :func:`answer_pieces` streams the grounded answer for the *original*
question, split into reasoning and answer pieces.
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from contextlib import closing
from dataclasses import dataclass

from varagity.chat.base import ChatEngine, PreparedQuery, Turn
from varagity.generation.answer import Streamer, stream_answer
from varagity.generation.think import Piece, ThinkSplitter
from varagity.retrieval.base import Retrieval, Retriever


@dataclass(frozen=True, slots=True)
class Grounding:
    """The engine's decision, the evidence it found, and how long both took (ms)."""

    prepared: PreparedQuery
    retrieval: Retrieval
    timings_ms: dict[str, float]


def ground(
    engine: ChatEngine, retriever: Retriever, question: str, history: Sequence[Turn], k: int
) -> Grounding:
    """Prepare the search query with ``engine`` and retrieve ``k`` chunks for it."""
    prepared = engine.prepare(question, history)
    retrieval = retriever.retrieve(prepared.search_query, k)
    return Grounding(prepared, retrieval, {**prepared.timings_ms, **retrieval.timings_ms})


def answer_pieces(
    chat: Streamer, grounding: Grounding, *, context_tokens: int, answer_tokens: int
) -> Generator[Piece, None, None]:
    """The answer to the original question as reasoning/answer pieces, in order."""
    splitter = ThinkSplitter()
    deltas = stream_answer(
        chat,
        grounding.prepared.question,
        grounding.retrieval.chunks,
        context_tokens=context_tokens,
        answer_tokens=answer_tokens,
        history=grounding.prepared.history,
    )
    with closing(deltas):  # closing this generator closes the model stream too
        for delta in deltas:
            yield from splitter.feed(delta)
    yield from splitter.flush()
