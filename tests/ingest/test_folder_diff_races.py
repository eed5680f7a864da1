"""The documents' folder decision (:func:`varagity.folder_diff.docs_tick`) and the folder
watcher's (:func:`~varagity.folder_diff.watcher_launches`) over the races between them,
the upload route, runs in flight and the stores, without Dagster or Postgres.

:class:`Docs` plays the folder, the instance and the stores: each tick reads them as
the folder sensor does, and a launch (the sensor's, the watcher's) shows as a partition
and a run in flight until the test ends the run.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

import pytest

from varagity.folder_diff import (
    RECONCILE_PURGE,
    WATCHER_GRACE_NS,
    DocsCursor,
    DocsTick,
    FileStat,
    InFlight,
    LazyMapping,
    LazySet,
    docs_tick,
    docs_to_hash,
    just_landed,
    watcher_launches,
)
from varagity.records import doc_id_for

T = TypeVar("T")
S = 1_000_000_000  # one second in ns
T0 = 1_700_000_000 * S


def _sha(content: str) -> str:
    return hashlib.sha256(content.encode()).hexdigest()


@dataclass
class Docs:
    """``DOCS_PATH``, the instance's partitions and runs, and the stores."""

    now_ns: int = T0
    files: dict[str, tuple[FileStat, str]] = field(default_factory=dict)
    partitions: list[str] = field(default_factory=list)
    ingesting: set[str] = field(default_factory=set)
    purging: set[str] = field(default_factory=set)
    stored: dict[str, set[str]] = field(default_factory=dict)
    failures: dict[str, str] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    watcher_live: bool = False
    cursor: DocsCursor = field(default_factory=DocsCursor)
    hashed: list[str] = field(default_factory=list)

    # --- the folder
    def write(self, rel: str, content: str, *, mtime_ns: int | None = None) -> None:
        stat = FileStat(mtime_ns or self.now_ns, len(content.encode()), self.now_ns)
        self.files[rel] = (stat, _sha(content))

    def remove(self, rel: str) -> None:
        del self.files[rel]

    def later(self, seconds: float) -> None:
        self.now_ns += int(seconds * S)

    # --- runs
    def launch(self, rel: str) -> None:
        """A launch outside the sensor (the watcher's, an upload's): the partition is
        added, then the run is queued."""
        if rel not in self.partitions:
            self.partitions.append(rel)
        self.ingesting.add(rel)

    def ingested(self, rel: str, content: str | None = None) -> None:
        """An ingest run of ``rel`` ended, having stored ``content`` (the file's
        current bytes unless given)."""
        sha = _sha(content) if content is not None else self.files[rel][1]
        self.stored[rel] = {doc_id_for(rel, sha)}
        self.failures.pop(rel, None)
        self.ingesting.discard(rel)

    def failed(self, rel: str, why: str = "binary named .txt") -> None:
        self.failures[rel] = why
        self.ingesting.discard(rel)

    def purged(self, rel: str) -> None:
        if rel not in self.files:
            self.stored.pop(rel, None)
        self.purging.discard(rel)

    # --- the sensor
    def tick(self, *, retrying: bool = False) -> DocsTick:
        files = {rel: stat for rel, (stat, _) in sorted(self.files.items())}
        since = self.now_ns - WATCHER_GRACE_NS
        live = self.watcher_live and bool(just_landed(self.cursor, files, since_ns=since))
        watcher_since = since if live else None
        todo = docs_to_hash(self.cursor, files, watcher_since_ns=watcher_since)
        self.hashed += todo
        tick = docs_tick(
            self.cursor,
            files,
            dict(self.skipped),
            {rel: self.files[rel][1] for rel in todo},
            list(self.partitions),
            InFlight(frozenset(self.ingesting), frozenset(self.purging)),
            {rel: set(ids) for rel, ids in self.stored.items()},
            dict(self.failures),
            batch_size=10,
            watcher_since_ns=watcher_since,
            retrying=retrying,
        )
        self.partitions += [rel for rel in tick.add_partitions if rel not in self.partitions]
        self.partitions = [rel for rel in self.partitions if rel not in tick.delete_partitions]
        for rel in asked_to_ingest(tick):
            self.ingesting.add(rel)
        for run in tick.purges:
            self.purging.update(run)
        self.cursor = tick.cursor
        return tick


