"""What a corpus folder asks of the pipeline: the one decision both folder sensors and
the API's folder watcher take, as pure functions of what they read.

A folder sensor tick reads its cursor (what it saw before), the folder (a scan; the
files it must hash or judge, it hashes and judges first), Dagster's partitions and the
runs in flight (whoever launched them: the folder watcher, an upload, the sensor, the
UI) and what the stores hold; it calls :func:`docs_tick` (``DOCS_PATH``) or
:func:`graph_tick` (``GRAPH_DOCS_PATH``) with those values and turns the answer into
run requests, partition changes and its next cursor. The watcher calls
:func:`watcher_launches` for the files it was told of. Nothing here reads a file, a
store or Dagster, so every race between them is a unit test.

Two facts only some ticks need (the runs in flight, the failures recorded) are passed
as :class:`LazySet` / :class:`LazyMapping`, read from their source the first time the
decision looks into them: an idle tick asks Dagster and Postgres no more than before.

:class:`FolderDiff` is the stores' side: the folder against what a store holds of it,
which a restore, a crash between a cursor and a store's commit or a hand edit can move
without any sensor seeing it, for the documents (:func:`diff_versions`, and
:func:`varagity.ingest.reconcile.diff_folder`) and for the message graph
(:func:`varagity.graph.folder.graph_diff`).

**The documents** (:func:`docs_tick`): a file whose mtime and size are the cursor's is
not hashed again. New files get a partition and runs in batches
(:func:`~varagity.pipeline.ingest_batches`); a changed file one run, unless a run on it
is in flight (looked at again once it has ended: it usually indexed the file) or the
sensor has never seen it though its partition exists (the upload route and the watcher
add the partition just before they launch the run: looked at again next tick); a file
whose exact version is stored is not asked for. A removed file is purged, after the
ingest run on it ends if one is in flight (it could write it back); a file put back
while its purge run is in flight waits for that run. Every tick also diffs the folder
against the stores: what is there but not stored is ingested again and what is stored
but gone is purged (runs tagged ``varagity/reconcile``), each version once
(``reconciling``); a file whose last ingest failed is not asked for again until it
changes. While the folder watcher is live, a file that landed less than
:data:`WATCHER_GRACE_NS` ago is the watcher's: the sensor keeps it in its cursor,
unhashed, and takes it once the grace is over, while the watcher launches only what
landed less than :data:`WATCHER_LAUNCH_NS` ago, so the two never both launch a file.

**The message graph** (:func:`graph_tick`): an archive (a database with its ``-wal``,
``-shm`` and the contacts files that name its handles) whose stat signature moved is
judged again once it has been left alone for a while (an upload stores and then
launches; a copy may still be under way); one that no message source reads is reported
once and keeps its days; a new or changed one is built, unless a build of exactly its
bytes was launched since it last changed, or a build of it in flight reads it as it is
now (one that began before the change leaves it ``waiting`` for a build after it), or
its partition exists though this cursor never saw it (an upload is launching). A
removed archive's days are taken out. When the graph's working directory is another
folder than the cursor's (a restore swapped one in), every archive is built again and
the archives the restored graph holds that are gone are removed.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence, Set
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any, Literal, NamedTuple, TypeVar

from varagity.pipeline import contiguous_groups, ingest_batches
from varagity.records import doc_id_for

_SHOWN = 5

K = TypeVar("K")
V = TypeVar("V")
T = TypeVar("T")


# --- the stores' side ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class FolderDiff:
    """Where the stores and ``DOCS_PATH`` disagree."""

    to_ingest: tuple[str, ...] = ()
    """Files whose current version is not stored (new, changed, or lost by the stores)."""
    to_purge: tuple[str, ...] = ()
    """Paths the stores hold documents of whose files are gone from the folder."""
    failed: Mapping[str, str] = field(default_factory=dict)
    """Files not stored whose last ingest failed: path -> why (not asked for again)."""
    verbs: tuple[str, str] = ("ingest", "purge")
    """What taking a file in and letting one go are called (a graph builds and removes)."""

    @property
    def clean(self) -> bool:
        """Whether nothing is to be ingested or purged."""
        return not self.to_ingest and not self.to_purge

    def counts(self) -> dict[str, int]:
        """``{"to_ingest": n, "to_purge": n, "failed": n}``."""
        return {
            "to_ingest": len(self.to_ingest),
            "to_purge": len(self.to_purge),
            "failed": len(self.failed),
        }

    def summary(self) -> str:
        """One line for a log or a terminal."""
        ingest, purge = self.verbs
        if self.clean and not self.failed:
            return "the stores hold exactly the folder's files"
        parts = [
            f"{len(self.to_ingest)} file(s) to {ingest}{_few(self.to_ingest)}",
            f"{len(self.to_purge)} removed file(s) to {purge}{_few(self.to_purge)}",
        ]
        if self.failed:
            parts.append(
                f"{len(self.failed)} file(s) left as they are: they failed{_few(self.failed)}"
            )
        return ", ".join(parts)


def _few(paths: Iterable[str]) -> str:
    items = sorted(paths)
    if not items:
        return ""
    more = f" +{len(items) - _SHOWN} more" if len(items) > _SHOWN else ""
    return " (" + ", ".join(items[:_SHOWN]) + more + ")"


def diff_versions(
    current: Mapping[str, str],
    stored: Mapping[str, Set[str]],
    failures: Mapping[str, str],
    *,
    present: Set[str] = frozenset(),
) -> FolderDiff:
    """The diff of the folder's files against the stores.

    Args:
        current: Relative path -> ``doc_id`` of the file's current bytes.
        stored: Relative path -> the ``doc_id`` of every version the stores hold.
        failures: Relative path -> why its last ingest failed (looked into only for a
            file whose current version is not stored).
        present: Paths that are in the folder but not read now (skipped: unreadable, a
            link turned outside): their stored versions are kept, never purged.
    """
    to_ingest, failed = [], {}
    for rel, doc_id in sorted(current.items()):
        if doc_id in stored.get(rel, ()):
            continue
        if rel in failures:
            failed[rel] = failures[rel]
        else:
            to_ingest.append(rel)
    to_purge = sorted(rel for rel in stored if rel not in current and rel not in present)
    return FolderDiff(tuple(to_ingest), tuple(to_purge), failed)


# --- facts read only when looked into -----------------------------------------------


class LazySet(Set[T]):
    """A set read from ``load`` the first time it is looked into (then kept)."""

    def __init__(self, load: Callable[[], Iterable[T]]) -> None:
        self._load = load

    @cached_property
    def _items(self) -> frozenset[T]:
        return frozenset(self._load())

    @classmethod
    def _from_iterable(cls, it: Iterable[Any]) -> frozenset[Any]:  # what & and | return
        return frozenset(it)

    def __contains__(self, item: object) -> bool:
        return item in self._items

    def __iter__(self) -> Iterator[T]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)


class LazyMapping(Mapping[K, V]):
    """A mapping read from ``load`` the first time it is looked into (then kept)."""

    def __init__(self, load: Callable[[], Mapping[K, V]]) -> None:
        self._load = load

    @cached_property
    def _items(self) -> dict[K, V]:
        return dict(self._load())

    def __getitem__(self, key: K) -> V:
        return self._items[key]

    def __iter__(self) -> Iterator[K]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)


# --- the documents: DOCS_PATH ---------------------------------------------------------

#: While the API's folder watcher is live, the folder sensor leaves a file that landed
#: (its ctime) less than this long ago to it, and takes it as any other afterwards (a
#: file the watcher did not launch, Dagster unreachable or a backup running, waits that
#: long): the watcher launches within a second or two of a landing.
WATCHER_GRACE_NS = 15 * 1_000_000_000
#: The folder watcher launches a file only if it landed less than this long ago; an
#: older one is the sensor's. The margin under :data:`WATCHER_GRACE_NS` covers a launch
#: under way (a burst's partitions are added before its runs exist) and the clocks of
#: two processes, so that a file is never launched by both.
WATCHER_LAUNCH_NS = 10 * 1_000_000_000

FileVersion = tuple[int, int, str]
"""What the folder sensor's cursor keeps of a file: ``(mtime_ns, size, sha256)``."""
UNREAD: FileVersion = (0, 0, "")
"""A file seen but not read (the watcher's, or deferred): hashed on a later tick."""

