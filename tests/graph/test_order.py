"""Questions of order between two events of the chats, answered from their days."""

from __future__ import annotations

from varagity.graph.day_rank import DayIndex
from varagity.graph.order import find_order, messages_span, order_question, with_order
from varagity.graph.relative_dates import annotate_transcript
from varagity.graph.skeleton import Presence, Skeleton
from varagity.graph.types import DayCard, GraphRetrieval


def _day(thread: str, span: str, *lines: str) -> DayCard:
    return DayCard(f"{thread}::{span}", thread, span, "\n".join(lines))


DAYS = (
    _day("Adam", "2026-01-27", "[20:30] Adam Smith: Reminder: the rent is due on Sunday."),
    _day(
        "Adam",
        "2026-02-19",
        "[10:00] Li Hua: Could I put potted plants in the basement?",
        "[10:01] Adam Smith: Sure, the basement gets morning light.",
    ),
    _day(
        "Adam",
        "2026-03-01",
        "[09:00] Li Hua: I have transferred the rent for March.",
        "[09:02] Adam Smith: Received, thanks!",
    ),
    _day(
        "Maya",
        "2026-03-02",
        "[08:00] Maya Chen: Shall we decorate the basement for the party?",
        "[08:05] Li Hua: Yes, paper lanterns!",
    ),
)
PEOPLE = ("Adam Smith", "Li Hua", "Maya Chen")


def named_in(text: str) -> list[str]:
    return [p for p in PEOPLE if any(word in text for word in p.split())]


WRITERS = {
    "Adam::2026-01-27": {"Adam Smith"},
    "Adam::2026-02-19": {"Li Hua", "Adam Smith"},
    "Adam::2026-03-01": {"Li Hua", "Adam Smith"},
    "Maya::2026-03-02": {"Maya Chen", "Li Hua"},
}


def test_a_question_of_order_is_read_as_its_two_events() -> None:
    asked = order_question(
        "Did Adam send a reminder about the rent before Li Hua transferred the rent?"
    )
    assert asked is not None and asked.relation == "before"
    assert asked.first == "Adam send a reminder about the rent"
    assert asked.second == "Li Hua transferred the rent"
    # "after work today" is a time, not the second event; "before sleeping" neither
    # when a later "before" opens one
    dinner = order_question(
        "Did Wolfgang ask about pizza after work today before he suggested hot pot?"
    )
    assert dinner is not None and dinner.second == "he suggested hot pot"
    assert dinner.first == "Wolfgang ask about pizza after work today"
    shower = order_question(
        "Did Chae say a warm shower before sleeping helps before sharing the article?"
    )
    assert shower is not None and shower.second == "sharing the article"
    for other in ("When did Adam remind Li Hua about the rent?", "Who came after Maya?"):
        assert order_question(other) is None


def test_the_order_is_computed_from_the_days_the_events_were_written() -> None:
    index = DayIndex(DAYS)
    asked = order_question(
        "Did Adam send a reminder about the rent due before Li Hua transferred the rent?"
    )
    assert asked is not None
    finding = find_order(asked, index, WRITERS, named_in)
    assert finding is not None and finding.holds
    assert [d.span for d in finding.days] == ["2026-01-27", "2026-03-01"]
    assert finding.answer().startswith("Yes. The first was written on Tuesday 2026-01-27 [1]")
    # asked the other way round, the same days answer no
    flipped = order_question(
        "Did Adam send a reminder about the rent due after Li Hua transferred the rent?"
    )
    assert flipped is not None
    other = find_order(flipped, index, WRITERS, named_in)
    assert other is not None and not other.holds and other.answer().startswith("No.")


def test_an_event_not_found_clearly_leaves_the_question_to_the_model() -> None:
    asked = order_question("Did Adam fix the heating before Li Hua paid for the new fridge?")
    assert asked is not None
    assert find_order(asked, DayIndex(DAYS), WRITERS, named_in) is None


def test_the_events_days_are_the_first_cards_and_the_answer_is_computed() -> None:
    skeleton = Skeleton(
        tuple(
            Presence(person, key.split("::")[0], key.split("::")[0], key.split("::")[1])
            for key, people in WRITERS.items()
            for person in sorted(people)
        )
    )
    question = (
        "Did Li Hua ask about potted plants in the basement before Maya asked to "
        "decorate the basement?"
    )
    found = GraphRetrieval(days=(DAYS[3], DAYS[0]))
    ordered = with_order(found, question, DayIndex(DAYS), skeleton, keep=3)
    assert ordered.computed is not None and ordered.computed.text.startswith("Yes.")
    assert [d.span for d in ordered.days] == ["2026-02-19", "2026-03-02", "2026-01-27"]
    assert ordered.computed.quoted[0] == (1, "\n".join(DAYS[1].excerpt.splitlines()[:2]))
    # a question of no order is left as it was
    assert with_order(found, "Where is the basement?", DayIndex(DAYS), skeleton, 3) == found


def test_the_messages_are_found_in_a_transcript_with_days_written_in() -> None:
    text = "[09:00] Li Hua: Rent due tomorrow?\n[09:02] Adam Smith: Yes, tomorrow."
    annotated = "Messages in Adam on Sunday 2026-03-01:\n" + annotate_transcript(text, "2026-03-01")
    start, end = messages_span(annotated, text) or (0, 0)
    assert annotated[start:end].startswith("[09:00] Li Hua: Rent due tomorrow (Monday")
    assert annotated[start:end].endswith("Yes, tomorrow (Monday 2026-03-02).")
    assert messages_span(annotated, "[10:00] Maya: hi") is None


def test_how_far_apart_two_events_were_is_counted_in_days() -> None:
    index = DayIndex(DAYS)
    how_long = order_question(
        "How many days passed between Adam sending a reminder about the rent due and "
        "Li Hua transferring the rent?"
    )
    assert how_long is not None and how_long.relation == "apart" and how_long.than is None
    finding = find_order(how_long, index, WRITERS, named_in)
    assert finding is not None and finding.apart == 33
    assert finding.answer().startswith("33 days: the first was written on Tuesday 2026-01-27 [1]")
    more = order_question(
        "Is the time interval more than 30 days between Adam sending a reminder about "
        "the rent due and Li Hua transferring the rent?"
    )
    assert more is not None and more.than == ("more", 30)
    found = find_order(more, index, WRITERS, named_in)
    assert found is not None and found.answer().startswith("Yes. They were 33 days apart")
    less = order_question(
        "Is the gap less than five days between Adam sending a reminder about the rent due "
        "and Li Hua transferring the rent?"
    )
    assert less is not None
    found = find_order(less, index, WRITERS, named_in)
    assert found is not None and found.answer().startswith("No. They were 33 days apart")
