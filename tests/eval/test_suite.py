"""Suite loading (answerable and unanswerable questions, facts, thresholds) and the
shipped sample suite's own consistency: its passages, facts and reference answers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from varagity.config import load_settings
from varagity.eval.answer_scoring import fact_in, facts_found, is_abstention, normalize
from varagity.eval.scoring import normalize as collapse
from varagity.eval.suite import SuiteError, load_suite
from varagity.ingest.parsing import parse_file

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


# --- the shipped sample suite ------------------------------------------------------------


def test_sample_suite_size_and_shape() -> None:
    suite = load_suite(SAMPLE)
    assert suite.corpus == REPO / "corpus"
    assert len(suite.queries) >= 30
    assert len(suite.queries) - len(suite.answerable) >= 6
    assert all(q.facts for q in suite.answerable)
    assert suite.thresholds is not None and suite.answer_thresholds is not None


def test_sample_reference_answers_state_their_facts_and_unanswerables_abstain() -> None:
    for q in load_suite(SAMPLE).queries:
        assert q.answer, q.id
        if q.answerable:
            assert all(facts_found(q.facts, q.answer)), q.id
            assert not is_abstention(q.answer), q.id
        else:
            assert is_abstention(q.answer), q.id


def test_sample_facts_come_from_the_corpus_files_of_their_passages() -> None:
    suite = load_suite(SAMPLE)
    for q in suite.answerable:
        files = sorted({p.rel_source for p in q.relevant})
        text = normalize(" ".join((suite.corpus / s).read_text() for s in files))
        for fact in q.facts:
            assert fact_in(fact, text), (q.id, fact)


def test_sample_passages_are_verbatim_in_the_parsed_text(tmp_path: Path) -> None:
    # the passages are matched against chunks of the *parsed* text: for HTML and CSV
    # that is docling's Markdown, so check there rather than in the raw bytes
    suite = load_suite(SAMPLE)
    settings = load_settings(VARAGITY_HOME=tmp_path, DOCS_PATH=suite.corpus)
    parsed = {
        rel: parse_file(suite.corpus, rel, settings=settings).text for rel in suite.corpus_files()
    }
    for q in suite.answerable:
        for p in q.relevant:
            assert collapse(p.text) in collapse(parsed[p.rel_source]), (q.id, p.rel_source)
