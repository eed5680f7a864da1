"""Over real HTTP against the real chat model server: a busy model answers "queued"
in-band (issue 12 #6), and ``/v1/chat/completions`` caps answers and questions exactly as
``/api/chat`` does (issue 12, #9)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import httpx
import pytest

from tests.conftest import SettingsFactory
from tests.support.api_server import index_files, serve

pytestmark = pytest.mark.integration

VERBOSE = "Describe the Tern K2 kettle, its warranty and everything else the documents say."


@contextmanager
def _api(
    make_settings: SettingsFactory, pg_url: str, model_urls: dict[str, str], **extra: object
) -> Iterator[str]:
    settings = make_settings(DATABASE_URL=pg_url, CHAT_ENGINE="simple", **model_urls, **extra)
    index_files(settings)
    with serve(settings) as base:
        yield base


def _chat_events(
    base: str,
    question: str,
    log: list[tuple[str, str, dict[str, object]]],
    who: str,
    started: threading.Event | None = None,
) -> None:
    """Stream one /api/chat turn, appending (who, event, data) to the shared ``log``."""
    with httpx.stream(
        "POST", f"{base}/api/chat", json={"question": question}, timeout=300
    ) as response:
        assert response.status_code == 200
        event = ""
        for line in response.iter_lines():
            if line.startswith("event:"):
                event = line.removeprefix("event:").strip()
            elif line.startswith("data:") and event:
                log.append((who, event, json.loads(line.removeprefix("data:").strip())))
                if event == "retrieval" and started is not None:
                    started.set()
                event = ""


def test_a_second_chat_is_told_it_is_queued_before_its_tokens(
    make_settings: SettingsFactory, pg_url: str, model_urls: dict[str, str]
) -> None:
    with _api(make_settings, pg_url, model_urls, LLM_MAX_TOKENS=64, LLM_CONCURRENCY=1) as base:
        log: list[tuple[str, str, dict[str, object]]] = []
        first_started = threading.Event()
        first = threading.Thread(target=_chat_events, args=(base, VERBOSE, log, "A", first_started))
        first.start()
        assert first_started.wait(120), "the first chat never got its evidence"
        second = threading.Thread(target=_chat_events, args=(base, VERBOSE, log, "B"))
        second.start()
        first.join(300)
        second.join(300)
    a = [e for who, e, _ in log if who == "A"]
    b = [(e, d) for who, e, d in log if who == "B"]
    assert a[0] == "retrieval" and a[-1] == "done" and "queued" not in a
    names = [e for e, _ in b]
    assert names[0] == "retrieval" and names[1] == "queued" and names[-1] == "done", names
    queued = b[1][1]
    assert queued["position"] == 1 and "Waiting for the model" in str(queued["message"])
    assert "token" in names and names.index("queued") < names.index("token")
    # one answer at a time: the first was done before the second's first token
    order = [(who, e) for who, e, _ in log]
    assert order.index(("A", "done")) < order.index(("B", "token"))
    done_b = b[-1][1]
    assert "queued" in done_b["timings_ms"]  # type: ignore[operator]


def _openai(base: str, **body: object) -> httpx.Response:
    return httpx.post(
        f"{base}/v1/chat/completions",
        json={"model": "varagity", "messages": [{"role": "user", "content": VERBOSE}], **body},
        timeout=300,
    )


def test_openai_route_caps_answers_like_the_chat_route(
    make_settings: SettingsFactory, pg_url: str, model_urls: dict[str, str]
) -> None:
    with _api(make_settings, pg_url, model_urls, LLM_MAX_TOKENS=8) as base:
        log: list[tuple[str, str, dict[str, object]]] = []
        _chat_events(base, VERBOSE, log, "chat")
        done = log[-1][2]
        assert log[-1][1] == "done" and done["stop_reason"] == "length", done

        # asking for 4096 tokens gets the same 8-token answer the chat route gives
        r = _openai(base, max_tokens=4096)
        assert r.status_code == 200, r.text
        choice = r.json()["choices"][0]
        assert choice["finish_reason"] == "length"
        answer = choice["message"]["content"].split("\n\nSources:\n")[0]
        assert answer == done["answer"]
        r = _openai(base, max_completion_tokens=100_000)
        assert r.json()["choices"][0]["finish_reason"] == "length"
        assert r.json()["choices"][0]["message"]["content"].split("\n\nSources:\n")[0] == answer

        # a lower cap is honoured: a strictly shorter answer
        r = _openai(base, max_tokens=2)
        short = r.json()["choices"][0]["message"]["content"].split("\n\nSources:\n")[0]
        assert r.json()["choices"][0]["finish_reason"] == "length"
        assert len(short) < len(answer)

        # the same, streamed
        with httpx.stream(
            "POST",
            f"{base}/v1/chat/completions",
            json={
                "model": "varagity",
                "stream": True,
                "max_tokens": 4096,
                "messages": [{"role": "user", "content": VERBOSE}],
            },
            timeout=300,
        ) as response:
            chunks = [
                json.loads(line.removeprefix("data: "))
                for line in response.iter_lines()
                if line.startswith("data: {")
            ]
        finishes = [c["choices"][0]["finish_reason"] for c in chunks if c.get("choices")]
        assert finishes[-1] == "length"
        streamed = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks)
        assert streamed.split("\n\nSources:\n")[0] == answer

        # message length: the chat route's 4000-character limit, on both routes
        for content in ("x" * 4001, "y" * 200_000):
            r = httpx.post(f"{base}/api/chat", json={"question": content}, timeout=30)
            assert r.status_code == 422 and "4000" in r.text, r.text
            r = _openai(base, messages=[{"role": "user", "content": content}])
            assert r.status_code == 400, r.text
            assert "the limit is 4000" in r.json()["error"]["message"]
