"""``GRAPH_DOCS_PATH`` as the API shows and changes it: the archives there (and the
files that are not archives, with why), what the graph holds of each (from the build
manifest), uploads placed archive by archive, and archives deleted.

The folder is scanned with the graph-sources sensor's own function
(:func:`~varagity.graph.archives.scan_archives`), so the API lists exactly the archives
the sensor builds: never a hidden file or folder, never the reserved
``varagity-exports/`` folder, a ``-wal``/``-shm`` as part of its database's archive.
Whether a file is an archive is judged by its content (the message-source registry).

**Uploads** arrive as staged files (:class:`~varagity.uploads.StagedFile`) and
are checked like documents' (no absolute path, no ``..``, no hidden or control-character
name, not the reserved folder). A database must then be recognised by a message
source, sniffed with its companions from the same batch beside it; a ``-wal``/``-shm``
is taken only with its database, from the batch or already in the folder. An
archive's files are written as hidden temporary files first and renamed into place
together, its companions before the database; when a database is replaced, the
companions it had that the batch does not bring are removed first (an old ``-wal``
must never be read against a new database). A sensor tick that lands within those
renames sees a changed archive once more and asks for one more build, which finds
nothing new; the reader copies an archive again if it changes while being read.

**Deleting** removes the database first, then its companions (a tick in between sees
the archive gone, never a database without its ``-wal``); the graph-sources sensor then
takes its days out of the graph in a removal run.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import Literal

from varagity.config import Settings
from varagity.folder_diff import FolderDiff
from varagity.graph.archives import ArchiveFiles, scan_archives
from varagity.graph.contacts import ContactsError, load_contacts
from varagity.graph.manifest import ManifestEntry, read_manifest
from varagity.graph.manifest import diff as manifest_diff
from varagity.graph.registry import workdir_for
from varagity.graph.sources.base import MessageSourceError, UnsupportedArchiveError
from varagity.graph.sources.registry import companion_owner, read_archive, source_for
from varagity.graph.transcripts import graph_timezone
from varagity.graph.types import split_doc_key
from varagity.uploads import (
    Placement,
    StagedFile,
    UploadRefused,
    UploadResult,
    prepare_upload,
    safe_upload_path,
    target_folder,
)

log = logging.getLogger(__name__)

#: What the refusals and paths call the folder.
_ROOT_NAME = "graph folder"


# --- what the graph holds of each archive -------------------------------------------


@dataclass(frozen=True)
class HeldDays:
    """An archive's transcript days in the graph (from the build manifest)."""

    days: int = 0
    threads: int = 0
    messages: int = 0
    first_day: str | None = None
    last_day: str | None = None


def held_by_source(manifest: Mapping[str, ManifestEntry]) -> dict[str, HeldDays]:
    """Per archive (its path under ``GRAPH_DOCS_PATH``): the days, threads and messages
    the manifest records for it, and its first and last day."""
    grouped: dict[str, list[tuple[str, ManifestEntry]]] = {}
    for key, entry in manifest.items():
        grouped.setdefault(entry.source, []).append((key, entry))
    held: dict[str, HeldDays] = {}
    for source, entries in grouped.items():
        starts = [e.span.split("..")[0] for _, e in entries]
        ends = [e.span.split("..")[-1] for _, e in entries]
        held[source] = HeldDays(
            days=len(entries),
            threads=len({split_doc_key(k)[0] for k, _ in entries}),
            messages=sum(len(e.message_guids) for _, e in entries),
            first_day=min(starts),
            last_day=max(ends),
        )
    return held


# --- listing ------------------------------------------------------------------------


@dataclass(frozen=True)
class SourceListing:
    """One candidate file of the folder: an archive, or a file that is not one."""

    path: str
    companions: list[str]
    size_bytes: int
    modified_at: datetime
    supported: bool
    kind: str | None
    reason: str | None
    days: int
    threads: int
    first_day: str | None
    last_day: str | None


def judge(path: Path) -> tuple[str | None, str | None]:
    """(the message source that reads ``path``, None) or (None, why none does)."""
    try:
        return source_for(path).name, None
    except UnsupportedArchiveError as exc:
        reason = "; ".join(f"{name}: {why}" for name, why in sorted(exc.reasons.items()))
        return None, reason or "no message source is installed"


