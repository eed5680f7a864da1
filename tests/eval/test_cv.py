"""Cross-validation of retrieval settings: the split, the ranks and the choice (pure)."""

from __future__ import annotations

import pytest

from varagity.eval.configs import Grid, default_grid_name, grid_configs, grid_name
from varagity.eval.cv import (
    HalfScore,
    Split,
    SuiteScores,
    choose,
    cross_validate,
    format_report,
    ranks,
    report_to_dict,
    scores_from_rows,
    split_halves,
    standings,
    stratum,
)
from varagity.eval.scoring import QueryScore
from varagity.eval.suite import EvalQuery, RelevantPassage


def q(qid: str, source: str | None) -> EvalQuery:
    relevant = (RelevantPassage(source, "text"),) if source else ()
    return EvalQuery(qid, f"question {qid}", relevant)


QUERIES = [q(f"q{i:02d}", f"file{i % 7}.rs") for i in range(30)]


# --- the split ---------------------------------------------------------------------


def test_split_is_a_partition_of_nearly_equal_halves() -> None:
    split = split_halves(QUERIES, seed=0)
    assert set(split.a) | set(split.b) == {x.id for x in QUERIES}
    assert not set(split.a) & set(split.b)
    assert abs(len(split.a) - len(split.b)) <= 1


def test_split_is_deterministic_and_seeded() -> None:
    assert split_halves(QUERIES, seed=3) == split_halves(QUERIES, seed=3)
    assert split_halves(QUERIES, seed=3) != split_halves(QUERIES, seed=4)


def test_split_does_not_depend_on_question_order() -> None:
    assert split_halves(QUERIES, seed=1) == split_halves(list(reversed(QUERIES)), seed=1)


def test_split_is_stratified_by_source_file() -> None:
    split = split_halves(QUERIES, seed=0)
    by_file: dict[str, list[str]] = {}
    for x in QUERIES:
        by_file.setdefault(stratum(x), []).append(x.id)
    for ids in by_file.values():
        in_a = sum(1 for i in ids if i in split.a)
        assert abs(in_a - (len(ids) - in_a)) <= 1, ids


def test_split_of_a_pair_on_one_file_separates_it() -> None:
    split = split_halves([q("x", "one.py"), q("y", "one.py")], seed=9)
    assert sorted([*split.a, *split.b]) == ["x", "y"]
    assert len(split.a) == len(split.b) == 1


def test_split_puts_questions_without_passages_in_one_stratum() -> None:
    assert stratum(q("u", None)) == ""
    split = split_halves([q("u1", None), q("u2", None)], seed=0)
    assert len(split.a) == len(split.b) == 1


def test_split_rejects_repeated_ids() -> None:
    with pytest.raises(ValueError, match="unique"):
        split_halves([q("a", "f"), q("a", "g")])


def test_split_half_names() -> None:
    split = Split(("a",), ("b",))
    assert split.half("A") == ("a",)
    assert split.half("B") == ("b",)
    with pytest.raises(ValueError):
        split.half("C")


# --- ranks and choice ----------------------------------------------------------------


def hs(p: float, mrr: float = 0.5) -> HalfScore:
    return HalfScore(p, mrr, p, 10)


def test_ranks_share_ties_competition_style() -> None:
    assert ranks({"a": hs(0.9), "b": hs(0.8), "c": hs(0.8), "d": hs(0.7)}) == {
        "a": 1,
        "b": 2,
        "c": 2,
        "d": 4,
    }


def test_choose_prefers_best_worst_case_rank_over_best_mean() -> None:
    # "peaky" wins one half by far and is last on the other; "steady" is second on both
    one = {"peaky": hs(1.0), "steady": hs(0.8), "other": hs(0.7)}
    two = {"peaky": hs(0.5), "steady": hs(0.8), "other": hs(0.9)}
    assert choose([one, two]) == "steady"
    rows = standings([one, two])
    assert rows[0].config == "steady"
    assert rows[0].worst_rank == 2


def test_choose_breaks_ties_by_mean_then_mrr_then_preferred_then_name() -> None:
    t = {"a": hs(0.8, 0.5), "b": hs(0.8, 0.6)}
    assert choose([t]) == "b"  # same Pass@k: higher MRR
    same = {"b": hs(0.8), "a": hs(0.8), "default": hs(0.8)}
    assert choose([same]) == "a"
    assert choose([same], prefer="default") == "default"


def test_choose_only_considers_configs_scored_everywhere() -> None:
    assert choose([{"a": hs(0.5), "b": hs(0.9)}, {"a": hs(0.5)}]) == "a"
    with pytest.raises(ValueError):
        choose([{"a": hs(0.5)}, {"b": hs(0.5)}])


# --- cross-validation ----------------------------------------------------------------


def scored(recall: dict[str, float]) -> dict[str, QueryScore]:
    """Query scores whose recall@5 is 1 or 0 as given (one passage each)."""
    return {qid: QueryScore(qid, (1 if r else None,)) for qid, r in recall.items()}


