"""``/api/backups/{corpus}`` and the one-writer-per-corpus answers of the other routes,
over real HTTP and SSE: a real Dagster webserver + daemon (``dagster_stack``: sensors
stopped, so every run is the API's) runs the exports and restores; the locks a restore
holds are the library's own, taken by this test where it needs a restore in progress."""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest
from httpx_sse import connect_sse

from tests.conftest import SettingsFactory
from tests.support.api_server import index_files, serve
from varagity.backup.locks import corpus_write_lock, restore_holder
from varagity.config import Settings
from varagity.jobs import DagsterClient
from varagity.services import Services

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]
RUN_TIMEOUT_S = 600  # a generous bound for a run on a shared 2-core machine


def _chunk_ids(settings: Settings) -> list[str]:
    services = Services.open(settings)
    try:
        documents = services.pg.list_documents()
        return sorted(c.chunk_id for d in documents for c in services.pg.chunks_of(d.doc_id))
    finally:
        services.close()


def _follow(api: str, corpus: str, run_id: str) -> list[tuple[str, dict]]:
    events: list[tuple[str, dict]] = []
    url = f"{api}/api/backups/{corpus}/runs/{run_id}/events"
    with (
        httpx.Client(timeout=httpx.Timeout(60, read=RUN_TIMEOUT_S)) as client,
        connect_sse(client, "GET", url) as source,
    ):
        assert source.response.status_code == 200, source.response.read()
        for event in source.iter_sse():
            events.append((event.event, json.loads(event.data)))
            if event.event in ("done", "error"):
                break
    return events


@pytest.fixture
def api(make_settings: SettingsFactory, pg_url: str, model_urls: dict[str, str]) -> Iterator[str]:
    settings = make_settings(DATABASE_URL=pg_url, **model_urls)
    index_files(settings)
    with serve(settings) as base:
        yield base


def test_listing_and_refusals_without_a_run(api: str) -> None:
    listing = httpx.get(f"{api}/api/backups/rag", timeout=30)
    assert listing.status_code == 200, listing.text
    body = listing.json()
    assert body["bundles"] == [] and body["current"] == {"documents": 3, "chunks": 3}
    assert body["folder"].endswith("/varagity-exports")
    for name, status, code in (
        ("../docs.zip", 422, "bundle_invalid"),
        (".hidden.zip", 422, "bundle_invalid"),
        ("varagity-rag-19990101-0000.zip", 404, "bundle_not_found"),
    ):
        r = httpx.post(f"{api}/api/backups/rag/restore", json={"name": name}, timeout=30)
        assert (r.status_code, r.json()["code"]) == (status, code), (name, r.text)
    assert httpx.get(f"{api}/api/backups/nope", timeout=30).status_code == 422


def test_graph_backups_are_refused_with_the_graph_switched_off(
    make_settings: SettingsFactory, pg_url: str
) -> None:
    settings = make_settings(DATABASE_URL=pg_url, GRAPH_ENABLED="false")
    with serve(settings) as base:
        for method, path in (
            ("GET", "/api/backups/graph"),
            ("POST", "/api/backups/graph/export"),
            ("GET", "/api/backups/graph/runs"),
        ):
            r = httpx.request(method, f"{base}{path}", timeout=30)
            assert (r.status_code, r.json()["code"]) == (403, "graph_disabled"), path
        assert httpx.get(f"{base}/api/backups/rag", timeout=30).status_code == 200


def test_a_restore_in_progress_holds_chat_and_deletes_of_its_corpus_only(
    make_settings: SettingsFactory, pg_url: str, model_urls: dict[str, str]
) -> None:
    settings = make_settings(DATABASE_URL=pg_url, **model_urls)
    doc_ids = index_files(settings)
    chat = {"question": "What is the warranty of the Tern K2 kettle?"}
    openai = {"model": "varagity", "messages": [{"role": "user", "content": chat["question"]}]}
    with serve(settings) as base:
        with corpus_write_lock(settings, "rag", exclusive=True, holder=restore_holder("x.zip")):
            r = httpx.post(f"{base}/api/chat", json=chat, timeout=30)
            assert (r.status_code, r.json()["code"]) == (503, "corpus_restoring")
            assert "restore of x.zip" in r.json()["message"]
            r = httpx.post(f"{base}/v1/chat/completions", json=openai, timeout=30)
            assert r.status_code == 503 and "corpus_restoring" in r.text
            r = httpx.delete(f"{base}/api/documents/{doc_ids['kettle.md']}", timeout=30)
            assert (r.status_code, r.json()["code"]) == (409, "corpus_busy")
            r = httpx.post(f"{base}/api/documents/delete", json={"doc_ids": ["x"]}, timeout=30)
            assert (r.status_code, r.json()["code"]) == (409, "corpus_busy")
            # the graph is another corpus: its restore state is its own
            r = httpx.delete(f"{base}/api/graph/sources/none.db", timeout=30)
            assert r.status_code == 404
        with corpus_write_lock(settings, "graph", exclusive=True, holder=restore_holder("g.zip")):
            r = httpx.delete(f"{base}/api/graph/sources/none.db", timeout=30)
            assert (r.status_code, r.json()["code"]) == (409, "corpus_busy")
            graph_chat = {**chat, "corpus": "graph"}
            r = httpx.post(f"{base}/api/chat", json=graph_chat, timeout=30)
            assert (r.status_code, r.json()["code"]) == (503, "corpus_restoring")
        # the restores ended: deletes go through again
        r = httpx.delete(f"{base}/api/documents/{doc_ids['kettle.md']}", timeout=30)
        assert r.status_code == 200, r.text


