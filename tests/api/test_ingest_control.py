"""``/api/ingest`` against a real Dagster webserver + daemon, read over real HTTP and SSE.

One Dagster for the module (``dagster_stack``, folder sensor stopped): every run here
was launched by the API. Files are few and small, CONTEXTUALIZE is off.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from itertools import pairwise
from pathlib import Path

import httpx
import pytest
from httpx_sse import connect_sse
from prometheus_client import REGISTRY

from tests.conftest import SettingsFactory, free_port
from tests.support.api_server import serve
from varagity.config import Settings
from varagity.ingest.discovery import partition_key_for
from varagity.jobs import DagsterClient
from varagity.jobs.ingest import IngestJobs
from varagity.pipeline import (
    BATCH_TAG,
    FILES_TAG,
    INGEST_ASSETS,
    PARTITION_TAG,
    RANGE_END_TAG,
    RANGE_START_TAG,
    SOURCE_TAG,
)
from varagity.services import Services, ingest_file
from varagity.stores.corpus_state import CorpusState, ingest_settings

pytestmark = pytest.mark.integration

JOB_TIMEOUT_S = 600  # a generous bound on a shared 2-core machine, not a measurement


@pytest.fixture(scope="module")
def api(dagster_stack: Settings) -> Iterator[str]:
    """The API for the module's Dagster stack."""
    with serve(dagster_stack) as base:
        yield base


def _write(settings: Settings, rel: str, content: str | bytes) -> None:
    path = settings.docs_path / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")


def _launch(base: str, body: dict) -> dict:
    r = httpx.post(f"{base}/api/ingest", json=body, timeout=60)
    assert r.status_code == 202, r.text
    return r.json()


def _wait_done(base: str, job_id: str) -> dict:
    """Poll the job until it has finished; its final progress."""
    deadline = time.monotonic() + JOB_TIMEOUT_S
    while True:
        r = httpx.get(f"{base}/api/ingest/{job_id}", timeout=60)
        assert r.status_code == 200, r.text
        body = r.json()
        if body["done"]:
            return body
        assert time.monotonic() < deadline, f"job {job_id} still {body['status']}: {body}"
        time.sleep(1)


def _events(base: str, job_id: str) -> list[tuple[str, dict]]:
    with (
        httpx.Client(timeout=httpx.Timeout(60, read=JOB_TIMEOUT_S)) as client,
        connect_sse(client, "GET", f"{base}/api/ingest/{job_id}/events") as source,
    ):
        assert source.response.status_code == 200, source.response.read()
        assert source.response.headers["content-type"].startswith("text/event-stream")
        return [(e.event, json.loads(e.data)) for e in source.iter_sse()]


def _search_paths(base: str, query: str) -> list[str]:
    r = httpx.post(
        f"{base}/api/search", json={"query": query, "k": 3, "method": "bm25"}, timeout=60
    )
    assert r.status_code == 200, r.text
    return [hit["relative_path"] for hit in r.json()["results"]]


def _launched_count(kind: str, outcome: str) -> float:
    value = REGISTRY.get_sample_value(
        "varagity_ingest_requests_total", {"kind": kind, "outcome": outcome}
    )
    return value or 0.0


