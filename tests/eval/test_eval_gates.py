"""The evaluation gates on real parts: embedded Postgres, Tantivy, the local model servers.

The sample corpus (the repository's ``corpus/``) is copied into the test's ``DOCS_PATH``
and ingested; the ``evaluate_index`` job then scores the golden suite's retrieval and
answers on that live index. With the shipped retrieval thresholds (and answer
thresholds no model can miss) every gate passes and ``search_index_release``
materializes; with a threshold above any possible score the blocking check fails,
names the failing questions, and the release asset does not materialize.

Answering the whole suite takes minutes on CPU, so the answer gates run on three of
its questions (one a near miss, one unanswerable); the shipped answer thresholds are
measured with ``varagity eval --answers`` (docs/models.md).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import urlsplit

import dagster as dg
import pytest

from varagity.config import Settings
from varagity.eval.suite import load_suite
from varagity.ingest.discovery import scan
from varagity.pipeline import EVALUATE_JOB
from varagity.services import Services, ingest_file
from varagity.stores.postgres import database_url, databases_with_prefix

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
SUITE = REPO / "eval_suites" / "sample"
RELEASE = dg.AssetKey("search_index_release")
EVAL = dg.AssetKey("eval_results")
ANSWERS = dg.AssetKey("answer_eval_results")
ANSWER_CHECKS = {
    "answer_correctness_gate",
    "citation_validity_gate",
    "abstention_gate",
    "loops_gate",
    "false_abstention_gate",
    "feedback_gate",  # no feedback in these tests: it passes with nothing to score
}
LENIENT = {"answer_correctness": 0.0, "citation_validity": 0.0, "abstention_accuracy": 0.0}


@pytest.fixture
def indexed(stack_settings: Settings) -> Settings:
    """The sample corpus copied into DOCS_PATH and ingested into the test's stores."""
    shutil.copytree(REPO / "corpus", stack_settings.docs_path, dirs_exist_ok=True)
    services = Services.open(stack_settings)
    try:
        files, _ = scan(stack_settings.docs_path)
        for f in files:
            ingest_file(services, f.relative_path)
    finally:
        services.close()
    return stack_settings


@pytest.fixture
def answer_suite(tmp_path: Path) -> Path:
    """Three questions of the shipped suite (s01, its near miss s13, unanswerable u06)."""
    suite = tmp_path / "answer-suite"
    suite.mkdir()
    (suite / "suite.json").write_text(json.dumps({"name": "mini", "corpus": str(REPO / "corpus")}))
    rows = [json.loads(line) for line in (SUITE / "queries.jsonl").read_text().splitlines()]
    picked = [r for r in rows if r["id"] in ("s01", "s13", "u06")]
    assert len(picked) == 3
    (suite / "queries.jsonl").write_text("".join(json.dumps(r) + "\n" for r in picked))
    return suite


def _thresholds(path: Path, answers: dict[str, float], **retrieval: object) -> Path:
    gate = {"method": "hybrid", "k": 5, "pass_at_k": 0.0, "mrr": 0.0, **retrieval}
    path.write_text(json.dumps({**gate, "answers": answers}))
    return path


def _run(
    answer_suite: Path,
    answer_thresholds: Path,
    thresholds: Path | None = None,
    suite: Path = SUITE,
) -> dg.ExecuteInProcessResult:
    from varagity_assets.definitions import defs

    config: dict[str, object] = {"suite_path": str(suite)}
    if thresholds is not None:
        config["thresholds_path"] = str(thresholds)
    answers = {"suite_path": str(answer_suite), "thresholds_path": str(answer_thresholds)}
    job = defs().resolve_job_def(EVALUATE_JOB)
    return job.execute_in_process(
        instance=dg.DagsterInstance.ephemeral(),
        run_config={
            "ops": {
                "eval_results": {"config": config},
                "answer_eval_results": {"config": answers},
            }
        },
        raise_on_error=False,
    )


def _materialized(result: dg.ExecuteInProcessResult) -> set[dg.AssetKey]:
    return {
        e.asset_key for e in result.get_asset_materialization_events() if e.asset_key is not None
    }


def _num(metadata: Mapping[str, dg.MetadataValue], key: str) -> float:
    value = metadata[key].value
    assert isinstance(value, int | float), (key, value)
    return float(value)


