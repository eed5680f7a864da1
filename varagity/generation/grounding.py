"""Which evidence passage supports which sentence of an answer, and citations that say so.

Small local models rarely cite: Qwen2.5-Coder-0.5B, asked to cite each claim as
``[n]``, cited in 3 of 31 answers of ``eval_suites/sample``. So the answer stream is
*attributed*: every sentence, once complete, is compared with the passages the model
was shown, and gets the ``[n]`` of the passage that supports it. The model's own
markers are kept only where their passage supports the sentence too.

The text rules, shared with the answer scorer (:mod:`varagity.eval.answer_scoring`):

* **Normal form** (:func:`normalize`): NFKC, case-folded; dashes and hyphens become
  spaces, thousands separators between digits go (``38,000`` is ``38000``), ``°``
  sticks to its number, a clock's ``am``/``pm`` is a word of its own (``2pm``, ``2 PM``
  and ``2 p.m.`` are ``2 pm``), a day written ``20260604`` is ``2026 06 04`` as
  ``2026-06-04`` is, Markdown emphasis marks go, whitespace collapses.
* **Content words** (:func:`content_words`): the normalised words of two or more
  characters that are not :data:`STOPWORDS`, numbers (``1.7``, ``02:00``) included, a
  trailing plural ``s`` dropped.
* **Abstention** (:func:`is_abstention`): a phrasing of "the documents do not say".

Support (:func:`support_scores`) of a sentence by each passage:

* a passage that lacks a number the sentence states does not support it (score 0);
* otherwise the score is the weighted share of the sentence's content words found in
  the passage, a word weighted by how rare it is among the shown passages
  (``log(1 + (k + 1) / (df + 1))``): the subject every passage names counts less than
  the detail only one passage holds, and a word no passage holds counts most.

Attribution (:func:`attribute`): a sentence that abstains, or has no content words,
cites nothing. Otherwise a marker the model wrote stays when its passage scores at
least :data:`KEEP_SUPPORT`; when none stays, the best passage is cited when it scores
at least :data:`CITE_SUPPORT`. A sentence no passage supports stays uncited: an
uncited sentence is one the evidence does not back.

:class:`CitationStream` applies this to a stream: text flows through as it arrives,
except the model's markers and a sentence's final punctuation, which are held until
the sentence is complete; then the sentence's citations are written before its
punctuation (``27 months [1].``). Inline code and fenced code blocks pass unchanged.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Sequence

#: Least support that keeps a marker the model wrote.
KEEP_SUPPORT = 0.34
#: Least support for citing a passage the model did not cite.
CITE_SUPPORT = 0.5

_DASHES = re.compile(r"[\u2010-\u2015\u2212\-]")
_THOUSANDS = re.compile(r"(?<=\d)[,\u202f\u2009](?=\d{3}(?!\d))")
_DEGREES = re.compile(r"(\d)\s*°\s*")
_EMPHASIS = re.compile(r"[*`]+")
_COMPACT_DATE = re.compile(r"(?<!\d)(20\d\d)(0[1-9]|1[0-2])(0[1-9]|[12]\d|3[01])(?!\d)")
_DOTTED_MERIDIEM = re.compile(r"\b([ap])\.m\.")
_MERIDIEM = re.compile(r"(\d)\s*([ap]m)\b")
_WS = re.compile(r"\s+")
_APOSTROPHES = re.compile(r"[\u2018\u2019\u02bc]")
_WORD = re.compile(r"[a-z0-9]+(?:[.:][0-9]+)*")
_NUMBER = re.compile(r"^\d+(?:[.:]\d+)*$")

#: Phrasings that mean "the evidence does not answer this", matched on normalised text.
ABSTENTION_PATTERNS: tuple[str, ...] = (
    r"\b(?:documents?|sources?|context|passages?|evidence|texts?|information provided)"
    r"(?: provided)? (?:do|does|did) ?(?:not|n't) (?:say|mention|state|specify|contain|"
    r"include|provide|give|cover|list|describe|tell|answer)",
    # negated: "she can find a new café" is no abstention
    r"\b(?:cannot|can't|couldn't|(?:could|can) not|unable to) (?:find|determine|answer|tell)\b",
    r"\bno (?:information|mention|details?|data|answer)\b",
    r"\b(?:is|are|was|were) not (?:mentioned|stated|specified|given|provided|listed|"
    r"found|documented)\b",
    r"\bnot (?:found|available|covered) in the (?:documents?|sources?|provided)",
    r"\bi (?:do not|don't) know\b",
)
_ABSTAIN = re.compile("|".join(f"(?:{p})" for p in ABSTENTION_PATTERNS))

#: Words that carry no claim: left out of the content words.
STOPWORDS = frozenset(
    """a an the and or but nor of to in on at by for with from into onto over under about
    as is are was were be been being am do does did has have had having it its it's this
    that these those there here which who whom whose what when where why how than then so
    such can could may might must shall should will would not no yes also only just very
    more most less least any all each every some other both either neither one per
    you your yours we our us they their them he she his her i me my
    if else while after before during between through up down out off again once
    according source sources document documents passage passages answer question""".split()
)


def normalize(text: str) -> str:
    """The comparison form of ``text`` (see the module doc)."""
    text = unicodedata.normalize("NFKC", text).casefold()
    text = _APOSTROPHES.sub("'", text)
    text = _EMPHASIS.sub("", text)
    text = _THOUSANDS.sub("", text)
    text = _DASHES.sub(" ", text)
    text = _COMPACT_DATE.sub(r"\1 \2 \3", text)
    text = _DEGREES.sub(r"\1 °", text)
    text = _MERIDIEM.sub(r"\1 \2", _DOTTED_MERIDIEM.sub(r"\1m", text))
    return _WS.sub(" ", text).strip()


def content_words(normalized_text: str) -> set[str]:
    """The content words of an already normalised text (see the module doc)."""
    words = set()
    for word in _WORD.findall(normalized_text):
        if len(word) < 2 or word in STOPWORDS:
            continue
        if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
            word = word[:-1]
        words.add(word)
    return words


def is_number(word: str) -> bool:
    """Whether a content word is a number (``27``, ``1.7``, ``02:00``)."""
    return bool(_NUMBER.match(word))


def is_abstention(text: str) -> bool:
    """Whether ``text`` says the evidence does not answer the question."""
    return bool(_ABSTAIN.search(normalize(text)))


class Evidence:
    """The passages an answer was written from, prepared for support scoring."""

    def __init__(self, passages: Sequence[str]) -> None:
        """Index ``passages`` (``[1]`` first)."""
        self.words = [content_words(normalize(p)) for p in passages]
        self._df: dict[str, int] = {}
        for words in self.words:
            for word in words:
                self._df[word] = self._df.get(word, 0) + 1

    def __len__(self) -> int:
        """How many passages there are."""
        return len(self.words)

    def weight(self, word: str) -> float:
        """How much ``word`` counts: more the fewer passages hold it."""
        return math.log(1 + (len(self.words) + 1) / (self._df.get(word, 0) + 1))

    def support_scores(self, sentence: str) -> list[float]:
        """Per passage, how well it supports ``sentence`` (0..1; see the module doc)."""
        words = content_words(normalize(sentence))
        if not words:
            return [0.0] * len(self.words)
        total = sum(self.weight(w) for w in words)
        numbers = {w for w in words if is_number(w)}
        scores = []
        for have in self.words:
            if not numbers <= have:
                scores.append(0.0)
                continue
            scores.append(sum(self.weight(w) for w in words & have) / total)
        return scores


def attribute(sentence: str, evidence: Evidence, model_cited: Sequence[int] = ()) -> list[int]:
    """The passage numbers ``sentence`` should cite (see the module doc)."""
    if not len(evidence) or is_abstention(sentence):
        return []
    scores = evidence.support_scores(sentence)
    kept: list[int] = []
    for n in model_cited:
        if 1 <= n <= len(scores) and scores[n - 1] >= KEEP_SUPPORT and n not in kept:
            kept.append(n)
    if kept:
        return kept
    best = max(range(len(scores)), key=lambda i: (scores[i], -i))
    return [best + 1] if scores[best] >= CITE_SUPPORT else []


_MARKER_TEXT = r"\[\d{1,3}(?:\s*,\s*\d{1,3})*\]"
_MARKER = re.compile(_MARKER_TEXT)
_MARKER_WITH_SPACE = re.compile(rf"[ \t]*{_MARKER_TEXT}")
# what may still become a marker at the end of the text seen so far
_OPEN_MARKER = re.compile(r"\s*\[[\d,\s]*$")
_TERMINAL = ".!?"
_CLOSING = ".!?:;,"


class CitationStream:
    """Attributed citations on a streamed answer (see the module doc).

    Feed the answer's deltas to :meth:`feed`, which returns the text that can be shown
    now; :meth:`finish` returns the rest at the end. :attr:`text` is the whole
    attributed answer so far, and what was shown is always a prefix of it.
    """

    def __init__(self, passages: Sequence[str]) -> None:
        """Attribute to ``passages`` (``[1]`` first)."""
        self.passages = tuple(passages)
        self.evidence = Evidence(passages)
        self.raw = ""
        self.text = ""  # the attributed form of the settled sentences
        self._settled = 0  # raw[:_settled] is attributed into ``text``
        self._visible = ""
        self.claims = 0  # settled sentences that state something
        self.supported_claims = 0  # of those, the ones a passage supports

    @property
    def unsupported(self) -> bool:
        """Whether the answer states something and no passage supports any of it."""
        return self.claims > 0 and self.supported_claims == 0

    def feed(self, delta: str) -> str:
        """Add a delta of the model's answer; the text that can be shown now."""
        self.raw += delta
        self._settle(final=False)
        return self._show(self.text + _open_visible(self.raw[self._settled :]))

    def finish(self) -> str:
        """End of the answer: the rest of it, with the last sentence's citations."""
        self._settle(final=True)
        return self._show(self.text)

    def _show(self, visible: str) -> str:
        if not visible.startswith(self._visible):  # cannot happen; never show a rewrite
            return ""
        delta = visible[len(self._visible) :]
        self._visible = visible
        return delta

    def _settle(self, *, final: bool) -> None:
        while True:
            end = sentence_end(self.raw, self._settled, final=final)
            if end is None:
                return
            segment = self.raw[self._settled : end]
            self._settled = end
            self.text += self._cite(segment)
            if end == len(self.raw):
                return

    def _cite(self, segment: str) -> str:
        if segment.lstrip().startswith("```"):
            return segment
        numbers = _marker_numbers(segment)
        text = strip_markers(segment)
        body = text.rstrip()
        tail = text[len(body) :]
        stripped = body.rstrip(_CLOSING)
        punct = body[len(stripped) :]
        mentioned = set(_marker_numbers(segment, mentions=True)) - set(numbers)
        chosen = attribute(stripped, self.evidence, numbers)
        if content_words(normalize(stripped)) and not is_abstention(stripped):
            self.claims += 1
            self.supported_claims += bool(chosen)
        marks = "".join(f" [{n}]" for n in chosen if n not in mentioned)
        if not marks:
            return text
        return f"{stripped}{marks}{punct}{tail}"