#: The ``reconciling`` mark of a path whose stored documents are being purged (a path
#: being ingested again is marked with the ``doc_id`` asked for).
RECONCILE_PURGE = "purge"


class FileStat(NamedTuple):
    """A file of the folder as a scan found it."""

    mtime_ns: int
    size: int
    #: when it last changed in the folder (written, renamed in): an upload or a copy may
    #: keep an old ``mtime_ns``, never an old ``ctime_ns``
    ctime_ns: int = 0


@dataclass(frozen=True)
class DocsCursor:
    """The folder sensor's cursor: what it has seen of ``DOCS_PATH``."""

    files: Mapping[str, FileVersion] = field(default_factory=dict)
    """Every file there, as last read (:data:`UNREAD` for one not read yet)."""
    purging: Mapping[str, FileVersion] = field(default_factory=dict)
    """Removed files whose purge waits for the ingest run on them to end."""
    skipped: Mapping[str, str] = field(default_factory=dict)
    """Files not ingested (unsupported, a link out of the folder): path -> why, said once."""
    generation: int = 0
    """Counted up with every purge: a new file's run key carries it, so a file removed
    and put back is ingested again."""
    reconciling: Mapping[str, str] = field(default_factory=dict)
    """What the store diff asked for, so each version is asked for once: path -> the
    ``doc_id`` ingested again, or :data:`RECONCILE_PURGE`."""
    failed_batches: tuple[str, ...] = ()
    """Failed batch runs whose files were re-run (the sensor's own bookkeeping)."""

    @classmethod
    def loads(cls, text: str | None) -> DocsCursor:
        state: dict[str, Any] = json.loads(text) if text else {}
        return cls(
            files={rel: _file_version(v) for rel, v in state.get("files", {}).items()},
            purging={rel: _file_version(v) for rel, v in state.get("purging", {}).items()},
            skipped=dict(state.get("skipped", {})),
            generation=state.get("generation", 0),
            reconciling=dict(state.get("reconciling", {})),
            failed_batches=tuple(state.get("failed_batches", [])),
        )

    def dumps(self) -> str:
        return json.dumps(
            {
                "files": {rel: list(v) for rel, v in self.files.items()},
                "purging": {rel: list(v) for rel, v in self.purging.items()},
                "skipped": dict(self.skipped),
                "failed_batches": list(self.failed_batches),
                "generation": self.generation,
                "reconciling": dict(self.reconciling),
            },
            sort_keys=True,
        )

    def seen(self) -> dict[str, FileVersion]:
        """Every file the cursor knows, those waiting to be purged included."""
        return {**self.purging, **self.files}


