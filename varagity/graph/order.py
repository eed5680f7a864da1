"""Questions of order between two things said in the chats, answered from their days.

"Did Wolfgang ask about Star Wars after he asked about Overwatch 3?" names two events
and asks which came first. A small model shown both days compares their dates badly
or not at all (it abstains); the dates are in the archive. :func:`order_question`
reads such a question ("Did / Was / Has ... before / after ...?") as its two events;
:func:`find_order` finds each event's message among the days of the people the
question names (the pair of consecutive messages holding the most of the event's
words, :class:`~varagity.graph.day_rank.DayIndex`) and, when both are found clearly
(:data:`ORDER_SUPPORT`) and at different times, says whether the order holds. The
answer is written from that finding (:meth:`OrderFinding.answer`), each event's day
cited and its message quoted; a question read as no order, or events not found
clearly, are answered as any other question.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Literal

from varagity.generation.quotes import QUOTE_SUPPORT
from varagity.graph.day_rank import DayIndex
from varagity.graph.transcripts import MESSAGE_LINE, weekday_of
from varagity.graph.types import ComputedAnswer, DayCard, GraphRetrieval

if TYPE_CHECKING:
    from varagity.graph.skeleton import Skeleton

#: Least share of an event's words (weighted as :class:`DayIndex` weighs them) its
#: messages must hold for the event to count as found: what a quote must hold of an
#: answer sentence.
ORDER_SUPPORT = QUOTE_SUPPORT
#: A person writing on more than this share of the days (the archive's owner) tells
#: no days apart: days are not narrowed to theirs.
EVERYONE = 0.5

_ASKS = re.compile(r"^\s*(?:did|was|were|is|are|has|have|had|does|do)\s+", re.IGNORECASE)
# "before" or "after" that opens the second event: a subject follows ("after he asked",
# "before Wolfgang proposed", "after the discussion"), not a time ("after work today")
_RELATION = re.compile(
    r"\s(?P<relation>[Bb]efore|[Aa]fter)\s+(?=(?P<subject>(?:he|she|they|we|you|I|it|his|her|their)"
    r"\b|[A-Z]|\w+ing\b)|the\b)"
)
# the words of an event that say how it was written, not what: no message holds them
_TELLING = re.compile(
    r"\b(?:send|sent|sending|message|messages|text|texted|tell|told|ask|asked|say|said|"
    r"mention|mentioned|wrote|write|written)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class OrderQuestion:
    """A question whether one event came before or after another."""

    first: str
    relation: Literal["before", "after"]
    second: str


def order_question(question: str) -> OrderQuestion | None:
    """``question`` read as a question of order, or None when it is none."""
    asks = _ASKS.match(question)
    if asks is None:
        return None
    # the last "before" or "after" a subject follows ("... a warm shower before sleeping
    # can help, before sharing the article"), else the last a "the" follows
    candidates = list(_RELATION.finditer(question, asks.end()))
    subjects = [c for c in candidates if c["subject"]]
    if not candidates:
        return None
    found = (subjects or candidates)[-1]
    relation: Literal["before", "after"] = (
        "before" if found["relation"].casefold() == "before" else "after"
    )
    first = question[asks.end() : found.start()].strip()
    second = question[found.end() :].strip().rstrip("?").strip()
    return OrderQuestion(first, relation, second) if first and second else None


@dataclass(frozen=True)
class Event:
    """Where an event of a question was found: its day and the messages that hold it."""

    day: DayCard
    messages: str  # the pair of consecutive transcript lines
    share: float

    @property
    def when(self) -> tuple[str, int]:
        """The day and the minute of the day its first message was written."""
        line = MESSAGE_LINE.match(self.messages)
        hours, _, minutes = (line["head"][1:].partition("]")[0] if line else "0:0").partition(":")
        return self.day.span, int(hours) * 60 + int(minutes)


@dataclass(frozen=True)
class OrderFinding:
    """Both events of an order question, found; whether the order asked holds."""

    question: OrderQuestion
    first: Event
    second: Event

    @property
    def holds(self) -> bool:
        earlier = self.first.when < self.second.when
        return earlier if self.question.relation == "before" else not earlier

    @property
    def days(self) -> tuple[DayCard, ...]:
        """The days to cite, the first event's as [1] (one card when both share a day)."""
        if self.first.day.doc_key == self.second.day.doc_key:
            return (self.first.day,)
        return (self.first.day, self.second.day)

    def answer(self) -> str:
        """The answer: yes or no, and when each event was written, cited (the first
        event's day is [1], the second's [2], or [1] too when they share it)."""
        verdict = "Yes" if self.holds else "No"
        came = "before" if self.first.when < self.second.when else "after"
        if len(self.days) == 1:
            return (
                f"{verdict}. Both were written on {weekday_of(self.first.day.span)} [1], "
                f"the first at {_clock(self.first.when[1])} and the second at "
                f"{_clock(self.second.when[1])}: the first came {came} the second."
            )
        return (
            f"{verdict}. The first was written on {weekday_of(self.first.day.span)} [1] "
            f"and the second on {weekday_of(self.second.day.span)} [2]: the first came "
            f"{came} the second."
        )

    def events(self) -> tuple[tuple[int, str], tuple[int, str]]:
        """Each event's day card number ([n]) and its messages, first event first."""
        return (1, self.first.messages), (len(self.days), self.second.messages)


