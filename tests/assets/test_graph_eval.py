"""``varagity eval --graph`` and the graph answer gate end to end, on real parts: a two-
session graph suite written in the test's folder, its archive built through the graph
assets with the packaged models (the 0.5B extracts a thread-day in 15-60 s on two
cores), its questions answered by graph turns and by the document baseline, the report,
the reuse of the built graph, and the ``evaluate_message_graph`` job whose blocking
check lets ``graph_answers_release`` materialize only when the gate passes.

The model's answers are not asserted (they are what the evaluation measures); what is
asserted is what the machinery must do whatever the model says: every question answered
and judged, the build counted and then reused, a question whose gold answer no chat
holds never judged right, the gate failing on it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import dagster as dg
import pytest

from tests.conftest import SettingsFactory
from varagity.config import Settings
from varagity.pipeline import GRAPH_EVALUATE_JOB
from varagity_cli.main import main

pytestmark = [pytest.mark.integration, pytest.mark.timeout(2400)]

SESSIONS = {
    "week1/20260302_1930.txt": (
        "Time: 20260302_19:30\n"
        "IngridBakke: Supper club on Friday the 13th at Tbilisi Corner. "
        "The set menu is 28 euros a head.\n"
        "NoorHaddad: Great, book it for four.\n"
    ),
    "week1/20260304_0815.txt": (
        "Time: 20260304_08:15\n"
        "NoorHaddad: Kofi, the kitchen tap is leaking again.\n"
        "KofiMensah: Sorry! The plumber comes on Thursday between 10 and 12.\n"
    ),
}
QUESTIONS = [
    # the trap: an answerable-typed question whose gold no chat holds, never judged right
    {
        "id": "t1",
        "query": "What colour is the bicycle Noor bought in Lisbon?",
        "answer": "Ultramarine with orange mudguards",
        "type": "single",
        "evidence": ["20260302_19:30"],
    },
    {
        "id": "g1",
        "query": "How much does the set menu at Tbilisi Corner cost per person?",
        "answer": "28 euros",
        "type": "single",
        "evidence": ["20260302_19:30"],
    },
    {
        "id": "n1",
        "query": "On which floor does Ingrid live?",
        "answer": "Insufficient information",
        "type": "null",
        "evidence": [],
    },
]


@pytest.fixture
def eval_settings(
    make_settings: SettingsFactory, pg_url: str, model_urls: dict[str, str]
) -> Settings:
    return make_settings(
        DATABASE_URL=pg_url,
        GRAPH_DOCS_PATH=Path(os.getcwd()) / "graph-docs",
        MODEL_TIMEOUT_S=600,  # one extraction takes minutes on two shared cores
        **model_urls,
    )


def _suite(root: Path, thresholds: dict[str, object]) -> Path:
    for rel, text in SESSIONS.items():
        path = root / "sessions" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    (root / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in QUESTIONS))
    (root / "suite.json").write_text(json.dumps({"name": "tiny-graph", "owner": "NoorHaddad"}))
    (root / "thresholds.json").write_text(json.dumps(thresholds))
    return root


def _gate_run(suite: Path, thresholds: Path) -> dg.ExecuteInProcessResult:
    from varagity_assets.definitions import defs

    config = {"suite_path": str(suite), "thresholds_path": str(thresholds), "limit": 1}
    return (
        defs()
        .resolve_job_def(GRAPH_EVALUATE_JOB)
        .execute_in_process(
            instance=dg.DagsterInstance.ephemeral(),
            run_config={"ops": {"graph_eval_results": {"config": config}}},
            raise_on_error=False,
        )
    )


def test_graph_eval_builds_answers_reuses_and_gates(
    eval_settings: Settings, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = _suite(tmp_path / "suite", {"k": 10, "accuracy": 0.0})
    out = tmp_path / "report.json"

    # the command line: build through the graph assets, graph and baseline answers
    assert main(["eval", "--graph", "--suite", str(suite), "--baseline", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    report = json.loads(out.read_text())
    build = report["build"]
    assert (build["thread_days"], build["built"], build["reused"]) == (2, 2, False)
    assert build["seconds"] > 0 and build["seconds_per_thread_day"] > 0
    assert build["engine_seconds"] is not None
    location = Path(report["results"][0]["setup"]["location"])
    assert location.parent == eval_settings.home / "eval"
    assert location.name.startswith("tiny_graph_")
    assert (location / "messages" / "chat.db").is_file()
    assert (location / "graph" / "lightrag" / "varagity_manifest.json").is_file()
    graph, baseline = report["results"]
    assert (graph["name"], baseline["name"]) == ("graph", "baseline")
    assert graph["error"] is None and baseline["error"] is None, (graph["error"], baseline["error"])
    for arm in (graph, baseline):
        by_id = {q["id"]: q for q in arm["questions"]}
        assert list(by_id) == ["t1", "g1", "n1"]
        assert all(q["answer"].strip() for q in by_id.values())
        assert all(q["total_ms"] > 0 for q in by_id.values())
        assert by_id["t1"]["verdict"]["outcome"] != "right"
        assert by_id["n1"]["verdict"]["rule"] == "null"
        summary = arm["summary"]
        assert summary["all"]["n"] == 3
        assert summary["single"]["n"] == 2 and summary["null"]["n"] == 1
        assert summary["all"]["right"] + summary["all"]["wrong"] + summary["all"]["no_info"] == 3
    # recall is measured for the graph's answerable questions only
    recall = {q["id"]: q.get("recalled") for q in graph["questions"]}
    assert recall["n1"] is None and isinstance(recall["g1"], bool)
    assert graph["summary"]["all"]["evidence_recall_n"] == 2
    assert "recalled" not in baseline["questions"][0]
    assert baseline["setup"]["ingest"]["files"] == 2
    assert [g["metric"] for g in report["gate"]] == ["accuracy"] and report["gate"][0]["passed"]
    assert "graph tiny_graph_" in printed and "2 of 2 thread-days built" in printed
    assert "recall@10" in printed and "baseline" in printed

    # again: the manifest holds every day, so nothing is built
    again = tmp_path / "again.json"
    assert (
        main(["eval", "--graph", "--suite", str(suite), "--limit", "1", "--out", str(again)]) == 0
    )
    second = json.loads(again.read_text())
    assert (second["build"]["reused"], second["build"]["built"]) == (True, 0)
    assert [q["id"] for q in second["results"][0]["questions"]] == ["t1"]
    assert len(second["results"]) == 1

    # the Dagster gate on the same graph (reused): the trap question alone
    lenient = tmp_path / "lenient.json"
    lenient.write_text(json.dumps({"accuracy": 0.0, "evidence_recall": 0.0}))
    passed = _gate_run(suite, lenient)
    assert passed.success
    materialized = {e.asset_key.to_user_string() for e in passed.get_asset_materialization_events()}
    assert materialized == {"graph_eval_results", "graph_answers_release"}
    [check] = passed.get_asset_check_evaluations()
    assert (check.check_name, check.passed) == ("graph_answer_gate", True)
    strict = tmp_path / "strict.json"
    strict.write_text(json.dumps({"accuracy": 1.0}))
    failed = _gate_run(suite, strict)
    [check] = failed.get_asset_check_evaluations()
    assert not check.passed
    assert check.metadata["failing_question_ids"].value == "t1"
    assert "accuracy" in str(check.metadata["gate"].value)
    materialized = {e.asset_key.to_user_string() for e in failed.get_asset_materialization_events()}
    assert materialized == {"graph_eval_results"}  # the blocking gate held the release back
