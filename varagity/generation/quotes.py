"""Quote-checked answers: every answer sentence rests on a verbatim quote of a passage.

A small model that is shown the right passage still states the figure of the
neighbouring row, or fills a gap with a value from elsewhere. Word overlap cannot tell
those apart from a right answer, but a string match can tell whether the *values* a
sentence states are in the text it rests on. So an answer is released sentence by
sentence, each one checked first (:class:`QuotedAnswerStream`):

* **Units.** Each passage is cut into units (:func:`passage_units`): prose into
  sentences (hard-wrapped lines joined), while a table row (Markdown pipes, or a
  reStructuredText simple table), a list item or a heading (``#`` or underlined) is a
  unit of its own. A *quote* is one unit, or two adjacent units of one passage (a
  sentence whose subject is named in the one before).
* **Values** (:func:`values_of`): what a sentence states that can be wrong in a way
  word overlap misses: every token holding a digit (``27``, ``02:00``, ``E4``,
  ``LR-7``, ``38,000``) and every capitalised word that does not start the sentence
  (names, months, places). A value the question itself names is the subject, not a
  claim, and is not counted.
* **The check** (:meth:`QuoteChecker.quote`): a quote qualifies when its normalised
  text holds every value of the sentence as a whole word (normalisation:
  :func:`~varagity.generation.grounding.normalize`), and the values the *question*
  names (the item asked about) appear in the unit's scope: the unit, the headings
  above it, what names its passage (file, headings, thread) and, for a table row, its
  header row, else the sentence before it (for a list item also the sentence that
  introduces the list); a unit that names no item of its own may also speak of what
  the passage's opening sentence names. A unit stating what holds on the other side of
  a date the question names ("From 1 April 2025 ...", asked about before) is not
  about it. A number the question names counts there
  only beside a word it stands with in the question ("grade 6" is not the "6 months"
  of another row), and may fall in a range ("12 years" in the "10+ years" row, "grade
  6" under "Grades 5–7"); a number spelled out ("seven years") is the same number. A
  value must also sit where the sentence puts it: in a row, in the column the sentence
  names; in prose, in the clause that names the item ("11:00 in Leeds and 10:00 in
  Rotterdam"), and a sentence that claims a value for the neighbour the passage gives
  it to, never naming the item asked about, answers for the neighbour. A figure the
  sentence states as money or a percentage must be one in the quote ("£36" is not a
  warranty's "36" months). A sentence that says nothing the question did not (no
  value, no word of its own, no denial) answers nothing. The unit
  must hold :data:`QUOTE_RELEVANCE` of what the question asks (a quote of another
  paragraph answers another question). Words are compared by their Snowball stem
  ("assemble", "assembly"). Of the qualifying units, the one holding the
  largest weighted share of the sentence's content words wins, if that share is at
  least :data:`QUOTE_SUPPORT`. A unit's words include its heading's and header row's
  (not the words the question uses but no passage does: those are what an
  unanswerable question asks for, "colour", "payload"). No model is asked: the check
  is a string match.
* **Chats.** A question after a person's own view ("LiHua's favorite ...", "What
  does Emily think ...") is answered by that person's message, or one naming them; a
  "who" question of a chat by a sentence naming a person the question does not; the
  question's words for how a message was written ("proposes", "suggested") need not
  be in the conversation, but the rest of what the question speaks of must be: a day
  whose talk misses most of it (:data:`PREMISE_COVERAGE`; names, the values asked and
  words framing the answer, "what type of", aside) answers another question, the way an
  unanswerable one is usually asked ("What dessert did they order at the party?" of a
  dinner). A sentence whose quote fails only for a value the model
  added, one no unit on the subject holds ("4 AM on Wednesday, May 27"), is kept
  without it when its head, cut where that phrase begins, has a quote
  (:meth:`QuoteChecker.trimmed`).
* A sentence without a quote is **dropped**. An answer left with no checked sentence
  becomes an abstention (the model's own abstention too). It offers the passage
  closest to answering the question when one is close enough
  (:meth:`QuoteChecker.extract`: it names the item asked about and holds most of the
  question's words; for a question after a figure, "how long", "which day", one that
  states a figure), quoted verbatim with its ``[n]``: the small model often drafts
  the neighbouring row's figure while the row the question names is in front of it.
  Otherwise it names what the passages do cover (:func:`coverage_abstention`).

Each kept sentence cites the passage of its quote as ``[n]``, and the quotes travel
with the answer (:attr:`QuotedAnswerStream.quotes`) to the evidence cards, the page
previews, the OpenAI-compatible route and the CLI.

The context the model is shown can be compressed the same way
(:func:`select_context`): the units that share the most rare words with the question,
with their neighbours and the header row of their table, instead of whole chunks; the
prompt is then a fraction of the size, and time to first token with it.
"""

from __future__ import annotations

import itertools
import math
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import Stemmer

from varagity.generation.grounding import (
    STOPWORDS,
    content_words,
    is_abstention,
    normalize,
    sentence_end,
    strip_markers,
)
from varagity.records import Quote

_stemmers = threading.local()


def _content(normalized_text: str) -> set[str]:
    """The content words of a normalised text, stemmed (Snowball English): "assemble"
    and "assembly point", "evacuated" and "evacuation" share a word; a one-digit number
    is one too (the "2" and "3" of "2 pm to 3 pm" are what the sentence states)."""
    stemmer = getattr(_stemmers, "english", None)
    if stemmer is None:  # a PyStemmer object is not to be shared between threads
        stemmer = _stemmers.english = Stemmer.Stemmer("english")
    words = set(stemmer.stemWords(sorted(content_words(normalized_text))))
    return words | set(_DIGIT.findall(normalized_text))


_DIGIT = re.compile(r"(?<![\w.:,])\d(?![\w:]|[.,]\d)")


#: Least weighted share of a sentence's content words its quote must hold.
QUOTE_SUPPORT = 0.5
#: How much more of the sentence a unit and the one before it must hold than the unit
#: alone for the quote to take both (the earlier one names the subject).
PAIR_GAIN = 0.2
#: Sentences in a row without a quote after which the answer is given up: the model is
#: not answering from the passages (a list of steps, a lecture), and every further
#: token only delays the abstention.
GIVE_UP_AFTER = 3
#: The share of its heading's (or table header's) match a unit inherits.
INHERITED = 0.8
#: Least weighted share of what the question asks (its words the passages use, less the
#: names of the item) a quoted unit must hold: below it, the quote answers another question.
QUOTE_RELEVANCE = 1 / 3
#: Minutes between two messages of a day that still belong to one conversation (whose
#: first message names the topic the rest speak of)
CONVERSATION_GAP = 30
#: Fewest letters of a name matched written joined or spaced (:func:`_holds`).
JOINED_NAME = 5
#: Least share of the question's premise (its content words other than names, asked
#: values, words for how a message was written and words that frame the answer) a day's
#: conversation must use for a message of it to answer (:meth:`QuoteChecker.quote`).
PREMISE_COVERAGE = 0.5
#: Least weighted share of the question's words (those the passages use) a unit must
#: hold to be offered as the closest passage when no answer sentence had a quote.
EXTRACT_COVERAGE = 0.5
#: How an abstention that offers the closest passage begins.
EXTRACT_LEAD = "I could not find a checked answer to this in the documents."
#: Units of context kept before and after each selected unit of a passage.
NEIGHBOURS = 1
#: Fewest words a trimmed head of an answer sentence keeps (:meth:`QuoteChecker.trimmed`).
TRIMMED_WORDS = 4
# where a phrase or clause begins inside a sentence: a head cut there is a sentence
_PHRASE_BREAK = re.compile(
    r"[,;:]\s|\s\(|\s(?:and|but|because|since|so|which|while|whereas|as|on|at|in|with|"
    r"for|from|by|during|after|before|until|to|of)\s"
)

