"""The graph turn over real HTTP: a small message graph built with the packaged models,
asked through ``POST /api/chat`` and ``/v1/chat/completions``, and what Postgres keeps.

One graph of two hand-written conversation days is built once for the module, through
the graph service's single writer with the real chat and embedding servers (about a
minute a day here), with the build manifest written beside it as the graph build
writes it. Every test then serves the API on a fresh database over that graph (read
only) and a small indexed document corpus, so a graph turn, a degraded graph turn and
a document turn can be compared row by row.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from httpx_sse import connect_sse

from tests.conftest import SettingsFactory
from tests.support.api_server import index_files, serve
from tests.support.graph_build import guard_pipmaster
from tests.support.graph_days import HIKE_PLAN, MAYA_TRIP
from varagity.chat.turn import GRAPH_DISABLED_NOTE, GRAPH_EMPTY_NOTE, GRAPH_FAILED_NOTE
from varagity.config import Settings, load_settings
from varagity.generation.grounding import is_abstention
from varagity.graph.service import GraphService
from varagity.graph.types import GraphDiff
from varagity.models.chat import ChatClient
from varagity.models.embeddings import EmbeddingClient
from varagity.stores.postgres import connect

# the module graph's build takes minutes on the shared cores
pytestmark = [pytest.mark.integration, pytest.mark.timeout(2400)]

DAYS = {day.doc_key: day for day in (MAYA_TRIP, HIKE_PLAN)}
GRAPH_QUESTION = "When does Maya Chen fly to Lisbon?"
DOC_QUESTION = "What is the warranty of the Tern K2 kettle?"
Event = tuple[str, dict[str, Any]]


@pytest.fixture(scope="module")
def graph_storage(tmp_path_factory: pytest.TempPathFactory, model_urls: dict[str, str]) -> Path:
    """GRAPH_STORAGE_PATH of the module's graph, built once with the packaged models."""
    root = tmp_path_factory.mktemp("graph-turn")
    settings = load_settings(
        VARAGITY_HOME=root / "home",
        DOCS_PATH=root / "docs",
        GRAPH_STORAGE_PATH=root / "graph",
        MODEL_TIMEOUT_S=600,
        MODEL_MAX_RETRIES=1,
        **model_urls,
    )
    replaced = guard_pipmaster()  # nothing may install at run time
    chat = ChatClient.from_settings(settings)
    embedder = EmbeddingClient.from_settings(settings)
    try:
        service = GraphService(settings, chat, embedder)
        result = service.build(GraphDiff(new=tuple(DAYS.values())))
        service.close()
    finally:
        chat.close()
        embedder.close()
        for owner, name, original in replaced:
            setattr(owner, name, original)
    assert sorted(result.report.inserted) == sorted(DAYS), result.report
    assert result.size.entities > 0
    write_manifest(service.workdir)
    return settings.graph_storage_path


def write_manifest(workdir: Path) -> None:
    """The build's manifest (doc_key -> thread, span, message guids) for these days."""
    from varagity.graph.manifest import ManifestEntry
    from varagity.graph.manifest import write_manifest as write

    write(workdir, {key: ManifestEntry.of(day) for key, day in DAYS.items()})


def api_settings(
    make: SettingsFactory, pg_url: str, urls: dict[str, str], **extra: Any
) -> Settings:
    settings = make(DATABASE_URL=pg_url, LLM_MAX_TOKENS=64, MODEL_TIMEOUT_S=600, **urls, **extra)
    index_files(settings)
    return settings


@pytest.fixture
def graph_api(
    make_settings: SettingsFactory, pg_url: str, model_urls: dict[str, str], graph_storage: Path
) -> Iterator[str]:
    with serve(
        api_settings(make_settings, pg_url, model_urls, GRAPH_STORAGE_PATH=graph_storage)
    ) as base:
        yield base


