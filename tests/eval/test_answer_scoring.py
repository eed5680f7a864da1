"""The answer scorer on hand-made answers: facts, abstention, citations, the summary."""

from __future__ import annotations

import pytest

from varagity.eval.answer_scoring import (
    cited,
    facts_found,
    is_abstention,
    normalize,
    score_answer,
    summarize,
)

KETTLE = (
    "Every Tern K2 carries a warranty of 27 months from the date of purchase. The "
    "warranty covers the heating element and the electronics, but not the glass water window."
)
TOASTER = "The Heron T4 carries a warranty of 18 months from the date of purchase."
SOUP = "Add the lentils and the stock; simmer for 25 minutes until the lentils fall apart."
WARRANTY = [["27 months", "twenty-seven months"]]
LOOP = "The warranty is 27 months [1]. " + "The Kestrel is a FastAPI application with routes. " * 4


def test_normalize_folds_case_dashes_separators_and_degrees() -> None:
    assert normalize("  Twenty-Seven\u00a0MONTHS ") == "twenty seven months"
    assert normalize("38,000 euros") == "38000 euros"
    assert normalize("220°C for **12** min") == "220 °c for 12 min"


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("The warranty is 27 months.", True),
        ("It lasts twenty-seven months [1].", True),
        ("A 27-month warranty.", True),  # hyphen and singular
        ("It is 27 MONTHS long", True),
        ("It is 127 months long", False),  # not inside a longer number
        ("It is 27 monthsish", False),  # not inside a longer word
        ("It is 18 months.", False),
    ],
)
def test_a_fact_is_found_as_whole_words(text: str, found: bool) -> None:
    assert facts_found(WARRANTY, text) == [found]


def test_numbers_with_separators_and_units_match() -> None:
    facts = [["38,000 euros"], ["220 °C"], ["02:00"]]
    assert facts_found(facts, "A budget of 38000 euros, baked at 220°C, at 02:00.") == [
        True,
        True,
        True,
    ]
    assert facts_found([["2:00"]], "uploads at 02:00") == [False]


@pytest.mark.parametrize(
    "text",
    [
        "The documents do not say.",
        "The provided sources don't mention the colour of the kettle.",
        "I could not find anything about this in the indexed documents.",
        "There is no information about the CEO in the sources.",
        "The payload is not specified in the documents.",
    ],
)
def test_abstentions_are_recognised(text: str) -> None:
    assert is_abstention(text)


@pytest.mark.parametrize(
    "text",
    [
        "The warranty does not cover the glass water window [1].",
        "The K2 warranty is 27 months [1].",
    ],
)
def test_plain_answers_are_not_abstentions(text: str) -> None:
    assert not is_abstention(text)


def test_correct_cited_answer_scores_full() -> None:
    score = score_answer(
        "s01", "The Tern K2 has a warranty of 27 months [1].", [KETTLE, TOASTER], facts=WARRANTY
    )
    assert score.fact_share == 1.0
    assert score.citation_validity == 1.0
    assert not score.abstained and score.abstention_correct
    assert [(c.n, c.reason) for c in score.citations] == [(1, "supported")]


def test_wrong_answer_citing_the_near_miss_passage() -> None:
    # the toaster's 18 months, cited to the toaster passage: grounded in that passage
    # (no key fact stated, content words and the number are there), but wrong
    score = score_answer(
        "s01", "The warranty lasts 18 months from purchase [2].", [KETTLE, TOASTER], facts=WARRANTY
    )
    assert score.fact_share == 0.0
    assert score.citation_validity == 1.0


def test_partial_answer_gets_the_share_of_facts_found() -> None:
    facts = [["3 days", "three days"], ["2 months", "two months"]]
    score = score_answer("s11", "It keeps for three days in the fridge [1].", [SOUP], facts=facts)
    assert score.facts == (True, False)
    assert score.fact_share == 0.5


def test_uncited_answer_has_zero_citation_validity() -> None:
    score = score_answer("s01", "The warranty is 27 months.", [KETTLE], facts=WARRANTY)
    assert score.fact_share == 1.0
    assert score.citations == ()
    assert score.citation_validity == 0.0


