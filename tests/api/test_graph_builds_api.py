"""``/api/graph/builds`` and the graph view against a real Dagster webserver + daemon,
the packaged models, over real HTTP and SSE.

One Dagster for the module (``dagster_stack``: every sensor stopped, so every run here
was launched by the API). One small archive (``write_chat_db(days=1)``: two thread-days)
is built once through the real LLM and shared by every assertion about builds and the
view; the kill-and-resume test grows it by one script day (two more thread-days), kills
that build mid-way and launches it again.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC
from itertools import pairwise
from urllib.parse import quote

import httpx
import pytest
from httpx_sse import connect_sse

from tests.support.api_server import serve
from tests.support.chatdb import ChatArchive, grow_chat_db, write_chat_db
from varagity.config import Settings
from varagity.graph.sources.registry import read_archive
from varagity.graph.types import ThreadDay
from varagity.jobs import DagsterClient
from varagity.jobs.ingest import IngestJobs

# the module's build and the killed-and-resumed one each extract for minutes here
pytestmark = [pytest.mark.integration, pytest.mark.timeout(2400)]

ARCHIVE = "phone/chat.db"
BUILD_TIMEOUT_S = 1800  # a generous bound on a shared 2-core machine, not a measurement


@pytest.fixture(scope="module")
def api(dagster_stack: Settings) -> Iterator[str]:
    """The API for the module's Dagster stack."""
    with serve(dagster_stack) as base:
        yield base


@dataclass
class FirstBuild:
    archive: ChatArchive
    days: list[ThreadDay]
    launched: dict
    events: list[tuple[str, dict]]


def _days(settings: Settings) -> list[ThreadDay]:
    return read_archive(settings.graph_docs_path, ARCHIVE, tz=UTC)


def _launch(api: str, body: dict) -> dict:
    r = httpx.post(f"{api}/api/graph/builds", json=body, timeout=60)
    assert r.status_code == 202, r.text
    return r.json()


def _events(api: str, run_id: str, *, until_extracting: bool = False) -> list[tuple[str, dict]]:
    """The build's SSE events to its end (or, with ``until_extracting``, to the first
    progress event whose days are being extracted)."""
    events: list[tuple[str, dict]] = []
    with (
        httpx.Client(timeout=httpx.Timeout(60, read=BUILD_TIMEOUT_S)) as client,
        connect_sse(client, "GET", f"{api}/api/graph/builds/{run_id}/events") as source,
    ):
        assert source.response.status_code == 200, source.response.read()
        assert source.response.headers["content-type"].startswith("text/event-stream")
        for event in source.iter_sse():
            events.append((event.event, json.loads(event.data)))
            progress = events[-1][1].get("progress") or {}
            extracting = progress.get("processing") or progress.get("processed")
            if until_extracting and event.event == "progress" and extracting:
                break
    return events


def _wait_done(api: str, run_id: str) -> dict:
    deadline = time.monotonic() + BUILD_TIMEOUT_S
    while True:
        r = httpx.get(f"{api}/api/graph/builds/{run_id}", timeout=60)
        assert r.status_code == 200, r.text
        if r.json()["done"]:
            return r.json()
        assert time.monotonic() < deadline, f"build {run_id} still {r.json()['status']}"
        time.sleep(1)


def _day(api: str, doc_key: str) -> httpx.Response:
    return httpx.get(f"{api}/api/graph/days/{quote(doc_key, safe='')}", timeout=60)


def test_nothing_to_build_is_409(api: str, dagster_stack: Settings) -> None:
    # before the module's archive is written (the first test): the folder holds none
    r = httpx.post(f"{api}/api/graph/builds", json={}, timeout=60)
    assert r.status_code == 409, r.text
    assert r.json()["code"] == "no_archives"
    assert str(dagster_stack.graph_docs_path) in r.json()["message"]


@pytest.fixture(scope="module")
def first_build(api: str, dagster_stack: Settings) -> FirstBuild:
    """The module's graph: a one-day archive (two thread-days) built through the API."""
    archive = write_chat_db(dagster_stack.graph_docs_path / "phone", days=1)
    days = _days(dagster_stack)
    assert 1 <= len(days) <= 3, [d.doc_key for d in days]
    launched = _launch(api, {"paths": [ARCHIVE]})
    assert len(launched["launched"]) == 1 and launched["in_flight"] == []
    events = _events(api, launched["launched"][0]["run_id"])
    return FirstBuild(archive, days, launched, events)


