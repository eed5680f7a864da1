"""Over real HTTP against the real chat model server: a busy model answers "queued"
in-band (issue 12 #6), and ``/v1/chat/completions`` caps answers and questions exactly as
``/api/chat`` does (issue 12, #9)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import httpx
import pytest

from tests.conftest import SettingsFactory
from tests.support.api_server import index_files, serve
from varagity.chat.queue import answer_queue
from varagity.chat.turn import QUEUE_HEARTBEAT_SECONDS

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


def test_a_queued_chat_whose_client_leaves_gives_up_its_place(
    make_settings: SettingsFactory, pg_url: str, model_urls: dict[str, str]
) -> None:
    """B waits for the model and hangs up while the line does not move: its place is
    given up within a heartbeat (not kept until the model is free, nor answered for
    nobody), and C, asking next, is first in line and gets its answer.

    The model's one answer slot is held by the test itself (the API runs in this
    process, so its queue is this one), which keeps the line still for as long as the
    test needs, however fast the model answers."""
    settings = make_settings(
        DATABASE_URL=pg_url,
        CHAT_ENGINE="simple",
        LLM_MAX_TOKENS=32,
        LLM_CONCURRENCY=1,
        **model_urls,
    )
    index_files(settings)
    line = answer_queue(settings.llm_url, settings.LLM_CONCURRENCY)
    assert list(line.enter()) == [], "the slot is free before the test"
    released = False
    try:
        with serve(settings) as base:
            with httpx.stream(
                "POST", f"{base}/api/chat", json={"question": VERBOSE}, timeout=120
            ) as leaving:
                events = []
                for text in leaving.iter_lines():
                    if text.startswith("event:"):
                        events.append(text.removeprefix("event:").strip())
                        if events[-1] == "queued":
                            break
                assert events == ["retrieval", "queued"], events
                assert line.waiting == 1
            # B hung up; the route notices at the runner's next heartbeat
            deadline = time.monotonic() + 10 * QUEUE_HEARTBEAT_SECONDS
            while line.waiting and time.monotonic() < deadline:
                time.sleep(0.1)
            assert line.waiting == 0, "B's place was kept after its client left"
            log: list[tuple[str, str, dict[str, object]]] = []
            third = threading.Thread(target=_chat_events, args=(base, VERBOSE, log, "C"))
            third.start()
            deadline = time.monotonic() + 60
            while not any(e == "queued" for _, e, _ in log) and time.monotonic() < deadline:
                time.sleep(0.1)
            line.leave()
            released = True
            third.join(300)
    finally:
        if not released:
            line.leave()
    c = [(e, d) for _, e, d in log]
    assert [d["position"] for e, d in c if e == "queued"] == [1], c
    assert c[-1][0] == "done" and "token" in [e for e, _ in c]


def test_openai_route_caps_answers_like_the_chat_route(
    make_settings: SettingsFactory, pg_url: str, model_urls: dict[str, str]
) -> None:
    # the caps on the model's tokens, as written: quote checks would turn the cut
    # sentences into the same abstention at every cap
    attributed = {"LLM_MAX_TOKENS": 8, "ANSWER_CITATIONS": "attributed"}
    with _api(make_settings, pg_url, model_urls, **attributed) as base:
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