def attribute_answer(answer: str, passages: Sequence[str]) -> str:
    """``answer`` with attributed citations, as :class:`CitationStream` writes it."""
    stream = CitationStream(passages)
    stream.feed(answer)
    stream.finish()
    return stream.text


def _open_visible(rest: str) -> str:
    """What of the unfinished sentence ``rest`` can be shown without risk of a rewrite."""
    if rest.lstrip().startswith("```"):
        return rest
    text = strip_markers(rest)
    if text.count("`") % 2 == 1:  # inside an inline code span: shown as written
        return text
    text = _OPEN_MARKER.sub("", text)
    return text.rstrip().rstrip(_CLOSING).rstrip()


# inline code spans (the last one possibly still open): markers there are code
_CODE_SPAN = re.compile(r"(`[^`]*`?)")


# a marker after these words is part of the sentence ("according to [1], ..."): it stays
_MENTION = re.compile(
    r"\b(?:to|in|from|see|per|by|source|sources|document|documents|passage|passages)\s*$",
    re.I,
)


def _is_mention(text: str, marker: re.Match[str]) -> bool:
    return bool(_MENTION.search(text, 0, marker.start()))


def _unless_mention(marker: re.Match[str]) -> str:
    return marker.group() if _is_mention(marker.string, marker) else ""