def chat(base: str, body: dict[str, Any]) -> list[Event]:
    with (
        httpx.Client(timeout=600) as client,
        connect_sse(client, "POST", f"{base}/api/chat", json=body) as source,
    ):
        assert source.response.status_code == 200, source.response.read()
        return [(e.event, json.loads(e.data)) for e in source.iter_sse()]


def retrieval_and_done(events: list[Event]) -> tuple[dict[str, Any], dict[str, Any]]:
    names = [name for name, _ in events]
    assert names[0] == "retrieval" and names[-1] == "done", events[-1]
    return events[0][1], events[-1][1]


def stored(pg_url: str, message_id: str) -> tuple[tuple[Any, ...], list[tuple[Any, ...]]]:
    """The assistant message's (target_corpus, graph_evidence, retrieval_method) and its
    message_sources rows (rank, chunk_id, trace)."""
    with connect(pg_url) as conn:
        row = conn.execute(
            "SELECT target_corpus, graph_evidence, retrieval_method FROM messages"
            " WHERE message_id = %s",
            (message_id,),
        ).fetchone()
        sources = conn.execute(
            "SELECT rank, chunk_id, trace FROM message_sources WHERE message_id = %s ORDER BY rank",
            (message_id,),
        ).fetchall()
    assert row is not None
    return tuple(row), [tuple(s) for s in sources]


def test_a_graph_turn_cites_days_and_records_them(graph_api: str, pg_url: str) -> None:
    events = chat(graph_api, {"question": GRAPH_QUESTION, "corpus": "graph"})
    retrieval, done = retrieval_and_done(events)
    assert retrieval["corpus"] == retrieval["target_corpus"] == "graph"
    assert retrieval["degraded"] is None and retrieval["method"] == "graph"
    assert retrieval["sources"] == []
    days = retrieval["days"]
    assert days and [d["n"] for d in days] == list(range(1, len(days) + 1))
    assert {d["doc_key"] for d in days} <= set(DAYS)
    assert MAYA_TRIP.doc_key in {d["doc_key"] for d in days}
    for day in days:
        written = DAYS[day["doc_key"]]
        assert (day["thread_name"], day["span"]) == (written.thread_name, written.span)
        assert day["message_guids"] == list(written.message_guids)  # from the manifest
        lines = day["excerpt"].splitlines()
        assert lines and set(lines) <= set(written.text.splitlines())  # the day's own lines
    graph = retrieval["graph"]
    assert graph["mode"] == "mix" and graph["entities"]
    assert all(set(e["doc_keys"]) <= set(DAYS) for e in graph["entities"])
    assert "graph" in retrieval["timings_ms"]

    if done["stop_reason"] != "repetition":  # else the streamed tail was trimmed
        assert done["answer"] == "".join(d["delta"] for name, d in events if name == "token")
    assert done["cited"], done["answer"]  # the answer cites a day
    assert set(done["cited"]) <= {d["n"] for d in days}
    for n in done["cited"]:
        assert f"[{n}]" in done["answer"]

    (corpus, evidence, method), rows = stored(pg_url, done["message_id"])
    assert (corpus, method) == ("graph", "graph")
    assert evidence == graph  # the stored evidence is what streamed
    assert set(evidence) == {"entities", "relations", "mode"}
    assert [r[0] for r in rows] == [d["n"] for d in days]
    for (_, chunk_id, trace), day in zip(rows, days, strict=True):
        assert chunk_id == day["doc_key"]
        assert trace == {
            "kind": "graph_transcript",
            "thread_name": day["thread_name"],
            "span": day["span"],
            "excerpt": day["excerpt"],
            "message_guids": day["message_guids"],
        }

    detail = httpx.get(f"{graph_api}/api/conversations/{done['conversation_id']}", timeout=30)
    message = detail.json()["messages"][1]
    assert message["target_corpus"] == "graph" and message["graph_evidence"] == graph
    assert message["days"] == days and message["sources"] == []
    assert detail.json()["messages"][0]["target_corpus"] is None  # the user's message


