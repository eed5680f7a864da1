"""The offline judge of graph-suite answers: right, wrong, or no information.

MiniRAG (arXiv 2501.06713) has an API model score each LiHua-World answer +1 (right),
0 (irrelevant, "no information") or -1 (wrong). No such model is reachable here, so
this judge applies written rules to the answer text; its figures are not the LLM
judge's and a report says which judge made them. The gold answer decides the rule:

* **Abstention first.** Citation markers (``[1]``, ``[1, 2]``) are removed and the
  answer cut into sentences. The answer *abstains* when its first sentence says the
  evidence does not answer (:func:`varagity.generation.grounding.is_abstention`: "The
  documents do not say", "could not find", "no information" ..., which covers the
  quote check's "I could not find a checked answer ..." whatever passage it then
  offers). An empty answer is no information, never an abstention.
* **Unanswerable gold** (type ``null``): right when the answer abstains, otherwise
  wrong (it answered what the chats do not say).
* **Answerable gold, abstained**: no information (neither right nor wrong), whatever
  passage the abstention quotes. Otherwise the sentences that abstain (a trailing "the
  documents do not say this") are left out and the rest is judged:
* **Yes/no gold** (``Yes``, ``No``, or a gold that begins ``Yes,`` / ``No,``): the
  answer's polarity is its first yes/no word (``yes``, ``no``, ``correct``, ``true`` /
  ``incorrect``, ``false``; ``no one``, ``no longer``, ``no later`` ... are not a
  "no"), else ``no`` when its first sentence carries a clear negation (``not``,
  ``n't``, ``never``, ``neither``, ``nor``), else, when its first sentence restates
  the question (holds :data:`RESTATEMENT_SHARE` of the question's units, below),
  ``yes``, or ``no`` when it swaps the question's ordering word (``after`` where the
  question says ``before``, ``later`` / ``earlier``), else none. Right when it equals
  the gold's; a different or missing polarity is wrong (the judge does not infer an
  order from dates an answer lists).
* **Any other gold**: its *units* must be in the answer. Both texts are read the same
  way: ``CamelCase`` names split (``JakeWatson`` is ``jake watson``), case-folded
  (NFKC), currency signs as words (``€28`` is ``28 euro``), ordinals and spelled
  numbers up to ninety as digits (``5th``, ``nineteen``), times on a 24-hour clock
  (``2 pm`` is ``14:00``; ``14:00`` matches a bare ``14``), dates as one unit whatever
  their spelling (``March 5``, ``5 March``, ``Mar. 5th``, ``2026-03-05``, ``20260305``
  are all the 5th of March; the year is ignored), then the words of two or more
  characters that are not stop words, each reduced to its Snowball stem (plural- and
  tense-insensitive). The gold's units are its words, numbers and dates *less those the
  question already has* (an answer that repeats the question does not earn them; all
  of the gold's when that leaves none). Right when the answer holds at least
  :data:`CONTENT_SHARE` of those units and every number and date among them;
  otherwise wrong. A gold without any unit (punctuation only) is matched as
  normalised text.

Accuracy is the share of questions judged right, error rate the share judged wrong;
the rest (abstentions on answerable questions, empty answers) is no information.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import cache
from typing import Any, Literal

from varagity.generation.grounding import STOPWORDS, is_abstention

Outcome = Literal["right", "wrong", "no_info"]
Rule = Literal["null", "yes_no", "content"]
Polarity = Literal["yes", "no"]

#: Least share of the gold's units (words, numbers, dates) a right answer holds.
CONTENT_SHARE = 0.5
#: Least share of a yes/no question's units a first sentence must repeat to be read as
#: restating it (a "yes", or a "no" when it swaps the question's before/after).
RESTATEMENT_SHARE = 0.6

_MARKERS = re.compile(r"\s*\[\d{1,3}(?:\s*,\s*\d{1,3})*\]")
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"'”’)\]]*\s+|\n+")
_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])")
_APOSTROPHES = re.compile(r"[\u2018\u2019\u02bc]")
_DASHES = re.compile(r"[\u2010-\u2015\u2212]")
_WORD = re.compile(r"[a-z0-9]+(?::[0-9]{2})?")
_NUMBER = re.compile(r"^\d+(?::\d{2})?$")
_DATE_UNIT = re.compile(r"^dt\d{4}$")
_MONTHS = {
    "january": 1,
    "february": 2,
    "march": 3,
    "april": 4,
    "may": 5,
    "june": 6,
    "july": 7,
    "august": 8,
    "september": 9,
    "october": 10,
    "november": 11,
    "december": 12,
    "jan": 1,
    "feb": 2,
    "mar": 3,
    "apr": 4,
    "jun": 6,
    "jul": 7,
    "aug": 8,
    "sep": 9,
    "sept": 9,
    "oct": 10,
    "nov": 11,
    "dec": 12,
}
_MONTH = "|".join(sorted(_MONTHS, key=len, reverse=True))
_DAY = r"(\d{1,2})(?:st|nd|rd|th)?"
_ISO_DATE = re.compile(r"\b(\d{4})-(\d{1,2})-(\d{1,2})\b")
_COMPACT_DATE = re.compile(r"\b(20\d{2})(\d{2})(\d{2})(?:_\d{2}:?\d{2})?\b")
_MONTH_DAY = re.compile(rf"\b({_MONTH})\.?\s+(?:the\s+)?{_DAY}\b(?!:)")
_DAY_MONTH = re.compile(rf"\b{_DAY}\s+(?:of\s+)?({_MONTH})\b")
_CLOCK = re.compile(r"\b(\d{1,2})(?::(\d{2}))?\s*(a\.?m\.?|p\.?m\.?)(?![a-z])")
_ORDINAL = re.compile(r"\b(\d+)(?:st|nd|rd|th)\b")
_DIGIT_LETTER = re.compile(r"(?<=\d)(?=[a-z])|(?<=[a-z])(?<!\bdt)(?=\d)")
_CURRENCY = {"€": " euro ", "$": " dollar ", "£": " pound ", "¥": " yen "}
_CURRENCY_WORDS = {"eur": "euro", "euros": "euro", "usd": "dollar", "gbp": "pound"}
_SMALL = (
    "zero one two three four five six seven eight nine ten eleven twelve thirteen "
    "fourteen fifteen sixteen seventeen eighteen nineteen twenty"
).split()
_TENS = {"thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80}
_TENS["ninety"] = 90
_SPELLED = {word: n for n, word in enumerate(_SMALL)} | _TENS
_SPELLED_NUMBER = re.compile(
    r"\b(" + "|".join(sorted(_SPELLED, key=len, reverse=True)) + r")(?:[\s-](one|two|three|"
    r"four|five|six|seven|eight|nine))?\b"
)
_YES = frozenset({"yes", "yeah", "yep", "correct", "true"})
_NO = frozenset({"no", "nope", "incorrect", "false"})
# "no" in these is not an answer to a yes/no question
_NOT_A_NO = re.compile(
    r"^(?:one|longer|later|earlier|sooner|more|less|fewer|matter|doubt|problem|worries)\b"
)
_NEGATION = re.compile(r"\b(?:not|never|neither|nor|cannot)\b|n't\b")
# words that order two events, by direction; a restatement that swaps the question's
# direction denies it
_ORDER = {"before": "earlier", "earlier": "earlier", "after": "later", "later": "later"}
_GOLD_POLARITY = re.compile(r"^\s*(yes|no)\b\s*(?:[,.;:!]|$)", re.I)


@cache
def _stemmer() -> Any:
    import Stemmer

    return Stemmer.Stemmer("english")


def strip_markers(text: str) -> str:
    """``text`` without its ``[n]`` citation markers."""
    return _MARKERS.sub("", text)


def sentences(text: str) -> list[str]:
    """The sentences of ``text`` (markers removed), blank ones left out."""
    return [s.strip() for s in _SENTENCE_END.split(strip_markers(text)) if s.strip()]


def abstains(answer: str) -> bool:
    """Whether the answer's first sentence says the evidence does not answer."""
    first = sentences(answer)
    return bool(first) and is_abstention(first[0])


