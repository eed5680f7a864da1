"""Conversations over real HTTP: a two-turn chat, its saved evidence, aborts, groups, 404s."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import httpx
import pytest
from httpx_sse import connect_sse
from prometheus_client import REGISTRY

from tests.conftest import SettingsFactory
from tests.support.api_server import index_files, serve
from varagity.config import Settings
from varagity.generation.grounding import is_abstention
from varagity.stores.conversation_store import AssistantReply, ConversationStore, new_id
from varagity.stores.vector_store import PgVectorStore

pytestmark = pytest.mark.integration

Event = tuple[str, dict]


@pytest.fixture
def chat_settings(
    make_settings: SettingsFactory, pg_url: str, model_urls: dict[str, str]
) -> Settings:
    settings = make_settings(
        DATABASE_URL=pg_url, LLM_MAX_TOKENS=32, CHAT_ENGINE="condense_context", **model_urls
    )
    index_files(settings)
    return settings


@pytest.fixture
def chat_api(chat_settings: Settings) -> Iterator[str]:
    with serve(chat_settings) as base:
        yield base


@pytest.fixture
def history_api(make_settings: SettingsFactory, pg_url: str) -> Iterator[tuple[str, PgVectorStore]]:
    """The API over an empty corpus (no model servers: nothing here generates)."""
    settings = make_settings(DATABASE_URL=pg_url)
    with serve(settings) as base:
        pg = PgVectorStore(pg_url, embedding_dim=settings.EMBEDDING_DIM)
        try:
            yield base, pg
        finally:
            pg.close()


def _chat(base: str, body: dict) -> list[Event]:
    with (
        httpx.Client(timeout=180) as client,
        connect_sse(client, "POST", f"{base}/api/chat", json=body) as source,
    ):
        assert source.response.status_code == 200, source.response.read()
        return [(e.event, json.loads(e.data)) for e in source.iter_sse()]


def _check_order(events: list[Event]) -> tuple[dict, dict]:
    names = [name for name, _ in events]
    assert names[0] == "retrieval" and names[-1] == "done", names
    assert set(names[1:-1]) <= {"token", "reasoning"}
    return events[0][1], events[-1][1]


def test_two_turn_condense_chat_is_saved_with_its_evidence(chat_api: str) -> None:
    first_q = "What is the warranty of the Tern K2 kettle?"
    retrieval1, done1 = _check_order(_chat(chat_api, {"question": first_q}))
    cid = retrieval1["conversation_id"]
    assert done1["conversation_id"] == cid
    assert done1["stop_reason"] in ("finished", "length", "repetition")
    assert {"first_token", "generate", "total"} <= set(done1["timings_ms"])
    assert retrieval1["chat_engine"] == "condense_context"
    assert retrieval1["condensed_query"] is None  # first turn: nothing to condense
    assert retrieval1["query"] == first_q
    assert "condense" not in retrieval1["timings_ms"]
    assert retrieval1["sources"][0]["relative_path"] == "kettle.md"

    assert done1["debug"] is None  # the prompt and raw output come only when asked for

    follow_up = "How long does it last?"
    # asked as the web client's developer mode asks
    events2 = _chat(chat_api, {"question": follow_up, "conversation_id": cid, "debug": True})
    retrieval2, done2 = _check_order(events2)
    assert retrieval2["conversation_id"] == done2["conversation_id"] == cid
    assert "condense" in retrieval2["timings_ms"]  # the history made the engine ask the LLM
    # the searched-for query is the rewrite when there is one, else the question as asked
    assert retrieval2["query"] == (retrieval2["condensed_query"] or follow_up)
    answer2 = "".join(d["delta"] for name, d in events2 if name == "token")
    assert done2["answer"] == answer2
    assert done2["message_id"] != done1["message_id"]
    assert "condense" in done2["timings_ms"] and "generate" in done2["timings_ms"]
    # what the model was sent: the system prompt, the first turn, then the follow-up as
    # asked (never the rewrite) with the numbered passages; and what it wrote, unchecked
    sent = done2["debug"]["messages"]
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "user"]
    assert sent[1]["content"] == first_q
    assert sent[3]["content"].startswith(f"Question: {follow_up}\n\nSources:\n\n[1] ")
    assert done2["debug"]["raw_output"].strip()

    listed = httpx.get(f"{chat_api}/api/conversations", timeout=30).json()
    assert [(c["conversation_id"], c["title"], c["message_count"]) for c in listed] == [
        (cid, first_q, 4)
    ]
    found = httpx.get(f"{chat_api}/api/conversations", params={"q": "tern k2"}, timeout=30)
    assert [c["conversation_id"] for c in found.json()] == [cid]

    detail = httpx.get(f"{chat_api}/api/conversations/{cid}", timeout=30).json()
    messages = detail["messages"]
    assert [(m["role"], m["content"]) for m in messages[::2]] == [
        ("user", first_q),
        ("user", follow_up),
    ]
    first_answer, second_answer = messages[1], messages[3]
    assert first_answer["message_id"] == done1["message_id"]
    assert first_answer["content"] == done1["answer"]
    assert first_answer["condensed_query"] is None
    assert second_answer["message_id"] == done2["message_id"]
    assert second_answer["content"] == answer2
    assert second_answer["condensed_query"] == retrieval2["condensed_query"]
    assert second_answer["chat_engine"] == "condense_context"
    assert second_answer["retrieval_method"] == "hybrid"
    assert second_answer["latency_ms"]["generate"] > 0
    assert messages[0]["sources"] == [] and messages[0]["retrieval_method"] is None
    # every answer sentence rests on a quote, which the done event and the saved
    # sources carry: the passage's own text at its offsets
    sources1 = {s["n"]: s for s in retrieval1["sources"]}
    for quote in done1["quotes"]:
        assert sources1[quote["source"]]["content"][quote["start"] : quote["end"]] == quote["text"]
    assert done1["quotes"] or is_abstention(done1["answer"])
    # the evidence panel re-renders from the snapshot as it streamed, with the quotes
    for saved, streamed in zip(first_answer["sources"], retrieval1["sources"], strict=True):
        assert saved["file_created_at"] is not None
        for key, value in streamed.items():
            if key != "quotes":
                assert saved[key] == value, key
        assert streamed["quotes"] == []  # while the answer is written, nothing is quoted
        assert saved["quotes"] == [
            {k: q[k] for k in ("text", "start", "end")}
            for q in done1["quotes"]
            if q["source"] == streamed["n"]
        ]
    assert first_answer["sources"][0]["trace"]["final_rank"] == 1


def test_aborted_stream_saves_nothing(chat_settings: Settings) -> None:
    labels = {"engine": "simple", "method": "hybrid", "outcome": "aborted"}
    aborted_before = REGISTRY.get_sample_value("varagity_chat_turns_total", labels) or 0.0
    # long answers, so the client is sure to leave while tokens are still coming
    with serve(chat_settings.model_copy(update={"LLM_MAX_TOKENS": 512})) as base:
        body = {"question": "Describe the Tern K2 kettle in detail.", "chat_engine": "simple"}
        seen: list[str] = []
        with (
            httpx.Client(timeout=180) as client,
            connect_sse(client, "POST", f"{base}/api/chat", json=body) as source,
        ):
            for event in source.iter_sse():
                seen.append(event.event)
                if event.event == "retrieval":
                    assert json.loads(event.data)["chat_engine"] == "simple"
                if event.event == "token":
                    break  # leaving the block closes the connection mid-answer
        assert seen[0] == "retrieval" and seen[-1] == "token"
        deadline = time.monotonic() + 120
        while REGISTRY.get_sample_value("varagity_chat_turns_total", labels) == aborted_before:
            assert time.monotonic() < deadline, "the server never noticed the disconnect"
            time.sleep(0.1)
        assert httpx.get(f"{base}/api/conversations", timeout=30).json() == []
    pg = PgVectorStore(chat_settings.DATABASE_URL or "", embedding_dim=384)
    try:
        with pg.connection() as conn:
            assert conn.execute("SELECT count(*) FROM messages").fetchone() == (0,)
    finally:
        pg.close()


def _seed(pg: PgVectorStore, question: str) -> str:
    cid = new_id()
    reply = AssistantReply(
        content="An answer.", sources=[], retrieval_method="hybrid", chat_engine="simple"
    )
    ConversationStore(pg).append_turn(cid, question, reply)
    return cid


def test_groups_crud_and_moving_does_not_reorder(history_api: tuple[str, PgVectorStore]) -> None:
    base, pg = history_api
    older = _seed(pg, "Kettle warranty?")
    newer = _seed(pg, "Aurora wind power")
    with httpx.Client(base_url=base, timeout=30) as http:
        created = http.post("/api/groups", json={"name": "Energy"})
        assert created.status_code == 201, created.text
        group = created.json()
        assert group["name"] == "Energy" and group["conversation_count"] == 0
        gid = group["group_id"]

        before = {c["conversation_id"]: c for c in http.get("/api/conversations").json()}
        moved = http.patch(f"/api/conversations/{older}", json={"group_id": gid})
        assert moved.status_code == 200, moved.text
        assert moved.json()["group_id"] == gid
        assert moved.json()["updated_at"] == before[older]["updated_at"]
        listed = http.get("/api/conversations").json()
        assert [c["conversation_id"] for c in listed] == [newer, older]  # order unchanged
        in_group = http.get("/api/conversations", params={"group_id": gid}).json()
        assert [c["conversation_id"] for c in in_group] == [older]
        assert http.get("/api/groups").json()[0]["conversation_count"] == 1

        renamed = http.patch(f"/api/conversations/{older}", json={"title": "Kettle notes"})
        assert renamed.json()["title"] == "Kettle notes"
        assert renamed.json()["group_id"] == gid  # an absent field is left alone
        assert renamed.json()["updated_at"] == before[older]["updated_at"]

        assert http.patch(f"/api/groups/{gid}", json={"name": "Power"}).json()["name"] == "Power"
        assert http.delete(f"/api/groups/{gid}").status_code == 204
        detached = http.get(f"/api/conversations/{older}").json()
        assert detached["group_id"] is None and len(detached["messages"]) == 2
        assert http.get("/api/groups").json() == []

        other = http.post("/api/groups", json={"name": "Misc"}).json()["group_id"]
        http.patch(f"/api/conversations/{newer}", json={"group_id": other})
        out = http.patch(f"/api/conversations/{newer}", json={"group_id": None})
        assert out.status_code == 200 and out.json()["group_id"] is None

        assert http.delete(f"/api/conversations/{newer}").status_code == 204
        assert [c["conversation_id"] for c in http.get("/api/conversations").json()] == [older]

        for bad in ({}, {"title": None}, {"title": "   "}, {"title": ""}):
            r = http.patch(f"/api/conversations/{older}", json=bad)
            assert r.status_code == 422, (bad, r.text)
            assert r.json()["code"] == "invalid_request"
        blank = http.post("/api/groups", json={"name": "   "})
        assert blank.status_code == 422 and "blank" in blank.json()["message"]


def test_unknown_ids_are_specific_404s(history_api: tuple[str, PgVectorStore]) -> None:
    base, pg = history_api
    cid = _seed(pg, "Kettle warranty?")
    with httpx.Client(base_url=base, timeout=30) as http:
        for method, path, body in (
            ("GET", "/api/conversations/nope", None),
            ("PATCH", "/api/conversations/nope", {"title": "x"}),
            ("DELETE", "/api/conversations/nope", None),
            ("POST", "/api/chat", {"question": "and then?", "conversation_id": "nope"}),
        ):
            r = http.request(method, path, json=body)
            assert r.status_code == 404, (method, path, r.text)
            assert r.json()["code"] == "conversation_not_found"
            assert "'nope'" in r.json()["message"]
        for method, path, body in (
            ("PATCH", f"/api/conversations/{cid}", {"group_id": "nogroup"}),
            ("PATCH", "/api/groups/nogroup", {"name": "x"}),
            ("DELETE", "/api/groups/nogroup", None),
            ("GET", "/api/conversations?group_id=nogroup", None),
        ):
            r = http.request(method, path, json=body)
            assert r.status_code == 404, (method, path, r.text)
            assert r.json()["code"] == "group_not_found"
            assert "'nogroup'" in r.json()["message"]
        assert http.get(f"/api/conversations/{cid}").json()["group_id"] is None
        bad_engine = http.post("/api/chat", json={"question": "x", "chat_engine": "magic"})
        assert bad_engine.status_code == 422 and "chat_engine" in bad_engine.json()["message"]


def test_openapi_declares_the_conversation_models(history_api: tuple[str, PgVectorStore]) -> None:
    base, _ = history_api
    doc = httpx.get(f"{base}/openapi.json", timeout=30).json()
    detail = doc["paths"]["/api/conversations/{conversation_id}"]["get"]["responses"]
    assert detail["200"]["content"]["application/json"]["schema"]["$ref"].endswith(
        "/ConversationDetail"
    )
    assert detail["404"]["content"]["application/json"]["schema"]["$ref"].endswith("/ErrorBody")
    for name in ("Message", "SourceSnapshot", "Group", "ConversationPatch", "GroupCreate"):
        assert name in doc["components"]["schemas"], name
    assert {"get", "post"} <= set(doc["paths"]["/api/groups"])


def test_blank_and_oversized_questions_are_refused_everywhere_and_store_nothing(
    history_api: tuple[str, PgVectorStore],
) -> None:
    base, _ = history_api
    for question in ("   ", "\n\t \u3000", "why? " * 40_000):
        r = httpx.post(f"{base}/api/chat", json={"question": question}, timeout=30)
        assert r.status_code == 422, r.text
        assert r.json()["code"] == "invalid_request"
        openai_body = {"model": "varagity", "messages": [{"role": "user", "content": question}]}
        r = httpx.post(f"{base}/v1/chat/completions", json=openai_body, timeout=30)
        assert r.status_code == 400, r.text
        assert r.json()["error"]["code"] == "invalid_request"
    long = httpx.post(
        f"{base}/v1/chat/completions",
        json={
            "model": "varagity",
            "max_tokens": 4096,
            "messages": [{"role": "user", "content": "x" * 200_000}],
        },
        timeout=30,
    )
    assert long.status_code == 400 and "the limit is 4000" in long.json()["error"]["message"]
    assert httpx.get(f"{base}/api/conversations", timeout=30).json() == []
