"""The chunker-independent scorer on hand-made passages and chunks."""

from __future__ import annotations

import pytest

from varagity.eval.scoring import (
    Passage,
    QueryScore,
    RetrievedText,
    coverage,
    found_rank,
    mrr_at_k,
    normalize,
    pass_at_k,
    percentile,
    score_query,
    union_length,
)

# 100 characters without whitespace (so cut points never fall on a stripped space)
PASSAGE = (
    "The_Tern_K2_carries_a_warranty_of_27_months._Claims_go_to_service_"
    "with_the_receipt_and_the_serial_no."
)[:100]


def test_normalize_collapses_whitespace() -> None:
    assert normalize("  a\n\tb   c \n") == "a b c"


def test_exact_match_is_found_at_its_rank() -> None:
    assert len(PASSAGE) == 100
    retrieved = [RetrievedText("a.md", "unrelated text " * 5), RetrievedText("a.md", PASSAGE)]
    assert found_rank(Passage("a.md", PASSAGE), retrieved) == 2


def test_whitespace_differences_do_not_matter() -> None:
    chunk = PASSAGE[:50] + "\n  \t" + PASSAGE[50:]
    passage = PASSAGE[:50] + " " + PASSAGE[50:]
    assert found_rank(Passage("a.md", passage), [RetrievedText("a.md", chunk)]) == 1


def test_fifty_percent_boundary() -> None:
    half = PASSAGE[:50]
    below = PASSAGE[:49]
    assert coverage(PASSAGE, [half]) == pytest.approx(0.5)
    assert found_rank(Passage("a.md", PASSAGE), [RetrievedText("a.md", half)]) == 1
    assert found_rank(Passage("a.md", PASSAGE), [RetrievedText("a.md", below)]) is None


def test_blocks_shorter_than_twenty_characters_are_ignored() -> None:
    # pieces of 19 characters separated by noise: each block is too short to count
    pieces = [PASSAGE[i : i + 19] for i in range(0, 95, 19)]
    chunk = " ~#~ ".join(pieces)
    assert coverage(PASSAGE, [chunk]) == 0.0
    assert found_rank(Passage("a.md", PASSAGE), [RetrievedText("a.md", chunk)]) is None
    # the same pieces at 20 characters each count
    pieces20 = [PASSAGE[i : i + 20] for i in range(0, 100, 20)]
    assert coverage(PASSAGE, [" ~#~ ".join(pieces20)]) == pytest.approx(1.0)


def test_wrong_rel_source_is_ignored() -> None:
    retrieved = [RetrievedText("b.md", PASSAGE), RetrievedText("a.md", "nothing")]
    assert found_rank(Passage("a.md", PASSAGE), retrieved) is None
    assert found_rank(Passage("b.md", PASSAGE), retrieved) == 1


def test_union_of_two_chunks_covers_a_passage() -> None:
    first = PASSAGE[:35]  # 35% alone
    second = PASSAGE[30:65]  # overlaps the first by 5 characters: union 65%
    retrieved = [
        RetrievedText("a.md", first),
        RetrievedText("other.md", PASSAGE),
        RetrievedText("a.md", second),
    ]
    assert found_rank(Passage("a.md", PASSAGE), retrieved[:1]) is None
    assert coverage(PASSAGE, [first, second]) == pytest.approx(0.65)
    assert found_rank(Passage("a.md", PASSAGE), retrieved) == 3


def test_union_length_merges_overlaps() -> None:
    assert union_length([(0, 10), (5, 15), (20, 25), (21, 22)]) == 20


def test_pass_at_k_is_mean_recall() -> None:
    scores = [
        QueryScore("q1", (1, None)),  # half of its passages, at rank 1
        QueryScore("q2", (7,)),
        QueryScore("q3", (None,)),
    ]
    assert pass_at_k(scores, 5) == pytest.approx((0.5 + 0 + 0) / 3)
    assert pass_at_k(scores, 10) == pytest.approx((0.5 + 1 + 0) / 3)


def test_mrr_uses_the_first_found_passage() -> None:
    scores = [
        QueryScore("q1", (4, 2)),  # first relevant at rank 2
        QueryScore("q2", (1,)),
        QueryScore("q3", (None,)),
        QueryScore("q4", (8,)),  # beyond k=5: contributes 0
    ]
    assert mrr_at_k(scores, 5) == pytest.approx((0.5 + 1 + 0 + 0) / 4)
    assert mrr_at_k(scores, 10) == pytest.approx((0.5 + 1 + 0 + 1 / 8) / 4)
    assert mrr_at_k([], 5) == 0.0


def test_score_query_per_passage() -> None:
    other = "A completely different golden passage about lentil soup and stock."
    retrieved = [RetrievedText("b.md", other), RetrievedText("a.md", PASSAGE)]
    score = score_query("q", [Passage("a.md", PASSAGE), Passage("b.md", other)], retrieved)
    assert score.found_ranks == (2, 1)
    assert score.first_rank == 1
    assert score.recall_at(1) == 0.5


def test_percentile_interpolates() -> None:
    assert percentile([], 50) == 0.0
    assert percentile([10.0], 95) == 10.0
    assert percentile([1.0, 2.0, 3.0, 4.0], 50) == pytest.approx(2.5)
    assert percentile(list(map(float, range(101))), 95) == pytest.approx(95.0)