def suite_scores(name: str, table: dict[str, dict[str, float]]) -> SuiteScores:
    ids = sorted(next(iter(table.values())))
    half = len(ids) // 2
    return SuiteScores(
        name, Split(tuple(ids[:half]), tuple(ids[half:])), {c: scored(r) for c, r in table.items()}
    )


IDS = [f"q{i}" for i in range(8)]  # A: q0..q3, B: q4..q7


def hits(*found: int) -> dict[str, float]:
    return {qid: 1.0 if i in found else 0.0 for i, qid in enumerate(IDS)}


def test_cross_validate_chooses_on_train_and_reports_held_out() -> None:
    data = suite_scores(
        "code",
        {
            "fits_a": hits(0, 1, 2, 3),  # perfect on A, nothing on B
            "fits_b": hits(4, 5, 6, 7),
            "steady": hits(0, 1, 2, 4, 5, 6),  # 3/4 on both
        },
    )
    report = cross_validate([data], prefer="steady")
    a_to_b, b_to_a = report.per_suite["code"]
    assert (a_to_b.train, a_to_b.test, a_to_b.chosen) == ("A", "B", "fits_a")
    assert a_to_b.train_scores["code"].pass_at == 1.0
    assert a_to_b.test_scores["code"].pass_at == 0.0
    assert b_to_a.chosen == "fits_b"
    assert report.held_out(report.per_suite["code"], "code") == 0.0
    assert a_to_b.baseline_test["code"].pass_at == 0.75
    # over both halves the steady one has the best worst-case rank
    assert report.chosen == "steady"
    # fits_a is first on A and last on B
    shifted = {(s.config, s.rank_a, s.rank_b) for s in report.shifts}
    assert shifted == set()  # tolerance 2 with 3 configs: a shift of 2 is tolerated
    tight = cross_validate([data], prefer="steady", rank_tolerance=1)
    assert {s.config for s in tight.shifts} == {"fits_a", "fits_b"}


def test_cross_validate_combines_suites() -> None:
    code = suite_scores("code", {"x": hits(0, 1, 2, 3, 4, 5, 6), "y": hits(0, 1, 2, 4, 5, 6)})
    # the prose suite: y is perfect, x misses one question on each half
    prose = suite_scores("prose", {"x": hits(0, 1, 2, 4, 5, 6), "y": hits(*range(8))})
    alone = cross_validate([code])
    assert alone.chosen == "x"
    both = cross_validate([code, prose])
    # x: ranks code A 1, code B 1, prose A 2, prose B 2 -> worst 2; y: worst 2 as well;
    # mean Pass@k breaks it: y (0.75+0.75+1+1)/4 > x (1+0.75+0.75+0.75)/4
    assert both.chosen == "y"
    for pick in both.combined:
        assert set(pick.test_scores) == {"code", "prose"}


def test_report_prints_and_serialises() -> None:
    data = suite_scores("code", {"a": hits(0, 1, 4), "b": hits(0, 4, 5)})
    report = cross_validate([data], prefer="b")
    text = format_report(report)
    assert "held-out" in text and "chosen: " in text and "(default)" in text
    payload = report_to_dict(report)
    assert payload["chosen"] == report.chosen
    assert len(payload["combined"]) == 2


def test_cross_validate_needs_suites_with_distinct_names() -> None:
    with pytest.raises(ValueError):
        cross_validate([])
    data = suite_scores("code", {"a": hits(0)})
    with pytest.raises(ValueError, match="unique"):
        cross_validate([data, data])


def test_scores_from_saved_rows_skip_configs_that_did_not_run() -> None:
    rows = [
        {
            "config": "a",
            "available": True,
            "error": None,
            "questions": [{"id": "q1", "found_ranks": [3, None]}],
        },
        {"config": "b", "available": True, "error": "boom", "questions": []},
        {"config": "c", "available": False, "error": None, "questions": []},
    ]
    scores = scores_from_rows(rows)
    assert list(scores) == ["a"]
    assert scores["a"]["q1"] == QueryScore("q1", (3, None))


# --- the grid ------------------------------------------------------------------------


def test_grid_crosses_fusion_settings_for_hybrid_only() -> None:
    grid = Grid(
        chunks=((1200, 200), (1600, 200)),
        semantic_weights=(0.3, 0.4),
        rrf_ks=(0, 10),
        arm_candidates=(40,),
    )
    configs = grid_configs(grid)
    assert len(configs) == 2 * (2 + 2 * 2)
    names = [c.name for c in configs]
    assert len(set(names)) == len(names)
    point = next(c for c in configs if c.name == "hybrid c1600/200 w0.3 k0 n40")
    assert point.overrides["BM25_WEIGHT"] == pytest.approx(0.7)
    assert point.overrides["CHUNK_SIZE"] == 1600
    assert point.overrides["CONTEXTUALIZE"] is False
    assert "bm25 c1200/200" in names


def test_default_grid_name_names_the_shipped_defaults() -> None:
    from varagity.config import Settings

    f = Settings.model_fields
    assert default_grid_name() == grid_name(
        "hybrid",
        (f["CHUNK_SIZE"].default, f["CHUNK_OVERLAP"].default),
        f["SEMANTIC_WEIGHT"].default,
        f["RRF_K"].default,
        f["ARM_CANDIDATES"].default,
    )