def _listing(
    root: Path, candidate: ArchiveFiles, held: Mapping[str, HeldDays]
) -> SourceListing | None:
    try:
        stats = [p.stat() for p in candidate.paths]
    except OSError:  # vanished (or unreadable) since the scan: not listed this time
        return None
    kind, reason = judge(candidate.path)
    days = held.get(candidate.relative_path, HeldDays())
    return SourceListing(
        path=candidate.relative_path,
        companions=[c.relative_to(root).as_posix() for c in candidate.companions],
        size_bytes=sum(st.st_size for st in stats),
        modified_at=datetime.fromtimestamp(max(st.st_mtime for st in stats), tz=UTC),
        supported=kind is not None,
        kind=kind,
        reason=reason,
        days=days.days,
        threads=days.threads,
        first_day=days.first_day,
        last_day=days.last_day,
    )


def list_sources(root: Path, manifest: Mapping[str, ManifestEntry]) -> list[SourceListing]:
    """Every candidate file under ``root`` (``GRAPH_DOCS_PATH``), by path, each judged
    by content and with what ``manifest`` records the graph holds of it."""
    held = held_by_source(manifest)
    listed = (_listing(root, candidate, held) for candidate in scan_archives(root))
    return [entry for entry in listed if entry is not None]


def graph_diff(settings: Settings) -> FolderDiff:
    """``GRAPH_DOCS_PATH`` against what the graph holds (its build manifest): archives
    whose transcript days the graph lacks or holds in another version (to build),
    archives the graph holds days of that are gone from the folder (to remove), and
    archives no message source reads now (with why; their days stay). Reads every
    archive, as a build would, without calling a model."""
    root = settings.graph_docs_path
    manifest = read_manifest(workdir_for(settings))
    tz = graph_timezone(settings)
    to_build: list[str] = []
    unreadable: dict[str, str] = {}
    there: set[str] = set()
    for candidate in scan_archives(root):
        rel = candidate.relative_path
        there.add(rel)
        try:
            contacts = load_contacts(root, rel, owner=settings.GRAPH_OWNER_NAME)
            days = read_archive(root, rel, tz=tz, contacts=contacts)
        except (ContactsError, MessageSourceError, OSError) as exc:
            unreadable[rel] = str(getattr(exc, "reason", exc))
            continue
        if not manifest_diff(days, manifest, source=rel).empty:
            to_build.append(rel)
    sources = {entry.source for entry in manifest.values()}
    gone = sorted(rel for rel in sources if rel not in there) if root.is_dir() else []
    return FolderDiff(tuple(to_build), tuple(gone), unreadable, verbs=("build", "remove"))


def count_supported(root: Path) -> int:
    """How many archives under ``root`` a message source reads."""
    return sum(1 for candidate in scan_archives(root) if judge(candidate.path)[0] is not None)


# --- uploads ------------------------------------------------------------------------


@dataclass
class _Archive:
    """A database of the batch (or one already in the folder) and its batch companions."""

    relative_path: str
    index: int | None  # the database's position in the batch; None: already in the folder
    companions: list[tuple[str, int]] = field(default_factory=list)

    def members(self) -> list[tuple[str, int]]:
        """(path, batch index) of its uploaded files: companions first, database last."""
        own = [(self.relative_path, self.index)] if self.index is not None else []
        return [*self.companions, *own]


def _split(rel: str) -> tuple[str, str]:
    folder, _, name = rel.rpartition("/")
    return folder, name


def _join(folder: str, name: str) -> str:
    return f"{folder}/{name}" if folder else name


def _folder_companions(target: Path) -> list[Path]:
    """The files beside ``target`` named as its companions."""
    try:
        names = os.listdir(target.parent)
    except OSError:
        return []
    return sorted(target.parent / n for n in names if companion_owner(n) == target.name)


def _link_or_copy(source: Path, target: Path) -> None:
    try:
        os.link(source, target)
    except OSError:
        shutil.copyfile(source, target)


