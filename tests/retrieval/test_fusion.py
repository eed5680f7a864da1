"""Weighted reciprocal-rank fusion against hand-computed values."""

from __future__ import annotations

import pytest

from varagity.retrieval.fusion import weighted_rrf


def test_hand_computed_example() -> None:
    # semantic: A, B, C    bm25: C, A, D    weights 0.8 / 0.2, k = 0: score = w / rank
    fused = weighted_rrf(
        {
            "semantic": [("A", 0.9), ("B", 0.8), ("C", 0.7)],
            "bm25": [("C", 12.0), ("A", 9.0), ("D", 3.0)],
        },
        {"semantic": 0.8, "bm25": 0.2},
        k=0,
    )
    scores = {f.key: round(f.fused_score, 6) for f in fused}
    assert scores == {
        "A": round(0.8 * 1 + 0.2 * 1 / 2, 6),  # 0.9
        "B": round(0.8 / 2, 6),  # 0.4
        "C": round(0.8 / 3 + 0.2 * 1, 6),  # 0.466667
        "D": round(0.2 / 3, 6),  # 0.066667
    }
    assert [f.key for f in fused] == ["A", "C", "B", "D"]
    assert [f.fused_rank for f in fused] == [1, 2, 3, 4]
    a = fused[0]
    assert a.arm_ranks == {"semantic": 1, "bm25": 2}
    assert a.arm_scores == {"semantic": 0.9, "bm25": 9.0}
    assert fused[3].arm_ranks == {"bm25": 3}


def test_first_everywhere_scores_the_maximum_and_duplicates_count_once() -> None:
    fused = weighted_rrf(
        {"semantic": [("X", 1.0), ("X", 0.5)], "bm25": [("X", 3.0)]},
        {"semantic": 0.5, "bm25": 0.5},
        k=10,
    )
    assert len(fused) == 1
    assert fused[0].fused_score == pytest.approx(1 / 11)


def test_ties_break_by_best_rank_then_arm_order() -> None:
    fused = weighted_rrf({"a": [("P", 1.0)], "b": [("Q", 1.0)]}, {"a": 0.5, "b": 0.5}, k=10)
    assert [f.key for f in fused] == ["P", "Q"]


def test_limit_and_validation() -> None:
    arms = {"a": [(i, 1.0) for i in range(10)]}
    assert len(weighted_rrf(arms, {"a": 1.0}, k=10, limit=3)) == 3
    with pytest.raises(ValueError, match="no weight"):
        weighted_rrf(arms, {}, k=10)
    with pytest.raises(ValueError, match="non-negative"):
        weighted_rrf(arms, {"a": -1.0}, k=10)
    with pytest.raises(ValueError, match="limit"):
        weighted_rrf(arms, {"a": 1.0}, k=10, limit=0)
    with pytest.raises(ValueError, match="RRF constant"):
        weighted_rrf(arms, {"a": 1.0}, k=-1)


def test_k_trades_one_arm_first_against_both_arms_second() -> None:
    # X is first in the semantic arm only; Y is second in both arms.
    arms = {"semantic": [("X", 0.9), ("Y", 0.8)], "bm25": [("Z", 5.0), ("Y", 4.0)]}
    weights = {"semantic": 0.6, "bm25": 0.4}
    sharp = weighted_rrf(arms, weights, k=0)  # X 0.6, Y 0.3 + 0.2, Z 0.4
    assert [f.key for f in sharp] == ["X", "Y", "Z"]
    flat = weighted_rrf(arms, weights, k=10)  # Y 1/12, X 0.6/11, Z 0.4/11
    assert [f.key for f in flat] == ["Y", "X", "Z"]
    assert flat[0].fused_score == pytest.approx(1 / 12)
