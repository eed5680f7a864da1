"""Day cards ranked for a question by the engine and by their messages, fused.

The engine ranks transcript chunks by the similarity of a whole day (and of the
entities and relations extracted from it) to the question. On a year of chats with the
same few people, many days look alike as wholes; what tells them apart is one message
and the reply to it ("what's the Wi-Fi password?" and, on the next line, the
password). So graph retrieval asks the engine for more days than it shows
(``GRAPH_DAY_CANDIDATES``), ranks the candidates a second time by their best pair of
consecutive messages (the weighted share of the question's content words the pair
holds, :func:`~varagity.generation.quotes.question_shares`), and fuses the two
rankings by reciprocal rank (:data:`FUSION_K`); the first ``GRAPH_CHUNK_TOP_K`` are
kept. Ties keep the engine's order.

Measured on the committed graph suite and on January of LiHua-World (0.5B extraction,
15 candidates; all evidence days of a question among the first k):

============  ==========  ==========  ===========
ranking        @1          @5          @10
============  ==========  ==========  ===========
engine         10/18 5/15  17/18 10/15  18/18 14/15
fused          10/18 6/15  17/18 14/15  18/18 15/15
============  ==========  ==========  ===========
"""

from __future__ import annotations

from collections.abc import Sequence

from varagity.generation.quotes import question_shares
from varagity.graph.types import DayCard

#: The reciprocal-rank constant: small, since a handful of candidates are fused and
#: the first few places of either ranking should count.
FUSION_K = 2
#: Messages read together: one and the reply after it.
WINDOW = 2


def _windows(excerpt: str) -> list[str]:
    lines = [line for line in excerpt.splitlines() if line.strip()]
    return [" ".join(lines[i : i + WINDOW]) for i in range(len(lines))] or [excerpt]


def message_scores(question: str, days: Sequence[DayCard]) -> list[float]:
    """Each day's best share of the question held by a pair of consecutive messages
    (weights over all the candidates' pairs)."""
    windows = [_windows(day.excerpt) for day in days]
    flat = [text for group in windows for text in group]
    shares = question_shares(question, flat)
    best: list[float] = []
    at = 0
    for group in windows:
        best.append(max(shares[at : at + len(group)], default=0.0))
        at += len(group)
    return best


def rank_days(question: str, days: Sequence[DayCard], keep: int) -> tuple[DayCard, ...]:
    """The first ``keep`` of ``days`` (in the engine's order) after fusing that order
    with the order of :func:`message_scores`."""
    if len(days) <= 1:
        return tuple(days[:keep])
    scores = message_scores(question, days)
    by_messages = sorted(range(len(days)), key=lambda i: (-scores[i], i))
    lexical_rank = {i: rank for rank, i in enumerate(by_messages)}

    def fused(i: int) -> float:
        return 1 / (FUSION_K + i + 1) + 1 / (FUSION_K + lexical_rank[i] + 1)

    order = sorted(range(len(days)), key=lambda i: (-fused(i), i))
    return tuple(days[i] for i in order[:keep])
