"""``varagity topology bench``: ingest throughput with 1, 2, 3 worker hosts beside the
embedded single-host stack, on the same generated corpus.

For each configuration it starts a fresh deployment, drops the same ``--files`` generated
Markdown files into its corpus folder, and measures until every file is stored with all
its chunks and none waits for its BM25 entries (searchable by meaning and by keyword;
checked with one search per sampled file through the API):

* chunks/s to searchable (the clock starts when the first file is written);
* chunks/s per machine core (this machine's cores are shared by every host: with real
  machines each worker host brings its own);
* chunks per CPU-second, over every process of the deployment and over the worker hosts
  alone (the step work: parsing, chunking, embedding) - the cost of one chunk,
  independent of how many cores there are;
* CPU-seconds per host during the ingest and its resident memory at the end: the
  per-host overhead (broker, orchestration, the serving host's index worker, Postgres);
* the embedding servers' share of all CPU: what more machines would divide.

CPU is read with psutil over each host's processes (a namespace's processes; for the
embedded stack its children and Postgres), counting the CPU of children they reaped
(Dagster's run workers, Celery pool children), so a process that ended mid-ingest is
counted too. It prints a table and asserts nothing.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from abc import ABC, abstractmethod
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from varagity.config import Settings, load_settings
from varagity.stores.postgres import database_url, embedded_postgres_pid
from varagity_bench.private_stack import private_stack_settings
from varagity_stack.supervisor import Stack
from varagity_stack.topology import Topology, TopologySpec, namespace_pids, namespaces
from varagity_stack.topology_checks import (
    all_stored,
    expected_chunks,
    marker,
    search_paths,
    wait_for,
    write_corpus,
)

SAMPLE_SEARCHES = 5


def _cpu_seconds(pids: Iterable[int]) -> float:
    """User + system CPU of the processes and of the children they reaped."""
    total = 0.0
    for pid in set(pids):
        try:
            t = psutil.Process(pid).cpu_times()
        except psutil.Error:
            continue
        total += t.user + t.system + t.children_user + t.children_system
    return total


def _rss_mb(pids: Iterable[int]) -> float:
    total = 0
    for pid in set(pids):
        try:
            total += psutil.Process(pid).memory_info().rss
        except psutil.Error:
            continue
    return total / 2**20


def _tree(pid: int | None) -> list[int]:
    """``pid`` and its descendants."""
    if pid is None:
        return []
    try:
        proc = psutil.Process(pid)
        return [pid, *(c.pid for c in proc.children(recursive=True))]
    except psutil.Error:
        return []


@dataclass
class Measurement:
    """One configuration's ingest."""

    name: str
    workers: int
    files: int
    chunks: int
    seconds: float
    cpu_by_host: dict[str, float] = field(default_factory=dict)
    rss_by_host: dict[str, float] = field(default_factory=dict)
    embedding_cpu: float = 0.0
    worker_hosts: tuple[str, ...] = ()
    batch: int = 10

    @property
    def chunks_per_s(self) -> float:
        return self.chunks / self.seconds

    @property
    def cpu_total(self) -> float:
        return sum(self.cpu_by_host.values())

    @property
    def worker_cpu(self) -> float:
        hosts = self.worker_hosts or tuple(self.cpu_by_host)
        return sum(self.cpu_by_host.get(h, 0.0) for h in hosts)


class _Deployment(ABC):
    """The common face of the embedded stack and a topology for the measurement."""

    name: str
    workers: int
    docs_path: Path
    db_url: str

    @abstractmethod
    def host_pids(self) -> dict[str, list[int]]:
        """The processes of each host, by host name."""

    @abstractmethod
    def embedding_pids(self) -> list[int]:
        """The embedding servers' processes."""

    @abstractmethod
    def searches(self, query: str) -> list[str]:
        """The relative paths a BM25 search through the API returns."""


class _Embedded(_Deployment):
    def __init__(self, stack: Stack) -> None:
        self.stack = stack
        self.name = "embedded (one host)"
        self.workers = 0
        self.docs_path = stack.settings.docs_path
        self.db_url = database_url(stack.settings)

    def host_pids(self) -> dict[str, list[int]]:
        pids = [p for c in self.stack.children for p in _tree(c.pid)]
        pids += _tree(embedded_postgres_pid(self.stack.settings))
        return {"machine": pids}

    def embedding_pids(self) -> list[int]:
        return [p for c in self.stack.children if c.name == "embedding" for p in _tree(c.pid)]

    def searches(self, query: str) -> list[str]:
        import httpx

        s = self.stack.settings
        resp = httpx.post(
            f"http://{s.HOST}:{s.API_PORT}/api/search",
            json={"query": query, "k": 5, "method": "bm25"},
            timeout=60,
        )
        resp.raise_for_status()
        return [str(r.get("relative_path")) for r in resp.json()["results"]]


class _Topo(_Deployment):
    def __init__(self, topo: Topology) -> None:
        self.topo = topo
        self.workers = len(topo.workers)
        self.name = f"topology, {self.workers} worker host(s)"
        self.docs_path = topo.docs_path
        self.db_url = topo.database_url

    def host_pids(self) -> dict[str, list[int]]:
        return {h.name: namespace_pids(h.ns) for h in self.topo.hosts.values()}

    def embedding_pids(self) -> list[int]:
        return [
            pid
            for procs in self.topo.procs.values()
            for p in procs
            if p.name == "embedding"
            for pid in _tree(p.pid)
        ]

    def searches(self, query: str) -> list[str]:
        return search_paths(self.topo, query, "bm25", k=5)