def _clock(minute: int) -> str:
    return f"{minute // 60:02d}:{minute % 60:02d}"


def messages_span(passage: str, messages: str) -> tuple[int, int] | None:
    """Where ``messages`` (transcript lines) lie in ``passage``, found by their
    ``[HH:MM] sender:`` heads (a passage may write days into the lines' text); None
    when a line is not there."""
    start = end = None
    at = 0
    for line in messages.splitlines():
        head = MESSAGE_LINE.match(line)
        if head is None:
            return None
        found = passage.find(head["head"].rstrip(), at)
        if found < 0:
            return None
        start = found if start is None else start
        end = passage.find("\n", found)
        end = len(passage) if end < 0 else end
        at = end
    return None if start is None or end is None else (start, end)


def _event_words(clause: str) -> str:
    return _TELLING.sub(" ", clause)


def find_event(clause: str, index: DayIndex, days: Sequence[str] | None = None) -> Event | None:
    """The best pair of messages for ``clause`` among ``days`` (doc keys; all when
    None), if it holds :data:`ORDER_SUPPORT` of the clause's words."""
    scored = index.windows(_event_words(clause), days)
    if not scored:
        return None
    key, text, share = max(scored, key=lambda found: found[2])
    if share < ORDER_SUPPORT:
        return None
    return Event(index.days[key], text, share)


def find_order(
    question: OrderQuestion,
    index: DayIndex,
    writers: dict[str, set[str]],
    named_in: Callable[[str], Sequence[str]],
) -> OrderFinding | None:
    """Both events of ``question``, each among the days of the people its words name
    (``named_in``, else those the other event names; ``writers`` maps each day's doc
    key to who wrote on it), or None when either is not found clearly or both are the
    same messages or moment."""
    total = len(writers) or 1

    def days_of(people: Sequence[str]) -> list[str] | None:
        # the owner writes on most days: naming them tells no days apart
        few = {p for p in people if sum(p in w for w in writers.values()) / total <= EVERYONE}
        return [key for key, wrote in writers.items() if wrote & few] if few else None

    # an event that names nobody ("after he asked ...") is one of the other's people
    first_named, second_named = named_in(question.first), named_in(question.second)
    first = find_event(question.first, index, days_of(first_named or second_named))
    second = find_event(question.second, index, days_of(second_named or first_named))
    if first is None or second is None or first.when == second.when:
        return None
    if (first.day.doc_key, first.messages) == (second.day.doc_key, second.messages):
        return None
    return OrderFinding(question, first, second)


def with_order(
    found: GraphRetrieval, question: str, index: DayIndex, skeleton: Skeleton, keep: int
) -> GraphRetrieval:
    """``found`` with the finding of ``question`` when it is a question of order
    whose events were both found: their days first (the first event's as [1]), then
    the rest of ``found``'s, ``keep`` in all. Unchanged otherwise."""
    asked = order_question(question)
    if asked is None:
        return found
    writers: dict[str, set[str]] = {}
    for presence in skeleton.presences:
        writers.setdefault(presence.doc_key, set()).add(presence.person)
    finding = find_order(asked, index, writers, skeleton.named_in)
    if finding is None:
        return found
    cited = {day.doc_key for day in finding.days}
    rest = [day for day in found.days if day.doc_key not in cited]
    computed = ComputedAnswer(finding.answer(), finding.events())
    days = (*finding.days, *rest)[: max(keep, len(cited))]
    return replace(found, days=days, computed=computed)