def test_a_message_that_answers_is_quoted_as_the_answer(graph_api: str) -> None:
    """The reader only reads the best message and its reply (and names Tom): the answer
    is those messages as written, not a draft."""
    question = "Who will Sam ask to meet them in Porto?"

    retrieval, done = retrieval_and_done(chat(graph_api, {"question": question, "corpus": "graph"}))

    n = next(d["n"] for d in retrieval["days"] if d["doc_key"] == MAYA_TRIP.doc_key)
    first, *lines = done["answer"].split("\n")
    assert first == f"Sam and Maya Chen wrote on Friday 2024-05-03 [{n}]:", done["answer"]
    assert lines == [
        "[09:16] Sam: \u201cI'll ask Tom Alvarez if he wants to meet us in Porto.\u201d",
        "[09:20] Maya Chen: \u201cYes! Tom knows a great port cellar there, Graham's.\u201d",
    ]
    assert done["cited"] == [n]
    (quote,) = done["quotes"]  # the lines as the day card holds them
    excerpt = next(d["excerpt"] for d in retrieval["days"] if d["n"] == n)
    assert quote["source"] == n and quote["text"] in excerpt and "Tom Alvarez" in quote["text"]


def test_messages_about_the_event_without_the_detail_asked_are_an_abstention(
    graph_api: str,
) -> None:
    """The best messages match the question well (Tom, Graham's, the port cellar in
    Porto) but say nothing of an order: the model, reading them alone, finds no answer,
    and the turn abstains, offering them cited, instead of quoting them as the answer."""
    question = "What did Tom order at Graham's port cellar in Porto?"

    retrieval, done = retrieval_and_done(chat(graph_api, {"question": question, "corpus": "graph"}))

    n = next(d["n"] for d in retrieval["days"] if d["doc_key"] == MAYA_TRIP.doc_key)
    first, *lines = done["answer"].split("\n")
    assert is_abstention(first), done["answer"]
    assert first.endswith(f"closest to the question, written on Friday 2024-05-03 [{n}]:")
    assert any("Graham's" in line for line in lines)
    assert done["cited"] == [n]


@pytest.fixture
def no_graph_api(
    make_settings: SettingsFactory, pg_url: str, model_urls: dict[str, str], tmp_path: Path
) -> Iterator[str]:
    """The API over the documents and a graph nothing has built."""
    settings = api_settings(make_settings, pg_url, model_urls, GRAPH_STORAGE_PATH=tmp_path / "g")
    with serve(settings) as base:
        yield base


def test_a_document_turn_records_rag_and_no_graph(no_graph_api: str, pg_url: str) -> None:
    retrieval, done = retrieval_and_done(chat(no_graph_api, {"question": DOC_QUESTION}))
    assert retrieval["corpus"] == retrieval["target_corpus"] == "rag"
    assert retrieval["graph"] is None and retrieval["days"] == [] and retrieval["degraded"] is None
    assert retrieval["sources"][0]["relative_path"] == "kettle.md"
    (corpus, evidence, method), rows = stored(pg_url, done["message_id"])
    assert (corpus, evidence, method) == ("rag", None, "hybrid")
    assert rows and all("kind" not in trace for _, _, trace in rows)
    detail = httpx.get(f"{no_graph_api}/api/conversations/{done['conversation_id']}", timeout=30)
    message = detail.json()["messages"][1]
    assert message["days"] == [] and message["sources"][0]["relative_path"] == "kettle.md"


def test_a_graph_turn_on_an_unbuilt_graph_answers_from_documents_and_says_so(
    no_graph_api: str, pg_url: str
) -> None:
    body = {"question": DOC_QUESTION, "corpus": "graph"}
    retrieval, done = retrieval_and_done(chat(no_graph_api, body))
    assert (retrieval["target_corpus"], retrieval["corpus"]) == ("graph", "rag")
    # nothing built: the engine finds no day (or, if it cannot open the folder, says why)
    failed = GRAPH_FAILED_NOTE.split("{error}")
    note = retrieval["degraded"]
    assert note == GRAPH_EMPTY_NOTE or (note.startswith(failed[0]) and note.endswith(failed[1]))
    assert retrieval["graph"] is None and retrieval["days"] == []
    assert retrieval["sources"][0]["relative_path"] == "kettle.md"
    (corpus, evidence, _), _rows = stored(pg_url, done["message_id"])
    assert (corpus, evidence) == ("graph", None)