def asked_to_ingest(tick: DocsTick) -> list[str]:
    """Every file the tick asks an ingest run for (new, changed, reconciled)."""
    return sorted(
        [rel for run in tick.new for rel, _ in run]
        + [c.path for c in tick.changed]
        + [rel for group in tick.reconcile for rel in group]
    )


def asked_to_purge(tick: DocsTick) -> list[str]:
    return sorted(rel for run in tick.purges for rel in run)


def _ingested_everything(docs: Docs) -> Docs:
    """``docs`` after its first tick's runs have ended."""
    first = docs.tick()
    for rel in asked_to_ingest(first):
        docs.ingested(rel)
    assert docs.tick().idle
    return docs


# --- the folder watcher and the sensor -----------------------------------------------


def test_a_file_the_watcher_launched_gets_no_second_run_from_the_sensor() -> None:
    """Landed, launched by the watcher, then seen by sensor ticks before its run ended:
    within the grace, after it while the run is in flight, and once the run is done."""
    docs = Docs(watcher_live=True)
    docs.write("kite.md", "The Pemba kite flies in 9 knots.")
    docs.later(0.5)
    assert watcher_launches({"kite.md": docs.files["kite.md"][0]}, {}, now_ns=docs.now_ns) == [
        "kite.md"
    ]
    docs.launch("kite.md")

    docs.later(1)
    within = docs.tick()
    assert asked_to_ingest(within) == [] and within.fresh == {"kite.md"}
    assert "the folder watcher's" in within.summary()
    assert docs.cursor.files["kite.md"] == (0, 0, "")  # kept, unread: its removal counts
    assert docs.hashed == []  # nothing hashed for the watcher's file

    docs.later(20)  # past the grace, the watcher's run still queued
    after = docs.tick()
    assert asked_to_ingest(after) == [] and after.deferred == {"kite.md"}
    docs.ingested("kite.md")
    assert docs.tick().idle  # its version is stored: nothing to ask for
    assert docs.tick().idle


def test_a_partition_a_launch_just_added_waits_a_tick_for_its_run() -> None:
    """The upload route (or the watcher past the sensor's grace) adds the partition, then
    launches: a tick between the two waits, and takes the file if no run comes."""
    docs = Docs()
    docs.write("up.md", "The Orbo lamp runs 19 hours.")
    docs.partitions.append("up.md")  # the launch added it; its run is not there yet
    assert asked_to_ingest(docs.tick()) == []
    again = docs.tick()  # no run came (Dagster refused it): the sensor asks now
    assert [c.path for c in again.changed] == ["up.md"]
    assert docs.tick().idle  # its run is in flight


@pytest.mark.parametrize("age_s", [0, 2, 9.9, 10, 12, 14.9, 15.1, 40])
def test_the_watcher_and_the_sensor_never_both_launch_a_file(age_s: float) -> None:
    """At any age of a landing, the watcher's hand-over and a sensor tick that cross
    (neither sees the other's launch yet) do not both launch it, and one of them does."""
    docs = Docs(watcher_live=True)
    docs.write("kite.md", "The Pemba kite flies in 9 knots.")
    docs.later(age_s)
    watcher = watcher_launches({"kite.md": docs.files["kite.md"][0]}, {}, now_ns=docs.now_ns)
    sensor = asked_to_ingest(docs.tick())
    assert not (watcher and sensor), (watcher, sensor)
    if not watcher:  # the sensor's: taken once the grace is over, not lost
        docs.later(20)
        assert sensor or asked_to_ingest(docs.tick()) == ["kite.md"]


