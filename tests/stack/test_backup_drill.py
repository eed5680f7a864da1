"""The wiped-stack drill (docs/operations.md, "Backups and the wiped-stack drill"), end
to end on the embedded stack: index the sample corpus and the fixture archive, export
both corpora, delete the whole state folder, restore both with no model server running
(the commands refuse to reach one: their URLs point at a closed port), bring the stack
up again, and find the same search results (the same chunk ids, bit-identical vectors)
and the same graph status, with nothing ingested or extracted again.

One ``varagity up`` at a time; the graph is the fixture archive's first day (two
thread-days), the cheapest build the packaged 0.5B model does.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from httpx_sse import connect_sse

from tests.conftest import free_port
from tests.support.chatdb import write_chat_db
from tests.support.running_stack import RunningStack, varagity_up
from varagity.config import load_settings
from varagity.stores.postgres import connect, embedded_postgres_pid, ensure_embedded_postgres

pytestmark = [pytest.mark.integration, pytest.mark.timeout(3600)]

REPO = Path(__file__).resolve().parents[2]
GRAPH_BUILD_TIMEOUT_S = 1800  # a generous bound on a shared 2-core machine
RUN_TIMEOUT_S = 600
QUERIES = (
    "What is the warranty period of the Tern K2 kettle?",
    "How many crew members stay at Aurora station in winter?",
    "dry-boil protection",
)
SETTINGS = {"CONTEXTUALIZE": "false", "LLM_MAX_TOKENS": "32", "GRAPH_TIMEZONE": "UTC"}


def _graph_settled(api: str) -> dict[str, Any]:
    """The graph status once a build has put every day in and none is in flight."""
    deadline = time.monotonic() + GRAPH_BUILD_TIMEOUT_S
    while True:
        status = httpx.get(f"{api}/api/graph/status", timeout=60).json()
        days = status["day_statuses"]
        if (
            status["built"]
            and not status["building"]
            and days["pending"] == days["processing"] == 0
        ):
            return status
        assert time.monotonic() < deadline, f"the graph did not settle: {status}"
        time.sleep(5)


def _snapshot(stack: RunningStack, home: Path) -> dict[str, Any]:
    """What must survive the drill: search results per method, every stored vector's
    bytes, the documents rows, the graph's status."""
    api = stack.api
    search = {
        f"{method}: {query}": [
            r["chunk_id"]
            for r in httpx.post(
                f"{api}/api/search", json={"query": query, "method": method, "k": 5}, timeout=120
            ).json()["results"]
        ]
        for query in QUERIES
        for method in ("semantic", "bm25", "hybrid")
    }
    url = ensure_embedded_postgres(load_settings(VARAGITY_HOME=home))  # the stack's own server
    with connect(url) as conn:
        vectors = dict(
            conn.execute(
                "SELECT chunk_id, md5(vector_send(embedding)) FROM chunks ORDER BY chunk_id"
            ).fetchall()
        )
        documents = [
            tuple(str(v) for v in row)
            for row in conn.execute(
                "SELECT doc_id, source, content_hash, ingested_at FROM documents ORDER BY doc_id"
            ).fetchall()
        ]
    graph = _graph_status(_graph_settled(api))
    return {"search": search, "vectors": vectors, "documents": documents, "graph": graph}


def _graph_status(status: dict[str, Any]) -> dict[str, Any]:
    graph = {k: status[k] for k in ("built", "entities", "relations", "days", "messages")}
    graph["day_statuses"] = dict(status["day_statuses"])
    return graph


def _restored_graph(home: Path, graph_docs: Path) -> dict[str, Any]:
    """The restored graph's status as the status route reads it (the sidecars, and the
    engine's own document statuses), with every model endpoint closed."""
    from varagity.graph.service import GraphService
    from varagity.graph.status import read_graph
    from varagity.models.chat import ChatClient
    from varagity.models.embeddings import EmbeddingClient
    from varagity_api.graph_status import day_statuses

    closed = f"http://127.0.0.1:{free_port()}/v1"
    settings = load_settings(
        VARAGITY_HOME=home,
        GRAPH_DOCS_PATH=graph_docs,
        LLM_BASE_URL=closed,
        EMBEDDING_BASE_URL=closed,
        **SETTINGS,
    )
    chat, embedder = ChatClient.from_settings(settings), EmbeddingClient.from_settings(settings)
    service = GraphService(settings, chat, embedder)
    try:
        reading = read_graph(service.workdir)
        statuses = day_statuses(service, reading)
    finally:
        service.close()
        chat.close()
        embedder.close()
    return _graph_status(
        {
            "built": reading.days > 0 or statuses.processed > 0,
            "entities": reading.entities,
            "relations": reading.relations,
            "days": reading.days,
            "messages": reading.messages,
            "day_statuses": statuses.model_dump(),
        }
    )


