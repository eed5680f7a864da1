"""``varagity up`` as a subprocess, for the tests that need the whole embedded stack."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from tests.conftest import free_port

STARTUP_TIMEOUT_S = 400
# settings that would point the stack at outside services instead of embedded ones
EXTERNAL = (
    "DATABASE_URL",
    "LLM_BASE_URL",
    "EMBEDDING_BASE_URL",
    "RERANK_BASE_URL",
    "ELASTICSEARCH_URL",
    "DAGSTER_URL",
)


@dataclass
class RunningStack:
    """A started ``varagity up``: its URLs, environment, process and log."""

    api: str
    dagster: str
    env: dict[str, str]
    proc: subprocess.Popen[bytes]
    log_path: Path
    children: list[psutil.Process] = field(default_factory=list)

    def log(self) -> str:
        """Everything the supervisor printed so far."""
        return self.log_path.read_text()


@contextmanager
def varagity_up(home: Path, docs: Path, **settings: str) -> Iterator[RunningStack]:
    """``varagity up`` on free ports until the corpus is indexed.

    On exit it sends SIGTERM and checks the stack stopped cleanly (exit status 0) with
    no child process left behind.
    """
    ports = {
        k: str(free_port()) for k in ("API_PORT", "DAGSTER_PORT", "LLM_PORT", "EMBEDDING_PORT")
    }
    env = {**os.environ, **ports, **settings, "VARAGITY_HOME": str(home), "DOCS_PATH": str(docs)}
    for name in EXTERNAL:
        env.pop(name, None)
    log_path = home.parent / "up.log"
    with log_path.open("w") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "varagity_cli", "up"],
            cwd=home.parent,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        stack = RunningStack(
            api=f"http://127.0.0.1:{ports['API_PORT']}",
            dagster=f"http://127.0.0.1:{ports['DAGSTER_PORT']}",
            env=env,
            proc=proc,
            log_path=log_path,
        )
        try:
            deadline = time.monotonic() + STARTUP_TIMEOUT_S
            while "Corpus indexed" not in stack.log():
                assert proc.poll() is None, f"varagity up exited:\n{stack.log()[-3000:]}"
                assert time.monotonic() < deadline, "varagity up did not index the corpus in time"
                time.sleep(0.5)
            stack.children = psutil.Process(proc.pid).children(recursive=True)
            yield stack
        finally:
            if proc.poll() is None:  # restarted components are children too
                stack.children += psutil.Process(proc.pid).children(recursive=True)
            proc.send_signal(signal.SIGTERM)
            try:
                code = proc.wait(90)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                raise
    assert code == 0, stack.log()[-3000:]
    time.sleep(1)
    left = [c for c in stack.children if c.is_running() and c.status() != psutil.STATUS_ZOMBIE]
    assert not left, f"still running after shutdown: {left}"
