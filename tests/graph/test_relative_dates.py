"""Days a message names relative to its own day, written out as dates."""

from __future__ import annotations

from datetime import date

import pytest

from varagity.graph.relative_dates import (
    annotate_line,
    annotate_transcript,
    as_written,
    named_dates,
)

WEDNESDAY = date(2026, 3, 4)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("He can come tomorrow.", "tomorrow (Thursday 2026-03-05)"),
        ("Lunch the day after tomorrow?", "the day after tomorrow (Friday 2026-03-06)"),
        ("I saw it yesterday.", "yesterday (Tuesday 2026-03-03)"),
        ("Dinner tonight?", "tonight (Wednesday 2026-03-04)"),
        ("Ride on Sunday?", "on Sunday (Sunday 2026-03-08)"),
        # today's weekday named alone is next week's
        ("See you Wednesday.", "Wednesday (Wednesday 2026-03-11)"),
        ("next Wednesday", "next Wednesday (Wednesday 2026-03-11)"),
        ("last Monday", "last Monday (Monday 2026-03-02)"),
        ("Monday the 23rd at 14:00", "Monday the 23rd (Monday 2026-03-23)"),
        ("by the 2nd", "the 2nd (Thursday 2026-04-02)"),
        # a month and day of the last half year is this year's
        ("Since Jan 18th", "Jan 18th (Sunday 2026-01-18)"),
        ("Potluck on Saturday April 4 at 19:00", "Saturday April 4 (Saturday 2026-04-04)"),
        ("Friday, 13 March works", "Friday, 13 March (Friday 2026-03-13)"),
    ],
)
def test_a_named_day_is_written_out_from_the_day_of_the_message(text: str, expected: str) -> None:
    assert expected in annotate_line(text, WEDNESDAY)


@pytest.mark.parametrize(
    "text",
    [
        "may 12 of us come?",  # "may" is a month only as "May"
        "The 13 of us.",  # a number is no day of the month without its ordinal
        "Friday the 14th",  # the 14th of March is a Saturday: no such day is named
        "It was yesterday (Tuesday 2026-03-03).",  # already written out
        "next week, at the weekend",  # no one day
    ],
)
def test_what_names_no_one_day_is_left_as_it_is(text: str) -> None:
    assert annotate_line(text, WEDNESDAY) == text


def test_a_month_and_day_more_than_half_a_year_back_is_next_years() -> None:
    assert "Jan 5th (Tuesday 2027-01-05)" in annotate_line("Party on Jan 5th!", date(2026, 12, 20))


def test_a_weekday_repeating_the_day_just_written_out_is_not_repeated() -> None:
    assert annotate_line("He can come tomorrow, Thursday, between 10 and 12.", WEDNESDAY) == (
        "He can come tomorrow (Thursday 2026-03-05), Thursday, between 10 and 12."
    )


def test_a_transcript_is_annotated_per_message_and_only_for_a_single_day() -> None:
    day = "[18:00] Tomas: Ride tomorrow?\n[18:01] Noor: Yes! At 9?\n"
    assert annotate_transcript(day, "2026-03-06") == (
        "[18:00] Tomas: Ride tomorrow (Saturday 2026-03-07)?\n[18:01] Noor: Yes! At 9?\n"
    )
    # the sender and clock are not read as days; a span of days is left alone
    assert annotate_transcript("[09:00] Sunday Adeyemi: hi", "2026-03-06") == (
        "[09:00] Sunday Adeyemi: hi"
    )
    assert annotate_transcript(day, "2026-03-06..2026-03-07") == day


def test_a_quote_of_the_annotated_transcript_maps_back_to_the_messages_as_written() -> None:
    day = (
        "[09:12] Maya: Booked TAP on June 14 and back tomorrow evening.\n"
        "[09:13] Sam: See you tomorrow then.\n"
    )
    annotated = annotate_transcript(day, "2024-06-10")
    assert annotated != day
    for line in day.splitlines():
        # each line, quoted with its written-out days, is the line as written
        note = annotated.split("\n")[day.splitlines().index(line)]
        start = annotated.index(note)
        a, b = as_written(annotated, day, start, start + len(note))
        assert day[a:b] == line
    # a quote ending inside a written-out day ends where the day was written in
    cut = annotated.index("(Tuesday") + 3
    a, b = as_written(annotated, day, 0, cut)
    assert day[a:b] == day[: day.index("tomorrow evening") + len("tomorrow")]
    assert as_written(day, day, 3, 9) == (3, 9)


def test_the_days_a_question_names_in_full_are_read_in_each_way_they_are_written() -> None:
    assert named_dates("What did Jennifer say on 20261022, and on 2026-04-28 at 5 PM?") == (
        date(2026, 10, 22),
        date(2026, 4, 28),
    )
    assert named_dates("groceries on April 15, 2026 or 3rd of May 2026") == (
        date(2026, 4, 15),
        date(2026, 5, 3),
    )
    # no year, no valid date, or an order number: no day
    assert named_dates("on April 15, order 20261341, invoice 12345678") == ()