# a list item, a numbered step, a heading, a table row, or a transcript line
# ("[09:14] Maya: ...", as the message graph renders a day)
_STRUCTURED_LINE = re.compile(r"^\s*(?:[-*+•]\s|\d{1,3}[.)]\s|#{1,6}\s|\||\[\d{1,2}:\d{2}\])")
# a list item's bullet or number ("- ", "3. ", "4) ")
#: A transcript line of the message graph: ``[HH:MM] sender: text``.
_MESSAGE = re.compile(r"^\s*\[\d{1,2}:\d{2}\]\s*([^:\n]+):\s*")
# what a message does as it is written: its day is the day of the act
_SPEECH_ACT = re.compile(
    r"\b(?:ask|said|say|tell|told|mention|suggest|invit|wrote|writ|text|messag|remind"
    r"|recommend|propos|offer|repl|respond|thank|confirm|shar|announc|inform|updat)\w*"
)
_CLOCK = re.compile(r"^\s*\[(\d{1,2}):(\d{2})\]")
_LIST_MARKER = re.compile(r"^(?:[-*+•]|\d{1,3}[.)])\s+")
_TABLE_RULE = re.compile(r"^[\s|:]*-[\s|:-]*$")  # |---|:--:| and | - | - |
# a reStructuredText simple table's border: two or more runs of "=" ("====  ======")
_SIMPLE_TABLE_BORDER = re.compile(r"^\s*={2,}(?:\s+={2,})+\s*$")
# the line under a title: one run of "=", "-", "~" or "^"
_UNDERLINE = re.compile(r"^\s*(?:={3,}|-{3,}|~{3,}|\^{3,})\s*$")
# a sentence ends at . ! ? (and closing quotes/brackets) before whitespace
_SENTENCE_BREAK = re.compile(r"[.!?][\"')\]]*\s+")
_ABBREVIATION = re.compile(
    r"(?:\b(?:e\.g|i\.e|etc|vs|approx|incl|no|nos|fig|figs|dr|mr|mrs|ms|st|jr|sr|ext|tel)"
    r"|(?<![\w.])[A-Z])\.[\"')\]]*\s+$",
    re.I,
)
# a person's own view in a question: "LiHua's favorite superhero", "Jake's first tip",
# "What does Emily Burnett think ...", "How does LiHua feel ..."
_VIEWS = (
    r"(?:favou?rites?|faves?|response|reply|opinion|feedback|views?|thoughts?|"
    r"suggestions?|advice|tips?|ideas?|plans?|recommendations?|reactions?|feelings?|"
    r"preferences?|impressions?)"
)
_PERSON = r"([A-Z][\w-]*(?: [A-Z][\w-]*)?)"
_HELD_BY = re.compile(_PERSON + r"['’]s\s+(?:[\w-]+\s+){0,2}?" + _VIEWS + r"\b")
_HELD_VIEW = re.compile(
    r"\b(?:does|do|did)\s+"
    + _PERSON
    + r"\s+(?:think|feel|like|love|enjoy|prefer|appreciate|find|consider|suggest|recommend"
    r"|propose)\b"
)
_WHO_QUESTION = re.compile(r"^\W*(?:who|whom|with whom)\b")
# the words a question frames its answer with ("what type of ...", "how much") or
# points at the talk with ("according to their conversation"): what they ask for is the
# answer or the record itself, no conversation needs to say them
_FRAME = (
    "type kind sort specific exact exactly particular day date time name much many long often"
    " number amount percentage according conversation discussion chat"
)
_MERIDIEM = re.compile(r"(\d)\s*([AaPp])\.?[Mm]\b\.?")
_DIGIT_TOKEN = re.compile(r"[A-Za-z0-9€$£¥%][\w.,:/€$£¥%+-]*")
_NAME = re.compile(r"\b[A-Z][\w'’-]*[A-Za-z0-9]|\b[A-Z]\b")
# capitalised words that are no claim of their own
# a lead-in that only says where the answer comes from ("According to the sources, ...")
_LEAD_IN = re.compile(
    r"^\W*(?:according to|based on|as (?:stated|shown|given) in|from)\s+[^,.]{0,60}?\b"
    r"(?:information|sources?|passages?|documents?|text|table|context|data)\b[^,.]{0,40},\s*",
    re.I,
)
# where a sentence's first word begins: the text's start, or after . ! ? and space
_SENTENCE_START = re.compile(r"^\W*|[.!?][\"')\]]*\s+\W*")
_POSSESSIVE = re.compile(r"['’]s$")
_PLAIN_CAPITALS = frozenset({"i", "a", "the", "yes", "no", "ok"})
_CALENDAR = frozenset(
    "january february march april may june july august september october november december "
    "monday tuesday wednesday thursday friday saturday sunday".split()
)


#: What a unit is: a prose sentence, a table row, a list item (or step, or transcript
#: line) or a heading.
UnitKind = Literal["prose", "row", "item", "heading"]


@dataclass(frozen=True, slots=True)
class Unit:
    """A sentence, table row, list item or heading of a passage: ``text[start:end]``."""

    passage: int  # 0-based
    start: int
    end: int
    kind: UnitKind = "prose"

    @property
    def structured(self) -> bool:
        """Whether the unit is a line of its own (not a sentence of running prose)."""
        return self.kind != "prose"


def _line_kind(body: str) -> UnitKind | None:
    """The kind of a line that is a unit of its own, or None for a line of prose."""
    if not _STRUCTURED_LINE.match(body):
        return None
    first = body.lstrip()[0]
    return "row" if first == "|" else "heading" if first == "#" else "item"


def passage_units(text: str, passage: int = 0) -> list[Unit]:
    """The units of ``text`` in order (see the module doc); offsets index ``text``.

    Besides Markdown (pipe tables, ``#`` headings, list items), two plain-text shapes
    are read the way a reader sees them: the rows of a reStructuredText *simple table*
    (between ``====  =====`` borders) are rows, and a line underlined with ``===`` or
    ``---`` is a heading.
    """
    units: list[Unit] = []
    prose_start: int | None = None
    prose_end = 0
    prose_lines = 0
    in_table = False
    item_open = False  # the last line was a list item's
    offset = 0

    def flush() -> None:
        nonlocal prose_start, prose_lines
        if prose_start is not None:
            units.extend(_sentences(text, prose_start, prose_end, passage))
        prose_start = None
        prose_lines = 0

    for line in text.splitlines(keepends=True):
        body = line.rstrip("\r\n")
        start, end = offset, offset + len(body)
        offset += len(line)
        if not body.strip():
            flush()
            in_table = item_open = False
            continue
        if _SIMPLE_TABLE_BORDER.match(body):
            flush()
            in_table, item_open = True, False
            continue
        if _UNDERLINE.match(body) or _TABLE_RULE.match(body):
            item_open = False
            if prose_start is not None and prose_lines == 1 and _UNDERLINE.match(body):
                units.append(Unit(passage, prose_start, prose_end, "heading"))
                prose_start = None
                prose_lines = 0
            flush()
            continue
        kind = "row" if in_table else _line_kind(body)
        if kind is not None:
            flush()
            lead = len(body) - len(body.lstrip())
            units.append(Unit(passage, start + lead, end, kind))
            item_open = kind == "item"
            continue
        if prose_start is None and item_open:
            # a wrapped list item: the line after it, not set off by a blank line, goes on
            units[-1] = Unit(passage, units[-1].start, end, "item")
            continue
        if prose_start is None:
            prose_start = start + len(body) - len(body.lstrip())
        prose_end = end
        prose_lines += 1
    flush()
    return units


def _sentences(text: str, start: int, end: int, passage: int) -> list[Unit]:
    out: list[Unit] = []
    begin = start
    for match in _SENTENCE_BREAK.finditer(text, start, end):
        if _ABBREVIATION.search(text, max(start, match.start() - 8), match.end()):
            continue
        out.append(Unit(passage, begin, match.end() - len(match.group()) + 1))
        begin = match.end()
    if begin < end:
        out.append(Unit(passage, begin, end))
    # a closing quote or bracket after the full stop belongs to the sentence
    return [_trim(text, u) for u in out if text[u.start : u.end].strip()]


def _trim(text: str, unit: Unit) -> Unit:
    end = unit.end
    while end < len(text) and text[end] in "\"')]":
        end += 1
    return Unit(unit.passage, unit.start, end, unit.kind)


def values_of(sentence: str) -> set[str]:
    """The values ``sentence`` states, normalised (see the module doc)."""
    # a clock's "PM" is part of its time, no name: "2 PM" and "3 p.m." are "2pm", "3pm"
    text = _MERIDIEM.sub(r"\1\2m", strip_markers(sentence).strip())
    found: set[str] = set()
    for token in _DIGIT_TOKEN.findall(text):
        token = token.strip(".,:;/+-€$£¥%")
        if any(c.isdigit() for c in token):
            found.add(normalize(token))
    # a sentence's first word is capitalised whatever it is ("How much ... ? Who ...")
    starts = {m.end() for m in _SENTENCE_START.finditer(text)}
    for match in _NAME.finditer(text):
        if match.start() in starts:
            continue
        word = normalize(_POSSESSIVE.sub("", match.group()))
        if word in _PLAIN_CAPITALS or any(c.isdigit() for c in word):
            continue
        # a capitalised function word is no name ("IT" in "an IT ticket" reads "it")
        if word in STOPWORDS and word not in _CALENDAR:
            continue
        found.add(word)
    return {v for v in found if v}


def _holds(normalized_text: str, value: str) -> bool:
    """Whether ``value`` occurs in ``normalized_text`` as whole words; a name also when
    one of the two writes it joined and the other spaced (a handle "JakeWatson" or
    "ChaeSong-hwa" is the "Jake Watson" or "Chae Song-hwa" a transcript names)."""
    pattern = r"(?<![\w.])" + re.escape(value) + r"(?![\w])"
    if re.search(pattern, normalized_text) is not None:
        return True
    letters = value.replace(" ", "")
    if len(letters) < JOINED_NAME or not letters.isalpha():
        return False
    joined = r"(?<![\w.])" + " ?".join(map(re.escape, letters)) + r"(?![\w])"
    return re.search(joined, normalized_text) is not None


