"""The shipped handbook suite's own consistency: its size and shape, its passages (verbatim
in the raw file and in the parsed text, long enough for the scorer to match), its facts
and traps, and its reference answers (the same checks ``test_suite.py`` runs on the
sample suite)."""

from __future__ import annotations

import json
from pathlib import Path

from varagity.config import load_settings
from varagity.eval.answer_scoring import fact_in, facts_found, is_abstention, normalize
from varagity.eval.scoring import normalize as collapse
from varagity.eval.suite import load_suite
from varagity.ingest.parsing import parse_file

REPO = Path(__file__).resolve().parents[2]
HANDBOOK = REPO / "eval_suites" / "handbook"
RAW_TEXT_SUFFIXES = (".md", ".txt", ".rst")
# scoring.py counts only common blocks of 20+ characters: a shorter passage never matches
MIN_PASSAGE_CHARS = 20


def test_handbook_suite_size_and_shape() -> None:
    suite = load_suite(HANDBOOK)
    assert suite.name == "handbook"
    assert suite.corpus == HANDBOOK / "corpus"
    assert len(suite.answerable) >= 24
    unanswerable = [q for q in suite.queries if not q.answerable]
    assert len(unanswerable) >= 8
    assert all(q.facts for q in suite.answerable)
    assert all(q.traps for q in unanswerable)
    assert all(q.id.startswith("h") for q in suite.answerable)
    assert all(q.id.startswith("hu") for q in unanswerable)
    assert suite.thresholds is not None and suite.answer_thresholds is not None


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


def test_handbook_reference_answers_state_their_facts_and_unanswerables_abstain() -> None:
    for q in load_suite(HANDBOOK).queries:
        assert q.answer, q.id
        if q.answerable:
            assert all(facts_found(q.facts, q.answer)), q.id
            assert not is_abstention(q.answer), q.id
        else:
            assert is_abstention(q.answer), q.id


def test_handbook_facts_come_from_their_files_and_traps_from_the_corpus() -> None:
    suite = load_suite(HANDBOOK)
    for q in suite.answerable:
        files = sorted({p.rel_source for p in q.relevant})
        text = normalize(" ".join((suite.corpus / s).read_text(encoding="utf-8") for s in files))
        for fact in q.facts:
            assert fact_in(fact, text), (q.id, fact)
    corpus = normalize(
        " ".join(p.read_text(encoding="utf-8") for p in sorted(suite.corpus.rglob("*.*")))
    )
    for q in suite.queries:
        for trap in q.traps:
            assert fact_in(trap, corpus), (q.id, trap)


def test_handbook_passages_are_verbatim_in_their_text_files() -> None:
    suite = load_suite(HANDBOOK)
    for q in suite.answerable:
        for p in q.relevant:
            assert len(collapse(p.text)) >= MIN_PASSAGE_CHARS, (q.id, p.text)
            if p.rel_source.endswith(RAW_TEXT_SUFFIXES):
                raw = (suite.corpus / p.rel_source).read_text(encoding="utf-8")
                assert collapse(p.text) in collapse(raw), (q.id, p.rel_source)


def test_handbook_passages_are_verbatim_in_the_parsed_text(tmp_path: Path) -> None:
    # HTML and CSV passages are matched against docling's Markdown (text inside one cell)
    suite = load_suite(HANDBOOK)
    settings = load_settings(VARAGITY_HOME=tmp_path, DOCS_PATH=suite.corpus)
    parsed = {
        rel: parse_file(suite.corpus, rel, settings=settings).text for rel in suite.corpus_files()
    }
    for q in suite.answerable:
        for p in q.relevant:
            assert collapse(p.text) in collapse(parsed[p.rel_source]), (q.id, p.rel_source)
