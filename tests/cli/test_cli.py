"""``varagity ask`` and ``varagity search`` as a user runs them."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from varagity.config import Settings
from varagity.ingest.stages import ingest_file
from varagity.services import Services

pytestmark = pytest.mark.integration


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "varagity_cli", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ),
    )


def test_ask_prints_answer_and_numbered_sources(stack_settings: Settings) -> None:
    (stack_settings.docs_path / "kettle.md").write_text(
        "# Tern K2\n\nThe Tern K2 kettle has a warranty of 27 months.\n"
    )
    (stack_settings.docs_path / "soup.md").write_text("Lentil soup simmers for 25 minutes.\n")
    services = Services.open(stack_settings)
    try:
        for rel in ("kettle.md", "soup.md"):
            ingest_file(services, rel)
    finally:
        services.close()
    done = _run("ask", "What is the warranty of the Tern K2 kettle?", "-k", "2")
    assert done.returncode == 0, done.stderr
    answer, _, sources = done.stdout.partition("Sources:")
    assert answer.strip()
    lines = [ln for ln in sources.splitlines() if ln.strip()]
    assert "[1] kettle.md (chunk 0)" in lines[0]
    assert "[2] soup.md" in lines[1]

    found = _run("search", "lentil soup", "--method", "bm25", "-k", "1")
    assert found.returncode == 0, found.stderr
    assert found.stdout.startswith("#1 soup.md::0 bm25 #1")


def test_invalid_settings_exit_2_with_the_reason(make_settings) -> None:
    make_settings()
    env = {**os.environ, "SEMANTIC_WEIGHT": "0.9", "BM25_WEIGHT": "0.3"}
    done = subprocess.run(
        [sys.executable, "-m", "varagity_cli", "search", "x"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert done.returncode == 2
    assert "must sum to 1.0" in done.stderr


def test_ask_keeps_reasoning_off_stdout_and_notes_a_stopped_loop() -> None:
    from io import StringIO

    from tests.support.records import retrieved_chunk
    from varagity.chat.turn import ReasoningDelta, TokenDelta, TurnDone, TurnRetrieval
    from varagity_cli.main import render_turn

    events = [
        TurnRetrieval((retrieved_chunk(1, "27 months"),), "q", None, "bm25", "simple", {}),
        ReasoningDelta("The source says 27."),
        TokenDelta("It is 27 months [1]. Again. Again."),
        TurnDone("It is 27 months [1].", "The source says 27.", [1], "repetition", {}),
    ]
    for show in (False, True):
        out, err = StringIO(), StringIO()
        assert render_turn(events, show_reasoning=show, out=out, err=err) == 0
        answer, _, sources = out.getvalue().partition("\n\nSources:\n")
        assert answer == "It is 27 months [1]. Again. Again."
        assert sources.startswith(" *[1] f1.md (chunk 0)")
        assert "The source says" not in out.getvalue() and "<think>" not in out.getvalue()
        assert ("reasoning: The source says 27." in err.getvalue()) is show
        assert "repeating itself" in err.getvalue() and "'It is 27 months [1].'" in err.getvalue()


def test_backup_commands_work_in_process_when_the_stack_is_down(
    make_settings, pg_url: str, model_urls: dict[str, str]
) -> None:
    """No Dagster answers (the stack is down): export and restore do the run's work in
    the command's process, and refuse damaged bundles with their reason."""
    from tests.conftest import free_port
    from tests.support.api_server import index_files

    settings = make_settings(
        DATABASE_URL=pg_url, DAGSTER_PORT=free_port(), GRAPH_ENABLED="false", **model_urls
    )
    index_files(settings)
    exported = _run("backup", "export", "rag")
    assert exported.returncode == 0, exported.stderr
    assert "not reachable" in exported.stdout and "in this process" in exported.stdout
    [bundle] = (settings.docs_path / "varagity-exports").glob("varagity-rag-*.zip")
    assert f"{bundle.name}" in exported.stdout and " ok" in exported.stdout

    listed = _run("backup", "list", "rag")
    assert listed.returncode == 0 and "1 bundle(s)" in listed.stdout
    assert "3 documents, 3 chunks" in listed.stdout
    verified = _run("backup", "verify", "rag", bundle.name)
    assert verified.returncode == 0 and "  ok" in verified.stdout

    # flip one byte of the vectors: the listing's cheap verdict cannot see it, verify can
    damaged = bundle.with_name("varagity-rag-20000101-0000.zip")
    raw = bytearray(bundle.read_bytes())
    at = raw.find(b"embeddings.f32") + 64  # inside the stored (uncompressed) matrix
    raw[at] ^= 0xFF
    damaged.write_bytes(bytes(raw))
    refused = _run("backup", "verify", "rag", damaged.name)
    assert refused.returncode == 1 and "REFUSED bundle_invalid" in refused.stdout

    restored = _run("backup", "restore", "rag", bundle.name)
    assert restored.returncode == 0, restored.stderr
    assert f"restored 3 documents, 3 chunks from {bundle.name}" in restored.stdout
    assert _run("backup", "restore", "graph", "x.zip").returncode == 1
    traversal = _run("backup", "restore", "rag", "../x.zip")
    assert traversal.returncode == 1 and "bundle_invalid" in traversal.stderr
