"""The whole web client in Debian's chromium against ``varagity up`` on embedded defaults.

The real stack runs as a subprocess (embedded Postgres, the packaged model servers,
the Dagster webserver and daemon with the folder sensor, the API serving the build)
over a small corpus with free ports. ``web/e2e/app.mjs`` then drives the browser
through the corpus screen (tree, upload, pending -> indexed, folder delete), the chat
(an answer about the uploaded file and its evidence, restored by a reload), the
settings drawer (an inline validation error, a reingest-affecting change), the stale
banner's re-ingest with live progress, conversation groups, renaming and title search,
and the 375px layout; its screenshots land in ``tests/.artifacts/web/app/``.
Afterwards the API is asked whether what the browser did really happened, and the
stack must shut down cleanly.
"""

from __future__ import annotations

import os
from pathlib import Path

import httpx
import pytest

from tests.support.running_stack import varagity_up
from tests.web.harness import ARTIFACTS, missing_toolchain, run_script, screenshot_names

pytestmark = [pytest.mark.slow, pytest.mark.integration]

OUT = ARTIFACTS / "app"
CORPUS = {
    "manuals/kettle.md": "# Tern K2 kettle\n\nThe Tern K2 kettle has a warranty of 27 months.\n",
    "station/power.md": "# Aurora station\n\nWind turbines deliver a peak of 4.2 megawatts.\n",
    "soup.txt": "Red lentil soup simmers for 25 minutes with cumin and paprika.\n",
}
UPLOAD = "velo-drone.txt"
UPLOAD_TEXT = "The Velo-9 drone battery lasts 47 minutes on a full charge.\n"
UPLOAD_MTIME = 1_700_000_000  # the file's own clock, which the upload must keep
QUESTION = "How long does the Velo-9 drone battery last?"


def test_the_web_client_on_the_embedded_stack(tmp_path: Path) -> None:
    missing = missing_toolchain()
    assert not missing, f"run `make install` first; missing: {', '.join(missing)}"
    docs = tmp_path / "docs"
    for rel, text in CORPUS.items():
        path = docs / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    picked = tmp_path / "picked"  # the files the browser's file input picks
    picked.mkdir()
    (picked / UPLOAD).write_text(UPLOAD_TEXT, encoding="utf-8")
    os.utime(picked / UPLOAD, (UPLOAD_MTIME, UPLOAD_MTIME))
    (picked / "tool.exe").write_bytes(b"MZ\x90\x00 not a document")

    with varagity_up(tmp_path / "home", docs, CONTEXTUALIZE="false", LLM_MAX_TOKENS="32") as stack:
        api = stack.api
        report = run_script(
            "app.mjs",
            OUT,
            {
                "VARAGITY_URL": api,
                "E2E_UPLOAD": str(picked / UPLOAD),
                "E2E_REFUSED": str(picked / "tool.exe"),
                "E2E_QUESTION": QUESTION,
            },
            timeout=900,
        )
        # what the browser showed is what the service holds
        listing = httpx.get(f"{api}/api/documents", timeout=30).json()["documents"]
        statuses = {d["relative_path"]: d["status"] for d in listing}
        settings = httpx.get(f"{api}/api/settings", timeout=30).json()
        conversations = httpx.get(f"{api}/api/conversations", timeout=30).json()
        groups = httpx.get(f"{api}/api/groups", timeout=30).json()

    assert statuses == {"manuals/kettle.md": "indexed", "soup.txt": "indexed", UPLOAD: "indexed"}
    assert not (docs / "station").exists(), "the folder delete removed the files and the folder"
    assert (docs / UPLOAD).read_text(encoding="utf-8") == UPLOAD_TEXT
    assert (docs / UPLOAD).stat().st_mtime == UPLOAD_MTIME
    chunk_size = next(s for s in settings["settings"] if s["name"] == "CHUNK_SIZE")
    assert (chunk_size["value"], chunk_size["overridden"]) == (600, True)
    assert settings["stale"] is None, "the completed re-ingest cleared the stale flag"
    assert [g["name"] for g in groups] == ["Drones"]
    assert [(c["title"], c["group_id"]) for c in conversations] == [
        ("Velo-9 battery life", groups[0]["group_id"])
    ]

    assert report["uploadStatuses"] == ["pending", "indexed"]
    assert "unsupported_type" in report["refusal"]
    assert any(UPLOAD in title for title in report["sources"])
    assert report["conversationUrl"] == f"#/c/{conversations[0]['conversation_id']}"
    assert "must be smaller than CHUNK_SIZE" in report["settingsError"]
    assert "CHUNK_SIZE 1200->600" in report["stale"]
    assert "Re-ingest complete" in report["ingest"]
    assert screenshot_names(report) == {
        "01-corpus-tree.png",
        "02-upload-results.png",
        "03-corpus-delete.png",
        "04-chat.png",
        "05-evidence.png",
        "06-history-reloaded.png",
        "07-settings-error.png",
        "08-stale-banner.png",
        "09-ingest-progress.png",
        "10-ingest-done.png",
        "11-conversations-group.png",
        "12-narrow.png",
    }