class _Batch:
    """One upload request's files on their way into the folder."""

    def __init__(self, root: Path, files: Sequence[StagedFile], sniff_dir: Path) -> None:
        self.root = root
        self.files = files
        self.sniff_dir = sniff_dir
        self.results: dict[int, UploadResult] = {}
        self.paths: dict[int, str] = {}

    def refuse(self, index: int, code: str, message: str) -> None:
        self.results[index] = UploadResult(
            index, self.files[index].filename, "refused", self.paths.get(index), None, code, message
        )

    def done(self, index: int, status: Literal["stored", "replaced", "unchanged"]) -> None:
        staged = self.files[index]
        self.results[index] = UploadResult(
            index, staged.filename, status, self.paths[index], staged.size
        )

    def sniff(self, archive: _Archive) -> str | None:
        """Why the batch's database of ``archive`` is not a supported archive (read with
        its companions from the batch beside it, under their own names)."""
        assert archive.index is not None
        probe = self.sniff_dir / str(archive.index)
        probe.mkdir(parents=True)
        try:
            for rel, index in archive.members():
                _link_or_copy(self.files[index].path, probe / _split(rel)[1])
            return judge(probe / _split(archive.relative_path)[1])[1]
        except OSError as exc:
            return f"cannot be read after the upload ({exc.strerror or exc})"
        finally:
            shutil.rmtree(probe, ignore_errors=True)

    def place(self, archive: _Archive) -> None:
        """Write every file of ``archive`` beside its target, then rename them into
        place: companions first, the database last. One refused file refuses the
        archive's other files of the batch too, and nothing of it is written."""
        prepared: list[tuple[int, Placement | None]] = []
        for rel, index in archive.members():
            try:
                prepared.append((index, prepare_upload(self.root, rel, self.files[index], None)))
            except UploadRefused as refused:
                for _, placement in prepared:
                    if placement is not None:
                        placement.abort()
                self.refuse(index, refused.code, refused.message)
                self._refuse_rest(archive, index, refused.message)
                return
        database = prepared[-1][1] if archive.index is not None else None
        if database is not None and database.replacing:
            # a new database must not be read with the old one's -wal/-shm
            sent = {self.root / rel for rel, _ in archive.companions}
            for stale in _folder_companions(database.target):
                if stale not in sent:
                    with contextlib.suppress(FileNotFoundError):
                        stale.unlink()
                    log.info("removed %s: the database it belonged to was replaced", stale)
        for position, (index, placement) in enumerate(prepared):
            if placement is None:
                self.done(index, "unchanged")
                continue
            try:
                self.done(index, placement.commit())
            except UploadRefused as refused:
                for _, later in prepared[position + 1 :]:
                    if later is not None:
                        later.abort()
                self.refuse(index, refused.code, refused.message)
                self._refuse_rest(archive, index, refused.message, after=position)
                return

    def _refuse_rest(self, archive: _Archive, failed: int, why: str, *, after: int = -1) -> None:
        for position, (_, index) in enumerate(archive.members()):
            if index != failed and position > after and index not in self.results:
                self.refuse(
                    index,
                    "write_failed",
                    f"{self.paths[index]}: not stored, as {self.paths[failed]} of the same "
                    f"archive could not be ({why})",
                )


