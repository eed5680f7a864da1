"""The message graph's reset, bounded rebuilds and stale flag against a real Dagster
webserver + daemon, over real HTTP and SSE, and ``varagity graph`` on the same stack.

One Dagster for the module (every sensor stopped: every run here was launched by the
API, the command line or a backfill the test launches as the Dagster UI does) with the
skeleton extraction (no model call: a day in about a second), and one archive of four
script days (eight thread-days) built once through the API. A rebuild's days are told
from the others by the engine's document status rows, which LightRAG writes anew when
a day is inserted.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from httpx_sse import connect_sse

from tests.api.conftest import running_dagster_stack
from tests.support.api_server import serve
from tests.support.chatdb import ChatArchive, write_chat_db
from varagity.config import Settings, settings_env
from varagity.graph.manifest import read_manifest
from varagity.graph.registry import workdir_for
from varagity.jobs import DagsterClient
from varagity.jobs.graph import GraphJobs
from varagity.jobs.model import FINISHED_STATUSES
from varagity.pipeline import GRAPH_POOL, GRAPH_REBUILD_ASSET
from varagity.stores.corpus_state import GraphState
from varagity.stores.postgres import database_url
from varagity.stores.vector_store import PgVectorStore

pytestmark = [pytest.mark.integration, pytest.mark.timeout(1800)]

ARCHIVE = "phone/chat.db"
RANGE = ("2026-03-03", "2026-03-04")
RUN_TIMEOUT_S = 600  # a generous bound on a shared 2-core machine, not a measurement


@pytest.fixture(scope="module")
def stack(
    tmp_path_factory: pytest.TempPathFactory, pg_server_url: str, model_urls: dict[str, str]
) -> Iterator[Settings]:
    with running_dagster_stack(
        tmp_path_factory, pg_server_url, model_urls, GRAPH_EXTRACTION="skeleton"
    ) as settings:
        yield settings


@pytest.fixture(scope="module")
def api(stack: Settings) -> Iterator[str]:
    with serve(stack) as base:
        yield base


def _events(api: str, run_id: str) -> list[tuple[str, dict[str, Any]]]:
    """A run's SSE events to its end."""
    events: list[tuple[str, dict[str, Any]]] = []
    with (
        httpx.Client(timeout=httpx.Timeout(60, read=RUN_TIMEOUT_S)) as client,
        connect_sse(client, "GET", f"{api}/api/graph/builds/{run_id}/events") as source,
    ):
        assert source.response.status_code == 200, source.response.read()
        for event in source.iter_sse():
            events.append((event.event, json.loads(event.data)))
    assert events and events[-1][0] == "done", events
    return events


def _post(api: str, path: str, body: dict[str, Any] | None = None) -> httpx.Response:
    return httpx.post(f"{api}{path}", json=body, timeout=60)


def _launched(api: str, body: dict[str, Any]) -> dict[str, Any]:
    r = _post(api, "/api/graph/builds", body)
    assert r.status_code == 202, r.text
    [run] = r.json()["launched"]
    return dict(run)


def _rows(settings: Settings) -> dict[str, dict[str, Any]]:
    """The engine's document status rows, by doc_key."""
    return dict(json.loads((workdir_for(settings) / "kv_store_doc_status.json").read_text()))


def _in_range(key: str, first: str, last: str) -> bool:
    return first <= key.rpartition("::")[2] <= last


def _status(api: str) -> dict[str, Any]:
    r = httpx.get(f"{api}/api/graph/status", timeout=60)
    assert r.status_code == 200, r.text
    return dict(r.json())


@pytest.fixture(scope="module")
def archive(api: str, stack: Settings) -> ChatArchive:
    """The module's graph: a four-day archive built through the API."""
    written = write_chat_db(stack.graph_docs_path / "phone", days=4)
    run = _launched(api, {})
    assert run["kind"] == "build" and run["path"] == ARCHIVE
    assert _events(api, run["run_id"])[-1][1]["state"] == "succeeded"
    assert _status(api)["days"] == 8
    return written


