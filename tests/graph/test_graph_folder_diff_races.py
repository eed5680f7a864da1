"""The message graph's folder decision (:func:`varagity.folder_diff.graph_tick`) over
the races with uploads, the build routes, builds in flight and restores, without
Dagster or a message archive.

:class:`Graph` plays ``GRAPH_DOCS_PATH``, the instance (partitions, builds in flight,
builds launched with their archive's signature) and the graph's working directory;
each tick reads them as the graph-sources sensor does.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from varagity.folder_diff import (
    ArchiveEntry,
    ArchiveLook,
    GraphCursor,
    GraphTick,
    Judgment,
    LazyMapping,
    LazySet,
    graph_tick,
    graph_to_judge,
)

T = TypeVar("T")
SETTLE_S = 10.0
PHONE = "phone/chat.db"
T0 = 1_700_000_000.0


@dataclass
class Archive:
    size: int
    changed_at: float
    sha256: str | None = None
    reason: str | None = None  # no message source reads it

    def look(self) -> ArchiveLook:
        return ArchiveLook(((self.size, int(self.changed_at * 1e9)),), self.changed_at)


@dataclass
class Graph:
    now: float = T0
    archives: dict[str, Archive] = field(default_factory=dict)
    partitions: set[str] = field(default_factory=set)
    building: dict[str, float] = field(default_factory=dict)  # path -> reads from
    launched: dict[tuple[str, str], float] = field(default_factory=dict)  # not failed
    held: set[str] = field(default_factory=set)  # what the graph's manifest holds
    workdir: str | None = "1:100"
    cursor: GraphCursor = field(default_factory=GraphCursor)
    judged: list[str] = field(default_factory=list)

    def write(self, rel: str, sha256: str, *, size: int = 100) -> None:
        self.archives[rel] = Archive(size, self.now, sha256)

    def later(self, seconds: float) -> None:
        self.now += seconds

    def upload(self, rel: str, sha256: str) -> None:
        """The upload route: the archive placed, its partition added, its build
        launched (tagged with the archive's signature) and queued."""
        self.write(rel, sha256)
        self.partitions.add(rel)
        self.launched[(rel, sha256)] = self.now
        self.building[rel] = math.inf

    def tick(self) -> GraphTick:
        scan = {rel: a.look() for rel, a in sorted(self.archives.items())}
        settled_before = self.now - SETTLE_S
        todo = graph_to_judge(
            self.cursor, scan, workdir=self.workdir, settled_before=settled_before
        )
        self.judged += todo
        judged = {
            rel: Judgment(self.archives[rel].sha256, self.archives[rel].reason) for rel in todo
        }
        tick = graph_tick(
            self.cursor,
            scan,
            judged,
            frozenset(self.partitions),
            dict(self.building),
            lambda rel, sha: self.launched.get((rel, sha)),
            workdir=self.workdir,
            held=frozenset(self.held),
            settled_before=settled_before,
        )
        self.partitions |= set(tick.add_partitions)
        self.partitions -= set(tick.delete_partitions)
        for build in tick.builds:  # the daemon launches what the sensor asks for
            self.launched[(build.path, build.sha256)] = self.now
            self.building[build.path] = math.inf
        self.cursor = tick.cursor
        return tick

    def built(self, rel: str) -> None:
        self.building.pop(rel, None)
        self.held.add(rel)

    def build_failed(self, rel: str) -> None:
        self.building.pop(rel, None)
        self.launched = {k: t for k, t in self.launched.items() if k[0] != rel}


def builds(tick: GraphTick) -> list[tuple[str, str]]:
    return [(b.path, b.sha256) for b in tick.builds]


def _settled(graph: Graph) -> Graph:
    """``graph`` after its archives settled, were built, and a tick asked for nothing."""
    graph.later(SETTLE_S + 1)
    for build in graph.tick().builds:
        graph.built(build.path)
    assert graph.tick().idle
    return graph


def test_an_uploaded_archive_gets_no_second_build_from_the_sensor() -> None:
    graph = Graph()
    graph.upload(PHONE, "sha-1")
    graph.later(1)
    assert graph.tick().idle and graph.judged == []  # just landed: judged later
    graph.later(SETTLE_S)
    queued = graph.tick()
    assert builds(queued) == []  # a build of exactly these bytes was launched
    assert any("launched already" in note for note in queued.notes)
    graph.built(PHONE)
    assert graph.tick().idle


def test_a_build_launched_before_the_archive_changed_does_not_count() -> None:
    graph = Graph()
    graph.write(PHONE, "sha-1")
    graph.launched[(PHONE, "sha-1")] = T0 - 60  # built once, then removed and put back
    graph.later(SETTLE_S + 1)
    assert builds(graph.tick()) == [(PHONE, "sha-1")]


def test_a_partition_an_upload_just_added_waits_a_tick_for_its_build() -> None:
    graph = Graph()
    graph.write(PHONE, "sha-1")
    graph.partitions.add(PHONE)  # added; the launch has not come (yet)
    graph.later(SETTLE_S + 1)
    first = graph.tick()
    assert builds(first) == [] and first.cursor.archives[PHONE].sha256 == ""
    assert builds(graph.tick()) == [(PHONE, "sha-1")]  # no run came: built now
    assert graph.tick().idle


def test_an_archive_changed_under_a_running_build_is_built_once_after_it() -> None:
    graph = Graph()
    graph.write(PHONE, "sha-1")
    graph.later(SETTLE_S + 1)
    assert builds(graph.tick()) == [(PHONE, "sha-1")]
    graph.building[PHONE] = graph.now  # that build started, reading the first export
    graph.later(2)
    graph.write(PHONE, "sha-2", size=200)  # re-exported while it runs
    graph.later(SETTLE_S + 1)
    held = graph.tick()
    assert builds(held) == [] and held.cursor.archives[PHONE].waiting
    assert graph.tick().idle and graph.cursor.archives[PHONE].waiting  # not forgotten

    graph.built(PHONE)
    after = graph.tick()
    assert builds(after) == [(PHONE, "sha-2")]
    assert not after.cursor.archives[PHONE].waiting
    assert after.builds[0].revision == 1  # its content changed once
    assert graph.tick().idle  # asked for once


def test_a_build_in_flight_that_reads_the_archive_as_it_is_covers_it() -> None:
    graph = Graph()
    graph.write(PHONE, "sha-1")
    graph.partitions.add(PHONE)
    graph.building[PHONE] = math.inf  # queued by the UI (no signature tag): reads it later
    graph.cursor = GraphCursor(archives={PHONE: ArchiveEntry((), "sha-0")})
    graph.later(SETTLE_S + 1)
    tick = graph.tick()
    assert builds(tick) == [] and not tick.cursor.archives[PHONE].waiting


def test_an_archive_removed_while_its_build_is_in_flight_is_removed() -> None:
    graph = Graph()
    graph.write(PHONE, "sha-1")
    graph.later(SETTLE_S + 1)
    first = graph.tick()
    assert builds(first) == [(PHONE, "sha-1")]
    del graph.archives[PHONE]  # gone while its build is queued
    gone = graph.tick()
    assert gone.removed == (PHONE,) and gone.delete_partitions == (PHONE,)
    assert gone.cursor.generation == gone.generation + 1 and PHONE not in gone.cursor.archives


def test_an_archive_removed_and_put_back_is_built_again_under_a_new_key() -> None:
    graph = Graph()
    graph.write(PHONE, "sha-1")
    graph = _settled(graph)
    saved = graph.archives.pop(PHONE)
    removal = graph.tick()
    assert removal.removed == (PHONE,) and graph.partitions == set()
    graph.later(2)
    graph.write(PHONE, "sha-1", size=saved.size)  # the same bytes, back
    graph.later(SETTLE_S + 1)
    back = graph.tick()
    assert builds(back) == [(PHONE, "sha-1")]  # the old build is older than the files
    assert back.generation == removal.generation + 1  # its run key is a new one


def test_an_archive_removed_and_put_back_between_ticks_asks_for_nothing() -> None:
    graph = Graph()
    graph.write(PHONE, "sha-1")
    graph = _settled(graph)
    saved = graph.archives.pop(PHONE)
    graph.archives[PHONE] = saved  # back, as it was, before the next tick
    assert graph.tick().idle


def test_a_restored_graph_rebuilds_every_archive_and_removes_what_is_gone() -> None:
    graph = Graph()
    graph.write(PHONE, "sha-1")
    graph = _settled(graph)
    # a restore swapped in last week's graph: it holds an archive since deleted
    graph.workdir = "1:200"
    graph.held = {PHONE, "old/chat.db"}
    tick = graph.tick()
    assert tick.restored
    assert builds(tick) == [(PHONE, "sha-1")]  # though a build of these bytes was launched
    assert tick.builds[0].revision == 1  # a new run key for the same bytes
    assert tick.removed == ("old/chat.db",)
    graph.built(PHONE)
    assert graph.tick().idle


def _reading(read: list[str], name: str, value: T) -> Callable[..., T]:
    """A loader that notes it was called."""

    def load(*_: object) -> T:
        read.append(name)
        return value

    return load


def test_the_restored_manifest_is_read_only_after_a_restore() -> None:
    graph = Graph()
    graph.write(PHONE, "sha-1")
    graph = _settled(graph)
    read: list[str] = []
    held: LazySet[str] = LazySet(_reading(read, "manifest", ()))
    building: LazyMapping[str, float] = LazyMapping(_reading(read, "in flight", {}))
    scan = {rel: a.look() for rel, a in graph.archives.items()}
    tick = graph_tick(
        graph.cursor,
        scan,
        {},
        frozenset(graph.partitions),
        building,
        _reading(read, "launched", None),
        workdir=graph.workdir,
        held=held,
        settled_before=graph.now - SETTLE_S,
    )
    assert tick.idle and read == []


def test_a_failed_build_is_not_requested_every_tick_until_the_archive_changes() -> None:
    graph = Graph()
    graph.write(PHONE, "sha-1")
    graph.later(SETTLE_S + 1)
    assert builds(graph.tick()) == [(PHONE, "sha-1")]
    graph.build_failed(PHONE)
    for _ in range(3):
        assert graph.tick().idle
    graph.later(1)
    graph.write(PHONE, "sha-2", size=150)
    graph.later(SETTLE_S + 1)
    assert builds(graph.tick()) == [(PHONE, "sha-2")]


def test_a_file_no_source_reads_is_reported_once_and_keeps_the_days() -> None:
    graph = Graph()
    graph.write(PHONE, "sha-1")
    graph = _settled(graph)
    graph.later(1)
    graph.archives[PHONE] = Archive(50, graph.now, reason="imessage: not a Messages database")
    graph.later(SETTLE_S + 1)
    first = graph.tick()
    assert first.idle and first.warnings == (
        f"not building {PHONE} into the message graph: imessage: not a Messages database",
    )
    assert first.cursor.archives[PHONE].sha256 == "sha-1"  # its days stay
    judged = len(graph.judged)
    second = graph.tick()
    assert second.idle and second.warnings == () and len(graph.judged) == judged


def test_the_cursor_round_trips_in_the_sensors_json() -> None:
    text = (
        '{"archives": {"a/chat.db": {"revision": 2, "sha256": "ab", "stat": [[1, 2]], '
        '"waiting": true}, "b/chat.db": {"sha256": "", "stat": []}}, "generation": 4, '
        '"skipped": {"c.txt": {"reason": "no", "stat": [[3, 4]]}}, "workdir": "1:2"}'
    )
    cursor = GraphCursor.loads(text)
    assert cursor.archives["a/chat.db"] == ArchiveEntry(((1, 2),), "ab", True, 2)
    assert cursor.dumps() == text
    assert GraphCursor.loads(None) == GraphCursor()
