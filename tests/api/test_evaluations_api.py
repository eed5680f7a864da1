"""``/api/evaluations`` and ``varagity evaluation`` against a real Dagster webserver +
daemon (``dagster_stack``: sensors stopped, so every run is the API's or the CLI's), the
packaged models, over real HTTP and SSE. The corpus is indexed directly; the suite is
two questions of its own (one answerable, one not) over one of its files."""

from __future__ import annotations

import json
import os
import select
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from itertools import pairwise
from pathlib import Path

import httpx
import pytest
from httpx_sse import connect_sse

from tests.support.api_server import index_files, serve
from varagity.config import Settings, settings_env

pytestmark = [pytest.mark.integration, pytest.mark.timeout(1200)]
RUN_TIMEOUT_S = 600  # a generous bound for a run on a shared 2-core machine

QUESTIONS = [
    {
        "id": "k1",
        "query": "How long is the warranty on the Tern K2 kettle?",
        "relevant": [
            {
                "rel_source": "kettle.md",
                "text": "The Tern K2 kettle has a warranty of 27 months.",
            }
        ],
        "facts": [["27 months", "twenty-seven months"]],
    },
    {
        "id": "u1",
        "query": "Who designed the lid of the Tern K2 kettle?",
        "relevant": [],
        "answerable": False,
    },
]


@pytest.fixture(scope="module")
def api(dagster_stack: Settings) -> Iterator[str]:
    """The API for the module's Dagster stack, over a directly indexed corpus."""
    index_files(dagster_stack)
    with serve(dagster_stack) as base:
        yield base


