"""Graph answers quoted from the chats: the message that answers and its reply.

Most questions about a year of chats ask what one message said ("What local dish did
Wolfgang try in Prague?", "What time does Hailey start baking?"). Measured on the
LiHua-World year (docs/graph.md, "Answers quoted from the messages"), the message
ranked first by the question's words and meaning, with the reply after it, holds the
answer more often than the small default model's reading of the same day cards does
(64% of the single-day questions against 45%). So when that exchange is clearly about
the question, it *is* the answer: :func:`with_exchange` quotes it, its day and who
wrote it, as a :class:`~varagity.graph.types.ComputedAnswer` the turn streams
instead of a model's draft; otherwise the model answers from the day cards as before.

Ranking (:func:`best_exchange`): every message of the day cards gets the weighted
share of the question's content words it holds
(:func:`~varagity.generation.quotes.question_shares`, rare words weigh more) less
:data:`DAY_RANK_WEIGHT` per rank of its day card; the :data:`CANDIDATES` best are
embedded beside the question and gain their cosine similarity to it. The best
message's score is at most :data:`MAX_SCORE`; below ``GRAPH_EXCHANGE_MIN_SCORE`` no
exchange is quoted (a question the chats do not answer matches no message that well),
and a floor above it switches the ranking off.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Protocol

from varagity.generation.answer import day_passage
from varagity.generation.quotes import question_shares
from varagity.graph.relative_dates import annotate_transcript
from varagity.graph.transcripts import MESSAGE_LINE, weekday_of
from varagity.graph.types import ComputedAnswer, DayCard, GraphRetrieval
from varagity.models.base import ModelError

log = logging.getLogger(__name__)

#: How many messages, the best by the question's words, are embedded and ranked again.
CANDIDATES = 8
#: What a message loses per rank of its day card (the first card is the best day).
DAY_RANK_WEIGHT = 0.05
#: The best score a message can have: all of the question's words and the same meaning.
MAX_SCORE = 2.0


class Embedder(Protocol):
    """What ranking needs of an embedding client."""

    def embed_query(self, text: str) -> list[float]: ...

    def embed_passages(self, texts: Sequence[str]) -> list[list[float]]: ...


def day_passages(days: Sequence[DayCard], *, annotated: bool = True) -> list[str]:
    """The day cards as the answer numbers them (``[n]`` is item n-1): the conversation
    and the day with its weekday, then the transcript lines; ``annotated`` writes the
    days its messages name relative to it into them ("tonight (Thursday 2026-07-02)")."""
    return [
        day_passage(
            d.thread_name,
            weekday_of(d.span),
            annotate_transcript(d.excerpt, d.span) if annotated else d.excerpt,
        )
        for d in days
    ]


@dataclass(frozen=True)
class Exchange:
    """The best message for a question and the reply after it.

    Attributes:
        source: The day card it is on (``[n]``, from 1).
        day: That day, with its weekday ("Thursday 2026-07-02").
        lines: The message's transcript line, the reply's when there is one, and the
            message answering the reply when the reply asks back.
        score: The message's score (:func:`best_exchange`), at most 2.
    """

    source: int
    day: str
    lines: tuple[str, ...]
    score: float

    def answer(self) -> ComputedAnswer:
        """The exchange as the answer: who wrote it on which day, cited, then each
        line quoted."""
        writers: list[str] = []
        quoted = []
        for line in self.lines:
            head = MESSAGE_LINE.match(line)
            if head is None:  # the lines are message lines (_messages)
                continue
            if head["sender"] not in writers:
                writers.append(head["sender"])
            quoted.append(f"{head['head'].rstrip()} \u201c{head['text'].strip()}\u201d")
        lead = f"{' and '.join(writers)} wrote on {self.day} [{self.source}]:"
        return ComputedAnswer("\n".join([lead, *quoted]), ((self.source, "\n".join(self.lines)),))


def _messages(passage: str) -> list[str]:
    """A day card's messages, one line each (the first line names the conversation)."""
    return [line for line in passage.split("\n")[1:] if MESSAGE_LINE.match(line)]


def _cosine(a: Sequence[float], b: Sequence[float]) -> float:
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return sum(x * y for x, y in zip(a, b, strict=True)) / norm if norm else 0.0


def best_exchange(
    question: str, days: Sequence[DayCard], passages: Sequence[str], embedder: Embedder
) -> Exchange | None:
    """The message of ``passages`` (the day cards ``days`` rendered by
    :func:`day_passages`) that answers ``question`` best and its reply, ranked as the
    module says (and, when the reply asks back, the message answering it); None when
    the cards hold no message."""
    cards = [_messages(passage) for passage in passages]
    found = [(n, i, line) for n, lines in enumerate(cards) for i, line in enumerate(lines)]
    if not found:
        return None
    shares = question_shares(question, [line for _, _, line in found])
    base = [share - DAY_RANK_WEIGHT * n for share, (n, _, _) in zip(shares, found, strict=True)]
    candidates = sorted(range(len(found)), key=lambda k: -base[k])[:CANDIDATES]
    asked = embedder.embed_query(question)
    vectors = embedder.embed_passages([found[k][2] for k in candidates])
    scores = {k: base[k] + _cosine(asked, v) for k, v in zip(candidates, vectors, strict=True)}
    best = max(candidates, key=scores.__getitem__)
    n, i, _ = found[best]
    lines = cards[n][i : i + 2]
    if len(lines) == 2 and "?" in lines[1]:  # the reply asks back: add its answer
        lines = cards[n][i : i + 3]
    return Exchange(n + 1, weekday_of(days[n].span), tuple(lines), scores[best])


def with_exchange(
    found: GraphRetrieval, question: str, embedder: Embedder, min_score: float
) -> GraphRetrieval:
    """``found`` answered with its best exchange when that scores ``min_score`` or more
    and nothing else computed the answer; unchanged otherwise, without ranking when
    ``min_score`` is above :data:`MAX_SCORE` (and when the embedder fails: the model
    answers then, as it would without this)."""
    if found.computed is not None or not found.days or min_score > MAX_SCORE:
        return found
    try:
        exchange = best_exchange(question, found.days, day_passages(found.days), embedder)
    except ModelError:
        log.warning("ranking the messages failed; the model answers instead", exc_info=True)
        return found
    if exchange is None or exchange.score < min_score:
        return found
    return replace(found, computed=exchange.answer())
