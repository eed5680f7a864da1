"""The README's command 1 end to end: ``varagity up`` on embedded defaults.

Starts the real stack (embedded Postgres, the packaged model servers, the Dagster
webserver + daemon with the folder sensor, the API) on free ports over a copy of the
sample corpus, then checks what a user would: health, the Dagster UI's view (asset
graph, one partition per file, sensor running), a streamed cited answer from the
sample files, a dropped file becoming searchable and a deleted one disappearing, and
a clean shutdown with no child left behind.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import httpx
import psutil
import pytest
from httpx_sse import connect_sse

from tests.support.pipeline import ALL_ASSETS
from tests.support.running_stack import varagity_up
from varagity.config import load_settings
from varagity.stores.corpus_state import INGEST_SETTINGS_KEY, STALE_KEY
from varagity.stores.postgres import connect, ensure_embedded_postgres

pytestmark = [pytest.mark.slow, pytest.mark.integration]
REPO = Path(__file__).resolve().parents[2]


def _wait(predicate, timeout: float, what: str, proc: subprocess.Popen) -> None:  # type: ignore[type-arg]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"varagity up exited early while waiting for {what}"
        try:
            if predicate():
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    raise AssertionError(f"timed out waiting for {what}")


def search_paths(api: str, query: str, method: str = "bm25") -> list[str]:
    r = httpx.post(f"{api}/api/search", json={"query": query, "k": 3, "method": method}, timeout=30)
    return [x["relative_path"] for x in r.json()["results"]]


def _gql(dagster: str, query: str) -> dict:
    r = httpx.post(f"{dagster}/graphql", json={"query": query}, timeout=30)
    r.raise_for_status()
    body = r.json()
    assert "errors" not in body, body
    return body["data"]


@pytest.mark.timeout(1500)  # kills and restarts two components on top of the tour
def test_varagity_up_serves_the_sample_corpus(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    shutil.copytree(REPO / "corpus", docs)
    with varagity_up(tmp_path / "home", docs, CONTEXTUALIZE="false") as stack:
        api, dagster, env, proc = stack.api, stack.dagster, stack.env, stack.proc
        out = stack.log()
        assert f"{api}/" in out and dagster in out

        health = httpx.get(f"{api}/api/health", timeout=30).json()
        assert health["status"] == "ok", health

        # a component killed -9 is restarted by the supervisor and answers again; the
        # stack's state file names the new process
        state_file = tmp_path / "home" / "run" / "stack.json"
        for name, marker, probe in (
            ("api", "varagity_api.main:app", f"{api}/api/health"),
            ("embedding", "varagity_stack.embedding_server", None),
        ):
            victim = next(c for c in stack.children if marker in " ".join(c.cmdline()))
            victim.kill()
            victim.wait(10)

            def restarted(name: str = name, old: int = victim.pid) -> bool:
                recorded = {
                    c["name"]: c["pid"] for c in json.loads(state_file.read_text())["children"]
                }
                return recorded[name] != old and psutil.pid_exists(recorded[name])

            _wait(restarted, 60, f"{name} to be restarted", proc)
            url = probe or next(
                f"http://127.0.0.1:{c['port']}/v1/models"
                for c in json.loads(state_file.read_text())["children"]
                if c["name"] == name
            )
            _wait(lambda url=url: httpx.get(url, timeout=5).status_code == 200, 300, name, proc)
            assert f"{name} exited" in stack.log() and "restarting it" in stack.log()

        data = _gql(
            dagster,
            "{ assetNodes { assetKey { path } partitionKeys } "
            'sensorOrError(sensorSelector: {repositoryName: "__repository__", '
            'repositoryLocationName: "varagity", sensorName: "docs_folder_sensor"}) '
            "{ ... on Sensor { sensorState { status } } } }",
        )
        nodes = {"/".join(n["assetKey"]["path"]): n for n in data["assetNodes"]}
        assert set(nodes) == ALL_ASSETS
        expected = sorted(p.relative_to(docs).as_posix() for p in docs.rglob("*") if p.is_file())
        assert sorted(nodes["indexed_document"]["partitionKeys"]) == expected
        assert data["sensorOrError"]["sensorState"]["status"] == "RUNNING"

        with (
            httpx.Client(timeout=120) as client,
            connect_sse(
                client,
                "POST",
                f"{api}/api/chat",
                json={"question": "What is the warranty period of the Tern K2 kettle?"},
            ) as source,
        ):
            events = [(e.event, json.loads(e.data)) for e in source.iter_sse()]
        assert events[0][0] == "retrieval" and events[-1][0] == "done"
        assert events[0][1]["sources"][0]["relative_path"] == "tern-kettle-manual.md"
        assert any(name == "token" for name, _ in events)

        (docs / "drop-in.txt").write_text("The Velo-9 drone battery lasts 47 minutes.\n")
        _wait(
            lambda: search_paths(api, "Velo-9 drone battery")[:1] == ["drop-in.txt"],
            180,
            "drop-in",
            proc,
        )
        (docs / "drop-in.txt").unlink()
        _wait(
            lambda: "drop-in.txt" not in search_paths(api, "Velo-9 drone battery"),
            120,
            "removal",
            proc,
        )

        # the corpus was "built with other settings": a staleness run flags it stale, a
        # reingest backfill launched through Dagster's GraphQL rebuilds it and clears it
        pg_url = ensure_embedded_postgres(load_settings(VARAGITY_HOME=tmp_path / "home"))
        with connect(pg_url, autocommit=True) as conn:
            conn.execute(
                "UPDATE app_settings SET value = replace(value, %s, %s) WHERE key = %s",
                ('"CHUNK_SIZE": "1200"', '"CHUNK_SIZE": "400"', INGEST_SETTINGS_KEY),
            )
            before = conn.execute("SELECT max(created_at) FROM chunks").fetchone()[0]

        def stale() -> bool:
            with connect(pg_url) as c:
                row = c.execute("SELECT 1 FROM app_settings WHERE key = %s", (STALE_KEY,))
                return row.fetchone() is not None

        _wait(stale, 60, "the stale flag", proc)
        done = subprocess.run(
            [sys.executable, "-m", "varagity_cli", "reingest", "--wait"],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        assert "COMPLETED_SUCCESS" in done.stdout
        _wait(lambda: not stale(), 60, "the stale flag to clear", proc)
        with connect(pg_url) as conn:
            oldest = conn.execute("SELECT min(created_at) FROM chunks").fetchone()[0]
        assert oldest > before  # every chunk was rebuilt

        # the service tour: upload a folder, chat with condense_context, settings, stale
        # flag, reingest through Dagster, delete with the file — over plain HTTP
        tour = subprocess.run(
            [sys.executable, str(REPO / "examples" / "service_tour.py"), "--api", api],
            capture_output=True,
            text=True,
            timeout=900,
        )
        assert tour.returncode == 0, tour.stdout[-4000:] + tour.stderr[-2000:]
        assert "Tour complete." in tour.stdout
        assert (docs / "tour-ferries" / "timetable.md").is_file()
        assert not (docs / "tour-ferries" / "tickets" / "lost-property.txt").exists()

        assert len(stack.children) >= 5