def _file_version(value: Sequence[Any]) -> FileVersion:
    return (int(value[0]), int(value[1]), str(value[2]))


@dataclass(frozen=True)
class InFlight:
    """The documents' runs queued or under way, whoever launched them."""

    ingesting: Set[str] = frozenset()
    """Paths an ingest run covers (the watcher's, an upload's, the sensor's, the UI's)."""
    purging: Set[str] = frozenset()
    """Paths a purge run is for."""


class ChangedFile(NamedTuple):
    """A changed file asked for again: one run, keyed by path, content and mtime."""

    path: str
    sha256: str
    mtime_ns: int


@dataclass(frozen=True)
class DocsTick:
    """What a folder sensor tick asks for, and its next cursor."""

    cursor: DocsCursor
    generation: int
    """The generation this tick's run keys carry (the cursor's is counted up past it
    when the tick purges)."""
    new: tuple[tuple[tuple[str, str], ...], ...] = ()
    """New files, ``(path, sha256)``, cut into ingest runs (each over a contiguous range
    of the partitions added this tick, in order)."""
    changed: tuple[ChangedFile, ...] = ()
    """Changed files, one ingest run each."""
    reconcile: tuple[tuple[str, ...], ...] = ()
    """Files whose current version the stores lack, in runs of contiguous partitions."""
    purges: tuple[tuple[str, ...], ...] = ()
    """Removed files, in purge runs."""
    orphans: frozenset[str] = frozenset()
    """Of those, the files found gone in the stores only (their runs are reconciles)."""
    add_partitions: tuple[str, ...] = ()
    delete_partitions: tuple[str, ...] = ()
    deferred: frozenset[str] = frozenset()
    """Changed files looked at again on a later tick (a run on them is in flight, or
    their partition was added by a launch this cursor has not seen)."""
    fresh: frozenset[str] = frozenset()
    """Files that just landed, left to the live folder watcher."""
    notes: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()

    @property
    def idle(self) -> bool:
        """Whether the tick asks for no run and no partition change."""
        return not (
            self.new
            or self.changed
            or self.reconcile
            or self.purges
            or self.add_partitions
            or self.delete_partitions
        )

    def summary(self) -> str:
        """Why an idle tick asks for nothing."""
        waiting = len(self.cursor.purging)
        return (
            f"{len(self.cursor.files)} file(s), nothing changed"
            + (f"; {waiting} removed file(s) wait for their runs" if waiting else "")
            + (
                f"; {len(self.fresh)} file(s) that just landed are the folder watcher's"
                if self.fresh
                else ""
            )
        )


def _moved(before: FileVersion | None, stat: FileStat) -> bool:
    return before is None or before[0] != stat.mtime_ns or before[1] != stat.size