def test_a_build_streams_progress_to_success(
    api: str, dagster_stack: Settings, first_build: FirstBuild
) -> None:
    build = first_build.launched["launched"][0]
    run_id = build["run_id"]
    assert build["kind"] == "build" and build["path"] == ARCHIVE and build["source"] == "api"
    assert build["state"] in ("queued", "running") and not build["done"]
    assert build["dagster_url"] == f"{dagster_stack.dagster_url}/runs/{run_id}"

    names = [name for name, _ in first_build.events]
    assert names[-1] == "done" and names.count("done") == 1, names
    assert set(names[:-1]) == {"progress"}, names
    progress = [data for name, data in first_build.events if name == "progress"]
    assert all(a != b for a, b in pairwise(progress)), "repeated event"
    total = len(first_build.days)
    under_way = [p["progress"] for p in progress if p["progress"]]
    assert under_way, "no progress event reported the days of the build"
    assert all(p["total"] == total for p in under_way)
    assert any(p["processed"] < total for p in under_way)

    final = first_build.events[-1][1]
    assert final["run_id"] == run_id and final["status"] == "SUCCESS"
    assert final["state"] == "succeeded" and final["done"] and final["error"] is None
    assert final["progress"] == {
        "total": total,
        "processed": total,
        "processing": 0,
        "pending": 0,
        "failed": 0,
    }
    assert final["started_at"] and final["ended_at"] and final["message"]

    # the build's page and the list say the same
    again = httpx.get(f"{api}/api/graph/builds/{run_id}", timeout=60)
    assert again.status_code == 200 and again.json() == final
    listed = httpx.get(f"{api}/api/graph/builds", params={"limit": 5}, timeout=60)
    assert listed.status_code == 200
    assert run_id in [b["run_id"] for b in listed.json()["builds"]]
    assert next(b for b in listed.json()["builds"] if b["run_id"] == run_id) == final


def test_the_view_reads_the_built_graph(api: str, first_build: FirstBuild) -> None:
    r = httpx.get(f"{api}/api/graph/entities", timeout=60)
    assert r.status_code == 200, r.text
    listed = r.json()
    assert listed["entities"] and listed["total"] >= len(listed["entities"])
    degrees = [e["degree"] for e in listed["entities"]]
    assert degrees == sorted(degrees, reverse=True)  # the most connected first
    top = listed["entities"][0]
    assert top["days"] >= 1

    # a search finds it by part of its name
    part = top["name"][1:4] if len(top["name"]) > 4 else top["name"]
    found = httpx.get(f"{api}/api/graph/entities", params={"q": part.lower()}, timeout=60).json()
    assert top["name"] in [e["name"] for e in found["entities"]]
    assert all(part.lower() in e["name"].lower() for e in found["entities"])
    assert found["total"] == listed["total"]

    r = httpx.get(f"{api}/api/graph/neighbourhood", params={"entity": top["name"]}, timeout=60)
    assert r.status_code == 200, r.text
    hood = r.json()
    assert hood["center"] == top["name"] and hood["depth"] == 1
    names = {e["name"] for e in hood["entities"]}
    assert top["name"] in names
    for relation in hood["relations"]:
        assert {relation["source"], relation["target"]} <= names
    keys = {d.doc_key: d for d in first_build.days}
    assert hood["days"], "the neighbourhood names no day"
    for ref in hood["days"]:
        day = keys[ref["doc_key"]]
        assert ref["thread_name"] == day.thread_name and ref["span"] == day.span
        assert ref["messages"] == len(day.message_guids)

    # the drill-down: a day's transcript as the engine was given it
    day = keys[hood["days"][0]["doc_key"]]
    r = _day(api, day.doc_key)
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["status"] == "processed" and body["source"] == ARCHIVE
    assert body["thread_name"] == day.thread_name and body["span"] == day.span
    assert body["message_guids"] == list(day.message_guids)
    lines = [row.rendered_text for row in first_build.archive.conversation]
    assert any(line in body["text"] for line in lines)
    assert body["text"].strip() == day.text.strip()


def test_view_errors_name_what_is_missing(api: str, first_build: FirstBuild) -> None:
    r = httpx.get(
        f"{api}/api/graph/neighbourhood", params={"entity": "Nobody Atall 9137"}, timeout=60
    )
    assert r.status_code == 404 and r.json()["code"] == "entity_not_found"
    assert "Nobody Atall 9137" in r.json()["message"]
    r = _day(api, "iMessage;-;nobody::1999-01-01")
    assert r.status_code == 404 and r.json()["code"] == "day_not_found"
    r = httpx.get(f"{api}/api/graph/neighbourhood", params={"entity": "x", "depth": 9}, timeout=60)
    assert r.status_code == 422


