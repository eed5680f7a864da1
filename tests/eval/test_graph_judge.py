"""The offline judge of graph answers: yes/no golds, content golds, null golds, and the
readings that decide them (abstention, polarity, units)."""

from __future__ import annotations

import pytest

from varagity.eval.graph_judge import (
    abstains,
    answer_polarity,
    gold_polarity,
    gold_units,
    judge,
    normal_form,
    units,
)
from varagity.generation.quotes import EXTRACT_LEAD

ORDER = "Did Noor report the leaking kitchen tap before she told Kofi about the hallway light?"
PLUMBER = "When did Kofi say the plumber would come to fix the kitchen tap?"
PLUMBER_GOLD = "Thursday, March 5, between 10 and 12"


# --- yes / no ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("gold", "expected"),
    [("Yes", "yes"), ("No", "no"), ("no.", "no"), ("Yes, on March 4", "yes"), ("No one", None)],
)
def test_gold_polarity(gold: str, expected: str | None) -> None:
    assert gold_polarity(gold) == expected


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("Yes, she reported the tap on 2026-03-04 [1].", "yes"),
        ("No [2]. Tomas proposed the loop after the ride.", "no"),
        ("That is correct: the tap came first [1].", "yes"),
        ("Dev did not ask Noor after the supper [1].", "no"),
        ("Dev didn't ask her then.", "no"),
        ("Noor reported the tap on March 4 [1].", None),  # no yes/no word, no negation
        ("No one suggested it.", None),  # "no one" is not a no
        # the first yes/no word decides, not a later negation
        ("Yes. Tomas did not come on the ride.", "yes"),
        # a negation only counts in the first sentence
        ("Noor wrote on March 4. She was not sure of the light.", None),
    ],
)
def test_answer_polarity(answer: str, expected: str | None) -> None:
    assert answer_polarity(answer) == expected


def test_yes_no_right_wrong_and_missing_polarity() -> None:
    right = judge(ORDER, "Yes", "Yes [1][2]. She wrote about the tap first.", answerable=True)
    assert (right.outcome, right.rule, right.polarity) == ("right", "yes_no", "yes")
    wrong = judge(ORDER, "Yes", "No, the light came first [2].", answerable=True)
    assert (wrong.outcome, wrong.polarity) == ("wrong", "no")
    negated = judge(ORDER, "No", "Noor did not report the tap before that [1].", answerable=True)
    assert negated.outcome == "right"
    # a statement without a yes or a no answers another question: wrong, not no-info
    listed = judge(ORDER, "Yes", "Noor wrote on 2026-03-04 and 2026-03-17 [1][2].", answerable=True)
    assert (listed.outcome, listed.polarity) == ("wrong", None)


def test_yes_no_abstention_is_no_information() -> None:
    verdict = judge(ORDER, "No", "The documents do not say.", answerable=True)
    # "do not" would read as a "no", but an abstention is judged first
    assert (verdict.outcome, verdict.abstained) == ("no_info", True)


# --- content ------------------------------------------------------------------------


def test_normal_form_makes_spellings_alike() -> None:
    assert units("Thursday, March 5th") == units("thursday 2026-03-05") == {"thursday", "dt0305"}
    assert units("5 March") == units("Mar. 5") == units("20260305") == {"dt0305"}
    assert units("€28") == units("28 euros") == units("28 EUR") == {"28", "euro"}
    assert units("nineteen days") == units("19 days") == {"19", "day"}
    assert units("twenty-one") == {"21"}
    assert units("2 pm") == units("14:00") == units("14") == {"14"}
    assert units("10:30") == {"10:30"}
    assert units("JakeWatson") == units("Jake Watson") == {"jake", "watson"}
    assert units("the cardamom buns [2]") == units("Cardamom bun") == {"cardamom", "bun"}
    assert normal_form("1,200 people") == "1200 people"


def test_gold_units_leave_out_what_the_question_says() -> None:
    question = "What does Li Hua agree to bring to the bonfire party?"
    assert gold_units("Li Hua will bring his guitar", question) == {"guitar"}
    # when the gold only repeats the question, all of it counts
    assert gold_units("the bonfire party", question) == {"bonfir", "parti"}


def test_content_right_needs_half_the_units_and_every_number() -> None:
    full = judge(
        PLUMBER,
        PLUMBER_GOLD,
        "Kofi said the plumber comes on Thursday 2026-03-05 between 10:00 and 12:00 [1].",
        answerable=True,
    )
    assert (full.outcome, full.share) == ("right", 1.0)
    assert full.missing == ()
    # the day is right but the hours are not there: numbers are all required
    partial = judge(PLUMBER, PLUMBER_GOLD, "On Thursday, March 5 [1].", answerable=True)
    assert partial.outcome == "wrong"
    assert partial.missing == ("10", "12")
    assert partial.share == 0.5
    # a neighbouring day is wrong
    other_day = judge(
        PLUMBER, PLUMBER_GOLD, "Wednesday 2026-03-04, between 10 and 12 [1].", answerable=True
    )
    assert other_day.outcome == "wrong"
    assert "dt0305" in other_day.missing