class QuoteChecker:
    """Finds the quote an answer sentence rests on among the passages of one turn."""

    def __init__(self, question: str, passages: Sequence[str], names: Sequence[str] = ()) -> None:
        """Cut ``passages`` (``[1]`` first) into units for ``question``; ``names[i]``
        says what passage ``i`` is about (file and headings), when known."""
        self.passages = tuple(passages)
        self.question = normalize(question)
        self.units = [u for n, p in enumerate(self.passages) for u in passage_units(p, n)]
        self._raw_names = [names[n] if n < len(names) else "" for n in range(len(passages))]
        self._names = [normalize(n) for n in self._raw_names]
        self._norm = [normalize(self._text(u)) for u in self.units]
        # a transcript line's match (who wrote it, where its text begins), and the
        # message before it in the same day (the one it may answer)
        self._sent = [_MESSAGE.match(self._text(u)) for u in self.units]
        self._replying = [
            i - 1
            if sent and i and self._sent[i - 1] and self.units[i - 1].passage == u.passage
            else None
            for i, (u, sent) in enumerate(zip(self.units, self._sent, strict=True))
        ]
        # ... and the message that opened its conversation: a chat names its topic once
        # ("it's Mother's Day this weekend!") and then speaks of it without the name
        self._opening = self._openings()
        self._writers: dict[int, set[str]] = {}
        for unit, sent in zip(self.units, self._sent, strict=True):
            if sent:
                self._writers.setdefault(unit.passage, set()).add(sent.group(1).strip())
        # a row "| Hamburg | €49 |" is a per-diem because its table's header says so:
        # a row's words include its header row's
        self._header = [_table_header(self.units, i) for i in range(len(self.units))]
        # ... and any unit's words include its section heading's (a row under "Daily
        # allowances" speaks of daily allowances), and a list item's the sentence that
        # introduces its list ("Mileage is paid per mile or kilometre:")
        # and a table row's, which means nothing without its context, those of what
        # names its passage (the file and section: "rate card", "Daily allowances")
        named = [_content(n) for n in self._names]
        # each unit's own content words, stemmed once (owners and df reuse them)
        own = [_content(n) for n in self._norm]
        self._list_leads = [self._list_lead(i) for i in range(len(self.units))]
        self._words = [
            own[i]
            | set().union(*(own[j] for j in self._owners(i)))
            | (named[u.passage] if u.kind == "row" else set())
            for i, u in enumerate(self.units)
        ]
        # ... and, for asking whether a unit is on the question's topic, any unit's, and
        # a message's those of the message it follows: a reply rarely repeats what it
        # answers ("How much was the bill?" "33 each")
        replied = [set() if j is None else own[j] for j in self._replying]
        opened = [set() if j is None else own[j] for j in self._opening]
        self._topic_words = [
            w | named[u.passage] | replied[i] | opened[i]
            for i, (w, u) in enumerate(zip(self._words, self.units, strict=True))
        ]
        # a unit must name the item asked about itself (or its heading, its table's
        # header, the sentence before it, what names the passage): the neighbouring
        # row's value is not this item's, nor a sentence's about another item
        self._scope = self._scopes()
        # each passage's opening sentence, where a document names its subject
        self._lowercase = set(re.findall(r"\b[a-z][\w'’-]*", "\n".join((question, *self.passages))))
        self._lead: list[int | None] = [None] * len(self.passages)
        for i, unit in reversed(list(enumerate(self.units))):
            if unit.kind == "prose":
                self._lead[unit.passage] = i
        self._scope_norm = [normalize(r) for r in self._scope]
        # ... and, where the opening of its conversation is a message of its own, a
        # message's without it
        self._close_scope = {
            i: self._message_scope(i, opening=False)
            for i, opening in enumerate(self._opening)
            if opening not in (None, i, self._replying[i])
        }
        df: dict[str, int] = {}
        for words in own:
            for word in words:
                df[word] = df.get(word, 0) + 1
        self._df = df
        self.asked = values_of(question) | set(_spelled_numbers(self.question))
        # the rest of the full name of a person the question names ("Noor": "Haddad",
        # as the transcript writes her "Noor Haddad"): naming it adds nothing
        self._also_asked = {
            part
            for sent in self._sent
            if sent
            for parts in [normalize(sent.group(1)).split()]
            # ... or names joined ("LiHua": "Li" and "Hua")
            if len(parts) > 1 and (self.asked.intersection(parts) or "".join(parts) in self.asked)
            for part in parts
        } - self.asked
        # a question asked of one side of a date ("before the April 2025 change")
        dated = _dated(self.question)
        self._when = dated[0] if len(dated) == 1 else None
        # a number the question names is the item's only beside the words it stands
        # with there ("grade 6", "12 years"): the "6 months" of another row is not it
        self._beside = _number_neighbours(question)
        # what the question asks of the item, beyond naming it ("cost" in "What does the
        # K2 cost?"), among the words the passages use at all
        self._question_words = _content(self.question)
        self._used = {w for w in self._question_words if w in df}
        self._asking = self._used - {w for v in self.asked for w in _content(v)}
        self._asking_weight = sum(self._weight(w) for w in self._asking)
        # what kind of figure answers the question, if one does: a duration ("how
        # long"), else any figure ("how much", "which day")
        self._figure = (
            _durations
            if _DURATION_QUESTION.search(self.question)
            else _figures
            if _FIGURE_QUESTION.search(self.question)
            else None
        )
        self._asked_figures = self._figure(self.question) if self._figure else set()
        self._marks = [_marked(n) for n in self._norm]
        # the two-word terms of the question ("diesel generator") each unit lacks while
        # a unit of its passage has them: that unit speaks of the thing, this one of
        # another ("... a combined peak output of 4.2 megawatts. A diesel generator
        # covers the polar night ...")
        self._lacks = self._terms_elsewhere(_pairs(self.question))
        # what a figure answering the question is measured in, if the question says
        # ("payload": a mass)
        measures = [unit for asks, unit in _MEASURES if asks.search(self.question)]
        self._measure = measures[0] if len(measures) == 1 else None
        # which units may carry an answer to this question at all (the same for every
        # sentence of the answer)
        self._on_topic = [self._relevant(i) and self._about(i) for i in range(len(self.units))]
        # a person's own view ("LiHua's favorite", "What does Emily think ..."): a message
        # of someone else's speaks for that person only when it names them
        people = {normalize(w) for ws in self._writers.values() for w in ws}
        held = {
            normalize(m)
            for m in _HELD_BY.findall(question) + _HELD_VIEW.findall(question)
            if any(_holds(p, normalize(m)) for p in people)
        }
        self._theirs = [self._by_or_naming(i, held) for i in range(len(self.units))]
        # "who ...?" asked of a chat is answered by a person the question does not name
        self._asks_person = bool(_WHO_QUESTION.match(self.question)) and any(self._sent)
        self._premised = self._premises(people)
        # the messages on the question's subject only with their conversation's opening
        self._leaning = [
            on and i in self._close_scope and not self._about(i, opening=False)
            for i, on in enumerate(self._on_topic)
        ]

    def _text(self, unit: Unit) -> str:
        return self.passages[unit.passage][unit.start : unit.end]

    def _premises(self, people: set[str]) -> list[bool]:
        """For each passage, whether it may answer: a day's conversation must use
        :data:`PREMISE_COVERAGE` of the question's premise, the content words that are
        not a name (a handle written joined, "JakeWatson", is one), a value it names, a
        word for how a message was written or one framing the answer ("type", "time").

        A question whose premise the conversation never speaks of asks about something
        else ("What dessert did they order ... during their dinner celebration?" of a
        dinner where pad thai was ordered), however well a message matches the answer
        sentence. Other passages (documents) always may: this rule is about chats, where
        a day's talk is whole and a question's words are its speakers' words.
        """
        names = {w.replace(" ", "") for w in people} | {
            w for person in people for w in person.split()
        }
        ignored = (
            {w for v in self.asked | self._also_asked for w in _content(v)}
            | _content(" ".join(sorted(names)))
            | _content(_FRAME)
        )
        premise = {
            w
            for w in self._question_words - ignored
            if not _SPEECH_ACT.match(w) and not w.isdigit() and w not in names
        }
        # a day's words: its units' (already stemmed) and what names the day
        said: dict[int, set[str]] = {}
        for unit, sent in zip(self.units, self._sent, strict=True):
            if sent:
                said.setdefault(unit.passage, _content(self._names[unit.passage]))
        for unit, words in zip(self.units, self._words, strict=True):
            if unit.passage in said:
                said[unit.passage] |= words

        def premised(n: int) -> bool:
            if n not in said:
                return True  # no conversation
            missing = len(premise - said[n])
            # one word may be the asker's paraphrase ("fly" of a talk about "flights")
            return missing < 2 or missing <= (1 - PREMISE_COVERAGE) * len(premise)

        return [premised(n) for n in range(len(self.passages))]

    def _by_or_naming(self, i: int, people: set[str]) -> bool:
        """Whether message ``i`` was written by, or names, each of ``people`` (anything
        that is no message does)."""
        sent = self._sent[i]
        if not sent or not people:
            return True
        writer = normalize(sent.group(1))
        text = self._norm[i]
        return all(_holds(writer, p) or _holds(text, p) for p in people)

    def _owners(self, i: int) -> list[int]:
        """The units that say what unit ``i`` is about (:func:`_owners`) and, for a list
        item, the sentence that introduces its list (the one before the list, ending in
        a colon)."""
        owners = _owners(self.units, i)
        lead = self._list_leads[i]
        return owners if lead is None else [*owners, lead]

    def _list_lead(self, i: int) -> int | None:
        if self.units[i].kind != "item":
            return None
        j = i
        while j > 0 and self.units[j - 1].passage == self.units[i].passage:
            j -= 1
            if self.units[j].kind != "item":
                text = self._text(self.units[j]).rstrip()
                return j if self.units[j].kind == "prose" and text.endswith(":") else None
        return None

    def _openings(self) -> list[int | None]:
        """For each message, the first of its conversation: of the messages before it in
        its day, each written at most :data:`CONVERSATION_GAP` minutes after the one
        before; None for what is no message."""
        openings: list[int | None] = []
        for i, sent in enumerate(self._sent):
            before = self._replying[i]
            if sent is None:
                openings.append(None)
            elif (
                before is None
                or _minutes_between(self._text(self.units[before]), self._text(self.units[i]))
                > CONVERSATION_GAP
            ):
                openings.append(i)
            else:
                openings.append(openings[before])
        return openings

    def _scopes(self) -> list[str]:
        """What each unit can be about (as written, not normalised): the headings above
        it in its passage, its table's header row for a row (else the unit before it,
        which may name its subject, and for a list item the sentence introducing the
        list), the unit itself and the passage's names; a message's is
        :meth:`_message_scope`."""
        scopes: list[str] = []
        headings: list[int] = []
        for i, unit in enumerate(self.units):
            if i and self.units[i - 1].passage != unit.passage:
                headings = []
            if self._sent[i]:
                scopes.append(self._message_scope(i))
                continue
            around = list(headings)
            header = self._header[i]
            if header is not None:
                around.append(header)
            elif unit.kind != "row" and i and self.units[i - 1].passage == unit.passage:
                around.append(i - 1)
            lead = self._list_leads[i]
            if lead is not None:
                around.append(lead)
            context = "\n".join(self._text(self.units[j]) for j in sorted(set(around)))
            scopes.append(f"{context}\n{self._text(unit)}\n{self._raw_names[unit.passage]}")
            if unit.kind == "heading":
                headings.append(i)
        return scopes

    def _message_scope(self, i: int, *, opening: bool = True) -> str:
        """What message ``i`` can be about: what it, the message before it and (with
        ``opening``) the one that opened its conversation say, and in a conversation of
        two both of them; in a group, the day's first line and the passage's names list
        everyone, whoever the message speaks of."""
        unit = self.units[i]
        writers = self._writers[unit.passage]
        pair = writers if len(writers) == 2 else set()
        talk = {self._opening[i] if opening else None, self._replying[i]} - {i}
        said = [self._text(self.units[j]) for j in sorted(j for j in talk if j is not None)]
        return "\n".join([*sorted(pair), *said, self._text(unit)])

    def _day_line(self, i: int) -> int | None:
        """The first line of message ``i``'s day card, which names the day (None for
        what is no message)."""
        return self._list_leads[i] if self._sent[i] else None

    def _dated_by(self, day: int, i: int, value: str, *, act: bool) -> bool:
        """Whether message ``i`` is dated ``value`` by its day's line ``day``: it and the
        message it answers name no day of their own, nor, unless the sentence speaks of
        the writing itself (``act``: "asked", "suggested"), does the message that opened
        its conversation ("Ride tomorrow (Saturday 2026-03-07)?" dates the ride that
        the messages after it plan, not the day they were written)."""
        talk = {i, self._replying[i]} | (set() if act else {self._opening[i]})
        return self._name_no_day(talk) and _holds(self._norm[day], value)

    def _talks_of(self, i: int, repeated: set[str]) -> bool:
        """Whether message ``i``'s conversation (it, the message it answers, the one
        that opened it) holds what an answer repeats of the question's words: one of
        them at least (a reply answers in its own words: "how much was the bill" is
        answered by "33 each", no "share" nor "paid"; an answer none of whose words of
        the question the talk uses is about something else), and all of them when only
        the opening put the message on the question's subject. What is no message holds
        what it holds."""
        if not self._sent[i] or not repeated:
            return True
        held = repeated & self._topic_words[i]
        return held == repeated if self._leaning[i] else bool(held)

    def _planned_on(self, i: int, value: str) -> bool:
        """Whether message ``i`` speaks of the day ``value`` that the first message of
        its conversation names, it and the message it answers naming no other."""
        opening = self._opening[i]
        if opening is None or opening == i or not _holds(self._norm[opening], value):
            return False
        return self._name_no_day({i, self._replying[i]} - {opening})

    def _name_no_day(self, units: set[int | None]) -> bool:
        """Whether none of ``units`` (None: no unit) names a day of the calendar."""
        return not any(_ISO_DAY.search(self._norm[j]) for j in units if j is not None)

    def _columns(self, i: int) -> list[tuple[str, str]] | None:
        """For a table row whose cells line up with its header's: (column name, cell)
        pairs; None for any other unit."""
        header = self._header[i]
        if header is None:
            return None
        cells = _cells(self._text(self.units[i]))
        names = _cells(self._text(self.units[header]))
        return list(zip(names, cells, strict=True)) if len(cells) == len(names) else None

    def _column_fits(self, i: int, value: str, words: set[str]) -> bool:
        """For a table row: whether ``value`` sits in a column the sentence could mean.

        The sentence speaks of a column when it holds words of that column's header; a
        value stated in words of another column that holds a value of its own kind ("the
        hotel cap is £48" where £48 is the per-diem and the hotel cap £140) does not
        fit. A sentence naming no such column fits any.
        """
        columns = self._columns(i)
        if columns is None:
            return True
        names, cells = [n for n, _ in columns], [c for _, c in columns]
        named = [bool(_content(normalize(n)) & words) for n in names]
        holding = [_holds(normalize(c), value) for c in cells]
        if any(h and n for h, n in zip(holding, named, strict=True)):
            return True
        # another named column holds a figure of its own: the sentence means that one
        numeric = _has_digit(value)
        return not any(
            n and not h and (numeric == _has_digit(c) or _empty(c))
            for c, h, n in zip(cells, holding, named, strict=True)
        )

    def _clause_fits(self, i: int, value: str, spoken: str, owners: set[str]) -> bool:
        """For prose: whether ``value`` sits in a clause of unit ``i`` about the item the
        question names.

        "The test is every Wednesday at 11:00 in Leeds and every Monday at 10:00 in
        Rotterdam" holds 11:00, but for Leeds: when a clause of the unit names the item
        asked about (Rotterdam) and no clause holding the value does, the value is the
        neighbour's. A sentence that names that neighbour with the value ("within 6
        minutes in Rotterdam", asked about Leeds) and not the item answers for the
        neighbour; one whose clause stating the value names no item claims nothing for
        the one asked about and is left to the other checks, as is a unit that never
        names the item in a clause of its own.
        """
        if self.units[i].kind == "row":
            return True
        # an item is named by a word, not a figure or a date ("September" qualifies)
        names = [a for a in self.asked if not _has_digit(a) and a not in _CALENDAR]
        if not names:
            return True
        text = self._norm[i]
        sent = self._sent[i]
        if sent:
            # a message is its writer's throughout ("I finally bought new tyres, 74
            # euros"); by another, its clauses are read as prose
            if any(_mentions(normalize(sent.group(1)), n) for n in names):
                return True
            text = normalize(self._text(self.units[i])[sent.end() :])
        peers = set().union(*(_words_before(text, n) for n in names))
        clauses: list[str] = []
        naming: list[str] = []
        named_before = False
        for sentence in _SENTENCE_END.split(text):
            parts = _CLAUSE_BREAK.split(sentence)
            # ... and not inside an address ("ops@aurora-station.example")
            names_it = [any(_mentions(c, n) for n in names) for c in parts]
            # a sentence after one naming the item goes on about it ("... the flights to
            # Lisbon! TAP from SFO on June 14."), unless it names a peer of its own ("In
            # Rotterdam it is ...")
            if named_before and not names_it[0]:
                words = re.findall(r"[\w'’]+", sentence)
                asked = {w for n in names for w in n.split()}
                names_it[0] = not any(
                    a in peers and b not in asked for a, b in itertools.pairwise(words)
                )
            clauses += parts
            naming += [c for c, n in zip(parts, names_it, strict=True) if n]
            named_before = any(names_it)
        holding = [c for c in clauses if _holds(c, value)]
        if not holding or not naming or any(c in naming for c in holding):
            return True
        # ... unless the sentence does not claim the value for the item either: the
        # clause of the sentence that states it names another ("… 11:00 in Leeds and
        # … 10:00 in Rotterdam")
        stating = [c for c in _SENTENCE_CLAUSE_BREAK.split(spoken) if _holds(c, value)]
        if any(any(_holds(c, n) for n in names) for c in stating):
            return False
        # ... or, never naming the item asked about, claims it for the neighbour the
        # passage gives it to (naming both, it says which value is whose)
        if any(_mentions(spoken, n) for n in names):
            return True
        # ... a neighbour being a peer of the item, written as it is ("in Leeds",
        # "in Rotterdam"), not the value's own detail ("to Lisbon! TAP from SFO")
        return not any(
            _mentions(c, o)
            and any(_mentions(h, o) for h in holding)
            and _words_before(text, o) & peers
            for c in stating
            for o in owners
        )

    def _marked_fits(self, i: int, value: str, kind: str) -> bool:
        """Whether unit ``i`` states the figure ``value`` as ``kind`` (money, percent),
        as the sentence does: marked so itself, in a column named for it (a
        "price_gbp" cell of 249), or, in prose that marks no figure so, beside words
        of that kind ("costs 29")."""
        if value in self._marks[i].get(kind, ()):
            return True
        # a message that speaks of money speaks of it throughout ("131 euros for the
        # four of us, so 33 each")
        if self._sent[i] and self._marks[i].get(kind):
            return True
        if self._header[i] is not None:
            return any(
                _holds(normalize(cell), value) and _COLUMN_MARK[kind].search(name) is not None
                for name, cell in self._columns(i) or ()
            )
        return not self._marks[i].get(kind) and _COLUMN_MARK[kind].search(self._norm[i]) is not None

    def _terms_elsewhere(self, terms: set[frozenset[str]]) -> list[set[frozenset[str]]]:
        """For each unit, the ``terms`` (pairs of stemmed words) that neither word of
        which its scope holds, though another unit of its passage has the pair."""
        if not terms:
            return [set() for _ in self.units]
        pairs = [_pairs(n) & terms for n in self._norm]
        by_passage: dict[int, set[frozenset[str]]] = {}
        for unit, held in zip(self.units, pairs, strict=True):
            by_passage.setdefault(unit.passage, set()).update(held)
        lacks = []
        for i, unit in enumerate(self.units):
            near = self._topic_words[i] | _content(self._scope_norm[i])
            lacks.append({t for t in by_passage[unit.passage] - pairs[i] if not t & near})
        return lacks

    def _weight(self, word: str) -> float:
        return math.log(1 + (len(self.units) + 1) / (self._df.get(word, 0) + 1))

    def _about(self, i: int, *, opening: bool = True) -> bool:
        """Whether unit ``i`` (in its scope) names every value the question names; a
        number the question names may fall in a range the scope states ("12 years" in
        the row of "10+ years", "grade 6" under "Grades 5–7"). A month or weekday the
        question names qualifies the time, it names no item ("before November 2025"
        is answered by "until 31 October 2025"), and a unit that states what holds on
        the other side of the date the question names ("From 1 April 2025 the limit is
        8 days", asked what held before April 2025) is not about it. A message is about
        the date its day's line names ("What did Thane ask on 20260920?")."""
        if opening or i not in self._close_scope:
            wide, wide_raw = self._scope_norm[i], self._scope[i]
        else:
            wide_raw = self._close_scope[i]
            wide = normalize(wide_raw)
        scope, raw = wide, wide_raw
        # the rule "from 1 April 2025" is not the one asked about "before April 2025"
        if self._when and any(
            side != self._when[0] and date == self._when[1] for side, date in _dated(self._norm[i])
        ):
            return False
        sent = self._sent[i]
        # a reply speaks of the figures of the message it answers, unless it gives
        # figures of its own ("the 13th?" "Or Kumo Ramen on the 20th?")
        own = self._text(self.units[i])[sent.end() :] if sent else ""
        figures = (normalize(own), own) if _has_digit(own) else (scope, raw)
        day = self._day_line(i)
        for value in self.asked:
            if value in _CALENDAR:
                continue
            # "on 20260920": a message is on the day its day's line names
            if day is not None and _is_day(value) and _holds(self._norm[day], value):
                continue
            if _has_digit(value):
                scope, raw = figures
            else:
                scope, raw = wide, wide_raw
            beside = self._beside.get(value)
            if beside:
                if not (_near(raw, value, beside) or self._cell_near(i, value, beside)):
                    return False
            elif not (
                _holds(scope, value)
                or _day_of_month(scope, value)
                or _in_range(raw, value)
                or self._introduced(i, value)
            ):
                return False
        return True

    def _introduced(self, i: int, name: str) -> bool:
        """Whether the passage's opening sentence names ``name`` and unit ``i`` names
        nothing the question does not: a document introduces its subject once ("Tern
        Household Works ... repairs its appliances at one service centre") and then
        speaks of it without its name; a unit that names an item of its own speaks of
        that one."""
        lead = self._lead[self.units[i].passage]
        if lead is None or _has_digit(name):
            return False
        text = self._text(self.units[i])
        own = {v for v in values_of(text) if not _has_digit(v) and v not in _CALENDAR}
        # a capitalised first word is a name when neither the passages nor the question
        # write it in lower case ("Heron appliances ...", not "Repairs under warranty")
        first = re.match(r"\W*([A-Z][\w'’-]*)", text)
        if first and first.group(1).casefold() not in self._lowercase | STOPWORDS:
            own.add(normalize(first.group(1)))
        return not (own - self.asked) and _mentions(self._norm[lead], name)

    def _cell_near(self, i: int, value: str, beside: frozenset[str]) -> bool:
        """For a table row: whether a cell holds the number ``value`` (or a range of it)
        under a column whose name, or the cell itself, has a word of ``beside`` (the
        "| 4 |" of a "Grade" column is grade 4)."""
        return any(
            (_holds(normalize(cell), value) or _in_range(cell, value))
            and bool(_stems(f"{name} {cell}") & beside)
            for name, cell in self._columns(i) or ()
        )

    def _relevant(self, i: int) -> bool:
        """Whether unit ``i`` (with its heading, header and passage's names) holds at
        least :data:`QUOTE_RELEVANCE` of what the question asks, by weight: the question's
        content words that some passage uses, other than the names of the item asked
        about. A quote sharing none of it answers another question, however well its
        words match the sentence (a small model copying the wrong paragraph)."""
        if not self._asking_weight:
            return True
        held = sum(self._weight(w) for w in self._asking & self._topic_words[i])
        return held / self._asking_weight >= QUOTE_RELEVANCE

    def stated(self, sentence: str) -> set[str]:
        """The values of ``sentence`` the question does not already name."""
        return {
            v
            for v in values_of(sentence)
            if not _holds(self.question, v) and v not in self._also_asked
        }

    def quote(self, sentence: str) -> list[Quote]:
        """The quotes ``sentence`` rests on (empty when no passage text holds it).

        Each needs :data:`QUOTE_SUPPORT` of the sentence's weighted content words
        (a table row's include its header row's), and a value in a row must sit in a
        column the sentence could mean (:meth:`_column_fits`): one
        unit holding every stated value; or a sentence with the one before it, when the
        later one holds every value (its subject is named before it; taken over the
        unit alone when it holds :data:`PAIR_GAIN` more); else two units of one passage
        that each hold some of the values and together all of them (a sentence joining
        two facts).
        """
        sentence = _LEAD_IN.sub("", strip_markers(sentence))
        # the values the question names are the subject, which _about checks (a number
        # there may be one a row's range holds): they are no words a unit must hold
        spoken = normalize(sentence)
        said = _content(spoken)
        also = {w for v in self._also_asked for w in _content(v)}
        words = said - {w for v in self.asked for w in _content(v)} - also
        if not words:
            return []
        values = self.stated(sentence)
        # a sentence that says nothing the question did not ("Rotterdam, where the fire
        # alarm goes off") answers nothing, whatever passage repeats its words
        if (
            not values
            and said - also <= self._question_words
            and not _negated(spoken, self.question)
        ):
            return []
        # a figure stated as money or a percentage must be one in the quote too ("£36"
        # is not the "36" of a warranty in months)
        # a sentence about the writing of a message ("Tomas asked ...")
        act = _SPEECH_ACT.search(spoken) is not None
        marked = _marked(spoken)
        # names the sentence gives that the question does not (a value's owner)
        owners = {v for v in values if not _has_digit(v) and v not in _CALENDAR}
        # a reply answers in its own words: what a message must hold is what the
        # sentence adds to the question (the day, the question and the message before
        # it having put it on the topic, :meth:`_relevant` and :meth:`_about`)
        added = words - self._question_words

        def share(*units: int) -> float:
            held = set().union(*(self._words[i] for i in units))
            counted = added if added and all(self._sent[i] for i in units) else words
            total = sum(self._weight(w) for w in counted)
            return sum(self._weight(w) for w in counted & held) / total

        def holds(i: int) -> set[str]:
            # a row's names may come from its header or heading ("Leeds" over a column);
            # its figures must be its own
            row = self.units[i].kind == "row"
            day = self._day_line(i)
            return {
                v
                for v in values
                if (
                    _holds(self._norm[i], v)
                    or (row and not _has_digit(v) and _holds(self._scope_norm[i], v))
                    # a message was written on its day: the day's line dates it, unless
                    # it, or the one it answers, names a day of its own ("Ride tomorrow
                    # (Saturday 2026-03-07)?" "Yes!"); what a conversation plans is on
                    # the day its first message names
                    or (day is not None and _is_day(v) and self._dated_by(day, i, v, act=act))
                    or (not act and _is_day(v) and self._planned_on(i, v))
                )
                and self._column_fits(i, v, said)
                and self._clause_fits(i, v, spoken, owners)
                and all(self._marked_fits(i, v, kind) for kind, vs in marked.items() if v in vs)
            }

        # "how much" is answered by an amount ("The electrician charged for fixing the
        # light at Lotte" answers nothing)
        if _AMOUNT_QUESTION.search(self.question) and not _AMOUNT.search(spoken):
            return []
        # a figure for a question that names its measure ("payload") is one of it
        if values and self._measure is not None and not self._measure.search(spoken):
            return []
        # a unit lacking a term of the question the sentence repeats, which its passage
        # gives to another unit, speaks of another thing
        # ... and a message on the subject only by its conversation's opening has
        # every word the sentence repeats of the question's ask in that conversation:
        # "awarded" is nowhere in a talk of the Harbor proposal and "45,000 euros"
        # ("proposes", "suggested": how it was written, which a message never says)
        repeated = {w for w in words & self._question_words if not _SPEECH_ACT.match(w)}
        about = [
            on
            and not {t for t in lacks if t <= said}
            and self._talks_of(i, repeated)
            and self._theirs[i]
            and self._premised[self.units[i].passage]
            for i, (on, lacks) in enumerate(zip(self._on_topic, self._lacks, strict=True))
        ]
        # "who ...?" of a chat: the sentence names the person
        if self._asks_person and not owners:
            return []
        full = [i for i in range(len(self.units)) if about[i] and holds(i) == values]
        single = max(full, key=share, default=None)
        follows = [
            i
            for i in full
            if i
            and not self.units[i].structured
            and self.units[i - 1].passage == self.units[i].passage
        ]
        pair = max(follows, key=lambda i: share(i - 1, i), default=None)
        one = share(single) if single is not None else 0.0
        two = share(pair - 1, pair) if pair is not None else 0.0
        # one unit when it suffices, unless the sentence before it adds the subject
        if pair is not None and two >= QUOTE_SUPPORT and two > one + PAIR_GAIN:
            return [self._quote(pair - 1, pair)]
        if single is not None and one >= QUOTE_SUPPORT:
            return [self._quote(single, single)]
        if len(values) < 2:
            return []
        # two rows of a table are two records: a sentence may not join their values
        partial = [
            i
            for i in range(len(self.units))
            if about[i] and holds(i) and self.units[i].kind != "row"
        ]
        joined = [
            (a, b)
            for n, a in enumerate(partial)
            for b in partial[n + 1 :]
            if self.units[a].passage == self.units[b].passage
            and holds(a) | holds(b) == values
            and not holds(a) <= holds(b)
            and not holds(b) <= holds(a)
        ]
        both = max(joined, key=lambda ab: share(*ab), default=None)
        if both is not None and share(*both) >= QUOTE_SUPPORT:
            return [self._quote(both[0], both[0]), self._quote(both[1], both[1])]
        return []

    def trimmed(self, sentence: str) -> tuple[str, list[Quote]] | None:
        """``sentence`` without the detail no passage holds, with its quotes: the
        longest head of it, cut where a phrase or clause begins (:data:`_PHRASE_BREAK`),
        that leaves out every value no unit on the question's subject holds, if that
        head has a quote (and keeps at least :data:`TRIMMED_WORDS` words); else None.

        A small model that reads the answer right often adds a value of its own ("4 AM
        on Wednesday, May 27" where the message gives no day): what it wrote before that
        detail is what the passage says, and :meth:`quote` checks the head as any
        sentence (a head that says nothing the question did not answers nothing). Only
        the one head is tried: a sentence whose every value is held, or whose head has
        no quote, is dropped whole.
        """
        body = sentence.rstrip().rstrip(".!?:;,")
        held = [self._norm[i] for i in range(len(self.units)) if self._on_topic[i]]
        unheld = {v for v in self.stated(body) if not any(_holds(text, v) for text in held)}
        if not unheld:
            return None
        for cut in reversed(list(_PHRASE_BREAK.finditer(body))):
            head = body[: cut.start()].rstrip(" ,;:")
            if len(head.split()) < TRIMMED_WORDS:
                return None
            if not values_of(head) & unheld:
                quotes = self.quote(head)
                return (head, quotes) if quotes else None
        return None

    def extract(self) -> tuple[Quote, str] | None:
        """The unit closest to answering the question by itself, and its text as an
        answer shows it (a table row as "column: value" pairs), if one is close enough:
        what an abstention offers when no sentence of the model's found a quote.

        A unit qualifies when it names every value the question names (:meth:`_about`)
        and its words, with its table header's, heading's and passage's names, hold at
        least :data:`EXTRACT_COVERAGE` of the weight of the question's content words
        that the passages use at all (a word no passage has is the asker's own, and
        weighs nothing either way), and :data:`QUOTE_RELEVANCE` of what it asks beyond
        the item's names. A heading or a header row answers nothing. Of
        those, the best covered wins (for a question after a figure, "how much", "what
        time", the best covered that states one the question does not; after a
        duration, "how long", one that states a duration); ties go to the better-ranked
        passage.
        """
        if not self._asking:  # the passages use no word of the question but names
            return None
        total = sum(self._weight(w) for w in self._used)
        headers = set(self._header) - {None}
        best: tuple[tuple[bool, float], int] | None = None
        # a question after a figure is answered by a unit that states one
        figure = self._figure
        for i, unit in enumerate(self.units):
            if unit.kind == "heading" or i in headers or not self._on_topic[i]:
                continue
            held = sum(self._weight(w) for w in self._used & self._topic_words[i]) / total
            if held < EXTRACT_COVERAGE:
                continue
            rank = (not figure or bool(figure(self._norm[i]) - self._asked_figures), held)
            if best is None or rank > best[0]:
                best = (rank, i)
        if best is None:
            return None
        i = best[1]
        header = self._header[i]
        shown = (
            _labelled(self.units, header, i, self.passages)
            if header is not None
            else self._text(self.units[i])
        )
        # shown without its list marker ("3. Firmware 4.2 ...": the number is the
        # list's, and a reader takes "3." for the end of a sentence)
        return self._quote(i, i), _LIST_MARKER.sub("", " ".join(shown.split()))

    def _quote(self, first: int, last: int) -> Quote:
        passage = self.units[first].passage
        start, end = self.units[first].start, self.units[last].end
        return Quote(passage + 1, self.passages[passage][start:end], start, end)