def strip_markers(text: str) -> str:
    """``text`` without its citation markers (and the spaces before them); code and
    markers the sentence mentions stay."""
    out = []
    for part in _CODE_SPAN.split(text):
        if part.startswith("`"):
            out.append(part)
            continue
        out.append(_MARKER_WITH_SPACE.sub(_unless_mention, part))
    return "".join(out)


def _marker_numbers(text: str, *, mentions: bool = False) -> list[int]:
    """Every number cited by a marker of ``text``, in order, code spans left out (and
    mentions, unless ``mentions``)."""
    return [
        int(n)
        for part in _CODE_SPAN.split(text)
        if not part.startswith("`")
        for m in _MARKER_WITH_SPACE.finditer(part)
        if mentions or not _is_mention(part, m)
        for n in m.group().strip()[1:-1].split(",")
    ]


# a full stop after these does not end a sentence
_ABBREVIATION = re.compile(
    r"(?:\b(?:e\.g|i\.e|etc|vs|approx|incl|no|nos|fig|figs|dr|mr|mrs|ms|st|jr|sr|ext|tel)"
    r"|(?<![\w.])[A-Z])$",
    re.I,
)
_ABBREVIATION_CHARS = 8  # the longest abbreviation, with a character before it
_FENCE = re.compile(r"```.*?(?:```[^\n]*(?:\n|\Z)|\Z)", re.S)


