"""Days that a message names relative to when it was written, written out as dates.

A chat says "tomorrow", "on Sunday" or "the 23rd"; a question asks "on which day". A
small model reading the transcript takes the day the message was sent, or guesses a
weekday. :func:`annotate_transcript` writes the calendar day beside each such phrase,
computed from the day the message was sent, in the form day cards name days
(``tomorrow (Thursday 2026-03-05)``), so the answer can quote the date instead of
working it out. Only phrases that name one day unambiguously are annotated:

- ``today``, ``tonight``, ``this morning/afternoon/evening``: the day itself;
  ``tomorrow``, ``the day after tomorrow``, ``yesterday``, ``the day before yesterday``;
- a weekday (``on Sunday``, ``this Friday``, ``next Tuesday``): the first such weekday
  after the day (a week on when it is today's weekday; ``last Tuesday``: the one
  before);
- a day of the month without a month (``the 23rd``, ``Friday the 13th``): the next
  date with that number, this month or the next;
- a month and day without a year (``Jan 18th``, ``4 April``): that date in the year of
  the message, or the next year when it would lie more than half a year back.

Vague spans ("next week", "the weekend") and phrases already followed by a date are
left as they are. The annotations help the model and the quote check only: a quote of an
annotated transcript is shown as its messages wrote it (:func:`as_written`). Pure and
deterministic; the transcript's lines are ``[HH:MM] sender: text``
(:mod:`varagity.graph.transcripts`), all written on ``day``.
"""

from __future__ import annotations

import re
from datetime import date, timedelta
from difflib import SequenceMatcher

from varagity.graph.transcripts import MESSAGE_LINE, weekday_of

_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_MONTHS = {
    name: n
    for n, names in enumerate(
        (
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ),
        start=1,
    )
    for name in names
}
_OFFSETS = {
    "the day after tomorrow": 2,
    "the day before yesterday": -2,
    "day after tomorrow": 2,
    "day before yesterday": -2,
    "tomorrow": 1,
    "yesterday": -1,
    "today": 0,
    "tonight": 0,
    "this morning": 0,
    "this afternoon": 0,
    "this evening": 0,
}
_WEEKDAY = r"(?:mon|tues|wednes|thurs|fri|satur|sun)day"
# "may" is a month only as "May" ("may 12 of us come?")
_MONTH = "|".join("(?-i:May)" if m == "may" else m for m in sorted(_MONTHS, key=len, reverse=True))
_OFFSET = "|".join(o.replace(" ", r"\s+") for o in sorted(_OFFSETS, key=len, reverse=True))
_PHRASE = re.compile(
    rf"""\b(?:
        (?P<offset>{_OFFSET})
      | (?P<named>{_WEEKDAY},?\s+(?:the\s+)?(?:
            (?P<nm_month>{_MONTH})\.?\s+(?P<nm_day>\d{{1,2}})(?:st|nd|rd|th)?
          | (?P<nd_day>\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?(?P<nd_month>{_MONTH})))
      | (?P<month_day>(?P<md_month>{_MONTH})\.?\s+(?P<md_day>\d{{1,2}})(?:st|nd|rd|th)?)
      | (?P<day_month>(?P<dm_day>\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?(?P<dm_month>{_MONTH}))
      | (?P<weekday_nth>(?P<wn_weekday>{_WEEKDAY}),?\s+the\s+(?P<wn_day>\d{{1,2}})(?:st|nd|rd|th))
      | (?P<nth>the\s+(?P<nth_day>\d{{1,2}})(?:st|nd|rd|th))
      | (?P<weekday>(?:(?P<which>this|next|last|coming|on)\s+)?(?P<wd>{_WEEKDAY})
          (?!,?\s+(?:the\s+)?(?:(?:{_MONTH})\.?\s+)?\d))
    )\b(?!\s*\(|,?\s*\d{{4}}-\d{{2}}-\d{{2}})""",
    re.IGNORECASE | re.VERBOSE,
)
#: A month-and-day more than this many days before the message is next year's.
_HALF_YEAR = 183


def _next_weekday(day: date, weekday: int, which: str) -> date:
    ahead = (weekday - day.weekday()) % 7
    if which == "last":
        return day - timedelta(days=(day.weekday() - weekday) % 7 or 7)
    if which == "next" and ahead == 0:
        return day + timedelta(days=7)
    return day + timedelta(days=ahead or 7)


def _next_day_of_month(day: date, number: int) -> date | None:
    year, month = day.year, day.month
    for _ in range(3):
        if number >= (day.day if (year, month) == (day.year, day.month) else 1):
            try:
                return date(year, month, number)
            except ValueError:
                pass
        month += 1
        if month > 12:
            year, month = year + 1, 1
    return None


