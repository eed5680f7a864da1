"""Finding the corpus: files under ``DOCS_PATH``, their relative paths and byte hashes.

Dagster partition keys are the corpus-relative POSIX paths. Dagster refuses a few
substrings in partition keys (``...`` is its range syntax; control characters), so
:func:`partition_key_for` percent-encodes exactly those (and ``%`` itself) and
:func:`relative_path_for` reverses it.
"""

from __future__ import annotations

import errno
import logging
import os
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from stat import S_ISREG
from urllib.parse import unquote

from varagity.files import file_sha256
from varagity.records import RESERVED_DIR as RESERVED_DIR  # the backups folder: never corpus
from varagity.records import doc_id_for, normalize_relative_path

log = logging.getLogger(__name__)

# Formats this build parses (text family); others are reported, not ingested.

_KEY_UNSAFE = re.compile(r"%|[\x00-\x1f\x7f]|\.{3,}")


@dataclass(frozen=True, slots=True)
class CorpusFile:
    """A file found under ``DOCS_PATH``."""

    relative_path: str
    path: Path
    size: int
    mtime_ns: int
    #: when the file last changed in the folder (written, renamed in, its mode changed):
    #: an upload or a copy may keep an old ``mtime_ns``, never an old ``ctime_ns``
    ctime_ns: int = 0


@dataclass(frozen=True, slots=True)
class SkippedFile:
    """A file discovery will not ingest, with the reason."""

    relative_path: str
    reason: str


def partition_key_for(relative_path: str) -> str:
    """Dagster-safe partition key for a corpus-relative path (reversible)."""
    return _KEY_UNSAFE.sub(lambda m: "".join(f"%{ord(c):02X}" for c in m.group(0)), relative_path)


def relative_path_for(partition_key: str) -> str:
    """Inverse of :func:`partition_key_for`."""
    return unquote(partition_key)


def current_doc_ids(files: Iterable[CorpusFile]) -> dict[str, str]:
    """The ``doc_id`` of each file's current bytes, by relative path (a file that
    vanished while it was read is left out)."""
    current: dict[str, str] = {}
    for f in files:
        try:
            current[f.relative_path] = doc_id_for(f.relative_path, file_sha256(f.path))
        except OSError:
            continue
    return current


def resolve_in_corpus(docs_path: Path, relative_path: str) -> Path:
    """Absolute path of a corpus file; refuses anything resolving outside ``DOCS_PATH``."""
    rel = normalize_relative_path(relative_path)
    root = docs_path.resolve()
    candidate = (root / rel).resolve()
    if candidate != root and root not in candidate.parents:
        raise ValueError(f"{relative_path!r} resolves outside the corpus folder {root}")
    return candidate


def scan(docs_path: Path) -> tuple[list[CorpusFile], list[SkippedFile]]:
    """Walk ``DOCS_PATH``: ingestible files sorted by relative path, and skipped ones."""
    files: list[CorpusFile] = []
    skipped: list[SkippedFile] = []
    root = docs_path.resolve()
    if not root.is_dir():
        return files, skipped
    supported = _supported_suffixes()
    for path in _walk(root):
        found = _classify(root, path, supported)
        if isinstance(found, CorpusFile):
            files.append(found)
        elif found is not None:
            skipped.append(found)
    files.sort(key=lambda f: f.relative_path)
    return files, skipped


def corpus_file_at(docs_path: Path, path: Path) -> CorpusFile | SkippedFile | None:
    """What :func:`scan` would say of one path under ``DOCS_PATH`` (absolute, not
    resolved): the file to ingest, why it is skipped, or ``None`` when it is not part of
    the corpus at all (a hidden or reserved path, a folder, outside ``DOCS_PATH``)."""
    root = docs_path.resolve()
    if root not in path.parents:
        return None
    try:
        if path.is_dir():  # as _walk: folders, and links to them, are not files
            return None
    except OSError:
        return None
    return _classify(root, path, _supported_suffixes())


def not_corpus(parts: Sequence[str]) -> bool:
    """Whether a path under ``DOCS_PATH`` (its relative parts) is outside the corpus
    whatever it holds: in the reserved backups folder, or hidden (editor swap files,
    ``.git``, ...)."""
    if parts and parts[0].lower() == RESERVED_DIR:
        return True
    return any(part.startswith(".") for part in parts)


def _supported_suffixes() -> frozenset[str]:
    from varagity.ingest.parsers.registry import supported_suffixes  # the parsers' imports

    return supported_suffixes()


def _classify(root: Path, path: Path, supported: frozenset[str]) -> CorpusFile | SkippedFile | None:
    """One path of :func:`_walk`: ingestible, skipped with its reason, or not corpus."""
    rel = path.relative_to(root).as_posix()
    if not_corpus(rel.split("/")):
        return None
    if path.is_symlink():
        try:
            target = path.resolve(strict=True)
        except RuntimeError:  # Python 3.11 reports a loop so
            return SkippedFile(rel, "symlink loop: it resolves back to itself")
        except OSError as exc:
            reason = "symlink loop" if exc.errno == errno.ELOOP else "broken symlink"
            return SkippedFile(rel, f"{reason}: {os.readlink(path)} does not resolve")
        if root not in target.parents:
            return SkippedFile(rel, f"symlink points outside the corpus: {target}")
    if path.suffix.lower() not in supported:
        return SkippedFile(rel, f"unsupported file type {path.suffix or '(none)'}")
    try:
        stat = path.stat()
    except OSError as exc:  # vanished or unreadable between listing and stat
        return SkippedFile(rel, f"cannot stat: {exc.strerror}")
    if not S_ISREG(stat.st_mode):  # a named pipe would block its reader forever
        return SkippedFile(rel, "not a regular file (a pipe, socket or device)")
    return CorpusFile(rel, path, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns)


def _walk(root: Path) -> Iterator[Path]:
    """Everything under ``root`` but folders: files, broken or looping symlinks, pipes
    (reported by :func:`scan`, not silently dropped). Symlinked folders are not followed."""
    for path in root.rglob("*"):
        try:
            if not path.is_dir():
                yield path
        except OSError:
            continue
