"""Issue 32 on real hosts: the documents pipeline spread over Celery workers on
network-namespace hosts (``varagity_stack.topology``), and what happens when a worker
host drops out.

One topology serves every test of the module (db, orch, serving and two worker hosts;
about 30 s to start; its teardown is checked to leave no namespace, link or process
behind): the first test ingests a corpus and searches it through the
serving host's API; each fault test then drops a few more files, breaks something while
a worker holds a step (a worker host cut off, a worker killed, the broker killed and
restarted), and checks that every file ends up stored exactly once with all its chunks,
that the step the broken worker held was finished by another worker (the same Celery
task id in its log), and that ``varagity doctor`` on the serving host is clean.
Every wait is bounded; the tests need root, ``ip`` and ``redis-server`` (``make install``).
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from varagity_stack.topology import (
    BRIDGE,
    Topology,
    TopologyError,
    TopologySpec,
    link_exists,
    namespaces,
)
from varagity_stack.topology_checks import (
    all_stored,
    corpus_rows,
    doctor_on_serving,
    dump,
    expected_chunks,
    in_flight,
    marker,
    search_paths,
    step_placements,
    wait_for,
    worker_tasks,
    write_corpus,
)

pytestmark = [pytest.mark.slow, pytest.mark.integration]

VISIBILITY_S = 15.0
"""How long a step a vanished worker took stays with it before another worker gets it."""
INGEST_TIMEOUT_S = 240.0


@pytest.fixture(scope="module")
def topo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Topology]:
    """Two worker hosts; runs of at most two files, so a corpus becomes several runs."""
    root = tmp_path_factory.mktemp("topology")
    topology = Topology(
        TopologySpec(
            root=root,
            workers=2,
            visibility_timeout_s=VISIBILITY_S,
            extra_env={"INGEST_BATCH_SIZE": "2", "MODEL_STEP_RETRY_DELAY_S": "1"},
        )
    )
    topology.start()
    try:
        yield topology
    finally:
        topology.stop()
    # torn down: no namespace, veth or bridge, no process of any host left
    assert namespaces() == []
    assert not any(link_exists(h.veth) for h in topology.hosts.values())
    assert not link_exists(BRIDGE)
    assert not any(p.running for ps in topology.procs.values() for p in ps)


class Corpus:
    """The files dropped so far and each one's expected chunk count."""

    def __init__(self) -> None:
        self.expected: dict[str, int] = {}
        self.next = 0

    def drop(self, topo: Topology, count: int) -> list[str]:
        rels = write_corpus(topo.docs_path, self.next, count)
        self.next += count
        self.expected.update(expected_chunks(topo.settings_for("serving"), rels))
        return rels


@pytest.fixture(scope="module")
def corpus() -> Corpus:
    return Corpus()


_T0 = time.monotonic()


def _note(what: str) -> None:
    """A timestamped line in the captured output (shown with a failure, or with -s)."""
    print(f"[{time.monotonic() - _T0:7.1f}s] {what}", flush=True)


def _assert_exactly_once(topo: Topology, corpus: Corpus) -> None:
    rows = corpus_rows(topo.database_url)
    files = {p.relative_to(topo.docs_path).as_posix() for p in topo.docs_path.rglob("*.md")}
    assert set(rows.docs_per_path) == files == set(corpus.expected), dump(rows.docs_per_path)
    assert all(n == 1 for n in rows.docs_per_path.values()), dump(rows.docs_per_path)
    assert rows.chunks_per_path == corpus.expected, dump([rows.chunks_per_path, corpus.expected])
    assert rows.duplicate_chunk_positions == 0
    assert rows.bm25_pending == 0


def _ingested(topo: Topology, corpus: Corpus) -> None:
    wait_for(
        "every file stored once with all its chunks",
        lambda: all_stored(topo.database_url, corpus.expected),
        INGEST_TIMEOUT_S,
    )


def _doctor_clean(topo: Topology) -> None:
    code, out = doctor_on_serving(topo)
    assert code == 0, out


def test_files_ingested_across_workers_are_searchable_from_the_serving_host(
    topo: Topology, corpus: Corpus
) -> None:
    rels = corpus.drop(topo, 6)
    _ingested(topo, corpus)
    _assert_exactly_once(topo, corpus)
    # every file found by its own marker, by keyword (Tantivy on the serving host) and
    # by meaning (pgvector on the db host, the query embedded on the serving host)
    for i, rel in enumerate(rels):
        assert search_paths(topo, marker(i), "bm25")[:1] == [rel]
        assert rel in search_paths(topo, f"Field note {i} marker {marker(i)}", "hybrid", k=20)
    placed = step_placements(topo.database_url)
    by_step: dict[str, set[str]] = {}
    for p in placed:
        by_step.setdefault(p.step_key, set()).add(p.worker)
    assert by_step.get("bm25_index") == {"serving@varagity"}, dump(by_step)
    general = set().union(*(by_step.get(k, set()) for k in ("parsed_document", "chunk_embeddings")))
    assert general == {"worker1@varagity", "worker2@varagity"}, dump(by_step)


