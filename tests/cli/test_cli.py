"""``varagity ask``, ``varagity chat`` and ``varagity search`` as a user runs them."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.conftest import SettingsFactory
from tests.support.api_server import serve
from tests.support.cli import run_cli
from tests.support.pdf_files import text_pdf
from varagity.config import Settings
from varagity.services import Services, ingest_file
from varagity.stores.conversation_store import ConversationStore
from varagity.stores.postgres import database_url
from varagity.stores.vector_store import PgVectorStore

pytestmark = pytest.mark.integration


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
    done = run_cli("ask", "What is the warranty of the Tern K2 kettle?", "-k", "2")
    assert done.returncode == 0, done.stderr
    answer, _, sources = done.stdout.partition("Sources:")
    assert answer.strip()
    lines = [ln for ln in sources.splitlines() if ln.strip()]
    listed = [ln for ln in lines if not ln.strip().startswith('"')]  # quotes are indented
    assert "[1] kettle.md (chunk 0)" in listed[0]
    assert "[2] soup.md" in listed[1]
    if lines[0].startswith(" *"):  # the answer cites the kettle: its quote comes under it
        assert lines[1].strip().startswith('"') and "27 months" in lines[1]

    found = run_cli("search", "lentil soup", "--method", "bm25", "-k", "1")
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
    from varagity_cli.commands.ask import render_turn

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


def test_ask_prints_each_quote_under_the_source_it_comes_from() -> None:
    from io import StringIO

    from tests.support.records import retrieved_chunk
    from varagity.chat.turn import TokenDelta, TurnDone, TurnRetrieval
    from varagity.records import Quote
    from varagity_cli.commands.ask import render_turn

    chunks = (retrieved_chunk(1, "Intro.\nWarranty: 27\nmonths."), retrieved_chunk(2, "Soup."))
    quote = Quote(1, "Warranty: 27\nmonths.", 7, 27)
    events = [
        TurnRetrieval(chunks, "q", None, "bm25", "simple", {}),
        TokenDelta("It is 27 months [1]."),
        TurnDone("It is 27 months [1].", None, [1], "finished", {}, quotes=(quote,)),
    ]
    out = StringIO()
    assert render_turn(events, out=out, err=StringIO()) == 0
    sources = out.getvalue().partition("\n\nSources:\n")[2].splitlines()
    assert sources[0].startswith(" *[1] f1.md")
    assert sources[1] == '       "Warranty: 27 months."'  # on one line, under its source
    assert sources[2].startswith("  [2] f2.md") and len(sources) == 3


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
    exported = run_cli("backup", "export", "rag")
    assert exported.returncode == 0, exported.stderr
    assert "not reachable" in exported.stdout and "in this process" in exported.stdout
    [bundle] = (settings.docs_path / "varagity-exports").glob("varagity-rag-*.zip")
    assert f"{bundle.name}" in exported.stdout and " ok" in exported.stdout

    listed = run_cli("backup", "list", "rag")
    assert listed.returncode == 0 and "1 bundle(s)" in listed.stdout
    assert "3 documents, 3 chunks" in listed.stdout
    verified = run_cli("backup", "verify", "rag", bundle.name)
    assert verified.returncode == 0 and "  ok" in verified.stdout

    # flip one byte of the vectors: the listing's cheap verdict cannot see it, verify can
    damaged = bundle.with_name("varagity-rag-20000101-0000.zip")
    raw = bytearray(bundle.read_bytes())
    at = raw.find(b"embeddings.f32") + 64  # inside the stored (uncompressed) matrix
    raw[at] ^= 0xFF
    damaged.write_bytes(bytes(raw))
    refused = run_cli("backup", "verify", "rag", damaged.name)
    assert refused.returncode == 1 and "REFUSED bundle_invalid" in refused.stdout

    restored = run_cli("backup", "restore", "rag", bundle.name)
    assert restored.returncode == 0, restored.stderr
    assert f"restored 3 documents, 3 chunks from {bundle.name}" in restored.stdout
    assert run_cli("backup", "restore", "graph", "x.zip").returncode == 1
    traversal = run_cli("backup", "restore", "rag", "../x.zip")
    assert traversal.returncode == 1 and "bundle_invalid" in traversal.stderr


# a manual whose facts sit on their own pages, and a toaster that is also "made of" something
KETTLE_PAGES = (
    "Aurora station logs the first sensor sweep at dawn.",
    "The Tern K2 kettle has a warranty of 27 months.",
    "The Tern K2 kettle is made of brushed copper.",
)
TOASTER = "The Brava T9 toaster is made of white enamel and browns four slices.\n"
SOUP = "Red lentil soup simmers for 25 minutes with cumin and paprika.\n"


@pytest.fixture
def chat_settings(
    make_settings: SettingsFactory, pg_url: str, model_urls: dict[str, str]
) -> Settings:
    """The condensing chat engine over a PDF manual (one chunk a page), a toaster and a
    soup, indexed directly."""
    settings = make_settings(
        DATABASE_URL=pg_url,
        CHAT_ENGINE="condense_context",
        LLM_MAX_TOKENS=48,
        CHUNK_SIZE=80,
        CHUNK_OVERLAP=0,
        **model_urls,
    )
    text_pdf(settings.docs_path / "kettle.pdf", KETTLE_PAGES)
    (settings.docs_path / "toaster.md").write_text(TOASTER)
    (settings.docs_path / "soup.md").write_text(SOUP)
    services = Services.open(settings)
    try:
        for rel in ("kettle.pdf", "toaster.md", "soup.md"):
            ingest_file(services, rel)
    finally:
        services.close()
    return settings


def _store_of(settings: Settings) -> PgVectorStore:
    return PgVectorStore(database_url(settings), embedding_dim=settings.EMBEDDING_DIM)


def test_chat_follows_up_and_keeps_the_conversation_the_web_client_lists(
    chat_settings: Settings,
) -> None:
    first = "What is the warranty of the Tern K2 kettle?"
    follow_up = "What is it made of?"  # only the first turn says what "it" is
    other = "How long does the lentil soup simmer?"
    script = "\n".join([first, follow_up, "/new", other, "/quit", "Never asked?"]) + "\n"
    done = run_cli("chat", "-k", "2", stdin=script)
    assert done.returncode == 0, done.stderr
    assert "(new conversation)" in done.stderr
    assert done.stdout.count("Sources:") == 3  # /quit left before the last line
    # numbered citations with the page each passage came from
    assert "[1] kettle.pdf, p. 2 (chunk" in done.stdout.split("Sources:")[1]

    pg = _store_of(chat_settings)
    try:
        store = ConversationStore(pg)
        listed = store.list_conversations()
        assert {(c.title, c.message_count) for c in listed} == {(first, 4), (other, 2)}
        kettle = next(c for c in listed if c.title == first)
        messages = store.get_conversation(kettle.conversation_id).messages
    finally:
        pg.close()
    assert [m.content for m in messages[::2]] == [first, follow_up]
    answer1, answer2 = messages[1], messages[3]
    for saved in (answer1, answer2):  # what was printed is what was saved
        assert saved.content.strip() and saved.content.strip() in done.stdout
    assert answer1.condensed_query is None and "condense" not in (answer1.latency_ms or {})
    # the follow-up was condensed against the first turn, and found the kettle's pages
    assert "condense" in (answer2.latency_ms or {}) and answer2.chat_engine == "condense_context"
    assert answer2.sources and answer2.sources[0].snapshot["relative_path"] == "kettle.pdf"
    assert f"(conversation {kettle.conversation_id})" in done.stderr

    # the web client's history lists it, and the CLI continues it by id
    with serve(chat_settings) as base:
        ids = {c["conversation_id"] for c in httpx.get(f"{base}/api/conversations").json()}
        assert kettle.conversation_id in ids
    unknown = run_cli("chat", "--conversation", "nope", stdin="/quit\n")
    assert unknown.returncode == 2 and "No conversation with id 'nope'" in unknown.stderr


def test_chat_ends_at_end_of_input_and_ctrl_c_stops_only_the_answer(
    chat_settings: Settings,
) -> None:
    assert run_cli("chat", stdin="").returncode == 0  # Ctrl-D at the first prompt

    # long enough to interrupt: attributed answers stream as the model writes, where a
    # quote-checked one shows whole checked sentences and ends at the third unquoted one
    # (a story has few quotes), often before the Ctrl-C lands
    env = {**os.environ, "LLM_MAX_TOKENS": "400", "ANSWER_CITATIONS": "attributed"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "varagity_cli", "chat"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        # started as a shell's background job starts it (CI runs the suite so): with
        # SIGINT ignored, which Python then leaves ignored unless the chat takes it back
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(b"Write a long story about the Tern K2 kettle and its warranty.\n")
    proc.stdin.flush()
    streamed = b""
    deadline = time.monotonic() + 240
    while not streamed.strip() and time.monotonic() < deadline:  # the first answer tokens
        ready, _, _ = select.select([proc.stdout], [], [], 1.0)
        if ready:
            streamed += os.read(proc.stdout.fileno(), 4096)
    assert streamed.strip(), "no answer streamed"
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(b"/quit\n", timeout=120)
    assert proc.returncode == 0, stderr.decode()
    assert "(answer stopped; not saved)" in stderr.decode()
    assert b"Sources:" not in streamed + stdout
    pg = _store_of(chat_settings)
    try:
        assert ConversationStore(pg).list_conversations() == []
    finally:
        pg.close()


def test_a_benchmark_ended_by_sigterm_stops_what_it_started(tmp_path: Path) -> None:
    # the benchmarks' stacks run in sessions of their own: SIGTERM must exit through
    # the finally block that stops them, not end the process outright
    stopped = tmp_path / "stopped"
    code = (
        "import time\n"
        "from varagity_cli.common import exit_on_sigterm\n"
        "exit_on_sigterm()\n"
        "try:\n"
        "    print('started', flush=True)\n"
        "    time.sleep(120)\n"
        "finally:\n"
        f"    open({str(stopped)!r}, 'w').write('stack stopped')\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE)
    assert proc.stdout is not None
    assert proc.stdout.readline() == b"started\n"
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=60) == 143
    assert stopped.read_text() == "stack stopped"
