"""What the topology's tests and benchmark check and measure from outside its hosts.

The corpus as Postgres holds it (documents and chunks per path, the BM25 entries still
pending), the files the corpus folder should have become (each file's chunk count from
the product's own parser and chunker, in this process), where Dagster ran each step
(the engine events dagster-celery writes with the worker's name), the Celery task ids a
worker took and finished (its log), searches through the serving host's API, and
``varagity doctor`` run on the serving host (where the Tantivy index lives). Every wait
is bounded.
"""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import httpx
import psycopg

from varagity.config import Settings
from varagity.ingest.parsing import parse_file
from varagity.ingest.stages import chunk_document
from varagity_stack.topology import Topology

WORDS = (
    "harbor lantern meadow copper violet orbit granite willow ember falcon quartz river "
    "summit canyon thistle marble beacon glacier saffron cobalt tundra prairie ivory "
    "jasper nimbus pebble raven sierra timber velvet walnut zephyr"
).split()


def marker(index: int) -> str:
    """The one word only file ``index`` contains (what a search for it must find)."""
    return f"topo{index:05d}zq"


def write_corpus(
    docs: Path, first: int, count: int, *, paragraphs: int = 6, seed: int = 7
) -> list[str]:
    """Write files ``first .. first+count-1`` (Markdown prose, a unique marker each)
    under ``docs/topo/``; returns their relative paths."""
    rng = random.Random(seed * 1_000_003 + first)
    rels = []
    for i in range(first, first + count):
        parts = [f"# Field note {i}\n", f"Marker {marker(i)} names this note.\n"]
        for p in range(paragraphs):
            text = " ".join(
                " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 14))).capitalize() + "."
                for _ in range(rng.randint(5, 8))
            )
            parts.append(f"## Part {p + 1}\n\n{text}\n")
        rel = f"topo/note-{i:05d}.md"
        path = docs / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp-write")
        tmp.write_text("\n".join(parts), encoding="utf-8")
        tmp.replace(path)
        rels.append(rel)
    return rels


def expected_chunks(settings: Settings, rels: Iterable[str]) -> dict[str, int]:
    """Each file's chunk count as the product's parser and chunker cut it."""
    return {
        rel: len(chunk_document(parse_file(settings.docs_path, rel, settings=settings), settings))
        for rel in rels
    }


@dataclass(frozen=True)
class CorpusRows:
    """The documents corpus as Postgres holds it."""

    docs_per_path: dict[str, int]
    chunks_per_path: dict[str, int]
    duplicate_chunk_positions: int
    """Chunks sharing (doc_id, chunk_index) with another: a step's rows written twice."""
    bm25_pending: int


def corpus_rows(database_url: str) -> CorpusRows:
    """Read :class:`CorpusRows` (one short connection)."""
    with psycopg.connect(database_url, connect_timeout=10) as conn:
        docs = conn.execute(
            "SELECT relative_path, count(*) FROM documents GROUP BY relative_path"
        ).fetchall()
        chunks = conn.execute(
            "SELECT d.relative_path, count(c.chunk_id) FROM documents d "
            "LEFT JOIN chunks c ON c.doc_id = d.doc_id GROUP BY d.relative_path"
        ).fetchall()
        dup = conn.execute(
            "SELECT count(*) FROM (SELECT doc_id, chunk_index FROM chunks "
            "GROUP BY doc_id, chunk_index HAVING count(*) > 1) AS d"
        ).fetchone()
        pending = conn.execute(
            "SELECT count(*) FROM information_schema.tables WHERE table_name = 'bm25_pending'"
        ).fetchone()
        n_pending = 0
        if pending and pending[0]:
            row = conn.execute("SELECT count(*) FROM bm25_pending").fetchone()
            n_pending = int(row[0]) if row else 0
    return CorpusRows(
        docs_per_path={str(p): int(n) for p, n in docs},
        chunks_per_path={str(p): int(n) for p, n in chunks},
        duplicate_chunk_positions=int(dup[0]) if dup else 0,
        bm25_pending=n_pending,
    )