def _date_token(month: int, day: int) -> str | None:
    if 1 <= month <= 12 and 1 <= day <= 31:
        return f" dt{month:02d}{day:02d} "
    return None


def _dates(text: str) -> str:
    """Every date of ``text`` (case-folded) replaced by its unit ``dtMMDD``."""

    def iso(m: re.Match[str]) -> str:
        return _date_token(int(m[2]), int(m[3])) or m[0]

    def month_day(m: re.Match[str]) -> str:
        return _date_token(_MONTHS[m[1]], int(m[2])) or m[0]

    def day_month(m: re.Match[str]) -> str:
        return _date_token(_MONTHS[m[2]], int(m[1])) or m[0]

    text = _ISO_DATE.sub(iso, text)
    text = _COMPACT_DATE.sub(iso, text)
    text = _MONTH_DAY.sub(month_day, text)
    return _DAY_MONTH.sub(day_month, text)


def _clock(m: re.Match[str]) -> str:
    hour = int(m[1]) % 12 + (12 if m[3].startswith("p") else 0)
    return f" {hour:02d}:{m[2] or '00'} "


def _spelled(m: re.Match[str]) -> str:
    value = _SPELLED[m[1]] + (_SPELLED[m[2]] if m[2] else 0)
    return f" {value} "


def _plain(text: str) -> str:
    return _APOSTROPHES.sub("'", unicodedata.normalize("NFKC", text).casefold())