def test_a_bounded_rebuild_re_extracts_only_the_days_in_its_range(
    api: str, stack: Settings, archive: ChatArchive
) -> None:
    before = _rows(stack)
    inside = {k for k in before if _in_range(k, *RANGE)}
    assert len(before) == 8 and len(inside) == 4

    run = _launched(api, {"from": RANGE[0], "to": RANGE[1]})
    assert (run["kind"], run["path"], run["source"]) == ("rebuild", None, "api")
    assert (run["first_day"], run["last_day"]) == RANGE
    events = _events(api, run["run_id"])
    final = events[-1][1]
    assert final["state"] == "succeeded" and final["error"] is None
    assert final["progress"] == {
        "total": 4,
        "processed": 4,
        "processing": 0,
        "pending": 0,
        "failed": 0,
    }
    after = _rows(stack)
    assert set(after) == set(before)
    for key in before:
        touched = after[key]["created_at"] != before[key]["created_at"]
        assert touched == (key in inside), key
    logs, _ = DagsterClient(stack.dagster_url).log_messages(run["run_id"], None)
    assert any(f"rebuilding days {RANGE[0]}..{RANGE[1]}" in line for line in logs), logs
    listed = httpx.get(f"{api}/api/graph/builds", timeout=60).json()["builds"]
    assert next(b for b in listed if b["run_id"] == run["run_id"]) == final

    # ranges that are not one are refused before anything is launched
    for body in (
        {"from": RANGE[1], "to": RANGE[0]},
        {"from": "2026-3-4"},
        {"paths": [ARCHIVE], "to": RANGE[1]},
        {"paths": [ARCHIVE], "rebuild": True},
    ):
        refused = _post(api, "/api/graph/builds", body)
        assert refused.status_code == 422, (body, refused.text)


def test_a_dagster_ui_backfill_of_day_partitions_rebuilds_those_days(
    stack: Settings, archive: ChatArchive
) -> None:
    """The partition backfill the Dagster UI launches (its GraphQL mutation, the asset
    and the days picked): one run over the range, those days only."""
    day = "2026-03-05"
    before = _rows(stack)
    client = DagsterClient(stack.dagster_url)
    backfill_id = client.launch_backfill(
        [day], [GRAPH_REBUILD_ASSET], tags={}, title="days picked in the UI", run_config={}
    )
    deadline = time.monotonic() + RUN_TIMEOUT_S
    while (node := client.backfill(backfill_id)).status not in FINISHED_STATUSES:
        assert time.monotonic() < deadline, f"backfill {backfill_id} still {node.status}"
        time.sleep(1)
    assert node.status in ("COMPLETED", "COMPLETED_SUCCESS"), node
    [run_node] = node.runs
    run = GraphJobs(client).read(run_node.run_id)  # a run of the graph, though an asset job's
    assert (run.kind, run.corpus, run.succeeded) == ("rebuild", "graph", True)
    assert (run.progress.first_day, run.progress.last_day) == (day, day)
    after = _rows(stack)
    for key in before:
        touched = after[key]["created_at"] != before[key]["created_at"]
        assert touched == _in_range(key, day, day), key


def test_the_stale_flag_shows_in_the_status_and_a_rebuild_of_every_day_clears_it(
    api: str, stack: Settings, archive: ChatArchive
) -> None:
    assert _status(api)["stale"] is None
    pg = PgVectorStore(database_url(stack), embedding_dim=stack.EMBEDDING_DIM)
    try:
        # what the graph-staleness run does after a restart with another chat model
        moved = stack.model_copy(update={"LLM_MODEL": "another-chat-model"})
        flag = GraphState(pg).observe(moved, empty=False)
        assert flag is not None
        stale = _status(api)["stale"]
        assert stale is not None and "LLM_MODEL" in stale["reason"] and stale["since"]

        before = _rows(stack)
        run = _launched(api, {"rebuild": True})
        assert (run["kind"], run["first_day"], run["last_day"]) == ("rebuild", None, None)
        final = _events(api, run["run_id"])[-1][1]
        assert final["state"] == "succeeded" and final["progress"]["processed"] == 8
        assert all(_rows(stack)[k]["created_at"] != before[k]["created_at"] for k in before)
        assert _status(api)["stale"] is None
        assert GraphState(pg).built_with() is not None
    finally:
        pg.close()


def _set_pool(client: DagsterClient, limit: int) -> None:
    result = client.query(
        "mutation Pool($key: String!, $limit: Int!) { setConcurrencyLimit(concurrencyKey: $key, "
        "limit: $limit) }",
        {"key": GRAPH_POOL, "limit": limit},
    )
    assert result["setConcurrencyLimit"] is True, result


