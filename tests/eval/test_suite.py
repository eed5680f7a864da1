"""Suite loading: answerable and unanswerable questions, facts, thresholds, and what is
refused (the shipped suites' own consistency is in ``test_shipped_suites.py``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from varagity.eval.suite import SuiteError, load_suite

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "eval_suites" / "sample"
PASSAGE = {"rel_source": "a.md", "text": "The Tern K2 carries a warranty of 27 months."}


def _suite(tmp_path: Path, rows: list[dict[str, object]], thresholds: object = None) -> Path:
    (tmp_path / "corpus").mkdir(exist_ok=True)
    (tmp_path / "corpus" / "a.md").write_text(PASSAGE["text"] + "\n")
    (tmp_path / "queries.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    if thresholds is not None:
        (tmp_path / "thresholds.json").write_text(json.dumps(thresholds))
    return tmp_path


def test_answerable_and_unanswerable_questions_load(tmp_path: Path) -> None:
    suite = load_suite(
        _suite(
            tmp_path,
            [
                {"id": "a", "query": "q?", "relevant": [PASSAGE], "facts": [["27 months"]]},
                {
                    "id": "u",
                    "query": "colour?",
                    "answerable": False,
                    "relevant": [],
                    "traps": [["red"]],
                },
            ],
        )
    )
    a, u = suite.queries
    assert a.answerable and a.facts == (("27 months",),) and a.traps == ()
    assert not u.answerable and u.relevant == () and u.traps == (("red",),)
    assert suite.answerable == (a,)
    assert suite.corpus_files() == ["a.md"]


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ({"id": "a", "query": "q?", "relevant": []}, "has no relevant passage"),
        (
            {"id": "u", "query": "q?", "answerable": False, "relevant": [PASSAGE]},
            "marked unanswerable but lists",
        ),
        (
            {"id": "a", "query": "q?", "relevant": [PASSAGE], "facts": ["27 months"]},
            "list of facts",
        ),
        ({"id": "a", "query": "q?", "relevant": [PASSAGE], "facts": [[]]}, "list of facts"),
        ({"id": "a", "query": "q?", "relevant": [PASSAGE], "answerable": "no"}, "true or false"),
    ],
)
def test_malformed_questions_are_refused(
    tmp_path: Path, row: dict[str, object], message: str
) -> None:
    with pytest.raises(SuiteError, match=message):
        load_suite(_suite(tmp_path, [row]))


def test_duplicate_ids_are_refused(tmp_path: Path) -> None:
    row = {"id": "a", "query": "q?", "relevant": [PASSAGE]}
    with pytest.raises(SuiteError, match="'a' appears twice"):
        load_suite(_suite(tmp_path, [row, row]))


def test_answer_thresholds_default_to_the_retrieval_method(tmp_path: Path) -> None:
    row = {"id": "a", "query": "q?", "relevant": [PASSAGE]}
    gate = {
        "method": "bm25",
        "k": 3,
        "pass_at_k": 0.5,
        "mrr": 0.5,
        "answers": {
            "answer_correctness": 0.7,
            "citation_validity": 0.6,
            "abstention_accuracy": 0.8,
            "max_loops": 1,
        },
    }
    suite = load_suite(_suite(tmp_path, [row], gate))
    assert suite.answer_thresholds is not None
    assert suite.answer_thresholds.to_dict() == {
        "method": "bm25",
        "k": 3,
        "answer_correctness": 0.7,
        "citation_validity": 0.6,
        "abstention_accuracy": 0.8,
        "max_loops": 1,
        "feedback_pass_rate": 0.5,  # the default when the file does not say
        "max_false_abstention": 1.0,  # no limit unless the file sets one
    }
    del gate["answers"]
    assert load_suite(_suite(tmp_path, [row], gate)).answer_thresholds is None
    gate["answers"] = {"answer_correctness": 0.7}
    with pytest.raises(SuiteError, match="unreadable answer thresholds"):
        load_suite(_suite(tmp_path, [row], gate))