def _watchers(stat: FileStat, watcher_since_ns: int | None) -> bool:
    return watcher_since_ns is not None and stat.ctime_ns > watcher_since_ns


def just_landed(previous: DocsCursor, files: Mapping[str, FileStat], *, since_ns: int) -> list[str]:
    """The files that moved since the cursor and landed after ``since_ns``: those a live
    folder watcher would be launching (the sensor asks whether one is live only then)."""
    seen = previous.seen()
    return [
        rel
        for rel, stat in files.items()
        if _moved(seen.get(rel), stat) and stat.ctime_ns > since_ns
    ]


def docs_to_hash(
    previous: DocsCursor, files: Mapping[str, FileStat], *, watcher_since_ns: int | None
) -> list[str]:
    """The files a tick must hash before :func:`docs_tick`: those whose mtime or size
    moved since the cursor, but for the live watcher's (landed after
    ``watcher_since_ns``)."""
    seen = previous.seen()
    return [
        rel
        for rel, stat in files.items()
        if _moved(seen.get(rel), stat) and not _watchers(stat, watcher_since_ns)
    ]


def docs_tick(
    previous: DocsCursor,
    files: Mapping[str, FileStat],
    skipped: Mapping[str, str],
    digests: Mapping[str, str],
    partitions: Sequence[str],
    in_flight: InFlight,
    stored: Mapping[str, Set[str]],
    failures: Mapping[str, str],
    *,
    batch_size: int,
    batch_bytes: int | None = None,
    watcher_since_ns: int | None = None,
    retrying: bool = False,
) -> DocsTick:
    """One folder sensor tick over ``DOCS_PATH``.

    Args:
        previous: The cursor of the tick before.
        files: Every file the scan found to ingest, by relative path, in scan order.
        skipped: The files it will not ingest: path -> why.
        digests: The sha256 of the files :func:`docs_to_hash` named; one missing could
            not be read (the next tick decides).
        partitions: The paths with a ``documents`` partition, in the partition set's order.
        in_flight: The runs queued or under way.
        stored: Path -> the ``doc_id`` of every version the stores hold.
        failures: Path -> why its last ingest failed.
        batch_size: ``INGEST_BATCH_SIZE``: files per run (and per purge run).
        batch_bytes: ``INGEST_BATCH_BYTES``: bytes of file per run of new files.
        watcher_since_ns: While the folder watcher is live: a file that landed after
            this (ns since the epoch) is its to launch. ``None``: there is none.
        retrying: A failed batch's files are re-run this tick: no reconcile runs yet.
    """
    seen = previous.seen()
    notes: list[str] = []
    warnings = [
        f"not ingesting {rel}: {reason}"
        for rel, reason in skipped.items()
        if previous.skipped.get(rel) != reason  # said once, not every tick
    ]

    current: dict[str, FileVersion] = {}
    candidates: list[ChangedFile] = []  # read this tick, with content the cursor lacks
    fresh: set[str] = set()
    for rel, stat in files.items():
        before = seen.get(rel)
        if not _moved(before, stat):
            assert before is not None
            digest = before[2]
        elif _watchers(stat, watcher_since_ns):
            # the watcher's: kept in the cursor (unread if new), so its removal is
            # still a removal
            current[rel] = before or UNREAD
            fresh.add(rel)
            continue
        elif rel in digests:
            digest = digests[rel]
        else:  # could not be read: the next tick decides
            if before:
                current[rel] = before
            continue
        current[rel] = (stat.mtime_ns, stat.size, digest)
        if before is None or before[2] != digest:
            candidates.append(ChangedFile(rel, digest, stat.mtime_ns))
    # a file that is there but now skipped (unreadable, link turned outside) keeps its
    # indexed version: only a file gone from the folder is purged
    for rel in skipped:
        if rel in seen and rel not in current:
            current[rel] = seen[rel]
    existing = set(partitions)
    # Removed: a file the cursor had read that is gone, and a file with a partition that
    # is gone though this cursor never read it (the watcher or an upload launched its
    # run and it went again between two ticks). A file seen only while it was the
    # watcher's that is gone without a partition was never ingested: nothing to purge.
    there = current.keys() | skipped.keys()
    gone = {rel for rel in seen.keys() - there if seen[rel][2]} | {
        rel for rel in existing if rel not in there
    }

    # The stores' side (what the cursor cannot see: a restore, a crash between the
    # cursor and a store, a hand edit of the database). A file whose digest is not known
    # this tick (just landed, deferred, unreadable) counts as present, neither missing
    # nor gone. Each fix is asked for once per version (``reconciling``).
    known = {rel: doc_id_for(rel, v[2]) for rel, v in current.items() if v[2]}
    unknown = (there - current.keys()) | {rel for rel, v in current.items() if not v[2]}
    stores = diff_versions(known, stored, failures, present=unknown)
    reconciling = previous.reconciling
    orphans = [
        rel
        for rel in stores.to_purge
        if rel not in gone and reconciling.get(rel) != RECONCILE_PURGE
    ]
    if orphans:
        orphans = [rel for rel in orphans if rel not in in_flight.purging]
    if orphans:
        notes.append(
            f"the stores hold {len(orphans)} file(s) that are gone from the folder: "
            f"{', '.join(orphans)}; purging them"
        )
    removed = sorted(gone | set(orphans))
    # a removed file an ingest run still works on is purged once that run ends (a blurb
    # run cannot write a purged document back: it re-checks the document before every
    # write, so it does not hold a purge back)
    waiting = {rel: seen.get(rel, UNREAD) for rel in removed if rel in in_flight.ingesting}
    for rel in waiting.keys() - previous.purging.keys():
        notes.append(f"{rel} was removed; it is purged once the ingest run on it ends")
    purge_now = [rel for rel in removed if rel not in waiting]

    # every file gets a partition; files new to the instance are ingested in batches
    new_items = [
        (rel, version[2])
        for rel, version in current.items()
        if rel not in existing and rel not in fresh
    ]
    if new_items:  # a file put back while its purge run is in flight waits for that run
        back = [rel for rel, _ in new_items if rel in in_flight.purging]
        notes += [f"{rel} is back; it is ingested once its purge run has ended" for rel in back]
        new_items = [(rel, sha) for rel, sha in new_items if rel not in back]
    # a changed file whose new version is stored already (the upload's or the watcher's
    # run, or a restore) is not asked for again
    unstored = {*stores.to_ingest, *stores.failed}
    changed = [c for c in candidates if c.path in existing and c.path in unstored]
    deferred: set[str] = set()
    if changed:
        # A file a run already works on (the watcher and the upload route launch one
        # right away) is looked at again once that run has ended: asked for now, it
        # would run twice. A file this cursor has never seen whose partition exists is
        # looked at again next tick: a launch adds the partition just before the run.
        deferred = {c.path for c in changed if c.path in in_flight.ingesting or c.path not in seen}
        for rel in deferred:
            current[rel] = seen.get(rel) or UNREAD  # unread: the next tick reads it again
        changed = [c for c in changed if c.path not in deferred]

    # files the stores lack a current version of, that nothing this tick asks for
    requested = {rel for rel, _ in new_items} | {c.path for c in changed} | deferred
    missing: dict[str, str] = {}
    for rel in stores.to_ingest:
        doc_id = doc_id_for(rel, current[rel][2])
        if (
            rel not in fresh
            and rel in existing
            and rel not in requested
            and reconciling.get(rel) != doc_id
        ):
            missing[rel] = doc_id
    if retrying:  # a failed batch's files are re-run first
        missing = {}
    elif missing:
        missing = {rel: d for rel, d in missing.items() if rel not in in_flight.ingesting}
    position = {rel: i for i, rel in enumerate(partitions)}
    reconcile = contiguous_groups(sorted(missing, key=position.__getitem__), position, batch_size)
    if missing:
        notes.append(
            f"the stores lack the current version of {len(missing)} file(s): "
            f"{', '.join(sorted(missing))}; ingesting them"
        )
    kept = {
        rel: mark
        for rel, mark in reconciling.items()
        if (mark == RECONCILE_PURGE and rel in stores.to_purge)
        or (mark != RECONCILE_PURGE and rel in stores.to_ingest)
    }

    new = ingest_batches(
        new_items,
        batch_size,
        weight=lambda item: current[item[0]][1],
        max_weight=batch_bytes,
    )
    purges = [purge_now[i : i + batch_size] for i in range(0, len(purge_now), batch_size)]
    if purge_now:
        notes.append(f"removed from the folder, to purge: {', '.join(purge_now)}")
    if new_items or changed:
        notes.append(
            f"requesting ingest of {len(new_items)} new and {len(changed)} changed file(s)"
        )
    cursor = DocsCursor(
        files=current,
        purging=waiting,
        skipped=dict(skipped),
        generation=previous.generation + (1 if purge_now else 0),
        reconciling={**kept, **missing, **dict.fromkeys(orphans, RECONCILE_PURGE)},
        failed_batches=previous.failed_batches,
    )
    return DocsTick(
        cursor=cursor,
        generation=previous.generation,
        new=tuple(tuple(run) for run in new),
        changed=tuple(changed),
        reconcile=tuple(tuple(group) for group in reconcile),
        purges=tuple(tuple(run) for run in purges),
        orphans=frozenset(orphans),
        add_partitions=tuple(rel for rel, _ in new_items),
        delete_partitions=tuple(rel for rel in purge_now if rel in existing),
        deferred=frozenset(deferred),
        fresh=frozenset(fresh),
        notes=tuple(notes),
        warnings=tuple(warnings),
    )