def test_gates_pass_with_the_shipped_thresholds(
    indexed: Settings, answer_suite: Path, tmp_path: Path
) -> None:
    lenient = _thresholds(tmp_path / "lenient.json", {**LENIENT, "max_loops": 3})
    result = _run(answer_suite, lenient)
    assert result.success
    assert _materialized(result) == {EVAL, ANSWERS, RELEASE}
    evaluations = {e.check_name: e for e in result.get_asset_check_evaluations()}
    assert set(evaluations) == {"pass_at_k_gate", "mrr_gate", *ANSWER_CHECKS}
    assert all(e.passed for e in evaluations.values())
    events = {
        e.asset_key: e.materialization.metadata for e in result.get_asset_materialization_events()
    }
    md = events[EVAL]
    shipped = json.loads((SUITE / "thresholds.json").read_text())
    assert _num(md, f"pass_at_{shipped['k']}") >= shipped["pass_at_k"]
    assert _num(md, "mrr") >= shipped["mrr"]
    assert _num(md, "latency_p95_ms") >= _num(md, "latency_p50_ms") > 0
    assert "Pass@5" in str(md["results"].value)
    # DOCS_PATH is a copy of the suite's corpus: scored, and the metadata says so
    assert md["corpus_matches_suite"].value is True
    assert "not the suite's corpus folder" in str(md["corpus_note"].value)

    answers = events[ANSWERS]
    assert answers["n_questions"].value == 3 and answers["n_answerable"].value == 2
    for figure in ("answer_correctness", "citation_validity", "abstention_accuracy"):
        assert 0.0 <= _num(answers, figure) <= 1.0
    assert 0 <= _num(answers, "loops") <= 3
    assert _num(answers, "answer_p50_ms") >= _num(answers, "first_token_p50_ms") > 0
    assert answers["model"].value == indexed.LLM_MODEL
    questions = {q["id"]: q for q in answers["questions"].value}
    assert set(questions) == {"s01", "s13", "u06"}
    # every verdict is recorded with the answer it judged, from the evidence it was shown
    for q in questions.values():
        assert q["answer"].strip() and q["sources"]
    assert questions["s01"]["sources"][0] == "tern-kettle-manual.md"
    assert questions["u06"]["answerable"] is False
    release = events[RELEASE]
    assert _num(release, "answer_correctness") == _num(answers, "answer_correctness")
    assert _num(release, f"pass_at_{shipped['k']}") == _num(md, f"pass_at_{shipped['k']}")


def test_failing_gate_blocks_the_release(
    indexed: Settings, answer_suite: Path, tmp_path: Path
) -> None:
    # the shipped suite plus one question whose golden passage is in no file: it is
    # missed at every rank, so the failing gate has a question to name
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "suite.json").write_text(json.dumps({"corpus": str(REPO / "corpus")}))
    impossible = {
        "id": "q-impossible",
        "query": "What colour is the Tern kettle's power cord?",
        "answer": "nowhere in the corpus",
        "relevant": [
            {
                "rel_source": "tern-kettle-manual.md",
                "text": "The power cord is braided ultramarine silk, spun by hand in Lisbon.",
            }
        ],
    }
    (suite / "queries.jsonl").write_text(
        (SUITE / "queries.jsonl").read_text().rstrip("\n") + "\n" + json.dumps(impossible) + "\n"
    )
    strict = tmp_path / "strict.json"
    strict.write_text(json.dumps({"method": "bm25", "k": 1, "pass_at_k": 1.01, "mrr": 0.0}))
    lenient = _thresholds(tmp_path / "lenient.json", {**LENIENT, "max_loops": 3})
    result = _run(answer_suite, lenient, strict, suite)
    assert not result.success
    assert RELEASE not in _materialized(result)
    assert EVAL in _materialized(result)
    evaluations = {e.check_name: e for e in result.get_asset_check_evaluations()}
    gate = evaluations["pass_at_k_gate"]
    assert not gate.passed
    assert evaluations["mrr_gate"].passed
    assert _num(gate.metadata, "threshold") == pytest.approx(1.01)
    assert gate.metadata["method"].value == "bm25"
    # Pass@1 can never reach 1.01; the check lists the questions missed by rank 1
    ids = str(gate.metadata["failing_question_ids"].value).split(", ")
    table = str(gate.metadata["failing_questions"].value)
    assert "q-impossible" in ids
    assert "| q-impossible |" in table