def quoted_texts(quotes: Sequence[Quote], source: int) -> list[str]:
    """What an answer quotes of passage ``source``, each quote once, on one line."""
    return list(dict.fromkeys(" ".join(q.text.split()) for q in quotes if q.source == source))


def coverage_abstention(topics: Sequence[tuple[str, str]], abstention: str) -> str:
    """The abstention that names what the passages do cover: ``topics`` are (what,
    which part) per passage, best first, such as a file and its section; the parts of
    one file are named once under it ("policy.md (Mileage; Daily allowances)"), so a
    file found three times is not listed three times."""
    parts: dict[str, list[str]] = {}
    for subject, part in topics:
        if subject:
            seen = parts.setdefault(subject, [])
            if part and part not in seen:
                seen.append(part)
    if not parts:
        return abstention
    named = [f"{s} ({'; '.join(p)})" if p else s for s, p in list(parts.items())[:3]]
    return f"{abstention} The passages found cover {_enumerate(named)}."


def _enumerate(items: Sequence[str]) -> str:
    if len(items) == 1:
        return items[0]
    return ", ".join(items[:-1]) + " and " + items[-1]


class QuotedAnswerStream:
    """Quote-checked sentences of a streamed answer (see the module doc).

    Feed the model's deltas to :meth:`feed`; it returns the text of the sentences that
    were checked since (each ending with its ``[n]``), and :meth:`finish` the rest,
    or the whole abstention when no sentence was kept. :attr:`text` is the answer as
    shown, :attr:`quotes` the quotes of its sentences in order (one or two a sentence),
    :attr:`dropped` the sentences that had none.
    """

    def __init__(
        self,
        question: str,
        passages: Sequence[str],
        topics: Sequence[tuple[str, str]],
        abstention: str,
        names: Sequence[str] = (),
    ) -> None:
        """Check against ``passages`` (``[1]`` first); ``topics`` name what each covers
        for an abstention (:func:`coverage_abstention`), ``names`` what each is about
        for the check."""
        self.checker = QuoteChecker(question, passages, names)
        self.topics = tuple(topics)
        self.abstention = abstention
        self.raw = ""
        self.text = ""
        self.quotes: list[Quote] = []
        self.dropped: list[str] = []
        self.sentences = 0
        self._dropped_in_a_row = 0
        self.abstained = False
        self.extracted = False
        self._settled = 0

    @property
    def gave_up(self) -> bool:
        """Whether :data:`GIVE_UP_AFTER` sentences in a row had no quote: the caller
        should stop generating and :meth:`finish`."""
        return self._dropped_in_a_row >= GIVE_UP_AFTER

    def feed(self, delta: str) -> str:
        """Add a delta of the model's answer; the checked text that can be shown now."""
        self.raw += delta
        return self._settle(final=False)

    def finish(self) -> str:
        """End of the answer: the last sentence, or the abstention if nothing was kept:
        with the passage closest to answering the question when one is close enough
        (:meth:`QuoteChecker.extract`), else naming what the passages cover."""
        shown = self._settle(final=True)
        if self.sentences:
            return shown
        extract = self.checker.extract()
        if extract is None:
            self.text = coverage_abstention(self.topics, self.abstention)
            return self.text
        quote, text = extract
        self.extracted = True
        self.quotes = [quote]
        self.text = f"{EXTRACT_LEAD} The passage closest to the question [{quote.source}]: “{text}”"
        return self.text

    def _settle(self, *, final: bool) -> str:
        shown = ""
        while True:
            end = sentence_end(self.raw, self._settled, final=final)
            if end is None:
                return shown
            segment = self.raw[self._settled : end]
            self._settled = end
            shown += self._check(segment)
            if end == len(self.raw):
                return shown

    def _check(self, segment: str) -> str:
        body = strip_markers(segment).strip()
        if not body or body.startswith("```"):
            return ""
        if is_abstention(body):
            self.abstained = True
            return ""
        quotes = self.checker.quote(body)
        if not quotes:
            head = self.checker.trimmed(body)
            if head is None:
                self.dropped.append(body)
                self._dropped_in_a_row += 1
                return ""
            self.dropped.append(body[len(head[0]) :].strip())
            body, quotes = head
        self._dropped_in_a_row = 0
        stripped = body.rstrip(".!?:;,")
        punct = body[len(stripped) :] or "."
        marks = " ".join(f"[{n}]" for n in dict.fromkeys(q.source for q in quotes))
        sentence = f"{stripped} {marks}{punct}"
        piece = sentence if not self.text else " " + sentence
        self.text += piece
        self.quotes.extend(quotes)
        self.sentences += 1
        return piece


