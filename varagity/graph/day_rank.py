"""Day cards ranked for a question by the engine and by their messages, fused.

The engine ranks transcript chunks by the similarity of a whole day (and of the
entities and relations extracted from it) to the question. On a year of chats with the
same few people, many days look alike as wholes; what tells them apart is one message
and the reply to it ("what's the Wi-Fi password?" and, on the next line, the
password). So graph retrieval ranks every day the graph holds a second time, by its
best pair of consecutive messages (the weighted share of the question's content words
the pair holds, words weighing the more the fewer pairs of the whole archive hold
them: :class:`DayIndex`). The engine's ``GRAPH_DAY_CANDIDATES`` days and as many of
the best days by their messages are the candidates; the two rankings are fused by
reciprocal rank (:data:`FUSION_K`) and the first ``GRAPH_CHUNK_TOP_K`` are kept. Ties
keep the engine's order; a day only the messages found comes after the engine's.

Measured on the whole LiHua year (0.5B, 2 cores; 282 answerable questions; every
evidence day of a question among the first k):

================================  ======  ======  ======
candidates                         @1      @5      @10
================================  ======  ======  ======
the engine's 15, fused             –       –       0.606
and the archive's best 15, fused   0.525   0.805   0.879
================================  ======  ======  ======

(@10 of single-day questions: 0.638 -> 0.902; a retrieval takes 0.16 s.)

A question that names its day in full ("on 20260410", "on April 28, 2026") is about
that day, which neither ranking can see (a day's messages do not write their own date):
every conversation of that day comes first (:func:`with_named_days`). On the year, with
the quote check's normal forms of the same change: @10 of single-day questions 0.902 ->
0.965, of all 0.879 -> 0.929.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace

from varagity.generation.quotes import ShareIndex
from varagity.graph.relative_dates import named_dates
from varagity.graph.types import DayCard, GraphRetrieval

#: The reciprocal-rank constant: small, since a handful of candidates are fused and
#: the first few places of either ranking should count.
FUSION_K = 2
#: Messages read together: one and the reply after it.
WINDOW = 2


def _windows(excerpt: str) -> list[str]:
    lines = [line for line in excerpt.splitlines() if line.strip()]
    return ["\n".join(lines[i : i + WINDOW]) for i in range(len(lines))] or [excerpt]


class DayIndex:
    """Days as pairs of consecutive messages, to rank them by their best pair."""

    def __init__(self, days: Iterable[DayCard]) -> None:
        """Index ``days`` (each card's excerpt is the day's transcript)."""
        self.days = {day.doc_key: day for day in days}
        owners: list[str] = []
        texts: list[str] = []
        for key, day in self.days.items():
            windows = _windows(day.excerpt)
            owners.extend([key] * len(windows))
            texts.extend(windows)
        self._owners = owners
        self._texts = texts
        self._shares = ShareIndex(texts)

    def scores(self, question: str) -> dict[str, float]:
        """Each day's best share of ``question`` held by a pair of its messages."""
        best: dict[str, float] = dict.fromkeys(self.days, 0.0)
        for key, share in zip(self._owners, self._shares.shares(question), strict=True):
            if share > best[key]:
                best[key] = share
        return best

    def windows(
        self, question: str, days: Iterable[str] | None = None
    ) -> list[tuple[str, str, float]]:
        """Each pair of messages of ``days`` (doc keys; all when None) with its day and
        its share of ``question`` (words weighed over the whole index)."""
        wanted = None if days is None else set(days)
        return [
            (key, text, share)
            for key, text, share in zip(
                self._owners, self._texts, self._shares.shares(question), strict=True
            )
            if wanted is None or key in wanted
        ]

    def best(self, question: str, n: int) -> list[DayCard]:
        """The ``n`` days whose messages hold the most of ``question`` (some of it)."""
        scores = self.scores(question)
        ranked = sorted((key for key in scores if scores[key] > 0), key=lambda k: -scores[k])
        return [self.days[key] for key in ranked[:n]]


def with_message_days(
    found: GraphRetrieval, index: DayIndex, question: str, n: int
) -> GraphRetrieval:
    """``found`` with the ``n`` best days by their messages (:meth:`DayIndex.best`)
    that the engine did not find appended, each with its whole transcript."""
    known = {day.doc_key for day in found.days}
    extra = [day for day in index.best(question, n) if day.doc_key not in known]
    return replace(found, days=(*found.days, *extra)) if extra else found


def rank_days(
    question: str, days: Sequence[DayCard], keep: int, index: DayIndex | None = None
) -> tuple[DayCard, ...]:
    """The first ``keep`` of ``days`` (in the engine's order) after fusing that order
    with the order of their messages' scores (over ``index``, the whole archive, else
    over ``days`` alone)."""
    if len(days) <= 1:
        return tuple(days[:keep])
    if index is None:
        index = DayIndex(days)
    scores = index.scores(question)
    by_messages = sorted(range(len(days)), key=lambda i: (-scores.get(days[i].doc_key, 0.0), i))
    lexical_rank = {i: rank for rank, i in enumerate(by_messages)}

    def fused(i: int) -> float:
        return 1 / (FUSION_K + i + 1) + 1 / (FUSION_K + lexical_rank[i] + 1)

    order = sorted(range(len(days)), key=lambda i: (-fused(i), i))
    return tuple(days[i] for i in order[:keep])


def named_cards(question: str, days: Sequence[DayCard]) -> tuple[int, ...]:
    """The indexes of the day cards ``days`` on a day ``question`` names in full
    ("on 20260810", "on April 28, 2026"); none when it names no day they hold."""
    wanted = {day.isoformat() for day in named_dates(question)}
    if not wanted:
        return ()
    return tuple(n for n, card in enumerate(days) if card.span[:10] in wanted)


def with_named_days(
    found: GraphRetrieval, index: DayIndex, question: str, keep: int
) -> GraphRetrieval:
    """``found`` with the days ``question`` names in full ("on 20260410", "on April 28,
    2026") first: every conversation of the archive on those days, best by its messages
    first, then ``found``'s other days, ``keep`` in all (more when the named days are
    more). Unchanged when the question names no day or the archive holds none of them.

    A question that names its day is about that day; neither the engine nor the
    messages rank a day by a date its text never writes (a day's messages do not carry
    their own date).
    """
    every = list(index.days.values())
    named = [every[n] for n in named_cards(question, every)]
    if not named:
        return found
    scores = index.scores(question)
    named.sort(key=lambda day: -scores.get(day.doc_key, 0.0))
    keys = {day.doc_key for day in named}
    rest = [day for day in found.days if day.doc_key not in keys]
    return replace(found, days=(*named, *rest)[: max(keep, len(named))])
