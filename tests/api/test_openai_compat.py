"""The OpenAI-compatible endpoint, driven by the official ``openai`` client."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import openai
import pytest

from tests.conftest import SettingsFactory, free_port
from tests.support.api_server import index_files, serve
from varagity.config import RETRIEVAL_METHODS

pytestmark = pytest.mark.integration

QUESTION = "How long is the warranty of the Tern K2 kettle?"


@pytest.fixture
def base(make_settings: SettingsFactory, pg_url: str, model_urls: dict[str, str]) -> Iterator[str]:
    settings = make_settings(
        DATABASE_URL=pg_url, LLM_MAX_TOKENS=32, CHAT_ENGINE="condense_context", **model_urls
    )
    index_files(settings)
    with serve(settings) as url:
        yield url


def _client(base: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{base}/v1", api_key="unused", max_retries=0, timeout=180)


def test_models_lists_one_id_per_method_and_the_graph(base: str) -> None:
    ids = [m.id for m in _client(base).models.list()]
    assert ids == ["varagity", *(f"varagity-{m}" for m in RETRIEVAL_METHODS), "varagity-graph"]


def test_complete_answer_is_cited_with_sources_and_not_saved(base: str) -> None:
    response = _client(base).chat.completions.create(
        model="varagity",
        messages=[
            {"role": "system", "content": "Ignored: the grounded prompt is Varagity's."},
            {"role": "user", "content": QUESTION},
        ],
    )
    assert response.object == "chat.completion" and response.model == "varagity"
    choice = response.choices[0]
    assert choice.message.role == "assistant"
    content = choice.message.content or ""
    answer, footer = content.split("\n\nSources:\n")
    assert answer.strip()
    assert footer.splitlines()[0] == "[1] kettle.md"
    assert response.model_extra is not None
    extras = response.model_extra["varagity"]
    # each quote the answer rests on is printed under its source, verbatim
    for quote in extras["quotes"]:
        assert f'    "{" ".join(quote["text"].split())}"' in footer
    assert extras["quotes"] or "do not say" in answer
    assert extras["method"] == "hybrid" and extras["chat_engine"] == "condense_context"
    assert extras["query"] == QUESTION and extras["condensed_query"] is None  # no history
    sources = extras["sources"]
    assert sources[0]["relative_path"] == "kettle.md" and sources[0]["trace"]["final_rank"] == 1
    assert len([line for line in footer.splitlines() if line.startswith("[")]) == len(sources)
    assert all(1 <= n <= len(sources) for n in extras["cited"])
    assert extras["stop_reason"] in ("finished", "length", "repetition")
    assert choice.finish_reason == ("length" if extras["stop_reason"] == "length" else "stop")
    assert {"first_token", "generate", "total"} <= set(extras["timings_ms"])
    assert httpx.get(f"{base}/api/conversations", timeout=30).json() == []


def test_streamed_answer_uses_the_history_and_ends_with_sources(base: str) -> None:
    stream = _client(base).chat.completions.create(
        model="varagity-bm25",
        stream=True,
        messages=[
            {"role": "user", "content": QUESTION},
            {
                "role": "assistant",
                "content": "The warranty is 27 months [1].\n\nSources:\n[1] kettle.md",
            },
            # names its subject, so BM25 finds evidence whatever the condense call says
            {"role": "user", "content": [{"type": "text", "text": "Who makes the kettle?"}]},
        ],
    )
    chunks = list(stream)
    assert chunks[0].choices[0].delta.role == "assistant"
    assert chunks[0].model_extra is not None
    extras = chunks[0].model_extra["varagity"]
    assert extras["method"] == "bm25" and extras["chat_engine"] == "condense_context"
    assert "condense" in extras["timings_ms"]  # the earlier turn reached the chat engine
    assert extras["query"] == (extras["condensed_query"] or "Who makes the kettle?")
    assert [c.choices[0].finish_reason for c in chunks[:-1]] == [None] * (len(chunks) - 1)
    assert chunks[-1].model_extra is not None
    outcome = chunks[-1].model_extra["varagity"]
    assert chunks[-1].choices[0].finish_reason == (
        "length" if outcome["stop_reason"] == "length" else "stop"
    )
    assert outcome["sources"] == extras["sources"] and "generate" in outcome["timings_ms"]
    assert len({c.id for c in chunks}) == 1
    text = "".join(c.choices[0].delta.content or "" for c in chunks)
    answer, footer = text.split("\n\nSources:\n")
    assert answer.strip()
    assert [line for line in footer.splitlines() if line.startswith("[")] == [
        f"[{s['n']}] {s['relative_path']}" for s in extras["sources"]
    ]


def test_bad_input_is_a_4xx_in_openai_shape(base: str) -> None:
    client = _client(base)
    for kwargs, status, code in (
        ({"model": "varagity", "messages": []}, 400, "invalid_request"),
        (
            {"model": "varagity", "messages": [{"role": "assistant", "content": "hi"}]},
            400,
            "invalid_request",
        ),
        ({"model": "varagity", "messages": [{"role": "user", "content": "  "}]}, 400, None),
        ({"model": "varagity", "messages": [{"role": "user", "content": "q"}], "n": 2}, 400, None),
        ({"model": "gpt-4o", "messages": [{"role": "user", "content": "q"}]}, 404, None),
        (
            {"model": "varagity", "messages": [{"role": "user", "content": "why? " * 1000}]},
            400,
            "invalid_request",
        ),
    ):
        with pytest.raises(openai.APIStatusError) as caught:
            client.chat.completions.create(**kwargs)
        assert caught.value.status_code == status, (kwargs, caught.value)
        body = caught.value.body
        assert isinstance(body, dict) and body["type"] == "invalid_request_error"
        assert body["message"]
        if code:
            assert body["code"] == code
    not_found = httpx.post(
        f"{base}/v1/chat/completions",
        json={"model": "gpt-4o", "messages": [{"role": "user", "content": "q"}]},
        timeout=30,
    )
    error = not_found.json()["error"]
    assert error["code"] == "model_not_found" and "varagity-hybrid" in error["message"]
    garbled = httpx.post(
        f"{base}/v1/chat/completions",
        content=b"{not json",
        headers={"content-type": "application/json"},
        timeout=30,
    )
    assert garbled.status_code == 400 and "error" in garbled.json()


def test_store_outage_is_a_503_in_openai_shape(make_settings: SettingsFactory) -> None:
    settings = make_settings(DATABASE_URL=f"postgresql://nobody@127.0.0.1:{free_port()}/none")
    with serve(settings) as url, pytest.raises(openai.InternalServerError) as caught:
        _client(url).chat.completions.create(
            model="varagity", messages=[{"role": "user", "content": QUESTION}]
        )
    assert caught.value.status_code == 503
    assert isinstance(caught.value.body, dict)
    assert caught.value.body["code"] == "stores_unavailable"
    assert caught.value.body["type"] == "server_error"
