"""What the browser tests share: the toolchain check and running an ``e2e/*.mjs`` script."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

from varagity_api.main import WEB_BUILD

ROOT = Path(__file__).resolve().parents[2]
WEB = ROOT / "web"
ARTIFACTS = ROOT / "tests" / ".artifacts" / "web"
CHROMIUM = Path("/usr/bin/chromium")
PNG = b"\x89PNG\r\n\x1a\n"


def missing_toolchain() -> list[str]:
    """What ``make install`` would still have to provide for the browser tests."""
    missing = []
    if shutil.which("node") is None:
        missing.append("node")
    if not CHROMIUM.exists():
        missing.append(f"{CHROMIUM} (Debian package chromium)")
    if not (WEB / "node_modules" / "playwright-core").is_dir():
        missing.append("web/node_modules (npm ci)")
    build = WEB_BUILD / "index.html"
    if not build.is_file():
        missing.append(f"the web build in {WEB_BUILD} (npm run build)")
    else:
        sources = [WEB / "index.html", *(WEB / "src").rglob("*")]
        if max(p.stat().st_mtime for p in sources) > build.stat().st_mtime:
            missing.append("a web build newer than web/src (make web)")
    return missing


def run_script(script: str, out: Path, env: dict[str, str], timeout: float) -> dict[str, Any]:
    """Run ``web/e2e/<script>`` with ``env`` (plus ``E2E_OUT`` and ``CHROMIUM``) into a
    fresh ``out``; print its output and return its ``report.json`` once it passed."""
    shutil.rmtree(out, ignore_errors=True)
    run = subprocess.run(
        ["node", f"e2e/{script}"],
        cwd=WEB,
        env={**os.environ, **env, "E2E_OUT": str(out), "CHROMIUM": str(CHROMIUM)},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    print(run.stdout)
    assert run.returncode == 0, f"{script} failed:\n{run.stdout}\n{run.stderr}"
    report: dict[str, Any] = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert report["consoleErrors"] == []
    return report


def screenshot_names(report: dict[str, Any]) -> set[str]:
    """The file names of the report's screenshots, each checked to be a PNG."""
    names = set()
    for shot in report["screenshots"]:
        path = Path(shot["path"])
        assert path.read_bytes()[:8] == PNG, path
        names.add(path.name)
    return names