def test_a_file_the_watcher_could_not_launch_is_taken_by_the_sensor_after_the_grace() -> None:
    docs = Docs(watcher_live=True)
    docs.write("kite.md", "The Pemba kite flies in 9 knots.")
    # the watcher's launch failed (Dagster unreachable): no partition, no run
    assert asked_to_ingest(docs.tick()) == []
    docs.later(5)
    assert asked_to_ingest(docs.tick()) == []
    docs.later(11)
    assert asked_to_ingest(docs.tick()) == ["kite.md"]
    assert docs.partitions == ["kite.md"]


def test_the_watcher_leaves_what_an_upload_launched_and_what_is_gone() -> None:
    landed = FileStat(mtime_ns=T0 - 50 * S, size=12, ctime_ns=T0)
    other = FileStat(mtime_ns=T0, size=7, ctime_ns=T0)
    uploaded = {"up.md": (landed.mtime_ns, landed.size)}
    assert watcher_launches(
        {"up.md": landed, "copied.md": other, "gone.md": None}, uploaded, now_ns=T0 + S
    ) == ["copied.md"]
    # written again after the upload: a new version, the watcher's to launch
    rewritten = FileStat(mtime_ns=T0 + S, size=13, ctime_ns=T0 + S)
    assert watcher_launches({"up.md": rewritten}, uploaded, now_ns=T0 + 2 * S) == ["up.md"]


# --- runs in flight ------------------------------------------------------------------


def test_a_file_changed_again_while_its_run_is_in_flight_is_launched_once_after_it() -> None:
    docs = Docs()
    docs.write("notes.md", "version one")
    first = docs.tick()
    assert asked_to_ingest(first) == ["notes.md"]  # its run is in flight now

    docs.later(1)
    docs.write("notes.md", "version two, longer")
    held = docs.tick()
    assert asked_to_ingest(held) == [] and held.deferred == {"notes.md"}
    assert asked_to_ingest(docs.tick()) == []  # still in flight: still nothing asked

    docs.ingested("notes.md", "version one")  # the run read the first version
    after = docs.tick()
    assert [(c.path, c.sha256) for c in after.changed] == [
        ("notes.md", _sha("version two, longer"))
    ]
    assert asked_to_ingest(docs.tick()) == []  # asked once: its run is in flight
    docs.ingested("notes.md")
    assert docs.tick().idle


def test_a_changed_file_whose_new_version_a_run_already_stored_is_not_asked_for() -> None:
    docs = _ingested_everything(Docs())
    docs.write("a.md", "one")
    _ingested_everything(docs)
    docs.later(1)
    docs.write("a.md", "two")
    docs.ingested("a.md")  # the watcher's run stored it before the sensor looked
    assert docs.tick().idle


def test_a_file_removed_while_its_ingest_is_in_flight_is_purged_once_the_run_ends() -> None:
    docs = Docs()
    docs.write("drone.md", "The Velo-9 drone battery lasts 47 minutes.")
    docs.tick()  # its run is in flight
    docs.remove("drone.md")
    waiting = docs.tick()
    assert asked_to_purge(waiting) == [] and waiting.idle
    assert "drone.md" in waiting.cursor.purging
    assert "1 removed file(s) wait for their runs" in waiting.summary()
    assert docs.partitions == ["drone.md"]
    assert docs.tick().idle and "drone.md" in docs.cursor.purging  # nothing forgotten

    docs.ingested("drone.md", "The Velo-9 drone battery lasts 47 minutes.")
    purge = docs.tick()
    assert asked_to_purge(purge) == ["drone.md"]
    assert purge.delete_partitions == ("drone.md",) and docs.partitions == []
    assert purge.cursor.generation == purge.generation + 1 and not purge.cursor.purging


# --- removed and put back ------------------------------------------------------------


def test_a_file_removed_and_put_back_unchanged_between_ticks_asks_for_nothing() -> None:
    docs = Docs()
    docs.write("a.md", "same bytes")
    _ingested_everything(docs)
    stat, sha = docs.files["a.md"]
    docs.remove("a.md")
    docs.files["a.md"] = (stat, sha)  # back before the next tick
    assert docs.tick().idle