def measure(dep: _Deployment, files: int, timeout_s: float, batch: int) -> Measurement:
    """Drop ``files`` generated files into ``dep``'s corpus folder and time them to
    searchable, with CPU per host over the window."""
    staging = Path(tempfile.mkdtemp(prefix="varagity-topo-bench-"))
    try:
        rels = write_corpus(staging, 0, files, paragraphs=8, seed=11)
        settings_like = _settings_for_docs(staging)
        expected = expected_chunks(settings_like, rels)
        before = {h: _cpu_seconds(p) for h, p in dep.host_pids().items()}
        emb_before = _cpu_seconds(dep.embedding_pids())
        started = time.monotonic()
        for rel in rels:  # into the watched folder, each file whole (rename)
            target = dep.docs_path / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = target.with_suffix(".part")
            shutil.copyfile(staging / rel, tmp)
            tmp.replace(target)
        wait_for(
            f"{dep.name}: {files} files searchable",
            lambda: all_stored(dep.db_url, expected),
            timeout_s,
            interval=0.25,
        )
        seconds = time.monotonic() - started
        pids = dep.host_pids()
        cpu = {h: max(0.0, _cpu_seconds(p) - before.get(h, 0.0)) for h, p in pids.items()}
        emb = max(0.0, _cpu_seconds(dep.embedding_pids()) - emb_before)
        rss = {h: _rss_mb(p) for h, p in pids.items()}
        for i in range(0, files, max(1, files // SAMPLE_SEARCHES)):
            found = dep.searches(marker(i))
            if not found or found[0] != rels[i]:
                raise RuntimeError(f"{dep.name}: a search for {marker(i)} found {found[:3]}")
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    workers = tuple(h for h in cpu if h.startswith("worker")) or tuple(cpu)
    return Measurement(
        dep.name,
        dep.workers,
        files,
        sum(expected.values()),
        seconds,
        cpu,
        rss,
        emb,
        workers,
        batch,
    )


def _settings_for_docs(docs: Path) -> Settings:
    """Default settings (what every deployment here runs with) over ``docs``."""
    return load_settings(DOCS_PATH=docs)


def render(results: list[Measurement]) -> str:
    """The scaling table, then each configuration's CPU and memory per host."""
    cores = psutil.cpu_count() or 1
    base = next((r for r in results if r.workers == 0), None)
    lines = [
        f"Ingest to searchable, {results[0].files} files, {results[0].chunks} chunks; "
        f"{cores} cores shared by every host; {results[0].files // max(1, results[0].batch)}+ "
        f"runs of {results[0].batch} files",
        "",
        "| deployment | s | chunks/s | chunks/s per core | chunks per CPU-s (all) | "
        "chunks per worker CPU-s | embedding share of CPU | vs embedded (chunks/s) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        rel = f"{r.chunks_per_s / base.chunks_per_s:.0%}" if base else "-"
        lines.append(
            f"| {r.name} | {r.seconds:.1f} | {r.chunks_per_s:.2f} | "
            f"{r.chunks_per_s / cores:.2f} | {r.chunks / max(r.cpu_total, 1e-9):.2f} | "
            f"{r.chunks / max(r.worker_cpu, 1e-9):.2f} | "
            f"{r.embedding_cpu / max(r.cpu_total, 1e-9):.0%} | {rel} |"
        )
    lines += ["", "Per host: CPU-seconds during the ingest / resident memory (MB) at its end", ""]
    for r in results:
        per = ", ".join(
            f"{h} {r.cpu_by_host[h]:.1f} s / {r.rss_by_host.get(h, 0):.0f} MB"
            for h in r.cpu_by_host
        )
        lines.append(f"- {r.name}: {per}")
    return "\n".join(lines)


def run_benchmark(
    *, files: int, worker_counts: list[int], embedded: bool, timeout_s: float, batch: int = 10
) -> int:
    """Measure each configuration in turn (each torn down before the next) and print
    the table. Every deployment runs with ``INGEST_BATCH_SIZE=batch`` (the files become
    several runs, which the topology spreads over its workers) and no blurbs."""
    if os.geteuid() != 0:
        print("error: the topology benchmark makes network namespaces: run it as root")
        return 2
    if namespaces():
        print("error: a topology runs (or a dead one left its hosts): `varagity topology down`")
        return 1
    results: list[Measurement] = []
    if embedded:
        root, settings = private_stack_settings(
            "varagity-topo-bench-", CONTEXTUALIZE=False, INGEST_BATCH_SIZE=batch
        )
        stack = Stack(settings)
        try:
            print(f"starting the embedded stack under {root} ...", flush=True)
            stack.start()
            results.append(measure(_Embedded(stack), files, timeout_s, batch))
            print(render(results), flush=True)
        finally:
            stack.stop()
            shutil.rmtree(root, ignore_errors=True)
    for n in worker_counts:
        root = Path(tempfile.mkdtemp(prefix="varagity-topo-bench-"))
        topo = Topology(
            TopologySpec(root=root, workers=n, extra_env={"INGEST_BATCH_SIZE": str(batch)})
        )
        try:
            print(f"starting a topology with {n} worker host(s) under {root} ...", flush=True)
            t0 = time.monotonic()
            topo.start()
            print(f"  up in {time.monotonic() - t0:.0f} s", flush=True)
            results.append(measure(_Topo(topo), files, timeout_s, batch))
            print(render(results), flush=True)
        finally:
            topo.stop()
            shutil.rmtree(root, ignore_errors=True)
    print("\n" + render(results), flush=True)
    return 0
