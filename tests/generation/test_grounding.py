"""Attributed citations: support scores, the attribution rule and the streaming form."""

from __future__ import annotations

import random

import pytest

from varagity.generation.answer import cited_numbers
from varagity.generation.grounding import (
    CITE_SUPPORT,
    CitationStream,
    Evidence,
    attribute,
    attribute_answer,
    content_words,
    is_abstention,
    normalize,
)

PASSAGES = [
    "Every Tern K2 kettle carries a warranty of 27 months from the date of purchase.",
    "The Tern K1 kettle holds 1.7 litres and carries a warranty of 12 months.",
    "Red lentil soup keeps for 4 days in the fridge and freezes well.",
]


def test_content_words_normalise_numbers_plurals_and_stopwords() -> None:
    words = content_words(normalize("The 38,000 Kettles of the TK-20 range hold 1.7 litres"))
    assert words == {"38000", "kettle", "tk", "20", "range", "hold", "1.7", "litre"}


def test_a_number_the_passage_lacks_rules_it_out() -> None:
    scores = Evidence(PASSAGES).support_scores("The Tern K2 warranty lasts 12 months.")
    assert scores[0] == 0.0  # passage 1 says 27, not 12
    assert scores[1] > CITE_SUPPORT  # passage 2 states 12 months and a warranty


def test_rare_words_count_more_than_the_shared_subject() -> None:
    evidence = Evidence(PASSAGES)
    assert evidence.weight("kettle") < evidence.weight("soup")  # two passages vs one
    assert evidence.weight("purple") > evidence.weight("soup")  # in no passage at all


def test_attribution_cites_the_supporting_passage_and_corrects_the_model() -> None:
    evidence = Evidence(PASSAGES)
    assert attribute("The Tern K2 has a warranty of 27 months", evidence) == [1]
    assert attribute("The soup keeps for 4 days", evidence, model_cited=[1]) == [3]
    assert attribute("The soup keeps for 4 days in the fridge", evidence, [3]) == [3]
    assert attribute("The kettle is purple and made in Norway", evidence) == []
    assert attribute("The documents do not say.", evidence) == []
    assert attribute("Yes.", evidence) == []
    assert attribute("27 months", Evidence([])) == []


def test_markers_are_placed_before_the_full_stop_and_wrong_ones_go() -> None:
    answer = (
        "The Tern K2 has a warranty of 27 months [2]. The soup keeps 4 days.[1]\nIt is purple [3]."
    )
    assert attribute_answer(answer, PASSAGES) == (
        "The Tern K2 has a warranty of 27 months [1]. The soup keeps 4 days [3].\nIt is purple."
    )


def test_a_marker_the_sentence_mentions_stays_in_place() -> None:
    answer = "According to [1], the soup keeps for 4 days."
    assert attribute_answer(answer, PASSAGES) == (
        "According to [1], the soup keeps for 4 days [3]."
    )
    # a passage the sentence already names is not cited a second time
    named = "The soup keeps for 4 days, as stated in [3]."
    assert attribute_answer(named, PASSAGES) == named


def test_code_and_abbreviations_are_left_alone() -> None:
    answer = "Use `a[1]` here. It holds 1.7 litres, e.g. the Tern K1 kettle."
    out = attribute_answer(answer, PASSAGES)
    assert "`a[1]`" in out
    assert out.endswith("e.g. the Tern K1 kettle [2].")
    fenced = "```py\nx = [1]\n```\nThe K1 warranty is 12 months"
    assert attribute_answer(fenced, PASSAGES) == fenced + " [2]"


@pytest.mark.parametrize(
    "answer",
    [
        "The Tern K2 [1] has a warranty of 27 months. [1] The K1 holds 1.7 litres, e.g. a lot.",
        "- 27 months of warranty\n- soup: 4 days\n[1]\n",
        "Use `k[2]` and [see notes]. The documents do not say.",
        "According to [2], the K1 holds 1.7 litres. See [3] for soup.",
        "```\ncode [1]\n```\nThe soup freezes well",
    ],
)
def test_the_stream_shows_a_prefix_of_the_final_text_however_it_is_cut(answer: str) -> None:
    final = attribute_answer(answer, PASSAGES)
    rng = random.Random(7)
    for _ in range(50):
        stream = CitationStream(PASSAGES)
        shown = ""
        i = 0
        while i < len(answer):
            size = rng.randint(1, 5)
            piece = stream.feed(answer[i : i + size])
            shown += piece
            assert final.startswith(shown)
            i += size
        shown += stream.finish()
        assert shown == stream.text == final


def test_the_stream_holds_only_markers_and_closing_punctuation() -> None:
    stream = CitationStream(PASSAGES)
    assert stream.feed("The Tern K2 warranty is 27 months") == "The Tern K2 warranty is 27 months"
    assert stream.feed(" [") == ""
    assert stream.feed("2].") == ""
    assert stream.feed(" Next") == " [1]. Next"
    assert stream.finish() == ""
    assert cited_numbers(stream.text, len(PASSAGES)) == [1]


def test_an_answer_is_unsupported_when_no_sentence_is() -> None:
    def verdict(answer: str) -> bool:
        stream = CitationStream(PASSAGES)
        stream.feed(answer)
        stream.finish()
        return stream.unsupported

    assert verdict("The kettle is purple. It was made in Norway.")
    assert not verdict("The kettle is purple. The soup keeps for 4 days.")
    assert not verdict("The documents do not say.")
    assert not verdict("")


def test_abstention_phrasings() -> None:
    assert is_abstention("The documents do not say.")
    assert is_abstention("I could not find that in the sources.")
    assert not is_abstention("The warranty is 27 months.")
