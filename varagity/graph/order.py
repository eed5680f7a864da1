"""Questions of order and distance between two things said in the chats, answered
from the days they were written.

"Did Wolfgang ask about Star Wars after he asked about Overwatch 3?", "How long did it
take from ordering the air conditioner to its installation?", "Is the time between A
and B more than 3 days?" each name two events and ask what lies between them. A small
model shown both days compares their dates badly or not at all (it abstains); the dates
are in the archive. :func:`order_question` reads such a question as its two events and
what it asks of them; :func:`find_order` finds each event's messages among the days of
the people the question names (the pair of consecutive messages holding the most of
the event's words, :class:`~varagity.graph.day_rank.DayIndex`) and, when both are found
clearly (:data:`ORDER_SUPPORT`) and at different times, the answer is computed from
their days (:meth:`OrderFinding.answer`), each event's day cited and its messages
quoted; a question read as none of these, or events not found clearly, are answered as
any other question.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, replace
from datetime import date
from typing import TYPE_CHECKING, Literal

from varagity.generation.quotes import NUMBER_WORDS, QUOTE_SUPPORT, message_minute
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
# what opens the second event follows a subject ("after he asked", "before Wolfgang
# proposed", "before sharing", "and Adam asking"), not a time ("after work today"); a
# "the" is a weaker sign ("after the discussion about ...")
_SUBJECT = r"(?=(?P<subject>(?:he|she|they|we|you|I|it|his|her|their)\b|[A-Z]|\w+ing\b)|the\b)"
_RELATION = re.compile(r"\s(?P<relation>[Bb]efore|[Aa]fter)\s+" + _SUBJECT)
_JOIN = re.compile(r"\s(?P<relation>and|to|until|till)\s+" + _SUBJECT)
_HOW_LONG = re.compile(r"^\s*how (?:long|many days)\b.*?\b(?:from|between)\s+", re.IGNORECASE)
_INTERVAL = re.compile(
    r"^\s*(?:is|was|are|were) the (?:time\s+)?(?:interval|gap|difference|time|period)\s+"
    r"(?P<compare>more|less|longer|shorter|greater|fewer)\s+than\s+(?P<days>\d+|[a-z]+)\s+"
    r"days?\s+between\s+",
    re.IGNORECASE,
)
# the words of an event that say how it was written, not what: no message holds them
_TELLING = re.compile(
    r"\b(?:send|sent|sending|message|messages|text|texted|tell|told|ask|asked|say|said|"
    r"mention|mentioned|wrote|write|written)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class OrderQuestion:
    """A question of two events: whether one came ``before`` or ``after`` the other, or
    how far ``apart`` they were (with ``than``: whether by more or less than a number
    of days)."""

    first: str
    relation: Literal["before", "after", "apart"]
    second: str
    than: tuple[Literal["more", "less"], int] | None = None


def _split(question: str, start: int, marks: re.Pattern[str]) -> tuple[str, str, str] | None:
    """``question`` from ``start`` cut at the last of ``marks`` a subject follows (else
    the last one at all): the first event, the mark's relation word, the second."""
    candidates = list(marks.finditer(question, start))
    if not candidates:
        return None
    found = ([c for c in candidates if c["subject"]] or candidates)[-1]
    first = question[start : found.start()].strip()
    second = question[found.end() :].strip().rstrip("?").strip()
    return (first, found["relation"].casefold(), second) if first and second else None


def order_question(question: str) -> OrderQuestion | None:
    """``question`` read as a question of two events, or None when it is none."""
    interval = _INTERVAL.match(question)
    if interval is not None:
        days = interval["days"].casefold()
        count = int(days) if days.isdigit() else int(NUMBER_WORDS.get(days, "-1"))
        split = _split(question, interval.end(), _JOIN)
        if split is None or count < 0:
            return None
        compare: Literal["more", "less"] = (
            "more" if interval["compare"].casefold() in ("more", "longer", "greater") else "less"
        )
        return OrderQuestion(split[0], "apart", split[2], (compare, count))
    how_long = _HOW_LONG.match(question)
    if how_long is not None:
        split = _split(question, how_long.end(), _JOIN)
        return None if split is None else OrderQuestion(split[0], "apart", split[2])
    asks = _ASKS.match(question)
    split = _split(question, asks.end(), _RELATION) if asks else None
    if split is None:
        return None
    relation: Literal["before", "after"] = "before" if split[1] == "before" else "after"
    return OrderQuestion(split[0], relation, split[2])