def sentence_end(raw: str, start: int, *, final: bool) -> int | None:
    """Where the sentence starting at ``start`` ends (just before the next one's first
    character), or None while that is not yet known; at ``final`` the text's end."""
    if start >= len(raw):
        return None
    fence = _FENCE.match(raw, start)
    if raw.startswith("```", start) and fence is not None:
        if fence.group().count("```") >= 2:
            return fence.end()
        return len(raw) if final else None
    i = start
    ticks = 0
    while i < len(raw):
        c = raw[i]
        if c == "`":
            if raw.startswith("```", i) and ticks % 2 == 0:
                return i if i > start else None  # a fence starts a sentence of its own
            ticks += 1
        elif ticks % 2 == 0 and (c == "\n" or (c in _TERMINAL and _space_follows(raw, i))):
            end = _boundary_end(raw, i + 1)
            if end is None:
                return len(raw) if final else None
            return end
        i += 1
    return len(raw) if final else None


def _space_follows(raw: str, i: int) -> bool:
    """Whether the punctuation at ``i`` ends a sentence: markers, then space, may follow
    (``1.7``, ``e.g.`` and ``J. Smith`` do not end one); unknown at the text's end counts
    as yes."""
    if raw[i] == "." and _ABBREVIATION.search(raw, max(0, i - _ABBREVIATION_CHARS), i):
        return False
    j = i + 1
    while True:
        marker = _MARKER_WITH_SPACE.match(raw, j)
        if marker is None:
            break
        j = marker.end()
    return j >= len(raw) or raw[j].isspace() or bool(_OPEN_MARKER.match(raw, j))


def _boundary_end(raw: str, j: int) -> int | None:
    """After a sentence's last character at ``j - 1``: the index where the next sentence
    starts, taking markers and whitespace (a line of only markers included) along;
    None when the text ends first."""
    while j < len(raw):
        marker = _MARKER_WITH_SPACE.match(raw, j)
        if marker is not None:
            j = marker.end()
            continue
        if raw[j].isspace():
            j += 1
            continue
        if _OPEN_MARKER.match(raw, j):
            return None
        return j
    return None
