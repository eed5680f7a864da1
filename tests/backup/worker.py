"""A backup step in a process of its own, stopped at a chosen point for a kill -9.

``python -m tests.backup.worker SPEC.json`` reads ``{"settings": {...}, "action": ...,
"bundle": ..., "pause": ...}``, runs the action with the real stores and, when it
reaches the ``pause`` point, prints ``PAUSED <point>`` and sleeps until killed. The
points are where a crash matters: mid-stream (``export``, ``copy``, ``extract``),
after the Postgres commit during the BM25 rebuild (``bm25``), after the graph swap
before its commit (``swapped``). Actions ``hold-rag-shared``, ``hold-rag-restore``
and ``hold-graph`` take a corpus lock and pause holding it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from varagity.config import Settings

#: The checkout: the worker runs as ``-m tests.backup.worker`` from wherever the test
#: stands (the settings fixture moves each test into its own temporary folder).
REPO = Path(__file__).resolve().parents[2]

PAUSED = "PAUSED"


def pause(point: str) -> None:
    print(f"{PAUSED} {point}", flush=True)
    time.sleep(600)


def main(spec_path: str) -> None:
    from varagity.backup import graph as graph_backup
    from varagity.backup import rag
    from varagity.backup.locks import corpus_write_lock, restore_holder
    from varagity.config import load_settings
    from varagity.graph import service as graph_service
    from varagity.stores.bm25 import open_bm25_store
    from varagity.stores.postgres import database_url
    from varagity.stores.vector_store import PgVectorStore

    spec: dict[str, Any] = json.loads(Path(spec_path).read_text())
    settings = load_settings(**spec["settings"])
    action, point = spec["action"], spec.get("pause", "")

    def progress(phase: str, done: int, total: int) -> None:
        if phase == point and 0 < done < total:
            pause(point)

    if action.startswith("hold-"):
        corpus = "graph" if action == "hold-graph" else "rag"
        holder = restore_holder("worker") if action == "hold-rag-restore" else "worker"
        with corpus_write_lock(
            settings, corpus, exclusive=action != "hold-rag-shared", holder=holder
        ):
            pause(action)
        return
    if action == "export-rag":
        pg = PgVectorStore(database_url(settings), embedding_dim=settings.EMBEDDING_DIM)
        rag.export_rag(
            settings, pg, progress=lambda p, d, t: progress({"chunks": "export"}.get(p, p), d, t)
        )
    elif action == "restore-rag":
        pg = PgVectorStore(database_url(settings), embedding_dim=settings.EMBEDDING_DIM)
        bm25 = open_bm25_store(settings)
        rag.restore_rag(Path(spec["bundle"]), settings, pg, bm25, progress=progress)
    elif action == "restore-graph":
        if point == "swapped":
            real = graph_service.commit

            def commit(workdir: Path, run: str) -> None:
                pause("swapped")
                real(workdir, run)

            graph_service.commit = commit  # type: ignore[assignment]
        graph_backup.restore_graph(
            Path(spec["bundle"]),
            settings,
            progress=lambda p, d, t: progress({"files": "extract"}.get(p, p), d, t),
        )
    else:
        raise SystemExit(f"unknown action {action}")
    print("DONE", flush=True)


# --- the test side ---------------------------------------------------------------------
def worker_env(settings: Settings) -> dict[str, str]:
    names = (
        "VARAGITY_HOME",
        "DOCS_PATH",
        "GRAPH_DOCS_PATH",
        "GRAPH_STORAGE_PATH",
        "DATABASE_URL",
        "EMBEDDING_DIM",
        "LLM_BASE_URL",
        "EMBEDDING_BASE_URL",
    )
    return {n: str(getattr(settings, n)) for n in names if getattr(settings, n) is not None}


def start_worker(
    settings: Settings, action: str, *, bundle: Path | None = None, pause: str = ""
) -> tuple[subprocess.Popen[str], str]:
    spec = Path(settings.home) / f"worker-{action}-{pause}.json"
    spec.parent.mkdir(parents=True, exist_ok=True)
    spec.write_text(
        json.dumps(
            {
                "settings": worker_env(settings),
                "action": action,
                "bundle": str(bundle or ""),
                "pause": pause,
            }
        )
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.backup.worker", str(spec)],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line.startswith(PAUSED):
        proc.kill()
        raise AssertionError(f"the worker ended without pausing: {line!r}")
    return proc, line.strip()


def kill9(proc: subprocess.Popen[Any], settings: Settings | None = None) -> None:
    """Kill the worker; with ``settings``, also wait until Postgres has ended its session
    (the server notices a vanished client a moment later, and only then does the
    session's advisory lock go)."""
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    if settings is None or not settings.DATABASE_URL:
        return
    from varagity.corpus_lock import HOLDER_PREFIX
    from varagity.stores.postgres import connect

    with connect(settings.DATABASE_URL, autocommit=True) as conn:
        for _ in range(600):
            row = conn.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE application_name LIKE %s",
                (HOLDER_PREFIX + "%",),
            ).fetchone()
            if row is not None and row[0] == 0:
                return
            time.sleep(0.05)
    raise AssertionError("the killed worker's Postgres session never ended")


if __name__ == "__main__":
    main(sys.argv[1])