def watcher_launches(
    landed: Mapping[str, FileStat | None],
    launched: Mapping[str, tuple[int, int]],
    *,
    now_ns: int,
    launch_ns: int = WATCHER_LAUNCH_NS,
) -> list[str]:
    """The files the folder watcher launches of those it was told landed.

    Args:
        landed: Path -> the file as it is now (``None``: gone again, nothing to ingest;
            a removal is the sensor's).
        launched: Path -> ``(mtime_ns, size)`` of the version an upload launched: that
            version is not launched a second time.
        now_ns: The time now (ns since the epoch).
        launch_ns: A file that landed (its ctime) this long ago or longer is the folder
            sensor's, which takes it once :data:`WATCHER_GRACE_NS` is over.
    """
    return [
        rel
        for rel, stat in landed.items()
        if stat is not None
        and launched.get(rel) != (stat.mtime_ns, stat.size)
        and now_ns - stat.ctime_ns < launch_ns
    ]


# --- the message graph: GRAPH_DOCS_PATH ---------------------------------------------

#: A build run must have been created, or must have started, this long after an
#: archive's last change to count as reading it (a run worker's clock against the file
#: system's).
CLOCK_MARGIN_S = 1.0

StatSignature = tuple[tuple[int, int], ...]
"""``(size, mtime_ns)`` of every file an archive is read from."""