def test_citation_to_a_passage_lacking_the_fact_is_invalid() -> None:
    score = score_answer("s01", "The warranty is 27 months [2].", [KETTLE, TOASTER], facts=WARRANTY)
    (check,) = score.citations
    assert (check.n, check.valid, check.reason) == (2, False, "fact missing")
    assert score.citation_validity == 0.0


def test_out_of_range_citation_is_invalid() -> None:
    score = score_answer(
        "s01", "The warranty is 27 months [1][3].", [KETTLE, TOASTER], facts=WARRANTY
    )
    assert [(c.n, c.reason) for c in score.citations] == [(1, "supported"), (3, "out of range")]
    assert score.citation_validity == 0.5


def test_unsupported_claim_without_facts_is_invalid() -> None:
    # no key fact stated: the content-word rule decides; a number absent from the
    # passage is never supported, and neither is a claim sharing too few words with it
    facts = [["Kestrel"]]
    invented = score_answer("q", "The warranty lasts 31 months [1].", [KETTLE], facts=facts)
    assert [c.reason for c in invented.citations] == ["number missing"]
    unrelated = score_answer("q", "Simmer the lentils gently [1].", [KETTLE], facts=facts)
    assert [c.reason for c in unrelated.citations] == ["low overlap"]


def test_citations_after_the_full_stop_and_on_their_own_line_belong_to_the_sentence() -> None:
    answer = "The warranty is 27 months.[1] Simmer for 25 minutes. [2]\n[2, 1]"
    assert cited(answer) == [1, 2, 2, 1]
    score = score_answer("q", answer, [KETTLE, SOUP], facts=WARRANTY)
    verdicts = [(c.n, c.valid) for c in score.citations]
    assert verdicts == [(1, True), (2, True), (2, True), (1, False)]
    assert score.citations[1].claim == "Simmer for 25 minutes."


def test_abstention_on_an_unanswerable_question_is_right() -> None:
    score = score_answer(
        "u01", "The documents do not say what colours the K2 comes in.", [KETTLE], answerable=False
    )
    assert score.abstained and score.abstention_correct


def test_answering_an_unanswerable_question_is_wrong() -> None:
    score = score_answer("u01", "The K2 comes in red and blue [1].", [KETTLE], answerable=False)
    assert not score.abstained and not score.abstention_correct


def test_abstaining_but_stating_a_trap_is_wrong() -> None:
    score = score_answer(
        "u03",
        "The documents do not say; the generator delivers 4.2 megawatts [1].",
        [KETTLE],
        answerable=False,
        traps=[["4.2"]],
    )
    assert score.abstained and score.traps == (True,)
    assert not score.abstention_correct


def test_abstaining_on_an_answerable_question_is_wrong() -> None:
    score = score_answer("s01", "The documents do not say.", [KETTLE], facts=WARRANTY)
    assert score.abstained and not score.abstention_correct
    assert score.fact_share == 0.0


def test_an_answer_stating_the_fact_is_no_abstention() -> None:
    # "is not mentioned" about a side detail, while the key fact is there
    score = score_answer(
        "s01",
        "The warranty is 27 months [1]; the cost of a claim is not mentioned.",
        [KETTLE],
        facts=WARRANTY,
    )
    assert not score.abstained and score.abstention_correct


def test_looping_answer_is_counted_and_a_cut_one_too() -> None:
    looping = score_answer("s01", LOOP, [KETTLE], facts=WARRANTY)
    assert looping.looped
    assert looping.fact_share == 1.0  # the loop is counted apart from correctness
    clean = "The warranty is 27 months [1]."
    assert not score_answer("s01", clean, [KETTLE], facts=WARRANTY).looped
    # the stream's guard already cut the loop off: the text is clean, the flag counts it
    assert score_answer("s01", clean, [KETTLE], facts=WARRANTY, looped=True).looped