def test_ingest_streams_progress_to_success_and_files_become_searchable(
    api: str, dagster_stack: Settings
) -> None:
    _write(dagster_stack, "kettle.md", "# Tern K2\n\nThe Tern K2 kettle has a 27 month warranty.\n")
    _write(dagster_stack, "station/power.md", "# Aurora\n\nWind turbines peak at 4.2 megawatts.\n")
    launched_before = _launched_count("ingest", "launched")

    launched = _launch(api, {"paths": ["kettle.md", "station"]})  # a folder means its files
    job_id = launched["job_id"]
    assert launched["kind"] == "ingest"
    assert launched["paths"] == ["kettle.md", "station/power.md"]
    assert launched["dagster_url"] == f"{dagster_stack.dagster_url}/runs/b/{job_id}"
    assert _launched_count("ingest", "launched") == launched_before + 1

    events = _events(api, job_id)
    names = [name for name, _ in events]
    assert names[-1] == "done" and names.count("done") == 1, names
    assert "progress" in names and set(names[:-1]) == {"progress"}, names
    progress = [data for name, data in events if name == "progress"]
    assert not progress[0]["done"]
    assert all(a != b for a, b in pairwise(progress)), "repeated event"

    final = events[-1][1]
    assert final["job_id"] == job_id and final["status"] == "COMPLETED_SUCCESS"
    assert final["done"] and final["succeeded"]
    assert final["kind"] == "ingest" and final["source"] == "api"
    assert final["files"] == {"targeted": 2, "materialized": 2, "failed": 0, "in_progress": 0}
    assert [a["asset"] for a in final["assets"]] == list(INGEST_ASSETS)
    assert all(a["materialized"] == 2 for a in final["assets"])
    assert final["paths"] == ["kettle.md", "station/power.md"]
    assert final["runs"] and {r["status"] for r in final["runs"]} == {"SUCCESS"}
    assert final["failures"] == [] and final["error"] is None

    # the job's page says the same, and the files are searchable
    again = httpx.get(f"{api}/api/ingest/{job_id}", timeout=60).json()
    assert again["status"] == "COMPLETED_SUCCESS" and again["files"] == final["files"]
    assert _search_paths(api, "kettle warranty months")[0] == "kettle.md"
    assert _search_paths(api, "wind turbines megawatts")[0] == "station/power.md"

    jobs = httpx.get(f"{api}/api/ingest", timeout=60).json()["jobs"]
    listed = next(j for j in jobs if j["job_id"] == job_id)
    assert listed["kind"] == "ingest" and listed["source"] == "api" and listed["succeeded"]
    assert listed["files"]["materialized"] == 2


def test_a_failing_file_is_reported_with_its_error(api: str, dagster_stack: Settings) -> None:
    _write(dagster_stack, "bad/binary.txt", bytes(range(256)) * 16)
    _write(dagster_stack, "bad/tiny.md", "# Tiny\n\nA good file in the same run.\n")

    job_id = _launch(api, {"paths": ["bad"]})["job_id"]
    final = _wait_done(api, job_id)

    assert final["status"] == "COMPLETED_FAILED" and not final["succeeded"]
    assert final["files"]["failed"] == 2 and final["files"]["materialized"] == 0
    [run] = final["runs"]  # both files in one run: the run fails as a whole
    assert run["status"] == "FAILURE"
    assert (run["first_path"], run["last_path"]) == ("bad/binary.txt", "bad/tiny.md")
    assert [f["relative_path"] for f in final["failures"]] == ["bad/binary.txt", "bad/tiny.md"]
    for failure in final["failures"]:
        assert failure["run_id"] == run["run_id"]
        # the error names the file that failed, and says the other one was indexed
        assert "bad/binary.txt: contains NUL bytes" in failure["error"]
        assert "1 other file(s) of this run were indexed" in failure["error"]


def test_completed_reingest_clears_the_stale_flag(api: str, dagster_stack: Settings) -> None:
    settings = dagster_stack
    _write(settings, "soup.txt", "Red lentil soup simmers for 25 minutes with cumin.\n")
    other = settings.model_copy(update={"CHUNK_SIZE": settings.CHUNK_SIZE + 64})
    services = Services.open(settings)
    try:
        ingest_file(services, "soup.txt")  # a non-empty corpus can be stale
        corpus = CorpusState(services.pg)
        corpus.observe(other)  # the corpus "was built" with other settings...
        flag = corpus.observe(settings)  # ...so the current ones make it stale
        assert flag is not None and "CHUNK_SIZE" in flag.reason

        launched = _launch(api, {"reingest": True, "paths": ["soup.txt"]})
        assert launched["kind"] == "reingest" and launched["paths"] == ["soup.txt"]
        final = _wait_done(api, launched["job_id"])
        assert final["status"] == "COMPLETED_SUCCESS" and final["kind"] == "reingest"
        assert corpus.stale() is None
        assert corpus.built_with() == ingest_settings(settings)

        # a flag raised after that reingest is not cleared by looking at it again
        assert corpus.observe(other) is not None
        assert httpx.get(f"{api}/api/ingest/{launched['job_id']}", timeout=60).status_code == 200
        assert corpus.stale() is not None
        corpus.rebuilt_with(settings)
    finally:
        services.close()
    jobs = httpx.get(f"{api}/api/ingest", params={"limit": 5}, timeout=60).json()["jobs"]
    assert jobs[0]["job_id"] == launched["job_id"] and jobs[0]["kind"] == "reingest"


