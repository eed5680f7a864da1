"""Feedback becomes evaluation, over real HTTP, Postgres, model servers and Dagster's job.

One chat turn is answered and stamped with the index state it was retrieved from; a
thumbs-down marking the passage that answers (and one saying none does) become the
corpus's feedback suite, which the API exports in the suite format and the answer
gate (``answer_eval_results`` + ``feedback_gate``) answers and scores on the live
index, blocking the release when too few pass.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import httpx
import pytest
from httpx_sse import connect_sse

from tests.conftest import SettingsFactory
from tests.support.api_server import index_files, serve
from varagity.config import Settings
from varagity.eval.feedback import load_feedback_suite, write_suite
from varagity.eval.suite import load_suite
from varagity.pipeline import EVALUATE_JOB
from varagity.services import Services

pytestmark = pytest.mark.integration

KETTLE_Q = "What is the warranty of the Tern K2 kettle?"
KETTLE_TEXT = "The Tern K2 kettle has a warranty of 27 months."
GENERATOR_Q = "What is the power output of the diesel generator at Aurora station?"


@pytest.fixture
def feedback_api(
    make_settings: SettingsFactory, pg_url: str, model_urls: dict[str, str]
) -> Iterator[tuple[str, Settings]]:
    settings = make_settings(DATABASE_URL=pg_url, LLM_MAX_TOKENS=32, **model_urls)
    index_files(settings)
    with serve(settings) as base:
        yield base, settings


def _chat(base: str, question: str) -> tuple[dict, dict]:
    body = {"question": question, "chat_engine": "simple", "k": 3}
    with (
        httpx.Client(timeout=180) as client,
        connect_sse(client, "POST", f"{base}/api/chat", json=body) as source,
    ):
        assert source.response.status_code == 200, source.response.read()
        events = {e.event: json.loads(e.data) for e in source.iter_sse()}
    return events["retrieval"], events["done"]


def test_thumbs_down_with_a_marked_passage_becomes_a_gated_feedback_question(
    feedback_api: tuple[str, Settings], tmp_path: Path
) -> None:
    base, settings = feedback_api
    retrieval, done = _chat(base, KETTLE_Q)
    # the answer says which index state it was given from, and the saved message keeps it
    assert retrieval["index_as_of"] is not None
    answer_id = done["message_id"]
    kettle = next(s for s in retrieval["sources"] if s["relative_path"] == "kettle.md")
    _, done2 = _chat(base, GENERATOR_Q)

    with httpx.Client(base_url=base, timeout=30) as http:
        detail = http.get(f"/api/conversations/{retrieval['conversation_id']}").json()
        question, answer = detail["messages"]
        assert answer["index_as_of"] == retrieval["index_as_of"] and answer["feedback"] == []
        assert question["index_as_of"] is None

        # clear refusals
        url = f"/api/messages/{answer_id}/feedback"
        on_question = f"/api/messages/{question['message_id']}/feedback"
        for path, body, status, code in (
            ("/api/messages/nope/feedback", {"rating": "up"}, 404, "message_not_found"),
            (on_question, {"rating": "up"}, 422, "invalid_feedback"),
            (url, {"rating": "down", "source": 9}, 422, "invalid_feedback"),
            (url, {"rating": "up", "answered_by": 1}, 422, "invalid_request"),
            (url, {"rating": "meh"}, 422, "invalid_request"),
        ):
            r = http.put(path, json=body)
            assert (r.status_code, r.json()["code"]) == (status, code), (body, r.text)

        # a thumbs-up on a source, then a thumbs-down on the answer marking the kettle passage
        r = http.put(f"/api/messages/{answer_id}/feedback", json={"rating": "up", "source": 1})
        assert r.status_code == 200 and r.json()["source"] == 1, r.text
        marked = {"rating": "down", "answered_by": kettle["n"], "comment": "27 months"}
        r = http.put(f"/api/messages/{answer_id}/feedback", json={"rating": "up"})
        r = http.put(f"/api/messages/{answer_id}/feedback", json=marked)  # replaces the up
        assert r.status_code == 200, r.text
        assert r.json()["answered_by"] == kettle["n"] and r.json()["rating"] == "down"
        none = {"rating": "down", "none_answers": True}
        assert (
            http.put(f"/api/messages/{done2['message_id']}/feedback", json=none).status_code == 200
        )
        ratings = http.get(f"/api/messages/{answer_id}/feedback").json()
        assert [(f["source"], f["rating"]) for f in ratings] == [(None, "down"), (1, "up")]
        saved = http.get(f"/api/conversations/{retrieval['conversation_id']}").json()
        assert len(saved["messages"][1]["feedback"]) == 2
        assert len(http.get("/api/feedback", params={"rating": "down"}).json()) == 2

        # the suite: the user's words, the marked passage verbatim, "none" unanswerable
        suite = http.get("/api/feedback/suite").json()
        assert suite["name"] == "feedback" and suite["skipped"] == []
        by_query = {q["query"]: q for q in suite["questions"]}
        assert set(by_query) == {KETTLE_Q, GENERATOR_Q}
        assert by_query[KETTLE_Q]["relevant"] == [
            {"rel_source": "kettle.md", "text": kettle["content"]}
        ]
        assert by_query[KETTLE_Q]["answer"] == "27 months"
        assert by_query[GENERATOR_Q]["answerable"] is False
        jsonl = http.get("/api/feedback/suite", params={"format": "jsonl"})
        assert [json.loads(line)["id"] for line in jsonl.text.splitlines()] == [
            q["id"] for q in suite["questions"]
        ]

        # taking a rating back; deleting the conversation takes its feedback with it
        assert (
            http.delete(f"/api/messages/{answer_id}/feedback", params={"source": 1}).status_code
            == 204
        )
        gone = http.delete(f"/api/messages/{answer_id}/feedback", params={"source": 1})
        assert (gone.status_code, gone.json()["code"]) == (404, "feedback_not_found")

    # the exported folder is a standard suite over DOCS_PATH
    services = Services.open(settings)
    try:
        feedback = load_feedback_suite(services.pg, settings.docs_path)
    finally:
        services.close()
    folder = write_suite(feedback, tmp_path / "feedback-suite")
    loaded = load_suite(folder)
    assert loaded.corpus == settings.docs_path.resolve() and len(loaded.queries) == 2

    # the gate: the golden answers of a one-question suite plus the feedback questions;
    # a pass rate no answer can reach fails feedback_gate (blocking) and names them
    golden = tmp_path / "golden"
    golden.mkdir()
    (golden / "suite.json").write_text(json.dumps({"corpus": str(settings.docs_path)}))
    row = {
        "id": "k1",
        "query": KETTLE_Q,
        "relevant": [{"rel_source": "kettle.md", "text": KETTLE_TEXT}],
        "facts": [["27 months"]],
    }
    (golden / "queries.jsonl").write_text(json.dumps(row) + "\n")
    lenient = {"answer_correctness": 0, "citation_validity": 0, "abstention_accuracy": 0}
    gate = {"method": "hybrid", "k": 3, "pass_at_k": 0, "mrr": 0}
    answers = {**lenient, "max_loops": 3, "feedback_pass_rate": 1.01}
    (golden / "thresholds.json").write_text(json.dumps({**gate, "answers": answers}))
    from varagity_assets.definitions import defs

    result = (
        defs()
        .resolve_job_def(EVALUATE_JOB)
        .execute_in_process(
            instance=dg.DagsterInstance.ephemeral(),
            run_config={
                "ops": {
                    "eval_results": {"config": {"suite_path": str(golden)}},
                    "answer_eval_results": {"config": {"suite_path": str(golden)}},
                }
            },
            raise_on_error=False,
        )
    )
    assert not result.success
    materialized = {e.asset_key for e in result.get_asset_materialization_events()}
    assert dg.AssetKey("search_index_release") not in materialized
    md = next(
        e.materialization.metadata
        for e in result.get_asset_materialization_events()
        if e.asset_key == dg.AssetKey("answer_eval_results")
    )
    assert md["n_questions"].value == 1 and md["feedback_n"].value == 2
    questions = {q["query"]: q for q in md["feedback_questions"].value}
    # judged by citing the marked passage, or by abstaining
    assert isinstance(questions[KETTLE_Q]["relevant_cited"], bool)
    assert questions[GENERATOR_Q]["relevant_cited"] is None
    assert questions[GENERATOR_Q]["answerable"] is False
    checks = {e.check_name: e for e in result.get_asset_check_evaluations()}
    assert not checks["feedback_gate"].passed
    assert checks["answer_correctness_gate"].passed and checks["loops_gate"].passed
    fb_gate = checks["feedback_gate"].metadata
    assert fb_gate["feedback_questions"].value == 2
    assert fb_gate["threshold"].value == pytest.approx(1.01)
    failing = str(fb_gate["failing_question_ids"].value)
    assert failing == (", ".join(md["feedback_failing"].value) or "none")

    # deleting a conversation takes its answers' feedback with it
    assert httpx.delete(f"{base}/api/conversations/{done2['conversation_id']}").status_code == 204
    left = httpx.get(f"{base}/api/feedback", timeout=30).json()
    assert [f["message_id"] for f in left] == [answer_id]