def _signature(value: Iterable[Sequence[int]]) -> StatSignature:
    return tuple((int(size), int(mtime)) for size, mtime in value)


@dataclass(frozen=True)
class ArchiveEntry:
    """What the graph-sources sensor's cursor keeps of an archive."""

    stat: StatSignature
    sha256: str
    """Of its content (``""``: not read yet)."""
    waiting: bool = False
    """Changed under a build that read it before: built once that build has ended."""
    revision: int = 0
    """Counted up with every change of its content: a run key carries it, so content it
    had before is built again."""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"stat": [list(s) for s in self.stat], "sha256": self.sha256}
        if self.waiting:
            out["waiting"] = True
        if self.revision:
            out["revision"] = self.revision
        return out

    @classmethod
    def from_json(cls, value: Mapping[str, Any]) -> ArchiveEntry:
        return cls(
            stat=_signature(value.get("stat", [])),
            sha256=value.get("sha256", ""),
            waiting=bool(value.get("waiting", False)),
            revision=value.get("revision", 0),
        )


UNREAD_ARCHIVE = ArchiveEntry((), "")
"""An archive seen but not read: judged on a later tick."""


class Rejected(NamedTuple):
    """A candidate no message source reads, as last judged."""

    stat: StatSignature
    reason: str


@dataclass(frozen=True)
class GraphCursor:
    """The graph-sources sensor's cursor."""

    archives: Mapping[str, ArchiveEntry] = field(default_factory=dict)
    skipped: Mapping[str, Rejected] = field(default_factory=dict)
    """Candidates no message source reads (each reported once)."""
    generation: int = 0
    """Counted up with every removal: run keys carry it, so an archive removed and put
    back is built again."""
    workdir: str | None = None
    """Which folder was the graph's working directory (a restore swaps another in)."""

    @classmethod
    def loads(cls, text: str | None) -> GraphCursor:
        state: dict[str, Any] = json.loads(text) if text else {}
        return cls(
            archives={
                rel: ArchiveEntry.from_json(v) for rel, v in state.get("archives", {}).items()
            },
            skipped={
                rel: Rejected(_signature(v.get("stat", [])), v.get("reason", ""))
                for rel, v in state.get("skipped", {}).items()
            },
            generation=state.get("generation", 0),
            workdir=state.get("workdir"),
        )

    def dumps(self) -> str:
        return json.dumps(
            {
                "archives": {rel: e.to_json() for rel, e in self.archives.items()},
                "skipped": {
                    rel: {"stat": [list(s) for s in r.stat], "reason": r.reason}
                    for rel, r in self.skipped.items()
                },
                "generation": self.generation,
                "workdir": self.workdir,
            },
            sort_keys=True,
        )

    def swapped(self, workdir: str | None) -> bool:
        """Whether ``workdir`` is another folder than the one this cursor saw (a restore)."""
        return None not in (workdir, self.workdir) and workdir != self.workdir

    def seen(self, workdir: str | None) -> dict[str, ArchiveEntry]:
        """The archives as a tick with the graph in ``workdir`` takes them: after a
        restore every one is read and built again (its content counted as new)."""
        if not self.swapped(workdir):
            return dict(self.archives)
        return {
            rel: ArchiveEntry((), "", revision=entry.revision + 1)
            for rel, entry in self.archives.items()
        }