def _export(api: str, corpus: str) -> str:
    launched = httpx.post(f"{api}/api/backups/{corpus}/export", timeout=60)
    assert launched.status_code == 202, launched.text
    url = f"{api}/api/backups/{corpus}/runs/{launched.json()['run_id']}/events"
    final: dict[str, Any] = {}
    with (
        httpx.Client(timeout=httpx.Timeout(60, read=RUN_TIMEOUT_S)) as client,
        connect_sse(client, "GET", url) as source,
    ):
        for event in source.iter_sse():
            final = json.loads(event.data)
            if event.event in ("done", "error"):
                assert event.event == "done" and final["state"] == "succeeded", final
                break
    name = final["bundle"]
    assert isinstance(name, str) and name.startswith(f"varagity-{corpus}-"), final
    return name


def _restore_offline(home: Path, docs: Path, graph_docs: Path, corpus: str, name: str) -> str:
    """``varagity backup restore`` with the stack down and no model server reachable."""
    closed = f"http://127.0.0.1:{free_port()}/v1"
    env = {
        **{k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "DAGSTER_URL")},
        **SETTINGS,
        "VARAGITY_HOME": str(home),
        "DOCS_PATH": str(docs),
        "GRAPH_DOCS_PATH": str(graph_docs),
        "DAGSTER_PORT": str(free_port()),
        "LLM_BASE_URL": closed,
        "EMBEDDING_BASE_URL": closed,
    }
    done = subprocess.run(
        [sys.executable, "-m", "varagity_cli", "backup", "restore", corpus, name],
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
        env=env,
        cwd=home.parent,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_the_wiped_stack_drill(tmp_path: Path) -> None:
    docs, graph_docs, home = tmp_path / "docs", tmp_path / "graph-docs", tmp_path / "home"
    shutil.copytree(REPO / "corpus", docs)
    write_chat_db(graph_docs, days=1)
    settings = {**SETTINGS, "GRAPH_DOCS_PATH": str(graph_docs)}
    started = time.monotonic()

    with varagity_up(home, docs, **settings) as stack:
        before = _snapshot(stack, home)
        indexed_s = time.monotonic() - started
        names = {corpus: _export(stack.api, corpus) for corpus in ("rag", "graph")}
    assert before["vectors"] and before["graph"]["built"] and before["graph"]["entities"] > 0

    shutil.rmtree(home)  # every named volume of compose, the whole state folder here
    home.mkdir()
    drill = time.monotonic()
    out = {c: _restore_offline(home, docs, graph_docs, c, n) for c, n in names.items()}
    restore_s = time.monotonic() - drill
    assert "in this process" in out["rag"] and f"from {names['rag']}" in out["rag"]
    # the folder is the one exported: nothing for the folder sensor to ingest or purge
    assert "the folder against what was restored: the stores hold exactly" in out["rag"]
    # the restore started the embedded Postgres for itself and stopped it again
    assert embedded_postgres_pid(load_settings(VARAGITY_HOME=home)) is None
    # the graph is the exported one, its failed days included
    assert _restored_graph(home, graph_docs) == before["graph"]

    with varagity_up(home, docs, **settings) as stack:
        after = _snapshot(stack, home)
    assert after["search"] == before["search"]
    assert after["vectors"] == before["vectors"]  # every vector's bytes
    assert after["documents"] == before["documents"]  # nothing ingested again
    failed = before["graph"]["day_statuses"]["failed"]
    if failed == 0:
        assert after["graph"] == before["graph"]  # nothing extracted again
    else:  # the first build of the fresh stack retried the days that had failed, only them
        processed = before["graph"]["day_statuses"]["processed"]
        assert after["graph"]["days"] >= before["graph"]["days"]
        assert processed <= after["graph"]["day_statuses"]["processed"] <= processed + failed
    print(
        f"\ndrill: first stack indexed and graph built in {indexed_s:.0f} s; both restores "
        f"{restore_s:.1f} s; whole test {time.monotonic() - started:.0f} s"
    )
