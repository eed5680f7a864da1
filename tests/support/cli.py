"""``varagity`` as a user runs it: the CLI in a child process of this interpreter."""

from __future__ import annotations

import os
import subprocess
import sys


def run_cli(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """``python -m varagity_cli *args`` with this process's environment; its output as text."""
    return subprocess.run(
        [sys.executable, "-m", "varagity_cli", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ),
        input=stdin,
    )
