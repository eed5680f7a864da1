"""Day cards ranked again by their messages, fused with the engine's order."""

from __future__ import annotations

from varagity.graph.day_rank import DayIndex, rank_days, with_message_days, with_named_days
from varagity.graph.types import DayCard, GraphRetrieval


def _day(span: str, *lines: str) -> DayCard:
    return DayCard(f"chat::{span}", "Adam Smith", span, "\n".join(lines))


DAYS = (
    _day("2026-01-05", "[09:00] Li Hua: Hey Adam! Arriving on the 7th.", "[09:01] Adam: Great."),
    _day("2026-01-27", "[20:30] Adam: A reminder: the rent is due soon."),
    _day("2026-01-09", "[19:00] Li Hua: I broke a light fixture.", "[19:02] Adam: I'll fix it."),
    _day(
        "2026-01-06",
        "[09:00] Li Hua: What's the Wi-Fi password, and are there house rules?",
        "[09:05] Adam: The password is Family123. Keep noise down late at night.",
    ),
)


def test_a_day_whose_messages_answer_rises_in_the_engines_order() -> None:
    question = "What is the Wi-Fi password at Li Hua's house?"
    scores = DayIndex(DAYS).scores(question)
    assert max(scores, key=scores.__getitem__) == DAYS[3].doc_key
    # the engine's last is second: fused with the engine's first (whose messages name
    # Li Hua too), ahead of days neither ranking puts first
    ranked = rank_days(question, DAYS, 2)
    assert [d.span for d in ranked] == ["2026-01-05", "2026-01-06"]


def test_the_engines_order_stands_when_the_messages_tell_nothing_apart() -> None:
    ranked = rank_days("What happened in spring?", DAYS, 4)
    assert ranked == DAYS


def test_a_pair_of_messages_counts_together_the_question_and_its_reply() -> None:
    # "password" is asked on one line and "Family123" given on the next: the pair
    # holds more of "what is the password Adam gave" than either line alone
    question = "Which Wi-Fi password did Adam give?"
    [only] = DayIndex(DAYS[3:]).scores(question).values()
    lines = DAYS[3].excerpt.splitlines()
    alone = max(
        DayIndex([_day(f"2026-01-0{n}", line) for n, line in enumerate(lines, start=6)])
        .scores(question)
        .values()
    )
    assert only > alone


def test_keep_bounds_the_days_returned() -> None:
    assert len(rank_days("rent", DAYS, 1)) == 1
    assert rank_days("rent", (), 3) == ()


def test_the_days_the_engine_missed_are_found_by_their_messages() -> None:
    index = DayIndex(DAYS)
    question = "What is the Wi-Fi password at Li Hua's house?"
    assert [d.span for d in index.best(question, 1)] == ["2026-01-06"]
    assert index.best("tennis racket", 3) == []  # no message holds any of it
    # the engine found two other days: the one the messages point at is added after them
    found = GraphRetrieval(days=DAYS[:2])
    more = with_message_days(found, index, question, 2)
    assert [d.span for d in more.days[:2]] == ["2026-01-05", "2026-01-27"]
    assert "2026-01-06" in [d.span for d in more.days[2:]]
    # ... and ranked with the engine's days, it is kept ahead of the engine's second
    # (its messages, weighed over the whole archive, hold the question best)
    ranked = rank_days(question, more.days, 2, index)
    assert [d.span for d in ranked] == ["2026-01-05", "2026-01-06"]


def test_a_day_the_engine_found_is_not_added_twice() -> None:
    index = DayIndex(DAYS)
    found = GraphRetrieval(days=DAYS)
    assert with_message_days(found, index, "Wi-Fi password", 4) == found


def test_a_day_the_question_names_comes_first_whatever_the_rankings_say() -> None:
    index = DayIndex(DAYS)
    found = GraphRetrieval(days=DAYS[:2])
    # the rent day's messages hold nothing of the question, and no ranking found it
    question = "Why does Adam reach out to Li Hua on 20260109?"
    named = with_named_days(found, index, question, 2)
    assert [d.span for d in named.days] == ["2026-01-09", "2026-01-05"]
    assert (
        with_named_days(found, index, "What did Adam say on January 9, 2026?", 3).days[0]
        == (DAYS[2])
    )
    # a question naming no day, or a day the archive does not hold, leaves it as it was
    assert with_named_days(found, index, question.replace("20260109", "today"), 2) == found
    assert with_named_days(found, index, "What happened on 20260301?", 2) == found
