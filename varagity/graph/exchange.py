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
message's score is at most :data:`MAX_SCORE`.

Reading (:func:`read_exchange`): from ``GRAPH_EXCHANGE_READ_SCORE`` up, a reader model
(``GRAPH_READER_LLM``, by default a 1.5B model served beside the chat model) is shown
the best exchange alone and asked for its words that answer the question, or NONE (one
short call). A question the chats do not answer often matches the talk about its event
well ("What song did Li Hua sing at the karaoke?" and the invitation to it); shown those
messages only, the reader says NONE where a draft from the day cards answers. So
:func:`with_exchange` decides:

* the reader says NONE: the turn abstains, offering the exchange as the closest messages;
* it names words of the exchange the question does not have, and every person the
  question names wrote a line of it or is named there (:func:`absent_people`): the
  exchange is the answer;
* otherwise the exchange is the answer only when its score is at least
  ``GRAPH_EXCHANGE_MIN_SCORE`` (off by default), and the chat model answers from the
  day cards when not (and when nothing was read).

A question that names its day ("Why does Adam reach out to Li Hua on 20260810?") is
about that day: its exchange is ranked among that day's messages only and read from
:data:`NAMED_DAY_READ_SCORE`.

A floor above :data:`MAX_SCORE` switches its step off (both: no ranking either).
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from varagity.generation.answer import day_passage
from varagity.generation.grounding import content_words, normalize
from varagity.generation.quotes import EXTRACT_LEAD, question_shares
from varagity.graph.day_rank import named_cards
from varagity.graph.relative_dates import annotate_transcript
from varagity.graph.transcripts import MESSAGE_LINE, weekday_of
from varagity.graph.types import ComputedAnswer, DayCard, GraphRetrieval
from varagity.models.base import ModelError
from varagity.models.protocols import Completer, Embedder

log = logging.getLogger(__name__)

#: How many messages, the best by the question's words, are embedded and ranked again.
CANDIDATES = 8
#: What a message loses per rank of its day card (the first card is the best day).
DAY_RANK_WEIGHT = 0.05
#: The best score a message can have: all of the question's words and the same meaning.
MAX_SCORE = 2.0
#: The reading floor of an exchange on a day the question names. Such questions ask
#: what that day's talk was about ("the main topic of the conversation on 20260626",
#: "why is Li Hua praising Chae on 20260717"), in words its messages seldom share, so
#: their best message there scores low; on the LiHua-World year, reading those from 0.5
#: quoted 16 exchanges, 14 of them right (eval_suites/README.md, ninth measurement).
NAMED_DAY_READ_SCORE = 0.5
#: What the model is told when it reads an exchange (:func:`read_exchange`).
READ_SYSTEM = (
    "You read a few chat messages and answer a question about them with the exact words "
    "from the messages that answer it. If the messages do not say the answer, reply NONE."
)
#: Most tokens a reading may take: a few words of the messages, or NONE.
READ_TOKENS = 40
#: Least share of a reading's own words (those the question does not have) the exchange
#: must hold for the reading to count as naming the answer.
READ_SUPPORT = 0.5
#: Fewest letters of a word of a person's name for the question to name them by it
#: ("Ingrid", "Hua"; not "Li").
NAME_LETTERS = 3

# a capitalised word of a question, less its possessive ("Sara's" is Sara)
_CAPITALISED = re.compile(r"\b[A-Z][\w-]*?(?=['’]s\b|\b)")
_WORD = re.compile(r"[^\W_]+")


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
        writers, quoted = self._quoted()
        lead = f"{' and '.join(writers)} wrote on {self.day} [{self.source}]:"
        return self._computed(lead, quoted)

    def abstention(self) -> ComputedAnswer:
        """The abstention that offers the exchange as the messages closest to the
        question (it begins as the quote check's abstention does)."""
        lead = (
            f"{EXTRACT_LEAD} The messages closest to the question, written on {self.day} "
            f"[{self.source}]:"
        )
        return self._computed(lead, self._quoted()[1])

    def _computed(self, lead: str, quoted: Sequence[str]) -> ComputedAnswer:
        return ComputedAnswer("\n".join([lead, *quoted]), ((self.source, "\n".join(self.lines)),))

    def _quoted(self) -> tuple[list[str], list[str]]:
        """Who wrote the lines, in order, and each line quoted after its head."""
        writers: list[str] = []
        quoted = []
        for line in self.lines:
            head = MESSAGE_LINE.match(line)
            if head is None:  # the lines are message lines (_messages)
                continue
            if head["sender"] not in writers:
                writers.append(head["sender"])
            quoted.append(f"{head['head'].rstrip()} \u201c{head['text'].strip()}\u201d")
        return writers, quoted


@dataclass(frozen=True)
class Reading:
    """What the model read in an exchange (:func:`read_exchange`).

    Attributes:
        reply: The model's reply, as written.
        says_none: It found no answer there (NONE, or nothing).
        grounded: It names words the question does not have, :data:`READ_SUPPORT` of
            them written in the exchange (who wrote it included), and every person the
            question names wrote a line of the exchange or is named in one
            (:func:`absent_people`).
    """

    reply: str
    says_none: bool
    grounded: bool


def _messages(passage: str) -> list[str]:
    """A day card's messages, one line each (the first line names the conversation)."""
    return [line for line in passage.split("\n")[1:] if MESSAGE_LINE.match(line)]


def _cosine(a: Sequence[float], b: Sequence[float]) -> float:
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return sum(x * y for x, y in zip(a, b, strict=True)) / norm if norm else 0.0