@dataclass(frozen=True)
class Event:
    """Where an event of a question was found: its day and the messages that hold it."""

    day: DayCard
    messages: str  # the pair of consecutive transcript lines
    share: float

    @property
    def when(self) -> tuple[str, int]:
        """The day and the minute of the day its first message was written."""
        return self.day.span, message_minute(self.messages) or 0


@dataclass(frozen=True)
class OrderFinding:
    """Both events of an order question, found; whether the order asked holds."""

    question: OrderQuestion
    first: Event
    second: Event

    @property
    def apart(self) -> int:
        """Days from the first event's day to the second's, whichever came first."""
        first, second = (date.fromisoformat(e.day.span[:10]) for e in (self.first, self.second))
        return abs((second - first).days)

    @property
    def holds(self) -> bool:
        """Whether what the question asks of the two holds (the order, or the distance
        compared with its number of days; a plain "how long" always does)."""
        earlier = self.first.when < self.second.when
        if self.question.relation == "before":
            return earlier
        if self.question.relation == "after":
            return not earlier
        if self.question.than is None:
            return True
        compare, days = self.question.than
        return self.apart > days if compare == "more" else self.apart < days

    @property
    def days(self) -> tuple[DayCard, ...]:
        """The days to cite, the first event's as [1] (one card when both share a day)."""
        if self.first.day.doc_key == self.second.day.doc_key:
            return (self.first.day,)
        return (self.first.day, self.second.day)

    def answer(self) -> str:
        """The answer: yes or no (or how many days), and when each event was written,
        cited (the first event's day is [1], the second's [2], or [1] too when they
        share it)."""
        came = "before" if self.first.when < self.second.when else "after"
        if len(self.days) == 1:
            when = (
                f"both were written on {weekday_of(self.first.day.span)} [1], the first at "
                f"{_clock(self.first.when[1])} and the second at {_clock(self.second.when[1])}"
            )
        else:
            when = (
                f"the first was written on {weekday_of(self.first.day.span)} [1] and the "
                f"second on {weekday_of(self.second.day.span)} [2]"
            )
        days = "the same day" if self.apart == 0 else f"{self.apart} day" + "s" * (self.apart > 1)
        if self.question.relation == "apart" and self.question.than is None:
            return f"{days[0].upper()}{days[1:]}: {when}."
        verdict = "Yes" if self.holds else "No"
        if self.question.relation == "apart":
            apart = "on the same day" if self.apart == 0 else f"{days} apart"
            return f"{verdict}. They were {apart}: {when}."
        return f"{verdict}. {when[0].upper()}{when[1:]}: the first came {came} the second."

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
    writers: Mapping[str, AbstractSet[str]],
    named_in: Callable[[str], Sequence[str]],
) -> OrderFinding | None:
    """Both events of ``question``, each among the days of the people its words name
    (``named_in``, else those the other event names; ``writers`` maps each day's doc
    key to who wrote on it), or None when either is not found clearly or both were
    written at the same moment (the same messages, or two of one minute)."""
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
    finding = find_order(asked, index, skeleton.writers, skeleton.named_in)
    if finding is None:
        return found
    cited = {day.doc_key for day in finding.days}
    rest = [day for day in found.days if day.doc_key not in cited]
    computed = ComputedAnswer(finding.answer(), finding.events())
    days = (*finding.days, *rest)[: max(keep, len(cited))]
    return replace(found, days=days, computed=computed)