def test_a_graph_turn_with_the_graph_off_answers_from_documents_and_says_so(
    make_settings: SettingsFactory, pg_url: str, model_urls: dict[str, str], tmp_path: Path
) -> None:
    settings = api_settings(
        make_settings, pg_url, model_urls, GRAPH_STORAGE_PATH=tmp_path / "g", GRAPH_ENABLED=False
    )
    with serve(settings) as base:
        body = {"question": DOC_QUESTION, "corpus": "graph"}
        retrieval, done = retrieval_and_done(chat(base, body))
        assert retrieval["target_corpus"] == "graph" and retrieval["corpus"] == "rag"
        assert retrieval["degraded"] == GRAPH_DISABLED_NOTE
        assert retrieval["graph"] is None and retrieval["days"] == []
        assert retrieval["method"] == "hybrid"
        assert retrieval["sources"][0]["relative_path"] == "kettle.md"
        (corpus, evidence, _), rows = stored(pg_url, done["message_id"])
        assert (corpus, evidence) == ("graph", None)  # the ask is the record; nothing found
        assert rows and all("kind" not in trace for _, _, trace in rows)

        completion = httpx.post(
            f"{base}/v1/chat/completions",
            json={
                "model": "varagity-graph",
                "messages": [{"role": "user", "content": DOC_QUESTION}],
            },
            timeout=600,
        )
        assert completion.status_code == 200, completion.text
        extras = completion.json()["varagity"]
        assert extras["degraded"] == GRAPH_DISABLED_NOTE and extras["corpus"] == "rag"
        content = completion.json()["choices"][0]["message"]["content"]
        assert content.endswith(f"Note: {GRAPH_DISABLED_NOTE}")


def test_the_openai_endpoint_has_a_graph_model(graph_api: str) -> None:
    models = httpx.get(f"{graph_api}/v1/models", timeout=30).json()
    assert "varagity-graph" in [m["id"] for m in models["data"]]

    body = {
        "model": "varagity-graph",
        "stream": True,
        "messages": [{"role": "user", "content": GRAPH_QUESTION}],
    }
    chunks = []
    with (
        httpx.Client(timeout=600) as client,
        client.stream("POST", f"{graph_api}/v1/chat/completions", json=body) as response,
    ):
        assert response.status_code == 200
        for line in response.iter_lines():
            if line.startswith("data: ") and line != "data: [DONE]":
                chunks.append(json.loads(line.removeprefix("data: ")))
    first, last = chunks[0]["varagity"], chunks[-1]["varagity"]
    assert first["corpus"] == first["target_corpus"] == "graph" and first["method"] == "graph"
    days = first["days"]
    assert days and {d["doc_key"] for d in days} <= set(DAYS)
    assert first["sources"] == [] and first["graph"]["entities"]
    assert last["cited"] and set(last["cited"]) <= {d["n"] for d in days}
    content = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks)
    footer = content.split("\n\nSources:\n", 1)[1].splitlines()
    assert [ln for ln in footer if ln.startswith("[")] == [
        f"[{d['n']}] {d['thread_name']}, {d['span']}" for d in days
    ]
    # under its day, each quote the answer rests on: a line of that day's transcript
    excerpts = {d["n"]: " ".join(d["excerpt"].split()) for d in days}
    for quote in last["quotes"]:
        assert " ".join(quote["text"].split()) in excerpts[quote["source"]]
        assert f'    "{" ".join(quote["text"].split())}"' in footer
