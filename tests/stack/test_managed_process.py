"""What a supervised child inherits: the stack's own ``API_KEY`` never reaches the model
servers (llama.cpp's server reads a variable of that name as its key and would refuse
the stack's calls and its readiness probe)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from varagity_stack.model_servers import ManagedProcess, _server_process

_PRINT_ENV = (
    "import os; print('API_KEY=' + repr(os.environ.get('API_KEY')));"
    " print('KEEP=' + os.environ['KEEP'])"
)


def _output(process: ManagedProcess) -> str:
    process.start()
    deadline = time.monotonic() + 30
    while process.running and time.monotonic() < deadline:
        time.sleep(0.05)
    process.stop()
    return process.log_path.read_text()


def test_unset_variables_are_not_inherited(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("API_KEY", "s3cret")
    monkeypatch.setenv("KEEP", "kept")
    bare = ManagedProcess(
        "bare", [sys.executable, "-c", _PRINT_ENV], log_dir=tmp_path, unset=("api_key",)
    )
    out = _output(bare)
    assert "API_KEY=None" in out and "KEEP=kept" in out
    inherits = ManagedProcess("inherits", [sys.executable, "-c", _PRINT_ENV], log_dir=tmp_path)
    assert "API_KEY='s3cret'" in _output(inherits)


def test_model_servers_do_not_inherit_the_stacks_api_key(tmp_path: Path) -> None:
    server = _server_process("llm", [sys.executable, "-c", "pass"], "127.0.0.1", 1, tmp_path)
    assert "API_KEY" in server.unset
