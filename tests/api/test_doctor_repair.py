"""``varagity doctor --repair`` on this folder's real Dagster webserver + daemon
(``dagster_stack``: the folder sensor stopped, so every run is the repair's): it finds a
file that is not indexed, the documents of a file that is gone and a started run whose
worker is gone (at once, not after the hour a run may legitimately take), launches the
runs that fix them, waits, and checks again clean."""

from __future__ import annotations

import os
import subprocess
import sys

import dagster as dg
import pytest

from tests.support.api_server import index_files
from tests.support.pipeline import DEFS
from varagity.config import Settings, settings_env
from varagity.jobs import DagsterClient
from varagity.pipeline import INGEST_JOB
from varagity_stack.supervisor import dagster_env

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]
_GONE_PID = 4_000_000  # above pid_max: no process has it


def _doctor(settings: Settings, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **settings_env(settings), "DAGSTER_URL": settings.dagster_url}
    return subprocess.run(
        [sys.executable, "-m", "varagity_cli", "doctor", "--settle", "0", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def _dead_run(settings: Settings) -> str:
    """A run left STARTED by a worker that is gone (its code server died with it), as
    the instance holds it: created through the stack's own instance storage."""
    env = dagster_env(settings, settings.DATABASE_URL or "")
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        with dg.DagsterInstance.get() as instance:
            run = instance.create_run_for_job(
                DEFS.resolve_job_def(INGEST_JOB), status=dg.DagsterRunStatus.STARTED
            )
            instance.report_engine_event(f"Executing steps in process (pid: {_GONE_PID})", run)
            return run.run_id
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def test_doctor_repair_launches_the_runs_that_fix_what_it_found(
    dagster_stack: Settings,
) -> None:
    settings = dagster_stack
    docs = settings.docs_path
    index_files(settings, {"repair/gone.md": "The Orla-3 lamp burns for 9 hours.\n"})
    (docs / "repair/gone.md").unlink()
    (docs / "repair/new.md").write_text("The Brisk-2 kayak weighs 21 kilograms.\n")
    dead = _dead_run(settings)

    found = _doctor(settings)
    assert found.returncode == 1, found.stdout + found.stderr
    assert "repair/new.md: not indexed" in found.stdout
    assert "repair/gone.md: the file is gone but 1 document(s) remain" in found.stdout
    assert f"run {dead}: STARTED, but its worker (pid {_GONE_PID}) is gone" in found.stdout

    repaired = _doctor(settings, "--repair")
    out = repaired.stdout
    assert repaired.returncode == 0, out + repaired.stderr
    assert f"run {dead}: marked canceled (its worker is gone)" in out
    assert "ingest of" in out and "repair/new.md" in out
    assert "purge of 1 removed file(s) launched" in out and "repair/gone.md" in out
    after = out.split("After the repair:")[1]
    assert "All invariants hold." in after
    assert DagsterClient(settings.dagster_url).run_statuses([dead]) == {dead: "CANCELED"}