class ArchiveLook(NamedTuple):
    """A candidate archive as a scan found it."""

    stat: StatSignature | None
    """``None``: a file of it could not be stat'ed this tick (the next tick decides)."""
    changed_at: float
    """The newest ctime of its files and contacts files (``inf``: one cannot be read)."""


class Judgment(NamedTuple):
    """What reading a candidate found: its content hash, or why no source reads it;
    neither: it could not be read."""

    sha256: str | None = None
    reason: str | None = None


class ArchiveBuild(NamedTuple):
    """A build the tick asks for."""

    path: str
    sha256: str
    revision: int


@dataclass(frozen=True)
class GraphTick:
    """What a graph-sources sensor tick asks for, and its next cursor."""

    cursor: GraphCursor
    generation: int
    """The generation this tick's run keys carry."""
    builds: tuple[ArchiveBuild, ...] = ()
    removed: tuple[str, ...] = ()
    """Archives whose days one removal run takes out."""
    add_partitions: tuple[str, ...] = ()
    delete_partitions: tuple[str, ...] = ()
    restored: bool = False
    """The graph's working directory was swapped (a restore): every archive is rebuilt."""
    notes: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()

    @property
    def idle(self) -> bool:
        return not (self.builds or self.removed or self.add_partitions or self.delete_partitions)

    def summary(self) -> str:
        skipped = len(self.cursor.skipped)
        return f"{len(self.cursor.archives)} archive(s), nothing changed" + (
            f"; {skipped} file(s) not supported" if skipped else ""
        )


def _look(
    rel: str,
    before: ArchiveEntry | None,
    look: ArchiveLook,
    reported: Mapping[str, Rejected],
    settled_before: float,
) -> Literal["unreadable", "same", "unsettled", "reported", "judge"]:
    """What a tick does with a candidate before reading it."""
    if look.stat is None:
        return "unreadable"
    if before is not None and before.stat == look.stat:
        return "same"
    if look.changed_at > settled_before:  # just landed: a later tick judges it
        return "unsettled"
    if rel in reported and reported[rel].stat == look.stat:  # judged already: not one
        return "reported"
    return "judge"


def graph_to_judge(
    previous: GraphCursor,
    scan: Mapping[str, ArchiveLook],
    *,
    workdir: str | None,
    settled_before: float,
) -> list[str]:
    """The candidates a tick must judge (is it an archive, and its content hash) before
    :func:`graph_tick`: those whose stat signature moved, once they have been left
    alone since ``settled_before``, and not judged unsupported as they are."""
    seen = previous.seen(workdir)
    return [
        rel
        for rel, look in scan.items()
        if _look(rel, seen.get(rel), look, previous.skipped, settled_before) == "judge"
    ]