def test_bad_requests_are_refused_with_reasons(
    api: str, dagster_stack: Settings, first_build: FirstBuild
) -> None:
    root = dagster_stack.graph_docs_path
    (root / "notes.txt").write_text("not a message archive\n")
    r = httpx.post(
        f"{api}/api/graph/builds",
        json={"paths": ["notes.txt", "missing.db", "../escape.db", "phone/chat.db-wal", ARCHIVE]},
        timeout=60,
    )
    assert r.status_code == 422, r.text
    body = r.json()
    assert body["code"] == "invalid_paths" and body["message"].startswith("4 path(s)")
    for named in ("'notes.txt'", "'missing.db'", "'../escape.db'", "'phone/chat.db-wal'"):
        assert named in body["message"]
    assert "imessage" in body["message"]  # the source's reason for notes.txt

    # an unknown run, and a run that is not a graph build, are 404
    for path in ("", "/events"):
        r = httpx.get(f"{api}/api/graph/builds/no-such-run{path}", timeout=60)
        assert r.status_code == 404 and r.json()["code"] == "build_not_found"
    r = httpx.post(f"{api}/api/graph/builds/no-such-run/kill", timeout=60)
    assert r.status_code == 404
    (dagster_stack.docs_path / "kettle.md").write_text("# Kettle\n\nIt boils.\n")
    client = DagsterClient(dagster_stack.dagster_url)
    [ingest_run] = IngestJobs(client).launch_runs(["kettle.md"], batch_size=1, source="api")
    r = httpx.get(f"{api}/api/graph/builds/{ingest_run}", timeout=60)
    assert r.status_code == 404 and "not a message-graph build" in r.json()["message"]

    # killing a build that has ended is a conflict
    run_id = first_build.launched["launched"][0]["run_id"]
    r = httpx.post(f"{api}/api/graph/builds/{run_id}/kill", timeout=60)
    assert r.status_code == 409 and r.json()["code"] == "build_ended"


def test_a_killed_build_resumes_when_launched_again(
    api: str, dagster_stack: Settings, first_build: FirstBuild
) -> None:
    grow_chat_db(first_build.archive)
    days = _days(dagster_stack)
    before = {d.doc_key for d in first_build.days}
    added = [d for d in days if d.doc_key not in before]
    assert 1 <= len(added) <= 2, [d.doc_key for d in added]

    launched = _launch(api, {"paths": [ARCHIVE]})
    run_id = launched["launched"][0]["run_id"]
    # a second request while it is queued or running launches nothing
    again = _launch(api, {})
    assert again["launched"] == [] and [b["run_id"] for b in again["in_flight"]] == [run_id]

    # another archive's build waits for the graph pool's one slot: killing it cancels it
    shutil.copytree(first_build.archive.path.parent, dagster_stack.graph_docs_path / "other")
    waiting = _launch(api, {"paths": ["other/chat.db"]})["launched"][0]
    assert waiting["state"] == "queued" and waiting["path"] == "other/chat.db"
    r = httpx.post(f"{api}/api/graph/builds/{waiting['run_id']}/kill", timeout=60)
    assert r.status_code == 200, r.text
    canceled = _wait_done(api, waiting["run_id"])
    assert canceled["state"] == "canceled" and canceled["progress"] is None
    shutil.rmtree(dagster_stack.graph_docs_path / "other")

    events = _events(api, run_id, until_extracting=True)
    assert events[-1][0] == "progress", events  # extraction under way, not done
    r = httpx.post(f"{api}/api/graph/builds/{run_id}/kill", timeout=60)
    assert r.status_code == 200, r.text
    assert r.json()["run_id"] == run_id and r.json()["state"] in ("running", "canceled")
    killed = _wait_done(api, run_id)
    assert killed["state"] == "canceled" and killed["status"] == "CANCELED"
    assert killed["error"] is None
    r = httpx.post(f"{api}/api/graph/builds/{run_id}/kill", timeout=60)
    assert r.status_code == 409

    resumed = _launch(api, {"paths": [ARCHIVE]})["launched"][0]
    assert resumed["run_id"] != run_id
    final = _events(api, resumed["run_id"])[-1]
    assert final[0] == "done" and final[1]["state"] == "succeeded", final
    progress = final[1]["progress"]
    assert progress["processed"] == progress["total"] >= 1
    assert progress["failed"] == progress["pending"] == progress["processing"] == 0

    # every day of the grown archive is in the graph, processed, once
    for day in days:
        r = _day(api, day.doc_key)
        assert r.status_code == 200, (day.doc_key, r.text)
        assert r.json()["status"] == "processed"
        assert r.json()["message_guids"] == list(day.message_guids)
    builds = httpx.get(f"{api}/api/graph/builds", timeout=60).json()["builds"]
    states = {b["run_id"]: b["state"] for b in builds}
    assert states[run_id] == "canceled" and states[resumed["run_id"]] == "succeeded"
    assert [b["run_id"] for b in builds].index(resumed["run_id"]) < [
        b["run_id"] for b in builds
    ].index(run_id)  # newest first