def test_bad_paths_are_refused_one_by_one(api: str, dagster_stack: Settings) -> None:
    settings = dagster_stack
    _write(settings, "fine.md", "# Fine\n\nThis one could be ingested.\n")
    _write(settings, "notes.xyz", "an unsupported file type\n")
    _write(settings, ".hidden.md", "editors leave these around\n")
    (settings.docs_path / "empty").mkdir()
    outside = settings.docs_path.parent / "outside.md"
    outside.write_text("not corpus\n")
    os.symlink(outside, settings.docs_path / "sneaky.md")
    jobs_before = httpx.get(f"{api}/api/ingest", timeout=60).json()["jobs"]
    refused_before = _launched_count("ingest", "refused")

    bad = ["../outside.md", "/etc/passwd", "missing.md", "notes.xyz", "empty", ".hidden.md"]
    bad += ["sneaky.md", "nul\x00.md", "x" * 300 + ".md"]
    r = httpx.post(f"{api}/api/ingest", json={"paths": ["fine.md", *bad]}, timeout=60)

    assert r.status_code == 422, r.text
    body = r.json()
    assert body["code"] == "invalid_paths"
    assert body["message"].startswith(f"{len(bad)} path(s) cannot be ingested")
    for path in bad:
        assert repr(path) in body["message"], path
    assert "'fine.md'" not in body["message"]
    assert "unsupported file type" in body["message"]
    assert "outside the corpus" in body["message"]
    assert "File name too long" in body["message"]
    assert _launched_count("ingest", "refused") == refused_before + 1
    assert httpx.get(f"{api}/api/ingest", timeout=60).json()["jobs"] == jobs_before


def test_unknown_job_is_404(api: str) -> None:
    for job_id in ("nosuchjob", "no%00such"):  # Dagster itself chokes on a NUL
        for url in (f"{api}/api/ingest/{job_id}", f"{api}/api/ingest/{job_id}/events"):
            r = httpx.get(url, timeout=60)
            assert r.status_code == 404, r.text
            assert r.json()["code"] == "job_not_found"
            assert "no" in r.json()["message"] and "such" in r.json()["message"]


def test_client_adds_each_partition_once(dagster_stack: Settings) -> None:
    jobs = IngestJobs(DagsterClient(dagster_stack.dagster_url))
    key = "client-check/only-a-partition.md"
    assert jobs.add_partitions([key, key]) == [key]
    assert jobs.add_partitions([key]) == []
    assert key in jobs.partitions()


def test_a_burst_is_launched_in_the_sensors_runs_the_first_before_the_rest(
    dagster_stack: Settings,
) -> None:
    client = DagsterClient(dagster_stack.dagster_url)
    names = [f"burst/{i}.md" for i in range(7)]
    for name in names:
        _write(dagster_stack, name, f"# Part {name}\n\nFile {name} of a burst.\n")
    keys = [partition_key_for(n) for n in names]
    run_ids = IngestJobs(client).launch_runs(keys, batch_size=3, source="api")
    # launched again at once: the runs that cover them are in flight, so nothing is
    assert IngestJobs(client).launch_runs(keys[:3], batch_size=3, source="api") == []
    runs = [
        client.query(
            "query R($id: ID!) { runOrError(runId: $id) { ... on Run { creationTime "
            "tags { key value } } } }",
            {"id": run_id},
        )["runOrError"]
        for run_id in run_ids
    ]
    tags = [{t["key"]: t["value"] for t in run["tags"]} for run in runs]
    # cut as the sensor cuts a burst (1, 3 - 1, then whole ones): a range of the
    # partitions in order per run, a lone file's run naming its partition
    assert [
        (t.get(PARTITION_TAG), t.get(RANGE_START_TAG), t.get(RANGE_END_TAG), t.get(FILES_TAG))
        for t in tags
    ] == [
        (keys[0], None, None, None),
        (None, keys[1], keys[2], "2"),
        (None, keys[3], keys[5], "3"),
        (keys[6], None, None, None),
    ]
    assert all(t[SOURCE_TAG] == "api" for t in tags)
    assert [t.get(BATCH_TAG) for t in tags] == [None, "true", "true", None]
    created = [run["creationTime"] for run in runs]
    assert created == sorted(created)