def normal_form(text: str) -> str:
    """``text`` as the judge compares it (the module doc): citation markers dropped,
    names split, case-folded, currency signs, ordinals, spelled numbers, clock times
    and dates made uniform."""
    text = _CAMEL.sub(" ", unicodedata.normalize("NFKC", strip_markers(text)))
    text = _APOSTROPHES.sub("'", text.casefold())
    text = _DASHES.sub("-", text)
    for sign, word in _CURRENCY.items():
        text = text.replace(sign, word)
    text = re.sub(r"(?<=\d),(?=\d{3}\b)", "", text)  # thousands separators
    text = _dates(text)
    text = _ORDINAL.sub(r"\1", text)
    text = _SPELLED_NUMBER.sub(_spelled, text)
    text = _CLOCK.sub(_clock, text)
    text = _DIGIT_LETTER.sub(" ", text)
    return re.sub(r"\s+", " ", text).strip()


def _is_number(unit: str) -> bool:
    return bool(_NUMBER.match(unit)) or bool(_DATE_UNIT.match(unit))


def units(text: str) -> set[str]:
    """The units of ``text``: stemmed content words, numbers (``14:00`` with its
    minutes), dates (``dt0305``)."""
    out: set[str] = set()
    words: list[str] = []
    for word in _WORD.findall(normal_form(text)):
        if _is_number(word):
            out.add(word[:-3] if word.endswith(":00") else word)
        elif len(word) >= 2 and word not in STOPWORDS:
            words.append(_CURRENCY_WORDS.get(word, word))
    out.update(w for w in _stemmer().stemWords(words) if w not in STOPWORDS)
    return out


def gold_polarity(gold: str) -> Polarity | None:
    """``"yes"`` / ``"no"`` for a yes/no gold answer, else None."""
    match = _GOLD_POLARITY.match(gold)
    return None if match is None else "yes" if match[1].lower() == "yes" else "no"


def _directions(text: str) -> set[str]:
    return {_ORDER[w] for w in _WORD.findall(text) if w in _ORDER}