def best_exchange(
    question: str,
    days: Sequence[DayCard],
    passages: Sequence[str],
    embedder: Embedder,
    *,
    cards: Sequence[int] | None = None,
) -> Exchange | None:
    """The message of ``passages`` (the day cards ``days`` rendered by
    :func:`day_passages`; only those of the indexes ``cards`` when given) that answers
    ``question`` best and its reply, ranked as the module says (and, when the reply asks
    back, the message answering it); None when the cards hold no message."""
    messages = [_messages(passage) for passage in passages]
    chosen = range(len(messages)) if cards is None else cards
    found = [(n, i, line) for n in chosen for i, line in enumerate(messages[n])]
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
    lines = messages[n][i : i + 2]
    if len(lines) == 2 and "?" in lines[1]:  # the reply asks back: add its answer
        lines = messages[n][i : i + 3]
    return Exchange(n + 1, weekday_of(days[n].span), tuple(lines), scores[best])


def absent_people(question: str, lines: Sequence[str], people: Iterable[str]) -> list[str]:
    """The people of ``people`` that ``question`` names (a capitalised word of their
    name, :data:`NAME_LETTERS` letters or more) and that none of the transcript
    ``lines`` was written by or names: messages without Ingrid do not say what Ingrid is
    bringing, whatever a reading of them finds."""
    asked = {w.casefold() for w in _CAPITALISED.findall(question)}
    heads = [m for m in map(MESSAGE_LINE.match, lines) if m]
    shown = {w.casefold() for m in heads for w in _WORD.findall(f"{m['sender']} {m['text']}")}
    absent = []
    for person in people:
        words = {w.casefold() for w in _WORD.findall(person) if len(w) >= NAME_LETTERS}
        if words & asked and not words & shown:
            absent.append(person)
    return absent


def card_writers(days: Sequence[DayCard]) -> list[str]:
    """Who wrote the messages of the day cards ``days``, in the order first met."""
    writers: dict[str, None] = {}
    for card in days:
        for line in card.excerpt.splitlines():
            head = MESSAGE_LINE.match(line)
            if head:
                writers.setdefault(head["sender"].strip())
    return list(writers)


def read_exchange(
    question: str, exchange: Exchange, chat: Completer, people: Iterable[str] = ()
) -> Reading:
    """The model's reading of ``exchange`` alone: the words of it that answer
    ``question``, or NONE (:data:`READ_SYSTEM`); ``people`` are those the question may
    name (the writers of the day cards), for :func:`absent_people`.

    Raises:
        ModelError: The model could not be asked.
    """
    shown = "\n".join(exchange.lines)
    messages = [
        {"role": "system", "content": READ_SYSTEM},
        {
            "role": "user",
            "content": f"Messages:\n{shown}\n\nQuestion: {question}\nReply with the words "
            "from the messages that answer the question, or NONE.",
        },
    ]
    reply = chat.complete(messages, max_tokens=READ_TOKENS, temperature=0.0).strip()
    first = reply.split(maxsplit=1)[0].strip(".:!\"'").casefold() if reply else ""
    if not reply or first == "none" or "NONE" in reply[:20]:
        return Reading(reply, says_none=True, grounded=False)
    own = content_words(normalize(reply)) - content_words(normalize(question))
    # who wrote the lines and what they say (who wrote them may be the answer)
    heads = (MESSAGE_LINE.match(line) for line in exchange.lines)
    written = content_words(normalize(" ".join(f"{m['sender']} {m['text']}" for m in heads if m)))
    grounded = (
        bool(own)
        and len(own & written) >= READ_SUPPORT * len(own)
        and not absent_people(question, exchange.lines, people)
    )
    return Reading(reply, says_none=False, grounded=grounded)


def with_exchange(
    found: GraphRetrieval,
    question: str,
    embedder: Embedder,
    chat: Completer,
    *,
    min_score: float,
    read_score: float,
) -> GraphRetrieval:
    """``found`` answered from its best exchange when nothing else computed the answer,
    as the module says: quoted when the model's reading (from ``read_score`` up, from
    :data:`NAMED_DAY_READ_SCORE` on a day the question names) names words of it or,
    without a reading that says NONE, when it scores ``min_score`` or more; an
    abstention offering it when the reading says NONE. Unchanged otherwise, and without
    ranking when both floors are above :data:`MAX_SCORE`. When the embedder fails the
    model answers, as it would without this; when the reading fails the score alone
    decides."""
    if found.computed is not None or not found.days or min(min_score, read_score) > MAX_SCORE:
        return found
    passages = day_passages(found.days)
    named = named_cards(question, found.days)
    try:
        exchange = None
        if named:
            exchange = best_exchange(question, found.days, passages, embedder, cards=named)
        if exchange is None:
            named = ()
            exchange = best_exchange(question, found.days, passages, embedder)
    except ModelError:
        log.warning("ranking the messages failed; the model answers instead", exc_info=True)
        return found
    from_score = read_score
    if named and read_score <= MAX_SCORE:  # a named day is read from lower down
        from_score = min(read_score, NAMED_DAY_READ_SCORE)
    if exchange is None or exchange.score < min(min_score, from_score):
        return found
    reading = None
    if exchange.score >= from_score:
        try:
            reading = read_exchange(question, exchange, chat, card_writers(found.days))
        except ModelError:
            log.warning("reading the best exchange failed; its score decides", exc_info=True)
    if reading is not None and reading.says_none:
        return replace(found, computed=exchange.abstention())
    if exchange.score >= min_score or (reading is not None and reading.grounded):
        return replace(found, computed=exchange.answer())
    return found