def test_a_reset_is_refused_beside_a_graph_run_and_a_build_beside_a_reset(
    api: str, stack: Settings, archive: ChatArchive
) -> None:
    """The graph pool closed for a moment, so a launched run stays queued: the gate
    sees it in flight."""
    client = DagsterClient(stack.dagster_url)
    _set_pool(client, 0)
    try:
        waiting = _launched(api, {"from": RANGE[0], "to": RANGE[0]})
        assert waiting["state"] == "queued"
        refused = _post(api, "/api/graph/reset")
        assert refused.status_code == 409, refused.text
        body = refused.json()
        assert body["code"] == "corpus_busy"
        assert f"a graph rebuild (run {waiting['run_id']})" in body["message"]
        killed = _post(api, f"/api/graph/builds/{waiting['run_id']}/kill")
        assert killed.status_code == 200, killed.text
        assert _events(api, waiting["run_id"])[-1][1]["state"] == "canceled"

        reset = _post(api, "/api/graph/reset")
        assert reset.status_code == 202, reset.text
        for body in ({}, {"rebuild": True}):
            busy = _post(api, "/api/graph/builds", body)
            assert busy.status_code == 409 and "a graph reset" in busy.json()["message"]
        killed = _post(api, f"/api/graph/builds/{reset.json()['run_id']}/kill")
        assert killed.status_code == 200, killed.text
        _events(api, reset.json()["run_id"])
    finally:
        _set_pool(client, 1)
    assert _status(api)["days"] == 8  # neither run did anything


def test_a_reset_is_a_run_that_empties_the_graph_and_keeps_the_archives(
    api: str, stack: Settings, archive: ChatArchive
) -> None:
    workdir = workdir_for(stack)
    keys = set(read_manifest(workdir))
    files = {p.name: p.read_bytes() for p in archive.files()}

    r = _post(api, "/api/graph/reset")
    assert r.status_code == 202, r.text
    run = r.json()
    assert (run["kind"], run["path"], run["source"]) == ("reset", None, "api")
    events = _events(api, run["run_id"])
    final = events[-1][1]
    assert final["state"] == "succeeded" and final["error"] is None
    assert "graph reset: 8 day(s)" in (final["message"] or "")
    assert final["dagster_url"] == f"{stack.dagster_url}/runs/{run['run_id']}"

    status = _status(api)
    assert (status["built"], status["days"], status["entities"], status["relations"]) == (
        False,
        0,
        0,
        0,
    )
    assert status["sources"] == 1 and status["stale"] is None
    assert workdir.is_dir() and list(workdir.iterdir()) == []
    assert {p.name: p.read_bytes() for p in archive.files()} == files
    [source] = httpx.get(f"{api}/api/graph/sources", timeout=60).json()["sources"]
    assert (source["path"], source["supported"], source["days"]) == (ARCHIVE, True, 0)
    r = httpx.get(f"{api}/api/graph/entities", timeout=60)
    assert r.status_code == 200 and r.json()["total"] == 0, r.text
    listed = httpx.get(f"{api}/api/graph/builds", timeout=60).json()["builds"]
    assert next(b for b in listed if b["run_id"] == run["run_id"])["kind"] == "reset"

    # the archives build the graph back
    build = _launched(api, {})
    assert _events(api, build["run_id"])[-1][1]["state"] == "succeeded"
    assert set(read_manifest(workdir)) == keys
    assert _status(api)["days"] == 8


def _cli(settings: Settings, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "varagity_cli", "graph", *args],
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
        env={**os.environ, **settings_env(settings)},
        cwd=Path(settings.home),  # no stray .env from the checkout
        input=stdin,
    )


def test_the_command_line_rebuilds_days_resets_and_builds(
    api: str, stack: Settings, archive: ChatArchive
) -> None:
    before = _rows(stack)
    day = "2026-03-02"
    done = _cli(stack, "build", "--from", day, "--to", day)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"rebuild of days {day}..{day}: run " in done.stdout
    assert "succeeded: 2/2 days processed" in done.stdout
    after = _rows(stack)
    assert {k for k in before if after[k]["created_at"] != before[k]["created_at"]} == {
        k for k in before if _in_range(k, day, day)
    }
    bad = _cli(stack, "build", ARCHIVE, "--rebuild")
    assert bad.returncode == 2 and "leave out the paths" in bad.stderr
    assert _cli(stack, "build", "--from", "2026-13-01").returncode == 2

    # no --yes and no terminal to ask on: nothing is launched
    asked = _cli(stack, "reset", stdin="reset\n")
    assert asked.returncode == 2 and "--yes" in asked.stderr
    assert _status(api)["days"] == 8
    reset = _cli(stack, "reset", "--yes")
    assert reset.returncode == 0, reset.stdout + reset.stderr
    assert "reset: run " in reset.stdout and "reset: succeeded" in reset.stdout
    assert _status(api)["days"] == 0
    status = _cli(stack, "status")
    assert status.returncode == 0 and ": 0 day(s)" in status.stdout

    built = _cli(stack, "build")
    assert built.returncode == 0, built.stdout + built.stderr
    assert f"build of {ARCHIVE}: run " in built.stdout
    assert _status(api)["days"] == 8