def test_a_burst_of_large_files_is_cut_by_bytes_too(dagster_stack: Settings) -> None:
    client = DagsterClient(dagster_stack.dagster_url)
    names = [f"heavy/{i}.md" for i in range(5)]
    for name in names:
        _write(dagster_stack, name, f"# Part {name}\n\nFile {name} of a heavy burst.\n")
    keys = [partition_key_for(n) for n in names]
    sizes = dict(zip(keys, [600, 500, 300, 900, 200], strict=True))
    run_ids = IngestJobs(client).launch_runs(
        keys, batch_size=100, source="api", sizes=sizes, batch_bytes=1000
    )
    tags = [
        {
            t["key"]: t["value"]
            for t in client.query(
                "query R($id: ID!) { runOrError(runId: $id) "
                "{ ... on Run { tags { key value } } } }",
                {"id": run_id},
            )["runOrError"]["tags"]
        }
        for run_id in run_ids
    ]
    # at most 1000 bytes of file a run, in order: 600 | 500 + 300 | 900 | 200
    assert [(t.get(PARTITION_TAG), t.get(RANGE_START_TAG), t.get(RANGE_END_TAG)) for t in tags] == [
        (keys[0], None, None),
        (None, keys[1], keys[2]),
        (keys[3], None, None),
        (keys[4], None, None),
    ]


def test_dagster_down_is_503(
    make_settings: SettingsFactory, pg_url: str, model_urls: dict[str, str]
) -> None:
    closed = f"http://127.0.0.1:{free_port()}"
    settings = make_settings(DATABASE_URL=pg_url, DAGSTER_URL=closed, **model_urls)
    _write(settings, "a.md", "# A\n\nSomething to ingest.\n")
    with serve(settings) as base:
        responses = [
            httpx.post(f"{base}/api/ingest", json={"paths": ["a.md"]}, timeout=60),
            httpx.post(f"{base}/api/ingest", json={"reingest": True}, timeout=60),
            httpx.get(f"{base}/api/ingest", timeout=60),
            httpx.get(f"{base}/api/ingest/abcdefgh", timeout=60),
            httpx.get(f"{base}/api/ingest/abcdefgh/events", timeout=60),
        ]
    for r in responses:
        assert r.status_code == 503, (r.request.url, r.text)
        assert r.json()["code"] == "dagster_unavailable"
        assert closed in r.json()["message"]


def test_nothing_to_ingest_is_409(make_settings: SettingsFactory, pg_url: str) -> None:
    settings = make_settings(DATABASE_URL=pg_url, DAGSTER_URL=f"http://127.0.0.1:{free_port()}")
    assert not any(Path(settings.docs_path).iterdir())
    with serve(settings) as base:
        reingest = httpx.post(f"{base}/api/ingest", json={"reingest": True}, timeout=60)
        ingest = httpx.post(f"{base}/api/ingest", json={}, timeout=60)
    assert reingest.status_code == 409, reingest.text
    assert reingest.json()["code"] == "empty_corpus"
    assert "Nothing to re-ingest" in reingest.json()["message"]
    assert ingest.status_code == 409 and ingest.json()["code"] == "empty_corpus"
