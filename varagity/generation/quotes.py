"""Quote-checked answers: every answer sentence rests on a verbatim quote of a passage.

A small model that is shown the right passage still states the figure of the
neighbouring row, or fills a gap with a value from elsewhere. Word overlap cannot tell
those apart from a right answer, but a string match can tell whether the *values* a
sentence states are in the text it rests on. So an answer is released sentence by
sentence, each one checked first (:class:`QuotedAnswerStream`):

* **Units.** Each passage is cut into units (:func:`passage_units`): prose into
  sentences (hard-wrapped lines joined), while a table row, a list item or a heading is
  a unit of its own. A *quote* is one unit, or two adjacent units of one passage (a
  sentence whose subject is named in the one before).
* **Values** (:func:`values_of`): what a sentence states that can be wrong in a way
  word overlap misses: every token holding a digit (``27``, ``02:00``, ``E4``,
  ``LR-7``, ``38,000``) and every capitalised word that does not start the sentence
  (names, months, places). A value the question itself names is the subject, not a
  claim, and is not counted.
* **The check** (:meth:`QuoteChecker.quote`): a quote qualifies when its normalised
  text holds every value of the sentence as a whole word (normalisation:
  :func:`~varagity.generation.grounding.normalize`) and the values the *question*
  names (the item asked about) appear in the quote's passage or in what names it (its
  file, headings, thread); of those, the one holding
  the largest weighted share of the sentence's content words wins, if that share is at
  least :data:`QUOTE_SUPPORT`. No model is asked: the check is a string match.
* A sentence without a quote is **dropped**. An answer left with no checked sentence
  becomes an abstention that names what the passages do cover
  (:func:`coverage_abstention`); the model's own abstention gets the same form.

Each kept sentence cites the passage of its quote as ``[n]``, and the quotes travel
with the answer (:attr:`QuotedAnswerStream.quotes`) to the evidence cards, the page
previews, the OpenAI-compatible route and the CLI.

The context the model is shown can be compressed the same way
(:func:`select_context`): the units that share the most rare words with the question,
with their neighbours and the header row of their table, instead of whole chunks; the
prompt is then a fraction of the size, and time to first token with it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from varagity.generation.grounding import (
    content_words,
    is_abstention,
    normalize,
    sentence_end,
    strip_markers,
)
from varagity.records import Quote

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
#: Units of context kept before and after each selected unit of a passage.
NEIGHBOURS = 1

# a list item, a numbered step, a heading, a table row, or a transcript line
# ("[09:14] Maya: ...", as the message graph renders a day)
_STRUCTURED_LINE = re.compile(r"^\s*(?:[-*+•]\s|\d{1,3}[.)]\s|#{1,6}\s|\||\[\d{1,2}:\d{2}\])")
_TABLE_RULE = re.compile(r"^[\s|:]*-[\s|:-]*$")  # |---|:--:| and | - | - |
# a sentence ends at . ! ? (and closing quotes/brackets) before whitespace
_SENTENCE_BREAK = re.compile(r"[.!?][\"')\]]*\s+")
_ABBREVIATION = re.compile(
    r"(?:\b(?:e\.g|i\.e|etc|vs|approx|incl|no|nos|fig|figs|dr|mr|mrs|ms|st|jr|sr|ext|tel)"
    r"|(?<![\w.])[A-Z])\.[\"')\]]*\s+$",
    re.I,
)
_DIGIT_TOKEN = re.compile(r"[A-Za-z0-9€$£¥%][\w.,:/€$£¥%+-]*")
_NAME = re.compile(r"\b[A-Z][\w'’-]*[A-Za-z0-9]|\b[A-Z]\b")
# capitalised words that are no claim of their own
# a lead-in that only says where the answer comes from ("According to the sources, ...")
_LEAD_IN = re.compile(
    r"^\W*(?:according to|based on|as (?:stated|shown) in|from)\s+(?:the\s+)?"
    r"(?:information|sources?|passages?|documents?|text|table|context|data)"
    r"(?:\s+(?:provided|given|above|shown))?(?:\s+in\s+the\s+\w+)?\s*,\s*",
    re.I,
)
_POSSESSIVE = re.compile(r"['’]s$")
_PLAIN_CAPITALS = frozenset({"i", "a", "the", "yes", "no", "ok"})


@dataclass(frozen=True, slots=True)
class Unit:
    """A sentence, table row, list item or heading of a passage: ``text[start:end]``."""

    passage: int  # 0-based
    start: int
    end: int
    structured: bool


def passage_units(text: str, passage: int = 0) -> list[Unit]:
    """The units of ``text`` in order (see the module doc); offsets index ``text``."""
    units: list[Unit] = []
    prose_start: int | None = None
    prose_end = 0
    offset = 0

    def flush() -> None:
        nonlocal prose_start
        if prose_start is not None:
            units.extend(_sentences(text, prose_start, prose_end, passage))
        prose_start = None

    for line in text.splitlines(keepends=True):
        body = line.rstrip("\r\n")
        start, end = offset, offset + len(body)
        offset += len(line)
        if not body.strip() or _TABLE_RULE.match(body):
            flush()
            continue
        if _STRUCTURED_LINE.match(body):
            flush()
            lead = len(body) - len(body.lstrip())
            units.append(Unit(passage, start + lead, end, True))
            continue
        if prose_start is None:
            prose_start = start + len(body) - len(body.lstrip())
        prose_end = end
    flush()
    return units


def _sentences(text: str, start: int, end: int, passage: int) -> list[Unit]:
    out: list[Unit] = []
    begin = start
    for match in _SENTENCE_BREAK.finditer(text, start, end):
        if _ABBREVIATION.search(text, max(start, match.start() - 8), match.end()):
            continue
        out.append(Unit(passage, begin, match.end() - len(match.group()) + 1, False))
        begin = match.end()
    if begin < end:
        out.append(Unit(passage, begin, end, False))
    # a closing quote or bracket after the full stop belongs to the sentence
    return [_trim(text, u) for u in out if text[u.start : u.end].strip()]


def _trim(text: str, unit: Unit) -> Unit:
    end = unit.end
    while end < len(text) and text[end] in "\"')]":
        end += 1
    return Unit(unit.passage, unit.start, end, unit.structured)


def values_of(sentence: str) -> set[str]:
    """The values ``sentence`` states, normalised (see the module doc)."""
    text = strip_markers(sentence).strip()
    found: set[str] = set()
    for token in _DIGIT_TOKEN.findall(text):
        token = token.strip(".,:;/+-€$£¥%")
        if any(c.isdigit() for c in token):
            found.add(normalize(token))
    first = re.match(r"\W*[\w'’-]+", text)
    skip = first.end() if first else 0
    for match in _NAME.finditer(text):
        if match.start() < skip:
            continue
        word = normalize(_POSSESSIVE.sub("", match.group()))
        if word not in _PLAIN_CAPITALS and not any(c.isdigit() for c in word):
            found.add(word)
    return {v for v in found if v}


def _holds(normalized_text: str, value: str) -> bool:
    """Whether ``value`` occurs in ``normalized_text`` as whole words."""
    pattern = r"(?<![\w.])" + re.escape(value) + r"(?![\w])"
    return re.search(pattern, normalized_text) is not None


class QuoteChecker:
    """Finds the quote an answer sentence rests on among the passages of one turn."""

    def __init__(self, question: str, passages: Sequence[str], names: Sequence[str] = ()) -> None:
        """Cut ``passages`` (``[1]`` first) into units for ``question``; ``names[i]``
        says what passage ``i`` is about (file and headings), when known."""
        self.passages = tuple(passages)
        self.question = normalize(question)
        self.units = [u for n, p in enumerate(self.passages) for u in passage_units(p, n)]
        self._names = [normalize(names[n]) if n < len(names) else "" for n in range(len(passages))]
        self._norm = [normalize(self._text(u)) for u in self.units]
        # a row "| Hamburg | €49 |" is a per-diem because its table's header says so:
        # a row's words include its header row's
        self._header = [_table_header(self.units, i, self.passages) for i in range(len(self.units))]
        self._words = [
            content_words(t) | (content_words(self._norm[h]) if h is not None else set())
            for t, h in zip(self._norm, self._header, strict=True)
        ]
        self._passage_norm = [
            normalize(p) + "\n" + self._names[n] for n, p in enumerate(self.passages)
        ]
        # a table row must name the item asked about itself (or its header, or what
        # names the table): the neighbouring row's value is not this item's
        self._scope = [
            self._row_scope(i) if self._text(u).lstrip().startswith("|") else None
            for i, u in enumerate(self.units)
        ]
        df: dict[str, int] = {}
        for norm in self._norm:
            for word in content_words(norm):
                df[word] = df.get(word, 0) + 1
        self._df = df
        self.asked = values_of(question)

    def _text(self, unit: Unit) -> str:
        return self.passages[unit.passage][unit.start : unit.end]

    def _row_scope(self, i: int) -> str:
        """Table row ``i`` with its table's header row and the passage's names."""
        header = self._header[i]
        head = self._norm[header] if header is not None else ""
        return f"{head}\n{self._norm[i]}\n{self._names[self.units[i].passage]}"

    def _column_fits(self, i: int, value: str, words: set[str]) -> bool:
        """For a table row: whether ``value`` sits in a column the sentence could mean.

        The sentence speaks of a column when it holds words of that column's header; a
        value stated in words of another column that holds a value of its own kind ("the
        hotel cap is £48" where £48 is the per-diem and the hotel cap £140) does not
        fit. A sentence naming no such column fits any.
        """
        header = self._header[i]
        if header is None:
            return True
        cells = _cells(self._text(self.units[i]))
        names = _cells(self._text(self.units[header]))
        if len(cells) != len(names):
            return True
        named = [bool(content_words(normalize(n)) & words) for n in names]
        holding = [_holds(normalize(c), value) for c in cells]
        if any(h and n for h, n in zip(holding, named, strict=True)):
            return True
        # another named column holds a figure of its own: the sentence means that one
        numeric = any(ch.isdigit() for ch in value)
        return not any(
            n and not h and numeric == any(ch.isdigit() for ch in c)
            for c, h, n in zip(cells, holding, named, strict=True)
        )

    def _weight(self, word: str) -> float:
        return math.log(1 + (len(self.units) + 1) / (self._df.get(word, 0) + 1))

    def _about(self, i: int) -> bool:
        """Whether unit ``i`` (in its scope) names every value the question names."""
        scope = self._scope[i] or self._passage_norm[self.units[i].passage]
        return all(_holds(scope, v) for v in self.asked)

    def stated(self, sentence: str) -> set[str]:
        """The values of ``sentence`` the question does not already name."""
        return {v for v in values_of(sentence) if not _holds(self.question, v)}

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
        words = content_words(normalize(sentence))
        if not words:
            return []
        values = self.stated(sentence)
        total = sum(self._weight(w) for w in words)

        def share(*units: int) -> float:
            held = set().union(*(self._words[i] for i in units))
            return sum(self._weight(w) for w in words & held) / total

        def holds(i: int) -> set[str]:
            return {
                v for v in values if _holds(self._norm[i], v) and self._column_fits(i, v, words)
            }

        about = [self._about(i) for i in range(len(self.units))]
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
            i for i in range(len(self.units)) if about[i] and holds(i) and self._scope[i] is None
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

    def _quote(self, first: int, last: int) -> Quote:
        passage = self.units[first].passage
        start, end = self.units[first].start, self.units[last].end
        return Quote(passage + 1, self.passages[passage][start:end], start, end)


def quoted_texts(quotes: Sequence[Quote], source: int) -> list[str]:
    """What an answer quotes of passage ``source``, each quote once, on one line."""
    return list(dict.fromkeys(" ".join(q.text.split()) for q in quotes if q.source == source))


def coverage_abstention(topics: Sequence[str], abstention: str) -> str:
    """The abstention that names what the passages do cover (``topics``, best first)."""
    seen: list[str] = []
    for topic in topics:
        if topic and topic not in seen:
            seen.append(topic)
    if not seen:
        return abstention
    return f"{abstention} The passages found cover {_enumerate(seen[:3])}."


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
        topics: Sequence[str],
        abstention: str,
        names: Sequence[str] = (),
    ) -> None:
        """Check against ``passages`` (``[1]`` first); ``topics`` name what each covers
        for an abstention, ``names`` what each is about for the check."""
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
        """End of the answer: the last sentence, or the abstention if nothing was kept."""
        shown = self._settle(final=True)
        if self.sentences:
            return shown
        self.text = coverage_abstention(self.topics, self.abstention)
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
            self.dropped.append(body)
            self._dropped_in_a_row += 1
            return ""
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


def select_context(question: str, passages: Sequence[str], *, max_tokens: int) -> list[str]:
    """Each passage cut down to the units that matter for ``question`` (same numbering).

    Units are ranked by the weighted share of the question's content words they hold
    (rare words weigh more; ties go to the better-ranked passage), or :data:`INHERITED`
    of their section heading's or table header's share when that is more; the best are
    taken,
    each with :data:`NEIGHBOURS` units either side and, for a table row, the table's
    header row, until ``max_tokens`` (estimated at four characters a token) is spent.
    Every passage keeps at least its best unit. A gap in a passage is marked ``...``.
    """
    units = [u for n, p in enumerate(passages) for u in passage_units(p, n)]
    if not units:
        return list(passages)
    question_words = content_words(normalize(question))
    df: dict[str, int] = {}
    unit_words = []
    for u in units:
        words = content_words(normalize(passages[u.passage][u.start : u.end]))
        unit_words.append(words)
        for w in words:
            df[w] = df.get(w, 0) + 1

    def weight(word: str) -> float:
        return math.log(1 + (len(units) + 1) / (df.get(word, 0) + 1))

    total = sum(weight(w) for w in question_words) or 1.0
    own = [sum(weight(w) for w in question_words & words) / total for words in unit_words]
    # a row shares few words with a question about it ("seven years" is the "5-9 years"
    # row): rows and the text under a heading also count for what their table's header
    # or their section's heading matches, a little less than a match of their own
    scores = [
        max([own[i]] + [INHERITED * own[j] for j in _owners(units, i, passages)])
        for i in range(len(units))
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
        header = _table_header(units, i, passages)
        if header is not None:
            take(header)

    best_of_passage: dict[int, int] = {}
    for i in order:
        best_of_passage.setdefault(units[i].passage, i)
    for i in sorted(best_of_passage.values(), key=lambda i: units[i].passage):
        take(i)
    for i in order:
        if spent >= budget or scores[i] <= 0:
            break
        with_neighbours(i)
    out: list[str] = []
    for n, text in enumerate(passages):
        kept = [i for i in sorted(chosen) if units[i].passage == n]
        pieces: list[str] = []
        previous: int | None = None
        for i in kept:
            if (previous is not None and i != previous + 1) or (
                previous is None and i > 0 and units[i - 1].passage == n
            ):
                pieces.append("...")
            unit = units[i]
            pieces.append(text[unit.start : unit.end])
            previous = i
        if kept and kept[-1] + 1 < len(units) and units[kept[-1] + 1].passage == n:
            pieces.append("...")
        out.append(_join(pieces) if pieces else text)
    return out


def _join(pieces: Sequence[str]) -> str:
    out = ""
    for piece in pieces:
        if not out:
            out = piece
        elif _STRUCTURED_LINE.match(piece) or _STRUCTURED_LINE.match(out.rsplit("\n", 1)[-1]):
            out += "\n" + piece
        else:
            out += " " + piece
    return out


def _cells(row: str) -> list[str]:
    """The cells of a Markdown table row."""
    return [c.strip() for c in row.strip().strip("|").split("|")]


def _owners(units: Sequence[Unit], i: int, passages: Sequence[str]) -> list[int]:
    """The units that say what unit ``i`` is about: its section's heading and, for a
    table row, its table's header row."""
    owners = []
    header = _table_header(units, i, passages)
    if header is not None:
        owners.append(header)
    j = i - 1
    while j >= 0 and units[j].passage == units[i].passage:
        if passages[units[j].passage][units[j].start : units[j].end].startswith("#"):
            owners.append(j)
            break
        j -= 1
    return owners


def _table_header(units: Sequence[Unit], i: int, passages: Sequence[str]) -> int | None:
    """The header row of the table unit ``i`` is a row of, if it is one."""
    unit = units[i]
    text = passages[unit.passage]
    if not text[unit.start : unit.end].lstrip().startswith("|"):
        return None
    j = i
    while (
        j > 0
        and units[j - 1].passage == unit.passage
        and text[units[j - 1].start : units[j - 1].end].lstrip().startswith("|")
    ):
        j -= 1
    return j if j != i else None