def test_a_file_removed_and_put_back_with_new_content_between_ticks_is_ingested() -> None:
    docs = Docs()
    docs.write("a.md", "first")
    _ingested_everything(docs)
    docs.remove("a.md")
    docs.later(1)
    docs.write("a.md", "second, other bytes")
    tick = docs.tick()
    assert [c.path for c in tick.changed] == ["a.md"] and not tick.purges


def test_a_file_put_back_while_its_purge_runs_waits_for_it_and_is_ingested_again() -> None:
    docs = Docs()
    docs.write("drone.md", "battery 47 minutes")
    _ingested_everything(docs)
    stat, sha = docs.files["drone.md"]
    first_keys = docs.cursor.generation

    docs.remove("drone.md")
    purge = docs.tick()
    assert asked_to_purge(purge) == ["drone.md"]  # its purge run is queued now
    docs.files["drone.md"] = (stat, sha)  # the same bytes and mtime, back
    held = docs.tick()
    assert held.idle and docs.partitions == []
    assert any("drone.md is back" in note for note in held.notes)

    docs.purged("drone.md")  # the purge run kept what is back in the folder
    again = docs.tick()
    assert asked_to_ingest(again) == ["drone.md"] and docs.partitions == ["drone.md"]
    assert again.generation == first_keys + 1  # a new run key: not deduplicated


def test_a_file_the_sensor_never_saw_that_went_between_ticks_is_purged() -> None:
    """Landed, launched and indexed by the watcher, gone again, all between two ticks."""
    docs = Docs()
    docs.write("quick.md", "kite line 24 m")
    docs.launch("quick.md")
    docs.ingested("quick.md")
    docs.remove("quick.md")
    tick = docs.tick()
    assert asked_to_purge(tick) == ["quick.md"] and tick.delete_partitions == ("quick.md",)
    assert tick.orphans == frozenset()  # a removal the folder shows, not a reconcile

    # one whose watcher's run failed (nothing stored): its partition goes all the same
    docs.write("bad.md", "unreadable")
    docs.launch("bad.md")
    docs.failed("bad.md")
    docs.remove("bad.md")
    gone = docs.tick()
    assert asked_to_purge(gone) == ["bad.md"] and docs.partitions == []


def test_a_file_gone_before_anything_ingested_it_leaves_nothing_to_purge() -> None:
    docs = Docs(watcher_live=True)
    docs.write("blip.md", "gone at once")
    assert docs.tick().idle  # the watcher's
    docs.remove("blip.md")
    tick = docs.tick()
    assert tick.idle and "blip.md" not in tick.cursor.files


def test_a_file_that_turns_unreadable_keeps_its_version_and_is_reported_once() -> None:
    docs = Docs()
    docs.write("linked.md", "text")
    _ingested_everything(docs)
    docs.remove("linked.md")
    docs.skipped["linked.md"] = "a link that points outside DOCS_PATH"
    tick = docs.tick()
    assert tick.idle and tick.cursor.files["linked.md"] == docs.cursor.files["linked.md"]
    assert tick.warnings == ("not ingesting linked.md: a link that points outside DOCS_PATH",)
    again = docs.tick()
    assert again.idle and again.warnings == ()


# --- the stores moved without the sensor ---------------------------------------------


def test_a_restore_that_swaps_the_stores_is_reconciled_once() -> None:
    docs = Docs()
    docs.write("first.md", "kettle boils in 2 minutes")
    docs.write("quokka.md", "a quokka weighs 3 kg")
    _ingested_everything(docs)
    # last week's bundle: an older first.md, no quokka.md, a recipe since deleted
    docs.stored = {
        "first.md": {doc_id_for("first.md", _sha("kettle boils in 3 minutes"))},
        "recipes/flatbread.md": {doc_id_for("recipes/flatbread.md", _sha("rest 20 min"))},
    }
    tick = docs.tick()
    assert asked_to_ingest(tick) == ["first.md", "quokka.md"]
    assert tick.reconcile == (("first.md", "quokka.md"),)  # contiguous: one run
    assert asked_to_purge(tick) == ["recipes/flatbread.md"]
    assert tick.orphans == {"recipes/flatbread.md"}
    assert tick.delete_partitions == ()  # it never had one here
    assert tick.cursor.reconciling["recipes/flatbread.md"] == RECONCILE_PURGE

    docs.ingesting.clear()  # the runs are queued, not yet run ...
    docs.purging.clear()
    assert docs.tick().idle  # ... asked for once, not on every tick
    for rel in ("first.md", "quokka.md"):
        docs.ingested(rel)
    docs.purged("recipes/flatbread.md")
    settled = docs.tick()
    assert settled.idle and settled.cursor.reconciling == {}