@contextmanager
def _holding_a_step(topo: Topology, corpus: Corpus, host: str, count: int) -> Iterator[str]:
    """Drop ``count`` files and yield the Celery task id of a step ``host``'s worker is
    inside of, for the fault to strike: the host's embedding server is paused (SIGSTOP)
    until the ``with`` block ends, so its embedding step waits there, taken and not
    finished (a parse step alone lasts a tenth of a second: too short to aim at)."""
    embedding = next(p for p in topo.procs[host] if p.name == "embedding")
    assert embedding.pid is not None
    before, _ = worker_tasks(topo, host)
    os.killpg(embedding.pid, signal.SIGSTOP)
    try:
        corpus.drop(topo, count)
        seen: dict[str, float] = {}
        held: list[str] = []

        def holds() -> bool:
            now = time.monotonic()
            for task in in_flight(topo, host):
                if task not in before:
                    seen.setdefault(task, now)
            held[:] = [t for t in in_flight(topo, host) if now - seen.get(t, now) >= 1.0]
            return bool(held)

        for _ in range(4):  # the other worker may take every embedding step: more files
            try:
                wait_for(f"{host} inside a step", holds, 30, interval=0.1)
                break
            except TimeoutError:
                corpus.drop(topo, 2)
        assert held, f"{host} never took an embedding step"
        yield held[0]
    finally:
        os.killpg(embedding.pid, signal.SIGCONT)


def _taken_over(topo: Topology, task_id: str, by: str) -> bool:
    _, done = worker_tasks(topo, by)
    return task_id in done


def test_worker_host_cut_off_mid_ingest_loses_and_duplicates_nothing(
    topo: Topology, corpus: Corpus
) -> None:
    with _holding_a_step(topo, corpus, "worker1", 4) as task:
        topo.network.cut(topo.host("worker1"))
    _note(f"worker1 cut off holding task {task}")
    try:
        _ingested(topo, corpus)
        _note("ingested without worker1")
        wait_for(
            "worker2 finishes the cut-off host's step",
            lambda: _taken_over(topo, task, "worker2"),
            60,
        )
    finally:
        topo.network.reconnect(topo.host("worker1"))
    _assert_exactly_once(topo, corpus)
    topo.wait_workers(timeout=90)
    _note("worker1 back")
    corpus.drop(topo, 2)  # the healed host works again, and its stale step wrote nothing twice
    _ingested(topo, corpus)
    _assert_exactly_once(topo, corpus)
    _note("ingested after the heal")
    _doctor_clean(topo)
    _note("doctor clean")


def test_killed_worker_loses_and_duplicates_nothing(topo: Topology, corpus: Corpus) -> None:
    with _holding_a_step(topo, corpus, "worker2", 4) as task:
        topo.kill_worker("worker2")
    _note(f"worker2 killed holding task {task}")
    try:
        _ingested(topo, corpus)
        _note("ingested without worker2")
        wait_for(
            "worker1 finishes the killed worker's step",
            lambda: _taken_over(topo, task, "worker1"),
            60,
        )
    finally:
        topo.start_worker("worker2")
    topo.wait_workers(timeout=90)
    _note("worker2 restarted")
    _assert_exactly_once(topo, corpus)
    _doctor_clean(topo)
    _note("doctor clean")


def test_broker_restart_mid_ingest_loses_and_duplicates_nothing(
    topo: Topology, corpus: Corpus
) -> None:
    with _holding_a_step(topo, corpus, "worker1", 4) as task:
        topo.restart_broker(kill=True)
    _note(f"broker killed and restarted while worker1 held task {task}")
    _ingested(topo, corpus)
    _note("ingested")
    topo.wait_workers(timeout=90)
    _assert_exactly_once(topo, corpus)
    _doctor_clean(topo)
    _note("doctor clean")


def test_a_second_topology_is_refused_and_leaves_the_running_one_alone(
    topo: Topology, tmp_path: Path
) -> None:
    before = namespaces()
    second = Topology(TopologySpec(root=tmp_path / "second", workers=1))
    with pytest.raises(TopologyError, match=BRIDGE):
        second.start()
    assert namespaces() == before
    assert link_exists(BRIDGE)
    assert not topo.dead()
    assert search_paths(topo, marker(0), "bm25")[:1] == ["topo/note-00000.md"]
