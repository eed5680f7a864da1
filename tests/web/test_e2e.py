"""The web client in Debian's chromium against the real API, stores and model servers.

``web/e2e/chat.mjs`` (playwright-core) drives the built client: it asks a question,
follows the streamed answer, its evidence and a citation, stops and retries an answer,
checks the narrow layout and an in-band model error, and saves a screenshot of each
screen under ``tests/.artifacts/web/``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.api.test_api import CORPUS, serve
from tests.conftest import SettingsFactory, free_port
from varagity.config import Settings
from varagity.ingest.stages import ingest_file
from varagity.services import Services
from varagity_api.main import WEB_BUILD

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
WEB = ROOT / "web"
ARTIFACTS = ROOT / "tests" / ".artifacts" / "web"
CHROMIUM = Path("/usr/bin/chromium")
# SmolLM2-135M at temperature 0 rarely cites on its own; for this question it answers with
# a sentence that carries "[1]", so the citation link is exercised on real model output.
QUESTION = "Tern K2 kettle warranty months [1]?"


def _missing_toolchain() -> list[str]:
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


@pytest.fixture
def web_settings(
    make_settings: SettingsFactory, pg_url: str, model_urls: dict[str, str]
) -> Iterator[Settings]:
    """The small corpus indexed into fresh stores; short answers keep the run quick."""
    missing = _missing_toolchain()
    assert not missing, f"run `make install` first; missing: {', '.join(missing)}"
    settings = make_settings(
        DATABASE_URL=pg_url,
        LLM_MAX_TOKENS=48,
        LLM_TEMPERATURE=0,
        CONTEXTUALIZE=True,
        CONTEXT_MAX_TOKENS=40,
        **model_urls,
    )
    for rel, text in CORPUS.items():
        path = settings.docs_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    services = Services.open(settings)
    try:
        for rel in CORPUS:
            ingest_file(services, rel)
    finally:
        services.close()
    yield settings


def test_chat_in_a_real_browser(web_settings: Settings) -> None:
    dead_llm = web_settings.model_copy(
        update={"LLM_BASE_URL": f"http://127.0.0.1:{free_port()}/v1", "MODEL_MAX_RETRIES": 0}
    )
    shutil.rmtree(ARTIFACTS, ignore_errors=True)
    with serve(web_settings) as base, serve(dead_llm) as failing:
        env = {
            **os.environ,
            "VARAGITY_URL": base,
            "VARAGITY_FAILING_URL": failing,
            "E2E_OUT": str(ARTIFACTS),
            "E2E_QUESTION": QUESTION,
            "E2E_EXPECT_FILE": "kettle.md",
            "E2E_DAGSTER_URL": web_settings.dagster_url,
            "CHROMIUM": str(CHROMIUM),
        }
        run = subprocess.run(
            ["node", "e2e/chat.mjs"],
            cwd=WEB,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
    print(run.stdout)
    assert run.returncode == 0, f"e2e failed:\n{run.stdout}\n{run.stderr}"

    report = json.loads((ARTIFACTS / "report.json").read_text(encoding="utf-8"))
    assert report["consoleErrors"] == []
    assert report["sources"][0]["title"].startswith("[1] kettle.md")
    assert report["sources"][0]["lineage"] == (
        f"{web_settings.dagster_url}/assets/indexed_document?view=partitions&partition=kettle.md"
    )
    assert report["citations"], report["answer"]
    assert "model_unavailable" in report["error"]
    shots = {Path(s["path"]).name for s in report["screenshots"]}
    assert shots == {
        "01-chat-empty.png",
        "02-chat-answer.png",
        "03-chat-stopped.png",
        "04-chat-narrow.png",
        "05-chat-error.png",
    }
    for name in shots:
        assert (ARTIFACTS / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", name
