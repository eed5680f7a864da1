"""A graph eval report judged again by a model on MiniRAG's scale: against the packaged
chat model's real OpenAI-compatible server, and the replies read leniently."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import SettingsFactory
from varagity.config import load_settings
from varagity.eval.llm_judge import read_score
from varagity_cli.main import main
from varagity_stack.model_servers import free_port


def test_a_judging_reply_is_read_as_its_score() -> None:
    assert read_score('{"score": -1}') == -1
    assert read_score('```json\n{"score": 1}\n```') == 1
    assert read_score("Score: 0. The answer says it cannot tell.") == 0
    assert read_score("I would give this +1.") == 1
    # no score of the scale: unjudged, not guessed
    assert read_score("The answer is partly right.") is None
    assert read_score('{"score": 10}') is None
    assert read_score("10 out of 10") is None


def _report(path: Path) -> Path:
    questions = [
        {
            "id": "q1",
            "type": "single",
            "query": "Where did Maya fly to?",
            "gold": "Lisbon",
            "answer": "Maya flew to Lisbon on June 14 [1].",
        },
        {
            "id": "q2",
            "type": "single",
            "query": "Who drove Priya?",
            "gold": "Sam",
            "answer": "The documents do not say.",
        },
        {
            "id": "q3",
            "type": "null",
            "query": "What did Maya eat in Porto?",
            "gold": "Insufficient information",
            "answer": "Maya ate grilled sardines [2].",
        },
    ]
    report = {"suite": "t", "results": [{"name": "graph", "questions": questions}]}
    path.write_text(json.dumps(report), encoding="utf-8")
    return path


def test_a_report_is_judged_through_an_openai_compatible_endpoint(
    tmp_path: Path, model_urls: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    source = _report(tmp_path / "report.json")
    model = load_settings(VARAGITY_HOME=tmp_path).LLM_MODEL
    out = tmp_path / "judged.json"
    argv = ["eval", "--rejudge", str(source), "--judge-url", model_urls["LLM_BASE_URL"]]
    assert main([*argv, "--judge-model", model, "--out", str(out)]) == 0
    judged = json.loads(out.read_text(encoding="utf-8"))
    assert judged["llm_judge"]["model"] == model
    [arm] = judged["results"]
    for question in arm["questions"]:  # every answer was put to the model
        verdict = question["llm_verdict"]
        assert verdict["score"] in (1, 0, -1, None) and verdict["reply"].strip()
        assert verdict["score"] == read_score(verdict["reply"])
    summary = arm["llm_summary"]
    counts = summary["all"]
    assert counts["n"] == 3 and summary["single"]["n"] == 2 and summary["null"]["n"] == 1
    assert counts["right"] + counts["no_info"] + counts["wrong"] + counts["unjudged"] == 3
    assert "MiniRAG" in capsys.readouterr().out
    assert (
        json.loads(source.read_text(encoding="utf-8"))["results"][0]["questions"][0].get(
            "llm_verdict"
        )
        is None
    )  # the report judged is left as it was


def test_a_judge_that_cannot_be_reached_or_asked_is_named(
    tmp_path: Path, make_settings: SettingsFactory, capsys: pytest.CaptureFixture[str]
) -> None:
    make_settings()
    source = _report(tmp_path / "report.json")
    dead = f"http://127.0.0.1:{free_port()}/v1"
    argv = ["eval", "--rejudge", str(source), "--judge-url", dead, "--judge-model", "m"]
    assert main(argv) == 1
    assert dead in capsys.readouterr().err
    assert main(["eval", "--rejudge", str(source)]) == 2
    assert "--judge-url and --judge-model" in capsys.readouterr().err
    (tmp_path / "bad.json").write_text("{}", encoding="utf-8")
    assert main([*argv[:2], str(tmp_path / "bad.json"), *argv[3:]]) == 2
    assert "not a graph eval report" in capsys.readouterr().err
    assert main([*argv[:-1], "m", "--judge-key-env", "VARAGITY_NO_SUCH_KEY"]) == 2
    assert "VARAGITY_NO_SUCH_KEY is not set" in capsys.readouterr().err
    assert not list(tmp_path.glob("*.judged.json"))  # nothing written