class ShareIndex:
    """Texts as their content words, to weigh a question against: a word of the
    question weighs the more, the fewer of the texts hold it (inverse document
    frequency over the texts)."""

    def __init__(self, texts: Sequence[str]) -> None:
        self._words = [_content(normalize(text)) for text in texts]
        df: dict[str, int] = {}
        for held in self._words:
            for w in held:
                df[w] = df.get(w, 0) + 1
        self._df = df

    def shares(self, question: str) -> list[float]:
        """For each text, the weighted share of ``question``'s content words it holds."""
        asked = _content(normalize(question))
        n = len(self._words)
        weights = {w: math.log(1 + (n + 1) / (self._df.get(w, 0) + 1)) for w in asked}
        total = sum(weights.values()) or 1.0
        return [sum(weights[w] for w in asked & held) / total for held in self._words]


def question_shares(question: str, texts: Sequence[str]) -> list[float]:
    """For each of ``texts``, the weighted share of the question's content words it
    holds (:class:`ShareIndex`)."""
    return ShareIndex(texts).shares(question)


def select_context(
    question: str, passages: Sequence[str], *, max_tokens: int, conversation: bool = False
) -> list[str]:
    """Each passage cut down to the units that matter for ``question`` (same numbering).

    Units are ranked by the weighted share of the question's content words they hold
    (rare words weigh more; ties go to the better-ranked passage), or :data:`INHERITED`
    of their section heading's or table header's share when that is more; the best are
    taken,
    each with :data:`NEIGHBOURS` units either side and, for a table row, the table's
    header row, until ``max_tokens`` (estimated at four characters a token) is spent.
    Every passage keeps at least its best unit. A gap in a passage is marked ``...``.

    With ``conversation`` (message-graph day cards: a first line naming the
    conversation and the day, then one unit per message), every passage keeps its
    first line, and the best messages take the messages around them (the one they
    answer, the reply) before the other passages get their best message: in a chat the
    answer is the line after the question, and a best line of every day alone spends
    the budget on days that do not answer.
    """
    units = [u for n, p in enumerate(passages) for u in passage_units(p, n)]
    if not units:
        return list(passages)
    own = question_shares(question, [passages[u.passage][u.start : u.end] for u in units])
    # a row shares few words with a question about it ("seven years" is the "5-9 years"
    # row): rows and the text under a heading also count for what their table's header
    # or their section's heading matches, a little less than a match of their own
    scores = [
        max([own[i]] + [INHERITED * own[j] for j in _owners(units, i)]) for i in range(len(units))
    ]
    order = sorted(range(len(units)), key=lambda i: (-scores[i], units[i].passage, i))
    chosen: set[int] = set()
    budget = max_tokens * 4
    spent = 0

    def take(i: int) -> None:
        nonlocal spent
        if i in chosen:
            return
        chosen.add(i)
        spent += units[i].end - units[i].start + 1

    def with_neighbours(i: int) -> None:
        take(i)
        for j in range(i - NEIGHBOURS, i + NEIGHBOURS + 1):
            if 0 <= j < len(units) and units[j].passage == units[i].passage:
                take(j)
        header = _table_header(units, i)
        if header is not None:
            take(header)

    best_of_passage: dict[int, int] = {}
    for i in order:
        best_of_passage.setdefault(units[i].passage, i)
    best = sorted(best_of_passage.values(), key=lambda i: units[i].passage)
    if conversation:  # the first lines now, each day's best message after the others
        for i, unit in enumerate(units):
            if i == 0 or units[i - 1].passage != unit.passage:
                take(i)
    else:
        for i in best:
            take(i)
    for i in order:
        if spent >= budget or scores[i] <= 0:
            break
        with_neighbours(i)
    for i in best:
        take(i)
    out: list[str] = []
    for n, text in enumerate(passages):
        kept = [i for i in sorted(chosen) if units[i].passage == n]
        pieces: list[tuple[str, bool]] = []
        previous: int | None = None
        for i in kept:
            if (previous is not None and i != previous + 1) or (
                previous is None and i > 0 and units[i - 1].passage == n
            ):
                pieces.append(("...", False))
            unit = units[i]
            pieces.append((text[unit.start : unit.end], unit.structured))
            previous = i
        if kept and kept[-1] + 1 < len(units) and units[kept[-1] + 1].passage == n:
            pieces.append(("...", False))
        out.append(_join(pieces) if pieces else text)
    return out