@pytest.fixture(scope="module")
def suite(dagster_stack: Settings, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A two-question suite whose corpus is the stack's DOCS_PATH (no thresholds: the
    gates pass whatever the figures)."""
    root = tmp_path_factory.mktemp("suite")
    (root / "suite.json").write_text(json.dumps({"corpus": str(dagster_stack.docs_path)}))
    (root / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in QUESTIONS))
    return root


def _launch(api: str, suite: Path) -> dict:
    r = httpx.post(f"{api}/api/evaluations", json={"suite": str(suite)}, timeout=60)
    assert r.status_code == 202, r.text
    return r.json()


def _events(api: str, run_id: str) -> list[tuple[str, dict]]:
    events: list[tuple[str, dict]] = []
    with (
        httpx.Client(timeout=httpx.Timeout(60, read=RUN_TIMEOUT_S)) as client,
        connect_sse(client, "GET", f"{api}/api/evaluations/{run_id}/events") as source,
    ):
        assert source.response.status_code == 200, source.response.read()
        for event in source.iter_sse():
            events.append((event.event, json.loads(event.data)))
            if event.event in ("done", "error"):
                break
    return events


def _wait_done(api: str, run_id: str) -> dict:
    deadline = time.monotonic() + RUN_TIMEOUT_S
    while True:
        r = httpx.get(f"{api}/api/evaluations/{run_id}", timeout=60)
        assert r.status_code == 200, r.text
        if r.json()["done"]:
            return r.json()
        assert time.monotonic() < deadline, f"evaluation {run_id} still {r.json()['status']}"
        time.sleep(1)


def _plausible(figures: dict) -> None:
    assert figures["n"] == len(QUESTIONS)
    for share in ("answer_correctness", "fully_correct", "citation_validity"):
        assert 0.0 <= figures[share] <= 1.0, figures
    # the unanswerable question is half the abstention figure: 0, 0.5 or 1
    assert figures["abstention_accuracy"] in (0.0, 0.5, 1.0), figures
    assert 0 <= figures["loops"] <= len(QUESTIONS)
    assert figures["first_token_p50_ms"] > 0


def test_an_evaluation_streams_its_questions_then_its_figures(api: str, suite: Path) -> None:
    launched = _launch(api, suite)
    run_id = launched["run_id"]
    assert launched["suite"] == str(suite) and launched["source"] == "api"
    assert launched["state"] in ("queued", "running") and not launched["done"]
    assert launched["figures"] is None and launched["questions_done"] == 0

    events = _events(api, run_id)
    names = [name for name, _ in events]
    assert names[-1] == "done" and set(names[:-1]) <= {"progress"}, names
    states = [data for _, data in events]
    assert all(a != b for a, b in pairwise(states)), "repeated event"
    counted = [s["questions_done"] for s in states]
    assert counted == sorted(counted), counted  # questions only ever add up
    under_way = [s for s in states[:-1] if s["questions_done"]]
    assert under_way, "no progress event counted the questions while the run went on"
    assert all(s["questions_total"] == 2 and s["question"] for s in under_way), under_way
    final = states[-1]
    assert final["state"] == "succeeded" and final["status"] == "SUCCESS", final
    assert (final["questions_done"], final["questions_total"]) == (2, 2)
    assert final["question"].startswith("[2/2] u1: ")
    _plausible(final["figures"])
    assert final["error"] is None and final["ended_at"]

    # the run's page and the list say the same, newest first
    assert httpx.get(f"{api}/api/evaluations/{run_id}", timeout=60).json() == final
    listed = httpx.get(f"{api}/api/evaluations", params={"limit": 5}, timeout=60).json()["runs"]
    assert listed[0] == final


def test_a_killed_evaluation_ends_canceled(api: str, suite: Path) -> None:
    run_id = _launch(api, suite)["run_id"]
    r = httpx.post(f"{api}/api/evaluations/{run_id}/kill", timeout=60)
    assert r.status_code == 200, r.text
    assert r.json()["run_id"] == run_id and r.json()["state"] in ("queued", "running", "canceled")
    killed = _wait_done(api, run_id)
    assert (killed["state"], killed["status"], killed["error"]) == ("canceled", "CANCELED", None)
    assert killed["figures"] is None
    again = httpx.post(f"{api}/api/evaluations/{run_id}/kill", timeout=60)
    assert (again.status_code, again.json()["code"]) == (409, "evaluation_ended"), again.text
    for path in ("", "/events"):
        r = httpx.get(f"{api}/api/evaluations/no-such-run{path}", timeout=60)
        assert (r.status_code, r.json()["code"]) == (404, "evaluation_not_found")


def test_a_path_that_is_no_answer_suite_is_422(
    api: str, dagster_stack: Settings, tmp_path: Path
) -> None:
    corpus = {"corpus": str(dagster_stack.docs_path)}
    (tmp_path / "no-facts").mkdir()
    (tmp_path / "no-facts" / "suite.json").write_text(json.dumps(corpus))
    bare = {k: v for k, v in QUESTIONS[0].items() if k != "facts"}
    (tmp_path / "no-facts" / "queries.jsonl").write_text(json.dumps(bare) + "\n")
    for path, says in (
        (tmp_path / "missing", "no queries.jsonl"),
        (tmp_path, "no queries.jsonl"),
        (tmp_path / "no-facts", "needs key facts"),
    ):
        r = httpx.post(f"{api}/api/evaluations", json={"suite": str(path)}, timeout=60)
        assert (r.status_code, r.json()["code"]) == (422, "invalid_suite"), r.text
        assert str(path) in r.json()["message"] and says in r.json()["message"]
    r = httpx.post(f"{api}/api/evaluations", json={"suite": ""}, timeout=60)
    assert (r.status_code, r.json()["code"]) == (422, "invalid_request")


def _cli(settings: Settings, *args: str) -> dict:
    """How ``varagity evaluation ARGS`` is run against the stack."""
    return {
        "args": [sys.executable, "-m", "varagity_cli", "evaluation", *args],
        "env": {**os.environ, **settings_env(settings)},
        "cwd": settings.home,  # no stray .env from the checkout
    }


def test_the_command_line_launches_follows_shows_and_lists(
    api: str, dagster_stack: Settings, suite: Path
) -> None:
    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            **_cli(dagster_stack, *args), capture_output=True, text=True, timeout=RUN_TIMEOUT_S
        )

    done = cli("launch", "--suite", str(suite))
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith(f"answer evaluation of {suite}: run ")
    run_id = lines[0].split(": run ")[1].split(":")[0]
    asked = [line.strip() for line in lines if line.startswith("  [")]
    assert [line.split(":")[0] for line in asked] == ["[1/2] k1", "[2/2] u1"], lines
    assert lines[-2] == "succeeded" and lines[-1].startswith("figures: n 2, correctness ")

    shown = cli("show", run_id)
    assert shown.returncode == 0, shown.stderr
    assert f"run {run_id}: succeeded (SUCCESS), from cli" in shown.stdout
    assert "questions: 2/2  [2/2] u1: " in shown.stdout
    assert httpx.get(f"{api}/api/evaluations/{run_id}", timeout=60).json()["source"] == "cli"
    listed = cli("list")
    assert listed.returncode == 0 and listed.stdout.startswith(f"{run_id}  ")
    ended = cli("kill", run_id)
    assert ended.returncode == 1 and "already ended" in ended.stderr
    unknown = cli("kill", "no-such-run")
    assert unknown.returncode == 2
    refused = cli("launch", "--suite", str(suite / "nope"))
    assert refused.returncode == 2 and "invalid_suite" in refused.stderr


def test_a_missed_gate_fails_the_run_with_its_figures(
    api: str, dagster_stack: Settings, suite: Path, tmp_path: Path
) -> None:
    strict = tmp_path / "strict"
    shutil.copytree(suite, strict)
    gate = {"answer_correctness": 1.01, "citation_validity": 0, "abstention_accuracy": 0}
    thresholds = {"pass_at_k": 0, "mrr": 0, "answers": {**gate, "max_loops": 2}}
    (strict / "thresholds.json").write_text(json.dumps(thresholds))
    failed = subprocess.run(
        **_cli(dagster_stack, "launch", "--suite", str(strict)),
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
    )
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert "figures: n 2, " in failed.stdout and "\nfailed\n" in failed.stdout
    assert "answer_correctness_gate" in failed.stderr


def test_ctrl_c_stops_following_and_leaves_the_run(
    api: str, dagster_stack: Settings, suite: Path
) -> None:
    proc = subprocess.Popen(
        **_cli(dagster_stack, "launch", "--suite", str(suite)),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        # as a shell's background job starts it (CI runs the suite so): SIGINT ignored
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
    )
    assert proc.stdout is not None
    said = b""
    deadline = time.monotonic() + 120
    while b"\nqueued\n" not in said and b"\nrunning\n" not in said:  # following now
        assert time.monotonic() < deadline and proc.poll() is None, said
        if select.select([proc.stdout], [], [], 1.0)[0]:
            said += os.read(proc.stdout.fileno(), 4096)
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr.decode()
    run_id = said.decode().split(": run ")[1].split(":")[0]
    assert f"stopped following; run {run_id} goes on" in stdout.decode()
    assert _wait_done(api, run_id)["state"] == "succeeded"