def test_content_share_threshold() -> None:
    question = "Who is joining the ride, and what is he borrowing?"
    gold = "Dev; a helmet"
    assert judge(question, gold, "Dev is joining [1].", answerable=True).outcome == "right"
    assert judge(question, gold, "Sara is joining [1].", answerable=True).outcome == "wrong"
    long_gold = "Hailey wants help gathering feedback from customers at the tasting event"
    q = "What does Hailey want Li Hua to help with at the bakery?"
    half = judge(q, long_gold, "Gathering customer feedback at the tasting.", answerable=True)
    assert half.outcome == "right"
    assert half.share is not None and 0.5 <= half.share < 1
    few = judge(q, long_gold, "Baking bread for the event.", answerable=True)
    assert few.outcome == "wrong"


def test_content_money_and_names() -> None:
    q = "How much does the set menu at Tbilisi Corner cost per person?"
    assert judge(q, "28 euros", "It costs €28 a head [1].", answerable=True).outcome == "right"
    assert judge(q, "28 euros", "It costs €26 a head [1].", answerable=True).outcome == "wrong"
    who = "Who reminds everyone to drink water?"
    assert judge(who, "JakeWatson", "Jake does [1].", answerable=True).outcome == "right"


def test_a_trailing_abstention_sentence_is_not_judged() -> None:
    q = "What is Ingrid bringing to the potluck?"
    verdict = judge(
        q,
        "Cardamom buns",
        "Ingrid is bringing cardamom buns [1]. The documents do not say how many.",
        answerable=True,
    )
    assert (verdict.outcome, verdict.abstained) == ("right", False)


def test_answerable_abstentions_and_empty_answers_are_no_information() -> None:
    for text in (
        "The documents do not say.",
        f"{EXTRACT_LEAD} The passage closest to the question [1]: “Plumber on Thursday 10-12”",
        "I could not find when the plumber comes.",
    ):
        verdict = judge(PLUMBER, PLUMBER_GOLD, text, answerable=True)
        assert (verdict.outcome, verdict.abstained) == ("no_info", True), text
    empty = judge(PLUMBER, PLUMBER_GOLD, "  ", answerable=True)
    assert (empty.outcome, empty.abstained) == ("no_info", False)


# --- null -----------------------------------------------------------------------------


def test_null_gold_wants_an_abstention() -> None:
    q = "On which floor does Ingrid live?"
    gold = "Insufficient information"
    for text in (
        "The documents do not say.",
        "There is no information about Ingrid's floor.",
        f"{EXTRACT_LEAD} The passage closest to the question [1]: “Ingrid: third floor”",
    ):
        verdict = judge(q, gold, text, answerable=False)
        assert (verdict.outcome, verdict.rule, verdict.abstained) == ("right", "null", True)
    invented = judge(q, gold, "Ingrid lives on the third floor [1].", answerable=False)
    assert (invented.outcome, invented.abstained) == ("wrong", False)
    # an abstention after an invented answer does not save it: the first sentence decides
    late = judge(q, gold, "The third floor [1]. The documents do not say more.", answerable=False)
    assert late.outcome == "wrong"
    assert judge(q, gold, "", answerable=False).outcome == "no_info"


def test_abstains_reads_the_first_sentence_only() -> None:
    assert abstains("The documents do not say. Try asking Kofi.")
    assert abstains("No information about that [1].")
    assert not abstains("Tbilisi Corner [1]. The documents do not say when.")
    assert not abstains("")


def test_verdict_to_dict() -> None:
    verdict = judge(PLUMBER, PLUMBER_GOLD, "On Thursday, March 5 [1].", answerable=True)
    out = verdict.to_dict()
    assert out["outcome"] == "wrong"
    assert out["missing"] == ["10", "12"]
    assert out["share"] == 0.5
    assert "polarity" not in out
    assert judge(ORDER, "Yes", "Yes.", answerable=True).to_dict()["polarity"] == "yes"


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        # restating the question is a yes
        (
            "Noor reported the leaking kitchen tap before she told Kofi about the hallway "
            "light [1].",
            "yes",
        ),
        (
            "Noor reported the leaking kitchen tap earlier than she told Kofi about the light.",
            "yes",
        ),
        # restating it with the order swapped is a no
        (
            "Noor reported the leaking kitchen tap after she told Kofi about the hallway light.",
            "no",
        ),
        ("Noor told Kofi about the hallway light later than the leaking kitchen tap.", "no"),
        # too little of the question to be a restatement
        ("Noor wrote to Kofi on 2026-03-04 [1].", None),
    ],
)
def test_a_restatement_of_the_question_is_a_yes_unless_it_swaps_the_order(
    answer: str, expected: str | None
) -> None:
    assert answer_polarity(answer, ORDER) == expected
    assert answer_polarity(answer) in (None, "no")  # without the question: no restatement