def wait_for(what: str, check: Callable[[], bool], timeout: float, interval: float = 1.0) -> float:
    """Poll ``check`` until it is true; returns the seconds it took.

    Raises:
        TimeoutError: Not true within ``timeout`` seconds (``what`` names it).
    """
    started = time.monotonic()
    while True:
        try:
            if check():
                return time.monotonic() - started
        except (psycopg.OperationalError, httpx.HTTPError):
            pass  # a host restarting: ask again
        if time.monotonic() - started > timeout:
            raise TimeoutError(f"{what}: not within {timeout:.0f} s")
        time.sleep(interval)


def all_stored(database_url: str, expected: dict[str, int]) -> bool:
    """Whether every expected file has its one document and all its chunks, and no BM25
    entry is pending."""
    rows = corpus_rows(database_url)
    return rows.bm25_pending == 0 and all(
        rows.docs_per_path.get(rel) == 1 and rows.chunks_per_path.get(rel) == n
        for rel, n in expected.items()
    )


def search_paths(topo: Topology, query: str, method: str, k: int = 10) -> list[str]:
    """The relative paths of the chunks the serving host's API returns for ``query``."""
    resp = httpx.post(
        f"{topo.api_url}/api/search",
        json={"query": query, "k": k, "method": method},
        headers={"Authorization": f"Bearer {topo.api_key}"},
        timeout=60,
    )
    resp.raise_for_status()
    return [str(r.get("relative_path")) for r in resp.json()["results"]]


@dataclass(frozen=True)
class StepPlacement:
    """Where one step of one run executed (a dagster-celery engine event)."""

    run_id: str
    step_key: str
    worker: str


def step_placements(database_url: str) -> list[StepPlacement]:
    """Every step execution a Celery worker reported, from the Dagster event log."""
    with psycopg.connect(database_url, connect_timeout=10) as conn:
        rows = conn.execute(
            "SELECT run_id, step_key, event FROM event_logs "
            "WHERE dagster_event_type = 'ENGINE_EVENT' AND event LIKE %s",
            ("%in celery worker%",),
        ).fetchall()
    out = []
    for run_id, step_key, event in rows:
        found = re.search(r"\b([a-z0-9]+@varagity)\b", event)  # the worker's --hostname
        out.append(StepPlacement(str(run_id), str(step_key), found.group(1) if found else "?"))
    return out


_TASK = re.compile(r"Task execute_plan\[([0-9a-f-]+)\] (received|succeeded)")


def worker_tasks(topo: Topology, host: str) -> tuple[list[str], set[str]]:
    """The Celery task ids host ``host``'s worker received (in order) and finished."""
    log = topo.host(host).logs / "celery-worker.log"
    received: list[str] = []
    done: set[str] = set()
    if log.exists():
        for task_id, what in _TASK.findall(log.read_text(errors="replace")):
            if what == "received":
                received.append(task_id)
            else:
                done.add(task_id)
    return received, done


def in_flight(topo: Topology, host: str) -> list[str]:
    """Task ids host ``host``'s worker took and has not finished."""
    received, done = worker_tasks(topo, host)
    return [t for t in received if t not in done]


def doctor_on_serving(topo: Topology, timeout: float = 180) -> tuple[int, str]:
    """``varagity doctor`` run on the serving host with its settings: (exit code, output)."""
    serving = topo.host("serving")
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **topo.host_env(serving)}
    proc = subprocess.run(
        [
            "ip",
            "netns",
            "exec",
            serving.ns,
            sys.executable,
            "-m",
            "varagity_cli",
            "doctor",
            "--settle",
            "0",
        ],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        cwd=serving.home,
    )
    return proc.returncode, proc.stdout + proc.stderr


def dump(obj: object) -> str:
    """``obj`` as indented JSON (assertion messages)."""
    return json.dumps(obj, indent=1, default=str)[:4000]