def _labelled(units: Sequence[Unit], header: int, row: int, passages: Sequence[str]) -> str:
    """Table row ``row`` as "name: value" pairs of its header's columns (empty cells
    left out), as small models read a row far better than a bare line of cells; the
    row as written when its cells do not line up with the header's."""

    def text(i: int) -> str:
        return passages[units[i].passage][units[i].start : units[i].end]

    names, cells = _cells(text(header)), _cells(text(row))
    if len(names) != len(cells):
        return text(row)
    return "; ".join(
        f"{name}: {cell}" if name else cell
        for name, cell in zip(names, cells, strict=True)
        if not _empty(cell)
    )


def _join(pieces: Sequence[tuple[str, bool]]) -> str:
    """Kept units as text: a structured unit (row, item, heading) on a line of its own."""
    out = ""
    after_line = False
    for piece, structured in pieces:
        if out:
            out += "\n" if structured or after_line else " "
        out += piece
        after_line = structured
    return out


# where one clause of a sentence ends and the next, about another item, begins
_CLAUSE_BREAK = re.compile(r";|,\s|\s(?:and|while|whereas|but)\s")
# where a sentence of a unit ends (a wrapped list item may hold several)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
# ... in an answer sentence, where a comma more often sets off a detail of one clause
_SENTENCE_CLAUSE_BREAK = re.compile(r"[;!?]|\.\s|\s(?:and|while|whereas|but)\s")
_NUMBER_TEXT = r"(?<![\d:.,])(\d+(?:\.\d+)?)(?![\d:])"
# "5–7", "5-7", "5 to 7"; "10+", "10 or more"
_BOUNDED = re.compile(_NUMBER_TEXT + r"\s*(?:[–—-]|to)\s*" + _NUMBER_TEXT)
_OPEN_ENDED = re.compile(_NUMBER_TEXT + r"\s*(?:\+|or more\b|and (?:over|above)\b)")