def _month_day(day: date, month: int, number: int) -> date | None:
    try:
        found = date(day.year, month, number)
    except ValueError:
        return None
    if (day - found).days > _HALF_YEAR:
        try:
            return date(day.year + 1, month, number)
        except ValueError:
            return None
    return found


def resolve(match: re.Match[str], day: date) -> date | None:
    """The calendar day a phrase of :data:`_PHRASE` names, written on ``day``."""
    if match["offset"]:
        return day + timedelta(days=_OFFSETS[" ".join(match["offset"].lower().split())])
    if match["named"]:
        month, number = match["nm_month"] or match["nd_month"], match["nm_day"] or match["nd_day"]
        return _month_day(day, _MONTHS[month.lower()], int(number))
    if match["month_day"]:
        return _month_day(day, _MONTHS[match["md_month"].lower()], int(match["md_day"]))
    if match["day_month"]:
        return _month_day(day, _MONTHS[match["dm_month"].lower()], int(match["dm_day"]))
    if match["weekday_nth"]:
        found = _next_day_of_month(day, int(match["wn_day"]))
        wanted = _WEEKDAYS.index(match["wn_weekday"].lower())
        return found if found is not None and found.weekday() == wanted else None
    if match["nth"]:
        return _next_day_of_month(day, int(match["nth_day"]))
    weekday = _WEEKDAYS.index(match["wd"].lower())
    return _next_weekday(day, weekday, (match["which"] or "").lower())


def annotate_line(text: str, day: date) -> str:
    """``text``, written on ``day``, with each day it names relative to ``day``
    followed by that day (``tomorrow (Thursday 2026-03-05)``)."""

    last: tuple[int, date | None] = (-1, None)

    def note(match: re.Match[str]) -> str:
        nonlocal last
        found = resolve(match, day)
        # "tomorrow, Thursday": the weekday repeats the day just written out
        repeated = found == last[1] and match.start() - last[0] <= 2
        last = (match.end(), found)
        if found is None or repeated:
            return match[0]
        return f"{match[0]} ({weekday_of(found.isoformat())})"

    return _PHRASE.sub(note, text)


def annotate_transcript(text: str, span: str) -> str:
    """A day's transcript (or an excerpt of one) with the days its messages name
    written out (the module doc); unchanged when ``span`` is not one day."""
    try:
        day = date.fromisoformat(span)
    except ValueError:
        return text
    lines = []
    for line in text.split("\n"):
        m = MESSAGE_LINE.match(line)
        lines.append(m["head"] + annotate_line(m["text"], day) if m else line)
    return "\n".join(lines)


def as_written(annotated: str, original: str, start: int, end: int) -> tuple[int, int]:
    """The span of ``original`` that ``annotated[start:end]`` quotes, where ``annotated``
    is ``original`` with days written out (:func:`annotate_transcript`): offsets move
    back over the text written in before them, and a span's ends inside written-in text
    move to where it was written in."""
    if annotated == original:
        return start, end
    blocks = SequenceMatcher(None, original, annotated, autojunk=False).get_matching_blocks()

    def back(offset: int) -> int:
        mapped = 0
        for a, b, size in blocks:
            if b > offset:
                break
            mapped = a + min(offset - b, size)
        return mapped

    return back(start), back(end)


_FULL_DATE = re.compile(
    rf"""(?<![\d-])(?:
        (?P<iso_y>\d{{4}})-(?P<iso_m>\d{{2}})-(?P<iso_d>\d{{2}})
      | (?P<c_y>20\d{{2}})(?P<c_m>\d{{2}})(?P<c_d>\d{{2}})
      | (?P<md_month>{_MONTH})\.?\s+(?P<md_day>\d{{1,2}})(?:st|nd|rd|th)?,?\s+(?P<md_year>\d{{4}})
      | (?P<dm_day>\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?(?P<dm_month>{_MONTH}),?\s+
        (?P<dm_year>\d{{4}})
    )(?![\d-])""",
    re.IGNORECASE | re.VERBOSE,
)


def named_dates(text: str) -> tuple[date, ...]:
    """The calendar days ``text`` names in full, with their year, in order: ISO
    (``2026-04-28``), compact (``20260428``, as a stamp writes it), ``April 28, 2026``
    or ``28 April 2026``; a digit run that is no valid date names none."""
    found: list[date] = []
    for m in _FULL_DATE.finditer(text):
        if m["iso_y"]:
            parts = (m["iso_y"], m["iso_m"], m["iso_d"])
        elif m["c_y"]:
            parts = (m["c_y"], m["c_m"], m["c_d"])
        elif m["md_year"]:
            parts = (m["md_year"], str(_MONTHS[m["md_month"].casefold()]), m["md_day"])
        else:
            parts = (m["dm_year"], str(_MONTHS[m["dm_month"].casefold()]), m["dm_day"])
        try:
            day = date(*(int(p) for p in parts))
        except ValueError:
            continue
        if day not in found:
            found.append(day)
    return tuple(found)