def graph_tick(
    previous: GraphCursor,
    scan: Mapping[str, ArchiveLook],
    judged: Mapping[str, Judgment],
    partitions: Set[str],
    building: Mapping[str, float],
    launched: Callable[[str, str], float | None],
    *,
    workdir: str | None,
    held: Set[str],
    settled_before: float,
    clock_margin_s: float = CLOCK_MARGIN_S,
) -> GraphTick:
    """One graph-sources sensor tick over ``GRAPH_DOCS_PATH``.

    Args:
        previous: The cursor of the tick before.
        scan: Every candidate archive, by relative path.
        judged: What reading the candidates :func:`graph_to_judge` named found.
        partitions: The paths with a ``graph_sources`` partition.
        building: Path -> the latest moment a build run of it in flight reads the
            archive from (``inf``: not started yet, it reads it as it will be).
        launched: ``(path, sha256)`` -> when the newest build of exactly these bytes
            that has not failed or been canceled was launched (epoch s), else ``None``;
            asked only of archives the tick would build.
        workdir: Which folder the graph's working directory is now (``None``: none).
        held: The archives the graph's build manifest holds days of (looked into only
            after a restore).
        settled_before: An archive changed after this (epoch s) is judged later.
        clock_margin_s: See :data:`CLOCK_MARGIN_S`.
    """
    restored = previous.swapped(workdir)
    seen = previous.seen(workdir)
    forced = set(seen) if restored else set()
    orphans = sorted(rel for rel in held if rel not in scan and rel not in seen) if restored else []
    notes: list[str] = []
    warnings: list[str] = []

    archives: dict[str, ArchiveEntry] = {}
    skipped: dict[str, Rejected] = {}
    changed: list[str] = []
    for rel, look in scan.items():
        before = seen.get(rel)
        kind = _look(rel, before, look, previous.skipped, settled_before)
        if kind != "judge":
            if kind == "reported":
                skipped[rel] = previous.skipped[rel]
            if before is not None:  # kept as it was (unreadable now: the next tick decides)
                archives[rel] = before
            continue
        judgment = judged.get(rel, Judgment())
        if judgment.reason is not None:
            reported = previous.skipped.get(rel)
            if reported is None or reported.reason != judgment.reason:  # say it once
                warnings.append(f"not building {rel} into the message graph: {judgment.reason}")
            skipped[rel] = Rejected(look.stat or (), judgment.reason)
            if before is not None:  # there, but not readable now: its days stay
                archives[rel] = before
            continue
        digest = judgment.sha256
        if digest is None:  # could not be read (the sensor said why): next tick decides
            if before is not None:
                archives[rel] = before
            continue
        revision = before.revision if before is not None else 0
        if before is not None and before.sha256 not in ("", digest):
            revision += 1  # its content may be one it had before (a contacts file removed)
        archives[rel] = ArchiveEntry(
            look.stat or (),
            digest,
            waiting=before is not None and before.waiting,  # still owed a build
            revision=revision,
        )
        if before is None or before.sha256 != digest:
            changed.append(rel)

    new = sorted(rel for rel in archives if rel not in partitions)
    waiting = {rel for rel, entry in archives.items() if entry.waiting}
    to_build = sorted(set(changed) | set(new) | waiting)
    # a build of exactly these bytes launched since they last changed (an upload, the
    # build routes) builds them: no second one (after a restore every archive is built)
    for rel in [r for r in to_build if archives[r].sha256 and r not in forced]:
        at = launched(rel, archives[rel].sha256)
        if at is not None and at >= scan[rel].changed_at - clock_margin_s:
            to_build.remove(rel)
            archives[rel] = replace(archives[rel], waiting=False)
            notes.append(f"{rel}: a build of these bytes was launched already")
    # a build in flight without that tag (the UI launched it): one yet to start, or
    # that started after the archive last changed, reads it as it is now; one that
    # started before may have read the older bytes, so a build waits until it ends
    busy: Mapping[str, float] = building if to_build else {}
    for rel in [r for r in to_build if r in busy]:
        to_build.remove(rel)
        entry = replace(archives[rel], waiting=False)
        if busy[rel] > scan[rel].changed_at + clock_margin_s:
            notes.append(f"{rel}: a build of it is in flight already; not requesting another")
        else:
            entry = replace(entry, waiting=True)
            if rel not in waiting:
                notes.append(
                    f"{rel} changed while a build of it runs; its next build is requested "
                    "once that run has ended"
                )
        archives[rel] = entry
    # never seen here, yet its partition exists: a launch adds the partition just before
    # it launches the build, so look again next tick (read again then, built unless
    # that run covers it)
    for rel in [r for r in to_build if r not in seen and r in partitions]:
        to_build.remove(rel)
        archives[rel] = UNREAD_ARCHIVE
    for rel in to_build:
        archives[rel] = replace(archives[rel], waiting=False)
    removed = sorted((set(seen) - set(archives)) | set(orphans))

    if removed:
        notes.append(f"removed from GRAPH_DOCS_PATH: {', '.join(removed)}")
    if to_build:
        notes.append(
            f"requesting graph builds of {len(to_build)} archive(s): {', '.join(to_build)}"
        )
    cursor = GraphCursor(
        archives=archives,
        skipped=skipped,
        generation=previous.generation + (1 if removed else 0),
        workdir=workdir,
    )
    return GraphTick(
        cursor=cursor,
        generation=previous.generation,
        builds=tuple(
            ArchiveBuild(rel, archives[rel].sha256, archives[rel].revision) for rel in to_build
        ),
        removed=tuple(removed),
        add_partitions=tuple(new),
        delete_partitions=tuple(rel for rel in removed if rel in partitions),
        restored=restored,
        notes=tuple(notes),
        warnings=tuple(warnings),
    )