def _words_before(normalized_text: str, name: str) -> set[str]:
    """The words just before each mention of ``name`` (:func:`_mentions`)."""
    pattern = r"([\w'’]+)\W+" + r"(?<![\w.@/])" + re.escape(name) + r"(?![\w@])"
    return {m.group(1) for m in re.finditer(pattern, normalized_text)}


def message_minute(line: str) -> int | None:
    """The minute of its day a message line (``[HH:MM] ...``) was written, or None."""
    clock = _CLOCK.match(line)
    return None if clock is None else int(clock[1]) * 60 + int(clock[2])


def _minutes_between(earlier: str, later: str) -> int:
    """Minutes from the message line ``earlier`` to ``later`` (0 unless both are)."""
    first, then = message_minute(earlier), message_minute(later)
    return 0 if first is None or then is None else then - first


def _day_of_month(normalized_text: str, value: str) -> bool:
    """Whether a day of a month the question names ("March 13", "the 13th") is in the
    text the other way ("the 13th", "March 13"): a chat writes "next Friday, the 13th"."""
    found = re.fullmatch(r"([1-9]|[12]\d|3[01])(st|nd|rd|th)?", value)
    if found is None:
        return False
    day = found.group(1)
    other = day if found.group(2) else rf"{day}(?:st|nd|rd|th)"
    return re.search(rf"(?<![\w.]){other}(?![\w])", normalized_text) is not None


def _mentions(normalized_text: str, name: str) -> bool:
    """Whether ``name`` occurs in ``normalized_text`` as a word of its own, not inside an
    address or path."""
    pattern = r"(?<![\w.@/])" + re.escape(name) + r"(?![\w@])"
    return re.search(pattern, normalized_text) is not None


_ISO_DAY = re.compile(r"\d{4}[- ]\d{2}[- ]\d{2}")  # normalised: "2026 03 21"


def _is_day(value: str) -> bool:
    """Whether ``value`` names a day: a weekday, a month or an ISO date."""
    return value in _CALENDAR or bool(_ISO_DAY.fullmatch(value))


def _has_digit(text: str) -> bool:
    return any(c.isdigit() for c in text)


def _in_range(text: str, value: str) -> bool:
    """Whether the number ``value`` falls in a range ``text`` states."""
    try:
        number = float(value)
    except ValueError:
        return False
    for match in _BOUNDED.finditer(text):
        low, high = float(match.group(1)), float(match.group(2))
        if low < high and low <= number <= high:
            return True
    return any(float(m.group(1)) <= number for m in _OPEN_ENDED.finditer(text))


def _empty(cell: str) -> bool:
    """Whether a table cell states nothing ("", "-", "—", "n/a")."""
    return normalize(cell).strip(" -–—/") in ("", "n a", "na", "none")


def _cells(row: str) -> list[str]:
    """The cells of a table row: a Markdown pipe row, or a simple table's row (columns
    apart by two or more spaces)."""
    row = row.strip()
    if row.startswith("|"):
        return [c.strip() for c in row.strip("|").split("|")]
    return [c.strip() for c in re.split(r"\s{2,}", row)]


def _owners(units: Sequence[Unit], i: int) -> list[int]:
    """The units that say what unit ``i`` is about: its section's heading and, for a
    table row, its table's header row."""
    owners = []
    header = _table_header(units, i)
    if header is not None:
        owners.append(header)
    j = i - 1
    while j >= 0 and units[j].passage == units[i].passage:
        if units[j].kind == "heading":
            owners.append(j)
            break
        j -= 1
    return owners


def _table_header(units: Sequence[Unit], i: int) -> int | None:
    """The header row of the table unit ``i`` is a row of, if it is one."""
    unit = units[i]
    if unit.kind != "row":
        return None
    j = i
    while j > 0 and units[j - 1].passage == unit.passage and units[j - 1].kind == "row":
        j -= 1
    return j if j != i else None