def test_a_hand_edit_of_the_stores_is_asked_for_once_per_version() -> None:
    docs = Docs()
    docs.write("quokka.md", "a quokka weighs 3 kg")
    _ingested_everything(docs)
    del docs.stored["quokka.md"]
    assert asked_to_ingest(docs.tick()) == ["quokka.md"]
    docs.ingesting.clear()  # that run failed without saying why (no failure row)
    assert docs.tick().idle  # not asked again for the same version
    docs.later(1)
    docs.write("quokka.md", "a quokka weighs 2.5 kg")  # a new version is asked for
    assert asked_to_ingest(docs.tick()) == ["quokka.md"]


def test_no_reconcile_while_a_failed_batch_is_re_run() -> None:
    docs = Docs()
    docs.write("a.md", "text")
    _ingested_everything(docs)
    del docs.stored["a.md"]
    assert docs.tick(retrying=True).reconcile == ()
    assert asked_to_ingest(docs.tick()) == ["a.md"]


def test_a_file_whose_run_is_in_flight_is_not_reconciled() -> None:
    docs = Docs()
    docs.write("a.md", "text")
    _ingested_everything(docs)
    del docs.stored["a.md"]
    docs.ingesting.add("a.md")  # e.g. a reingest backfill
    assert docs.tick().idle


# --- failures ------------------------------------------------------------------------


def test_a_failed_ingest_is_not_asked_for_every_tick_until_the_file_changes() -> None:
    docs = Docs()
    docs.write("broken.txt", "\x00\x01 binary")
    assert asked_to_ingest(docs.tick()) == ["broken.txt"]
    docs.failed("broken.txt")
    for _ in range(3):
        assert docs.tick().idle
    docs.later(1)
    docs.write("broken.txt", "Now plain text about harbour cranes.")
    fixed = docs.tick()
    assert [c.path for c in fixed.changed] == ["broken.txt"]
    docs.ingested("broken.txt")
    assert docs.tick().idle


# --- the cursor and the lazy facts ---------------------------------------------------


def test_the_cursor_round_trips_in_the_sensors_json() -> None:
    text = (
        '{"failed_batches": ["r1"], "files": {"a.md": [1, 2, "ab"]}, "generation": 3, '
        '"purging": {"b.md": [4, 5, "cd"]}, "reconciling": {"c.md": "purge"}, '
        '"skipped": {"x.bin": "unsupported"}}'
    )
    cursor = DocsCursor.loads(text)
    assert cursor.seen() == {"a.md": (1, 2, "ab"), "b.md": (4, 5, "cd")}
    assert DocsCursor.loads(cursor.dumps()) == cursor
    assert cursor.dumps() == text
    assert DocsCursor.loads(None) == DocsCursor()


def _reading(read: list[str], name: str, value: T) -> Callable[..., T]:
    """A loader that notes it was called."""

    def load(*_: object) -> T:
        read.append(name)
        return value

    return load


def test_an_idle_tick_reads_no_run_and_no_failure() -> None:
    """The facts only some ticks need are read only when the decision looks into them."""
    docs = Docs()
    docs.write("a.md", "text")
    _ingested_everything(docs)
    read: list[str] = []

    def loader(name: str) -> LazySet[str]:
        return LazySet(_reading(read, name, ()))

    tick = docs_tick(
        docs.cursor,
        {rel: stat for rel, (stat, _) in docs.files.items()},
        {},
        {},
        list(docs.partitions),
        InFlight(loader("ingesting"), loader("purging")),
        docs.stored,
        LazyMapping(_reading(read, "failures", {})),
        batch_size=10,
    )
    assert tick.idle and read == []