def store_archive_uploads(
    root: Path, files: Sequence[StagedFile], *, folder: str = "", sniff_dir: Path
) -> list[UploadResult]:
    """Place a batch of staged uploads in ``root`` (``GRAPH_DOCS_PATH``), archive by
    archive; each file is stored or refused with a code and the reason.

    Args:
        root: The graph folder.
        files: The staged uploads, in the order they arrived (each named by its
            ``filename``, which may carry folders).
        folder: A folder under ``root`` every file goes into.
        sniff_dir: A scratch folder (on the staging filesystem) where each database is
            looked at with its companions before anything is placed.

    Raises:
        UploadRefused: ``folder`` is unsafe (the whole batch is refused).
    """
    prefix = target_folder(folder) if folder else ""
    batch = _Batch(root, files, sniff_dir)
    named: set[str] = set()  # every path the batch names, even for a refused file
    accepted: dict[str, int] = {}
    for i, staged in enumerate(files):
        try:
            rel = safe_upload_path(staged.filename, prefix, root_name=_ROOT_NAME)
            batch.paths[i] = rel
            if rel in named:
                raise UploadRefused("duplicate_path", f"{rel} appears twice in this upload")
            named.add(rel)
            if staged.too_large:
                raise UploadRefused(
                    "too_large",
                    f"{rel}: over GRAPH_MAX_ARCHIVE_BYTES ({staged.limit} bytes); raise the "
                    "limit, or copy the archive into the graph folder directly",
                )
        except UploadRefused as refused:
            batch.refuse(i, refused.code, refused.message)
            continue
        accepted[rel] = i

    archives: dict[str, _Archive] = {}
    for rel, i in accepted.items():
        if companion_owner(_split(rel)[1]) is None:
            archives[rel] = _Archive(rel, i)
    for rel, i in accepted.items():
        owner_name = companion_owner(_split(rel)[1])
        if owner_name is None:
            continue
        owner = _join(_split(rel)[0], owner_name)
        if owner in archives:
            archives[owner].companions.append((rel, i))
        elif owner not in named and (root / owner).is_file():
            archives.setdefault(owner, _Archive(owner, None)).companions.append((rel, i))
        else:
            why = "was refused" if owner in named else "is neither in this upload nor in the folder"
            batch.refuse(
                i,
                "companion_without_database",
                f"{rel} belongs to the database {owner}, which {why}; upload the database "
                "with its -wal and -shm",
            )

    for archive in sorted(archives.values(), key=lambda a: a.relative_path):
        if archive.index is not None:
            reason = batch.sniff(archive)
            if reason is not None:
                batch.refuse(
                    archive.index,
                    "not_an_archive",
                    f"{archive.relative_path} is not a supported message archive: {reason}",
                )
                for rel, index in archive.companions:
                    batch.refuse(
                        index,
                        "companion_without_database",
                        f"{rel}: its database {archive.relative_path} was refused (not a "
                        "supported message archive)",
                    )
                continue
        batch.place(archive)
    return [batch.results[i] for i in range(len(files))]


def written_archives(results: Iterable[UploadResult]) -> list[str]:
    """The archives (database paths) a batch stored or replaced a file of: those to build."""
    archives: set[str] = set()
    for result in results:
        if result.status in ("stored", "replaced") and result.relative_path:
            folder, name = _split(result.relative_path)
            owner = companion_owner(name)
            archives.add(_join(folder, owner) if owner is not None else result.relative_path)
    return sorted(archives)


# --- deleting -----------------------------------------------------------------------


class SourceNotFound(LookupError):
    """No archive has this path (the message says what is there instead, if anything)."""


@dataclass(frozen=True)
class RemovedSource:
    """An archive removed from the folder, and its days the removal run takes out."""

    path: str
    removed_files: list[str]
    days: int


def remove_source(
    root: Path, relative_path: str, manifest: Mapping[str, ManifestEntry]
) -> RemovedSource:
    """Delete the archive at ``relative_path`` under ``root``: the database first, then
    its companions. A symlink is removed, never what it points to.

    Raises:
        UploadRefused: The path is absolute, climbs out, is hidden or reserved, has a
            control character, or its folder resolves outside ``root``.
        SourceNotFound: No archive (or listed file) has this path.
    """
    rel = safe_upload_path(relative_path, root_name=_ROOT_NAME)
    base = root.resolve()
    target = base / PurePosixPath(rel)
    folder = target.parent.resolve()
    if folder != base and base not in folder.parents:
        raise UploadRefused(
            "outside_corpus", f"{rel}: its folder resolves outside the graph folder"
        )
    if not target.is_file():  # follows a link inside the folder; a dangling one is absent
        raise SourceNotFound(f"the graph folder holds no archive {rel}")
    owner = companion_owner(target.name)
    if owner is not None and (target.parent / owner).is_file():
        raise SourceNotFound(
            f"{rel} is a companion of {_join(_split(rel)[0], owner)}, not an archive; delete "
            "that archive (its companions go with it)"
        )
    companions = _folder_companions(target)
    removed = []
    for path in (target, *companions):
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
            removed.append(path.relative_to(base).as_posix())
    days = sum(1 for entry in manifest.values() if entry.source == rel)
    return RemovedSource(path=rel, removed_files=removed, days=days)
