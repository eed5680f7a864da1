"""Issue 12 #1 on the real stack: a blurb run's worker killed -9 while it holds the
``llm`` pool's slot must not block the blurb runs after it (run monitoring frees the
slots of ended runs; see dagster_home/dagster.yaml), also when the worker was forked
warm from the code server's forkserver."""

from __future__ import annotations

import os
import re
import signal
from pathlib import Path

import httpx
import psutil
import pytest

from tests.stack.test_supervisor import _gql, _wait
from tests.support.running_stack import varagity_up
from varagity.config import load_settings
from varagity.stores.postgres import connect, ensure_embedded_postgres

pytestmark = [pytest.mark.slow, pytest.mark.integration]

_RUNS = (
    '{ runsOrError(filter: {statuses: [STARTED], tags: [{key: "varagity/stage", '
    'value: "contextualize"}]}) { ... on Runs { results { runId } } } }'
)


def _run_messages(dagster: str, run_id: str) -> list[str]:
    data = _gql(
        dagster,
        f'{{ logsForRun(runId: "{run_id}") {{ ... on EventConnection {{ events {{ '
        "... on MessageEvent { message } } } } }",
    )
    return [e.get("message") or "" for e in data["logsForRun"]["events"]]


def _run_status(dagster: str, run_id: str) -> str:
    data = _gql(dagster, f'{{ runOrError(runId: "{run_id}") {{ ... on Run {{ status }} }} }}')
    return str(data["runOrError"]["status"])


def _contextualized(pg_url: str, relative_path: str) -> bool:
    with connect(pg_url) as conn:
        row = conn.execute(
            "SELECT count(*) FILTER (WHERE c.contextualized_at IS NOT NULL) FROM chunks c "
            "JOIN documents d ON d.doc_id = c.doc_id WHERE d.relative_path = %s",
            (relative_path,),
        ).fetchone()
    return bool(row and row[0])


@pytest.mark.timeout(1500)
def test_a_killed_blurb_run_worker_does_not_block_the_next_blurb_run(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "first.md").write_text("# Kettles\n\nThe Tern K2 kettle boils a litre in 3 minutes.\n")
    with varagity_up(tmp_path / "home", docs, CONTEXTUALIZE="true") as stack:
        api, dagster, proc = stack.api, stack.dagster, stack.proc
        # the blurb run of first.md, once its LLM step runs (it holds the llm slot)
        run_id = ""

        def llm_step_running() -> bool:
            nonlocal run_id
            runs = _gql(dagster, _RUNS)["runsOrError"]["results"]
            run_id = runs[0]["runId"] if runs else ""
            return bool(run_id) and any(
                "Started execution of step" in m for m in _run_messages(dagster, run_id)
            )

        _wait(llm_step_running, 300, "the blurb step to start", proc)
        pid_line = next(m for m in _run_messages(dagster, run_id) if re.search(r"pid: \d+", m))
        worker = psutil.Process(int(re.search(r"pid: (\d+)", pid_line).group(1)))  # type: ignore[union-attr]
        assert worker.is_running()
        # a warm worker (varagity_assets.code_server): forked from the code server's
        # forkserver, which run monitoring must see die like any other
        assert "multiprocessing.forkserver" in " ".join(psutil.Process(worker.ppid()).cmdline())
        os.kill(worker.pid, signal.SIGKILL)
        _wait(lambda: _run_status(dagster, run_id) == "FAILURE", 120, "the run to fail", proc)

        # a new file's blurb run needs the same llm slot: it must get it
        (docs / "second.md").write_text("# Drones\n\nThe Velo-9 battery lasts 47 minutes.\n")
        pg_url = ensure_embedded_postgres(load_settings(VARAGITY_HOME=tmp_path / "home"))
        _wait(lambda: _contextualized(pg_url, "second.md"), 600, "second.md's blurb", proc)
        assert httpx.get(f"{api}/api/health", timeout=30).status_code == 200