def test_failing_answer_gates_block_the_release(
    indexed: Settings, answer_suite: Path, tmp_path: Path
) -> None:
    # correctness above 1 and a negative loop allowance can never pass; the other two
    # answer gates are lenient and pass
    strict = _thresholds(
        tmp_path / "strict.json", {**LENIENT, "answer_correctness": 1.01, "max_loops": -1}
    )
    result = _run(answer_suite, strict)
    assert not result.success
    assert RELEASE not in _materialized(result)
    assert {EVAL, ANSWERS} <= _materialized(result)
    evaluations = {e.check_name: e for e in result.get_asset_check_evaluations()}
    assert not evaluations["answer_correctness_gate"].passed
    assert not evaluations["loops_gate"].passed
    assert evaluations["citation_validity_gate"].passed
    assert evaluations["abstention_gate"].passed
    correctness = evaluations["answer_correctness_gate"].metadata
    assert _num(correctness, "threshold") == pytest.approx(1.01)
    assert 0.0 <= _num(correctness, "answer_correctness") <= 1.0
    assert correctness["thresholds_source"].value == str(strict)
    # the questions that lowered the figure are named, with their answers
    ids = str(correctness["failing_question_ids"].value)
    md = next(
        e.materialization.metadata
        for e in result.get_asset_materialization_events()
        if e.asset_key == ANSWERS
    )
    missed = [q["id"] for q in md["questions"].value if q["answerable"] and q["fact_share"] < 1]
    assert ids == (", ".join(missed) or "none")
    for qid in missed:
        assert f"| {qid} |" in str(correctness["failing_questions"].value)
    loops = evaluations["loops_gate"].metadata
    assert loops["rule"].value == "at most" and _num(loops, "threshold") == -1


def test_cli_eval_prints_the_table(
    stack_settings: Settings, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from varagity_cli.main import main

    out = tmp_path / "report.json"
    code = main(["eval", "--suite", str(SUITE), "--config", "bm25", "--out", str(out)])
    printed = capsys.readouterr().out
    assert code == 0, printed
    assert "estimated" in printed
    assert "Pass@5" in printed and "MRR@20" in printed
    assert "bm25" in printed
    report = json.loads(out.read_text())
    (row,) = report["results"]
    # retrieval is scored on the answerable questions only
    assert row["config"] == "bm25" and row["n_queries"] == len(load_suite(SUITE).answerable)
    assert 0.0 <= row["pass_at"]["5"] <= 1.0
    assert set(row["latency_ms"]) >= {"bm25", "hydrate", "total"}
    # the isolated store, not the live one: the test's DOCS_PATH stays empty and unindexed
    services = Services.open(stack_settings)
    try:
        assert services.pg.list_documents() == []
    finally:
        services.close()
    assert row["answers"] is None  # answers are scored only when asked for

    # a second run reuses the ingest; with --answers it also answers and scores
    capsys.readouterr()
    argv = ["eval", "--suite", str(SUITE), "--config", "bm25", "--limit", "1", "--answers"]
    assert main([*argv, "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    again = json.loads(out.read_text())["results"][0]
    assert again["ingest"]["ingested"] == 0 and again["ingest"]["reused"] >= 4
    assert "answers ~" in printed and "abstention" in printed and "TTFT" in printed
    answers = again["answers"]
    assert answers["error"] is None and answers["k"] == 5
    assert [q["id"] for q in answers["questions"]] == ["s01"]
    assert all(q["answer"].strip() and q["total_ms"] > 0 for q in answers["questions"])
    assert 0.0 <= answers["summary"]["answer_correctness"] <= 1.0

    # --drop removes the suite's isolated stores: database and BM25 folder
    store = again["ingest"]["store"]
    assert (stack_settings.home / "eval" / store).is_dir()
    capsys.readouterr()
    assert main(["eval", "--suite", str(SUITE), "--drop"]) == 0
    assert store in capsys.readouterr().out
    server = database_url(stack_settings)
    assert databases_with_prefix(server, "eval_sample_") == []
    assert not (stack_settings.home / "eval" / store).exists()
    own = urlsplit(server).path.lstrip("/")
    assert databases_with_prefix(server, own) == [own]  # the app's own database is kept