def test_summary_over_a_mixed_set() -> None:
    passages = [KETTLE, TOASTER]
    scores = [
        score_answer("good", "It is 27 months [1].", passages, facts=WARRANTY),
        score_answer("uncited", "It is 27 months.", passages, facts=WARRANTY),
        score_answer("wrong", "It is 18 months [2].", passages, facts=WARRANTY),
        score_answer("loop", LOOP, passages, facts=WARRANTY),
        score_answer("abstain", "The documents do not say.", passages, answerable=False),
        score_answer("invent", "It is blue [1].", passages, answerable=False),
    ]
    summary = summarize(scores)
    assert summary.n == 6 and summary.n_answerable == 4
    assert summary.answer_correctness == pytest.approx(3 / 4)
    assert summary.fully_correct == pytest.approx(3 / 4)
    assert summary.citation_validity == pytest.approx((1 + 0 + 1 + 1) / 4)
    assert summary.cited_share == pytest.approx(3 / 4)
    assert summary.abstention_accuracy == pytest.approx(5 / 6)
    assert summary.abstained_when_unanswerable == pytest.approx(1 / 2)
    assert summary.false_abstentions == 0
    assert summary.loops == 1
    assert summary.failing["answer_correctness"] == ["wrong"]
    assert summary.failing["citation_validity"] == ["uncited"]
    assert summary.failing["abstention_accuracy"] == ["invent"]
    assert summary.failing["loops"] == ["loop"]


def test_a_question_without_facts_is_judged_by_citing_the_marked_passage() -> None:
    # a feedback question: the user marked the kettle manual's passage as the answer
    relevant = [("kettle.md", KETTLE)]
    sources = ["soup.txt", "kettle.md"]
    passages = [SOUP, "# Kettle\n\n" + KETTLE]

    def verdict(answer: str, **kw: object) -> tuple[bool | None, bool]:
        s = score_answer("fb-1", answer, passages, relevant=relevant, sources=sources, **kw)  # type: ignore[arg-type]
        return s.relevant_cited, s.passed

    assert verdict("The warranty lasts 27 months [2].") == (True, True)
    assert verdict("Simmer it for 25 minutes [1].") == (False, False)  # the wrong passage
    assert verdict("The warranty lasts 27 months.") == (False, False)  # nothing cited
    assert verdict("The documents do not say [2].") == (True, False)  # abstained
    # the same passage from another file does not count
    assert (
        score_answer(
            "fb-1",
            "It is 27 months [2].",
            passages,
            relevant=[("other.md", KETTLE)],
            sources=sources,
        ).relevant_cited
        is False
    )
    # key facts keep the fact rule; unanswerable questions pass by abstaining
    with_facts = score_answer("s", "27 months [2].", passages, facts=WARRANTY, relevant=relevant)
    assert with_facts.relevant_cited is None and with_facts.passed
    none = score_answer("fb-2", "The documents do not say.", passages, answerable=False)
    assert none.relevant_cited is None and none.passed
    summary = summarize(
        [
            score_answer("a", "It is 27 months [2].", passages, relevant=relevant, sources=sources),
            score_answer("b", "It is 27 months.", passages, relevant=relevant, sources=sources),
            none,
        ]
    )
    assert summary.pass_rate == pytest.approx(2 / 3)
    assert summary.failing["pass_rate"] == ["b"]


def test_false_abstentions_count_only_where_the_passages_held_the_answer() -> None:
    shown = score_answer("s01", "The documents do not say.", [KETTLE], facts=WARRANTY)
    missing = score_answer("s01", "The documents do not say.", [TOASTER], facts=WARRANTY)
    right = score_answer("s01", "It is 27 months [1].", [KETTLE], facts=WARRANTY)
    assert shown.false_abstention and not missing.false_abstention  # a retrieval miss
    assert not right.false_abstention
    invented = score_answer("u01", "It is 12 months [1].", [KETTLE], answerable=False)
    declined = score_answer("u01", "The documents do not say.", [KETTLE], answerable=False)
    assert invented.missed_abstention and not declined.missed_abstention
    summary = summarize([shown, missing, right, invented, declined])
    assert summary.false_abstentions == 2  # both abstained answerable questions
    assert summary.false_abstention_rate == 0.5  # of the two whose passages held it
    assert summary.failing["false_abstention_rate"] == ["s01"]
    assert summary.missed_abstentions == 1