def answer_polarity(text: str, question: str = "") -> Polarity | None:
    """The answer's yes or no: its first yes/no word, else ``no`` for a negation in
    its first sentence, else (given the ``question``) a restatement of it, else None
    (the module doc)."""
    said = [_plain(s) for s in sentences(text)]
    for sentence in said:
        words = _WORD.findall(sentence)
        for i, word in enumerate(words):
            if word in _YES:
                return "yes"
            if word in _NO and not _NOT_A_NO.match(" ".join(words[i + 1 : i + 2])):
                return "no"
    if not said:
        return None
    if _NEGATION.search(said[0]):
        return "no"
    asked = units(question)
    if not asked or len(asked & units(said[0])) < RESTATEMENT_SHARE * len(asked):
        return None
    order, claimed = _directions(_plain(question)), _directions(said[0])
    if order and claimed and not order & claimed:
        return "no"  # "after" where the question asks "before"
    return "yes"


@dataclass(frozen=True, slots=True)
class Verdict:
    """The judge's reading of one answer.

    Attributes:
        outcome: ``right``, ``wrong`` or ``no_info``.
        rule: Which rule applied (``null``, ``yes_no``, ``content``).
        abstained: The answer abstains (its first sentence).
        expected: The gold's polarity (yes/no) or units (content), for people.
        found: Of the gold's units, those the answer holds (content rule).
        missing: Those it lacks (numbers and dates first).
        polarity: The answer's yes/no (yes/no rule).
        share: The share of the gold's units found (content rule).
    """

    outcome: Outcome
    rule: Rule
    abstained: bool
    expected: str = ""
    found: tuple[str, ...] = ()
    missing: tuple[str, ...] = ()
    polarity: Polarity | None = None
    share: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (unset parts left out)."""
        out: dict[str, Any] = {
            "outcome": self.outcome,
            "rule": self.rule,
            "abstained": self.abstained,
        }
        if self.expected:
            out["expected"] = self.expected
        if self.rule == "yes_no":
            out["polarity"] = self.polarity
        if self.rule == "content":
            out["found"] = list(self.found)
            out["missing"] = list(self.missing)
            out["share"] = None if self.share is None else round(self.share, 3)
        return out


def gold_units(gold: str, question: str) -> set[str]:
    """The units a right answer must mostly hold: the gold's, less the question's (all
    of the gold's when that would leave none)."""
    own = units(gold)
    return (own - units(question)) or own


def judge(question: str, gold: str, answer: str, *, answerable: bool) -> Verdict:
    """Judge ``answer`` to ``question`` against the gold answer (the module doc).

    Args:
        question: The question as asked (its units do not count for the answer).
        gold: The gold answer (``Insufficient information`` for a null question).
        answer: The answer text, citation markers and all.
        answerable: False for a ``null`` question.
    """
    abstained = abstains(answer)
    if not answerable:
        if abstained:
            return Verdict("right", "null", True, "an abstention")
        if not answer.strip():
            return Verdict("no_info", "null", False, "an abstention")
        return Verdict("wrong", "null", False, "an abstention")
    expected = gold_polarity(gold)
    rule: Rule = "yes_no" if expected is not None else "content"
    if abstained or not answer.strip():
        return Verdict("no_info", rule, abstained, expected or "")
    kept = " ".join(s for s in sentences(answer) if not is_abstention(s))
    if expected is not None:
        said = answer_polarity(kept, question)
        outcome: Outcome = "right" if said == expected else "wrong"
        return Verdict(outcome, "yes_no", False, expected, polarity=said)
    wanted = gold_units(gold, question)
    if not wanted:  # nothing but punctuation: the normalised text must be in the answer
        hit = normal_form(gold) in normal_form(kept)
        return Verdict("right" if hit else "wrong", "content", False, gold, share=float(hit))
    have = units(kept)
    found = {u for u in wanted if u in have}
    missing = wanted - found
    share = len(found) / len(wanted)
    numbers_missing = any(_is_number(u) for u in missing)
    right = share >= CONTENT_SHARE and not numbers_missing
    return Verdict(
        "right" if right else "wrong",
        "content",
        False,
        " ".join(sorted(wanted)),
        found=tuple(sorted(found)),
        missing=tuple(sorted(missing, key=lambda u: (not _is_number(u), u))),
        share=share,
    )
