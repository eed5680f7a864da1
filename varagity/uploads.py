"""Writing uploaded files into a watched folder (``DOCS_PATH``, ``GRAPH_DOCS_PATH``),
where a sensor picks them up.

An upload is received into a staging file (:class:`StagedFile`: hashed and
size-checked while it streams; past its limit nothing more is written), then placed:
the target path is checked (:func:`safe_upload_path`: no absolute paths, no ``..``, no
hidden or control-character names, not the reserved ``varagity-exports`` folder), the
bytes are put in a hidden temporary file inside the target folder, stamped with the
original modification time, and renamed over the target (:func:`prepare_upload`, then
:meth:`Placement.commit`), so a sensor never sees a partly written file. A file whose
bytes are already there is left alone (``unchanged``).

Every refusal is an :class:`UploadRefused` with a stable ``code`` and a message that
names the file, so one refused file never stops the rest of a batch. What each folder
accepts on top (a parsable suffix, a recognised message archive) is its own module's
call: :mod:`varagity.ingest.uploads`, :mod:`varagity.graph.folder`.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from varagity.files import file_sha256, prune_empty_folders
from varagity.records import RESERVED_DIR

UploadStatus = Literal["stored", "replaced", "unchanged", "refused"]

# C0/C1 controls, and the bidi overrides/isolates and invisible marks that can make a
# name display as another (``report\u202egnp.exe`` shows as ``reportexe.png``)
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u061c\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff]")
_DRIVE = re.compile(r"^[A-Za-z]:")
_MAX_NAME_BYTES = 255


class UploadRefused(Exception):
    """One file is not stored; ``code`` is machine-readable, the message says why."""

    def __init__(self, code: str, message: str) -> None:
        """Remember the code and the message."""
        super().__init__(message)
        self.code = code
        self.message = message


def _path_parts(raw: str, what: str) -> list[str]:
    """The components of a client-supplied relative path, refused when unsafe."""
    bad = _CONTROL.search(raw)
    if bad:
        raise UploadRefused(
            "invalid_name",
            f"{what} {raw!r} contains the control or bidirectional-override character "
            f"U+{ord(bad.group()):04X}; rename the file without it",
        )
    posix = raw.replace("\\", "/")
    if posix.startswith("/") or _DRIVE.match(posix):
        raise UploadRefused("absolute_path", f"{what} {raw!r} is absolute; send a relative path")
    parts = [p for p in posix.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise UploadRefused("path_traversal", f"{what} {raw!r} climbs out with '..'")
    for part in parts:
        if part.startswith("."):
            raise UploadRefused(
                "hidden_name", f"{what} {raw!r} has a hidden name ({part!r}); ingest skips those"
            )
        if len(part.encode()) > _MAX_NAME_BYTES:
            raise UploadRefused(
                "invalid_name", f"{what} {raw!r}: {part[:40]!r}... is over 255 bytes"
            )
    return parts


def target_folder(folder: str) -> str:
    """The corpus-relative folder a batch goes into ('' for the corpus root).

    Raises:
        UploadRefused: The folder is absolute, climbs out, is hidden or reserved.
    """
    parts = _path_parts(folder, "folder")
    if parts and parts[0].lower() == RESERVED_DIR:
        raise UploadRefused(
            "reserved_path", f"folder {folder!r} is the reserved {RESERVED_DIR} folder (backups)"
        )
    return "/".join(parts)


def safe_upload_path(name: str, folder: str = "", *, root_name: str = "corpus") -> str:
    """The path under the upload root a file named ``name`` is stored at, checked for
    safety only (any file type).

    ``name`` may carry folders (a folder upload's relative path); ``folder`` is a
    checked :func:`target_folder` prefix.

    Raises:
        UploadRefused: The path is empty, absolute, climbs out, is hidden, has a
            control character or an over-long name, or lies in the reserved folder.
    """
    if not name.strip():
        raise UploadRefused("invalid_path", "the file has no name")
    own = _path_parts(name, "path")
    if not own:
        raise UploadRefused("invalid_path", f"path {name!r} names no file")
    parts = [*folder.split("/"), *own] if folder else own
    rel = "/".join(parts)
    if parts[0].lower() == RESERVED_DIR:
        raise UploadRefused(
            "reserved_path",
            f"{rel}: {RESERVED_DIR}/ at the {root_name} root is reserved for backups",
        )
    return rel


class StagedFile:
    """An upload being received into the staging folder, hashed as it streams.

    Past ``limit`` bytes the staged data is dropped and nothing more is written; the
    rest of the stream is only counted.
    """

    def __init__(self, staging: Path, filename: str, limit: int) -> None:
        """Open a new staging file in ``staging`` for the upload named ``filename``."""
        self.filename = filename
        self.limit = limit
        self.size = 0
        self._digest = hashlib.sha256()
        fd, name = tempfile.mkstemp(dir=staging, suffix=".part")
        self.path = Path(name)
        self._file = os.fdopen(fd, "wb")

    @property
    def too_large(self) -> bool:
        """More than ``limit`` bytes arrived."""
        return self.size > self.limit

    @property
    def sha256(self) -> str:
        """Hex digest of the bytes received (meaningless when :attr:`too_large`)."""
        return self._digest.hexdigest()

    def write(self, data: bytes) -> None:
        """Append a piece of the upload."""
        was_too_large = self.too_large
        self.size += len(data)
        if was_too_large:
            return
        if self.too_large:
            self.discard()
            return
        self._file.write(data)
        self._digest.update(data)

    def finish(self) -> None:
        """The upload is complete: close the staging file."""
        self._file.close()

    def discard(self) -> None:
        """Drop the staged bytes."""
        self._file.close()
        self.path.unlink(missing_ok=True)


def _inside(root: Path, path: Path) -> bool:
    resolved = path.resolve()
    return resolved == root or root in resolved.parents


def _deepest_existing(root: Path, folder: Path) -> Path:
    """``folder`` or its nearest ancestor that exists (``root`` at the latest)."""
    current = folder
    while current != root:
        try:
            if current.exists():
                return current
        except OSError:  # e.g. a name too long to exist
            pass
        current = current.parent
    return root


@dataclass
class Placement:
    """A staged upload copied beside its target under a hidden temporary name, ready
    to be renamed over the target (:meth:`commit`) or dropped (:meth:`abort`).

    Several placements committed one after the other land within microseconds, with
    every byte already written and fsynced: how an archive's database and its
    companions are put in place together.
    """

    relative_path: str
    target: Path
    tmp: Path
    replacing: bool
    existed: Path
    """The deepest folder on the way to the target that existed before (what
    :meth:`abort` prunes stops there)."""

    def commit(self) -> Literal["stored", "replaced"]:
        """Rename the temporary file over the target.

        Raises:
            UploadRefused: The rename failed (the temporary file is removed).
        """
        try:
            os.replace(self.tmp, self.target)
        except OSError as exc:
            self.abort()
            raise UploadRefused(
                "write_failed", f"{self.relative_path}: cannot write it: {exc.strerror or exc}"
            ) from exc
        return "replaced" if self.replacing else "stored"

    def abort(self) -> None:
        """Remove the temporary file and the folders made for it."""
        self.tmp.unlink(missing_ok=True)
        prune_empty_folders(self.existed, self.target.parent)


def _write_beside(staged: StagedFile, folder: Path) -> Path:
    """The staged bytes as a new hidden file in ``folder``: hard-linked when staging
    shares its filesystem (a multi-GB archive is not copied twice), else copied;
    fsynced either way."""
    fd, name = tempfile.mkstemp(dir=folder, prefix=".varagity-upload-", suffix=".tmp")
    tmp = Path(name)
    os.close(fd)
    try:
        tmp.unlink()
        os.link(staged.path, tmp)
        with tmp.open("rb+") as out:
            os.fsync(out.fileno())
    except OSError:
        try:
            with tmp.open("wb") as out, staged.path.open("rb") as src:
                shutil.copyfileobj(src, out, 1 << 20)
                out.flush()
                os.fsync(out.fileno())
        except OSError:
            tmp.unlink(missing_ok=True)
            raise
    return tmp


def prepare_upload(
    docs_path: Path, relative_path: str, staged: StagedFile, mtime_ns: int | None
) -> Placement | None:
    """Copy a completely staged upload to a hidden temporary file beside its target
    (``relative_path`` under ``docs_path``), with the original modification time;
    ``None`` when the target already holds exactly these bytes.

    Raises:
        UploadRefused: The target folder resolves outside the upload root, a folder is
            in the way, or writing failed. Nothing is left behind: no temporary file
            and no folder this call made.
    """
    root = docs_path.resolve()
    target = root / relative_path
    existing = _deepest_existing(root, target.parent)
    outside = UploadRefused(
        "outside_corpus", f"{relative_path}: its folder resolves outside the corpus folder"
    )
    if not _inside(root, existing):
        raise outside
    tmp: Path | None = None
    try:
        replacing = target.is_symlink() or target.exists()
        if replacing:
            if target.is_dir() and not target.is_symlink():
                raise UploadRefused(
                    "path_conflict", f"{relative_path}: a folder of that name exists"
                )
            if (
                target.is_file()
                and not target.is_symlink()
                and target.stat().st_size == staged.size
                and file_sha256(target) == staged.sha256
            ):
                return None
        target.parent.mkdir(parents=True, exist_ok=True)
        if not _inside(root, target.parent):  # a symlink appeared on the way
            raise outside
        tmp = _write_beside(staged, target.parent)
        os.chmod(tmp, 0o644)
        if mtime_ns is not None:
            os.utime(tmp, ns=(mtime_ns, mtime_ns))
    except (OSError, UploadRefused) as exc:
        if tmp is not None:
            tmp.unlink(missing_ok=True)
        prune_empty_folders(existing, target.parent)  # only the folders made here
        if isinstance(exc, UploadRefused):
            raise
        conflict = isinstance(exc, FileExistsError | NotADirectoryError)
        raise UploadRefused(
            "path_conflict" if conflict else "write_failed",
            f"{relative_path}: cannot write it: {exc.strerror or exc}",
        ) from exc
    return Placement(relative_path, target, tmp, replacing, existing)


def place_upload(
    docs_path: Path, relative_path: str, staged: StagedFile, mtime_ns: int | None
) -> Literal["stored", "replaced", "unchanged"]:
    """Put a completely staged upload at ``relative_path`` under ``DOCS_PATH``, atomically.

    The bytes go to a hidden temporary file in the target folder (ingest skips hidden
    names), get the original modification time, and are renamed over the target.

    Raises:
        UploadRefused: The target folder resolves outside the corpus, a folder is in
            the way, or writing failed. Nothing is left behind: no temporary file and
            no folder this call made.
    """
    placement = prepare_upload(docs_path, relative_path, staged, mtime_ns)
    if placement is None:
        return "unchanged"
    return placement.commit()


@dataclass(frozen=True, slots=True)
class UploadResult:
    """What happened to one uploaded file."""

    index: int
    name: str
    status: UploadStatus
    relative_path: str | None = None
    size_bytes: int | None = None
    code: str | None = None
    message: str | None = None