def test_export_and_restore_are_runs_followed_over_sse(dagster_stack: Settings) -> None:
    settings = dagster_stack
    index_files(settings)
    before = _chunk_ids(settings)
    with serve(settings) as api:
        launched = httpx.post(f"{api}/api/backups/rag/export", timeout=60)
        assert launched.status_code == 202, launched.text
        run = launched.json()
        assert (run["kind"], run["corpus"], run["done"]) == ("export", "rag", False)
        # a second writer of the same corpus is refused, naming the first
        again = httpx.post(f"{api}/api/backups/rag/export", timeout=60)
        assert (again.status_code, again.json()["code"]) == (409, "corpus_busy"), again.text
        assert f"an export (run {run['run_id']})" in again.json()["message"]
        ingest = httpx.post(f"{api}/api/ingest", json={}, timeout=60)
        assert (ingest.status_code, ingest.json()["code"]) == (409, "corpus_busy")
        # an upload is stored, and its ingest left to the folder sensor after the export
        upload = httpx.post(
            f"{api}/api/documents/upload",
            files=[("files", ("late.md", b"The Velo-9 drone battery lasts 47 minutes.\n"))],
            timeout=60,
        )
        assert upload.status_code == 200, upload.text
        assert [r["status"] for r in upload.json()["results"]] == ["stored"]
        launched_by_upload = DagsterClient(settings.dagster_url).query(
            '{ runsOrError(filter: {tags: [{key: "varagity/source", value: "upload"}]}) '
            "{ ... on Runs { results { runId } } } }"
        )["runsOrError"]["results"]
        assert launched_by_upload == []

        events = _follow(api, "rag", run["run_id"])
        kind, final = events[-1]
        assert kind == "done" and final["state"] == "succeeded", events
        name = final["bundle"]
        assert name and name.startswith("varagity-rag-") and name.endswith(".zip")
        listing = httpx.get(f"{api}/api/backups/rag", timeout=30).json()
        [bundle] = listing["bundles"]
        assert (bundle["name"], bundle["ok"], bundle["counts"]) == (
            name,
            True,
            {"documents": 3, "chunks": 3},
        )
        assert bundle["drift"] == [] and bundle["embedding_dim"] == settings.EMBEDDING_DIM
        runs = httpx.get(f"{api}/api/backups/rag/runs", timeout=30).json()["runs"]
        assert [r["run_id"] for r in runs] == [run["run_id"]]

        # the corpus changes, then the bundle replaces it
        services = Services.open(settings)
        try:
            services.pg.delete_documents([services.pg.list_documents()[0].doc_id])
        finally:
            services.close()
        restore = httpx.post(f"{api}/api/backups/rag/restore", json={"name": name}, timeout=60)
        assert restore.status_code == 202, restore.text
        assert (restore.json()["kind"], restore.json()["bundle"]) == ("restore", name)
        events = _follow(api, "rag", restore.json()["run_id"])
        kind, final = events[-1]
        assert kind == "done" and final["state"] == "succeeded", events
        assert _chunk_ids(settings) == before
        # the upload after the export is in the folder, not in the bundle: the restore
        # says so (the folder sensor, stopped here, would ingest it next)
        assert final["reconcile"] == {"to_ingest": 1, "to_purge": 0, "failed": 0}
        # another corpus's run is not this one's: unknown here
        r = httpx.get(f"{api}/api/backups/graph/runs/{run['run_id']}", timeout=30)
        assert (r.status_code, r.json()["code"]) == (404, "run_not_found")