#: Number words up to twenty, as figures.
NUMBER_WORDS = {
    word: str(n)
    for n, word in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen "
        "fourteen fifteen sixteen seventeen eighteen nineteen twenty".split()
    )
}
_AMOUNT_QUESTION = re.compile(r"\bhow (?:much|many)\b")
#: What states an amount: a figure, a number word (every one up to twenty, the tens,
#: the large ones), a fraction or a multiple, or a word for none, all or some.
_AMOUNT = re.compile(
    r"\d|\b(?:"
    + "|".join(NUMBER_WORDS)
    + r"|thirty|forty|fifty|sixty|seventy|eighty|ninety|hundred|thousand|million|billion"
    r"|half|quarter|dozen|single|double|twice|free|nothing|none|no|nobody|all|both"
    r"|several|few)\b"
)
# a whole number in running text: not part of a code, a date or a fraction ("LR-7",
# "2026/27", "4.2" inside "v4.2.1")
_PLAIN_NUMBER = re.compile(r"(?<![\w./:-])(\d+(?:\.\d+)?)(?![\w/:]|\.\d|-\w)")
_WORD_BEFORE = re.compile(r"([A-Za-z][A-Za-z'’]*)[\s|*:(]*$")
_WORD_AFTER = re.compile(r"^[\s|*:)+]*([A-Za-z][A-Za-z'’]*)")


def _spelled_numbers(normalized_question: str) -> list[str]:
    """The numbers a question spells out ("seven years"), as figures; not "one", which
    more often stands for a thing ("a new one"), nor how many things it asks for
    ("Which two pastries ...", "Name three ...")."""
    words = re.findall(r"[a-z]+", normalized_question)
    return [
        NUMBER_WORDS[w]
        for before, w in zip(["", *words], words, strict=False)
        if w in NUMBER_WORDS
        and w not in ("zero", "one")
        and before not in ("which", "what", "name", "list", "the")
    ]


def _stems(text: str) -> set[str]:
    return _content(normalize(text))


def _number_neighbours(question: str) -> dict[str, frozenset[str]]:
    """For each number the question names, the content words right before and after it
    ("grade" for "grade 6", "year" for "12 years of service"); none when both are
    function words, nor for a year or a day of a month (such a number is matched
    anywhere, as any value)."""
    out: dict[str, set[str]] = {}
    words = [(m.start(), m.end(), m.group()) for m in re.finditer(r"[\w'’.-]+", question)]
    for n, (_, _, word) in enumerate(words):
        raw = word.rstrip(".")
        spelled = raw.casefold()
        figure = (NUMBER_WORDS.get(spelled) if spelled not in ("zero", "one") else None) or (
            raw if _PLAIN_NUMBER.fullmatch(raw) else None
        )
        if figure is None:
            continue
        around = [words[k][2] for k in (n - 1, n + 1) if 0 <= k < len(words)]
        stems = set().union(*(_stems(w) for w in around)) if around else set()
        # a date qualifies the time ("before November 2025"), as a month does alone
        if stems & _CALENDAR or re.fullmatch(r"(?:19|20)\d\d", figure):
            continue
        out.setdefault(figure, set()).update(stems)
    return {k: frozenset(v) for k, v in out.items() if v}


def _near(raw_scope: str, value: str, beside: frozenset[str]) -> bool:
    """Whether ``raw_scope`` states the number ``value`` (spelled out, as a figure, or in
    a range) right next to a word of ``beside``."""
    try:
        number = float(value)
    except ValueError:
        return False
    spans = [m.span() for m in _PLAIN_NUMBER.finditer(raw_scope) if float(m.group(1)) == number]
    spans += [
        m.span()
        for m in _BOUNDED.finditer(raw_scope)
        if float(m.group(1)) < float(m.group(2))
        and float(m.group(1)) <= number <= float(m.group(2))
    ]
    spans += [m.span() for m in _OPEN_ENDED.finditer(raw_scope) if float(m.group(1)) <= number]
    for word, figure in NUMBER_WORDS.items():
        if figure == value:
            spans += [m.span() for m in re.finditer(rf"\b{word}\b", raw_scope, re.I)]
    for start, end in spans:
        before = _WORD_BEFORE.search(raw_scope[max(0, start - 40) : start])
        after = _WORD_AFTER.search(raw_scope[end : end + 40])
        near = {w for m in (before, after) if m for w in _stems(m.group(1))}
        if near & beside:
            return True
    return False


# an amount of money or a percentage, with the figure it marks ("£36" is no "36 months")
_CURRENCY = r"(?:[€$£¥]|\b(?:eur|euros?|gbp|usd|chf|sek|nok|dkk|pounds?|dollars?|pence|cents?)\b)"
_MARKED = {
    "money": re.compile(rf"{_CURRENCY}\s?(\d[\d.]*)|(\d[\d.]*)\s?(?:{_CURRENCY}|p\b)"),
    "percent": re.compile(r"(\d[\d.]*)\s?(?:%|percent\b|per cent\b)"),
}
# what a table column of amounts or percentages is called
_COLUMN_MARK = {
    "money": re.compile(
        rf"{_CURRENCY}|\b(?:price|cost|fee|charge|amount|budget|allowance|salary|pay|cap)",
        re.I,
    ),
    "percent": re.compile(r"%|\b(?:percent|pct|rate)", re.I),
}


def _marked(normalized_text: str) -> dict[str, set[str]]:
    """The figures ``normalized_text`` marks as money or as a percentage, by kind."""
    out: dict[str, set[str]] = {}
    for kind, pattern in _MARKED.items():
        for match in pattern.finditer(normalized_text):
            figure = next(g for g in match.groups() if g).rstrip(".")
            out.setdefault(kind, set()).add(figure)
    return out


_NEGATION = re.compile(
    r"\b(?:not|no|never|none|nothing|cannot|can't|isn't|aren't|doesn't|don't|won't)\b"
)


def _negated(normalized_sentence: str, normalized_question: str) -> bool:
    """Whether the sentence denies something the question did not ("it is not ...")."""
    said = set(_NEGATION.findall(normalized_sentence))
    return bool(said - set(_NEGATION.findall(normalized_question)))


# a question whose answer is a figure: an amount, a duration, a count, a time or a day
_FIGURE_QUESTION = re.compile(
    r"\bhow (?:much|many|long|often|far|soon|quickly|fast|big|large|old|heavy|late|early)\b"
    r"|\b(?:what|which) (?:time|day|date|year|month|hours?|percentage|rate)\b|\bwhen\b"
)
_FIGURE_WORDS = (
    frozenset(NUMBER_WORDS)
    | _CALENDAR
    | frozenset(
        "first second third fourth fifth last half once twice daily weekly monthly yearly "
        "annually quarterly hourly nightly noon midnight".split()
    )
)


def _figures(normalized_text: str) -> set[str]:
    """The figures a text states: numbers, number and ordinal words, days and months,
    frequencies ("weekly")."""
    return {
        w
        for w in re.findall(r"[a-z0-9]+(?:[.:][0-9]+)*", normalized_text)
        if w in _FIGURE_WORDS or _has_digit(w)
    }


_MONTH = (
    r"(?:january|february|march|april|may|june|july|august|september|october|november|"
    r"december)"
)
# "before the April 2025 change", "until 31 October 2025", "from 1 November 2025"
_DATED = re.compile(
    r"\b(before|until|till|prior to|up to|after|since|from|as of|starting|effective)"
    rf"\s+(?:the\s+)?(?:\d{{1,2}}(?:st|nd|rd|th)?\s+)?({_MONTH}\s+)?((?:19|20)\d\d)\b"
)
_BEFORE = frozenset({"before", "until", "till", "prior to", "up to"})


def _dated(normalized_text: str) -> list[tuple[str, str]]:
    """Which side of which date a text speaks of: ("before" or "after", "april 2025")
    for each date it qualifies with a preposition."""
    return [
        (
            "before" if m.group(1) in _BEFORE else "after",
            f"{(m.group(2) or '').strip()} {m.group(3)}".strip(),
        )
        for m in _DATED.finditer(normalized_text)
    ]


_DURATION_QUESTION = re.compile(r"\bhow (?:long|soon|quickly|fast)\b")
_DURATION = re.compile(
    r"\b(?:\d+(?:\.\d+)?|"
    + "|".join(NUMBER_WORDS)
    + r"|a|an|half an?)(?:\s*(?:to|-)\s*\d+)?\s+(?:working |business |calendar )?"
    r"(?:seconds?|minutes?|mins?|hours?|hrs?|days?|weeks?|months?|years?)\b"
)


def _durations(normalized_text: str) -> set[str]:
    """The durations a text states ("10 working days", "six weeks")."""
    return {" ".join(m.group().split()) for m in _DURATION.finditer(normalized_text)}


def _pairs(normalized_text: str) -> set[frozenset[str]]:
    """The pairs of content words a text writes side by side, stemmed ("diesel
    generator"; "power of the" is none)."""
    stems = [_content(t) for t in normalized_text.split()]
    return {
        frozenset(a | b)
        for a, b in itertools.pairwise(stems)
        if len(a) == 1 and len(b) == 1 and a != b
    }


_MEASURE_NUMBER = r"(?:\d[\d.,]*|" + "|".join(NUMBER_WORDS) + r")\s*"
#: (what a question asking for a measure says, a figure in that measure's units)
_MEASURES = (
    (
        re.compile(r"\b(?:weigh\w*|heav(?:y|ier|iest)|payload|mass)\b"),
        re.compile(
            _MEASURE_NUMBER + r"(?:kg|g|grams?|kilograms?|kilos?|tonnes?|tons?|lbs?|oz|ounces?)\b"
        ),
    ),
    (
        # "power" as a measure, not the power of a "power outage", "power bank", ...
        re.compile(
            r"\bwattage\b|\bpower\b(?!\s+(?:outages?|cuts?|failures?|banks?|suppl(?:y|ies)|"
            r"strips?|plugs?|sockets?|cords?|cables?|lines?|grids?|stations?|plants?|tools?|"
            r"naps?|buttons?|users?|couples?)\b)"
        ),
        re.compile(
            _MEASURE_NUMBER + r"(?:w|kw|mw|gw|watts?|kilowatts?|megawatts?|hp|horsepower)\b"
        ),
    ),
)
