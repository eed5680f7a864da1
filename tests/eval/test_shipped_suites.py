"""The shipped suites' own consistency, the same checks on each: size and shape, reference
answers that state their facts (and abstain where the corpus does not answer), facts and
traps that come from the corpus, and golden passages verbatim in the text the parser
reads (and in the raw file, for text formats), long enough for the scorer to match."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from varagity.config import load_settings
from varagity.eval.answer_scoring import fact_in, facts_found, is_abstention, normalize
from varagity.eval.scoring import normalize as collapse
from varagity.eval.suite import Suite, load_suite
from varagity.ingest.parsing import parse_file

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "eval_suites" / "sample"
HANDBOOK = REPO / "eval_suites" / "handbook"
SUITES = pytest.mark.parametrize("folder", [SAMPLE, HANDBOOK], ids=["sample", "handbook"])
RAW_TEXT_SUFFIXES = (".md", ".txt", ".rst")
# scoring.py counts only common blocks of 20+ characters: a shorter passage never matches
MIN_PASSAGE_CHARS = 20


def _corpus_text(suite: Suite, files: list[str]) -> str:
    return normalize(" ".join((suite.corpus / f).read_text(encoding="utf-8") for f in files))


def test_sample_suite_size_and_shape() -> None:
    suite = load_suite(SAMPLE)
    assert suite.corpus == REPO / "corpus"
    assert len(suite.queries) >= 30
    assert len(suite.queries) - len(suite.answerable) >= 6


def test_handbook_suite_size_and_shape() -> None:
    suite = load_suite(HANDBOOK)
    assert suite.name == "handbook"
    assert suite.corpus == HANDBOOK / "corpus"
    assert len(suite.answerable) >= 24
    unanswerable = [q for q in suite.queries if not q.answerable]
    assert len(unanswerable) >= 8
    assert all(q.traps for q in unanswerable)
    assert all(q.id.startswith("h") for q in suite.answerable)
    assert all(q.id.startswith("hu") for q in unanswerable)


def test_handbook_near_miss_questions_are_answerable() -> None:
    # ``near_miss`` is an extra field the loader ignores; read it from the file itself
    rows = [
        json.loads(line)
        for line in (HANDBOOK / "queries.jsonl").read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    near = [r for r in rows if r.get("near_miss")]
    assert len(near) >= 8
    assert all(r.get("answerable", True) and r["relevant"] for r in near)


@SUITES
def test_every_answerable_question_has_facts_and_the_suite_gates(folder: Path) -> None:
    suite = load_suite(folder)
    assert all(q.facts for q in suite.answerable)
    assert suite.thresholds is not None and suite.answer_thresholds is not None


@SUITES
def test_reference_answers_state_their_facts_and_unanswerables_abstain(folder: Path) -> None:
    for q in load_suite(folder).queries:
        assert q.answer, q.id
        if q.answerable:
            assert all(facts_found(q.facts, q.answer)), q.id
            assert not is_abstention(q.answer), q.id
        else:
            assert is_abstention(q.answer), q.id


@SUITES
def test_facts_come_from_their_passages_files_and_traps_from_the_corpus(folder: Path) -> None:
    suite = load_suite(folder)
    for q in suite.answerable:
        text = _corpus_text(suite, sorted({p.rel_source for p in q.relevant}))
        for fact in q.facts:
            assert fact_in(fact, text), (q.id, fact)
    texts = sorted(
        p.relative_to(suite.corpus).as_posix()
        for p in suite.corpus.rglob("*")
        if p.suffix in (*RAW_TEXT_SUFFIXES, ".html", ".csv")
    )
    corpus = _corpus_text(suite, texts)
    for q in suite.queries:
        for trap in q.traps:
            assert fact_in(trap, corpus), (q.id, trap)


@SUITES
def test_passages_are_verbatim_in_the_parsed_text(folder: Path, tmp_path: Path) -> None:
    # the passages are matched against chunks of the *parsed* text: for HTML and CSV
    # that is docling's Markdown (text inside one cell), so check there and, for text
    # formats, in the raw file too
    suite = load_suite(folder)
    settings = load_settings(VARAGITY_HOME=tmp_path, DOCS_PATH=suite.corpus)
    parsed = {
        rel: parse_file(suite.corpus, rel, settings=settings).text for rel in suite.corpus_files()
    }
    for q in suite.answerable:
        for p in q.relevant:
            assert len(collapse(p.text)) >= MIN_PASSAGE_CHARS, (q.id, p.text)
            assert collapse(p.text) in collapse(parsed[p.rel_source]), (q.id, p.rel_source)
            if p.rel_source.endswith(RAW_TEXT_SUFFIXES):
                raw = (suite.corpus / p.rel_source).read_text(encoding="utf-8")
                assert collapse(p.text) in collapse(raw), (q.id, p.rel_source)
