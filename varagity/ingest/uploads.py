"""Writing uploaded files into ``DOCS_PATH``, where the folder sensor picks them up.

An upload is received into a staging file (hashed and size-checked while it streams;
past ``MAX_FILE_BYTES`` nothing more is written), then placed: the target path is
checked (no absolute paths, no ``..``, no hidden or control-character names, not the
reserved ``varagity-exports`` folder, a parsable suffix), the bytes are copied into a
hidden temporary file inside the target folder, stamped with the original
modification time, and renamed over the target, so the sensor never sees a partly
written file. A file whose bytes are already there is left alone (``unchanged``).

Every refusal is an :class:`UploadRefused` with a stable ``code`` and a message that
names the file, so one refused file never stops the rest of a batch.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from pathlib import Path, PurePosixPath
from typing import Literal

from varagity.ingest.discovery import RESERVED_DIR, file_sha256, prune_empty_folders
from varagity.ingest.parsers.registry import supported_suffixes

UploadStatus = Literal["stored", "replaced", "unchanged", "refused"]

# C0/C1 controls, and the bidi overrides/isolates and invisible marks that can make a
# name display as another (``report\u202egnp.exe`` shows as ``reportexe.png``)
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u061c\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff]")
_DRIVE = re.compile(r"^[A-Za-z]:")
_MAX_NAME_BYTES = 255
# File.lastModified is milliseconds since the epoch; refuse what no filesystem stores.
_MAX_MTIME_MS = 253402300799000  # 9999-12-31T23:59:59Z


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


def upload_path(name: str, folder: str = "") -> str:
    """The corpus-relative path an uploaded file named ``name`` is stored at.

    ``name`` may carry folders (a folder upload's relative path); ``folder`` is a
    checked :func:`target_folder` prefix.

    Raises:
        UploadRefused: The path is unsafe, reserved, or its type is not parsed.
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
            "reserved_path", f"{rel}: {RESERVED_DIR}/ at the corpus root is reserved for backups"
        )
    suffix = PurePosixPath(rel).suffix.lower()
    if suffix not in supported_suffixes():
        raise UploadRefused(
            "unsupported_type",
            f"{rel}: {suffix or 'files without a suffix'} cannot be parsed "
            f"(supported: {', '.join(sorted(supported_suffixes()))})",
        )
    return rel


def parse_mtime_ms(text: str) -> int | None:
    """Nanoseconds since the epoch from milliseconds (``File.lastModified``); '' is None.

    Raises:
        UploadRefused: Not a number, or outside what a filesystem stores.
    """
    if not text.strip():
        return None
    try:
        ms = Decimal(text.strip())  # exact: a float would blur the nanoseconds
    except InvalidOperation:
        raise UploadRefused("invalid_mtime", f"mtime {text!r} is not a number") from None
    if not ms.is_finite() or not 0 <= ms <= _MAX_MTIME_MS:
        raise UploadRefused("invalid_mtime", f"mtime {text!r} is not milliseconds since 1970")
    return int(ms * 1_000_000)


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
                return "unchanged"
        target.parent.mkdir(parents=True, exist_ok=True)
        if not _inside(root, target.parent):  # a symlink appeared on the way
            raise outside
        fd, name = tempfile.mkstemp(dir=target.parent, prefix=".varagity-upload-", suffix=".tmp")
        tmp = Path(name)
        with os.fdopen(fd, "wb") as out, staged.path.open("rb") as src:
            shutil.copyfileobj(src, out, 1 << 20)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(tmp, 0o644)
        if mtime_ns is not None:
            os.utime(tmp, ns=(mtime_ns, mtime_ns))
        os.replace(tmp, target)
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
    return "replaced" if replacing else "stored"


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


def store_uploads(
    docs_path: Path,
    files: Sequence[StagedFile],
    *,
    paths: Sequence[str] = (),
    mtimes: Sequence[str] = (),
    folder: str = "",
) -> list[UploadResult]:
    """Place a batch of staged uploads; each file is stored or refused on its own.

    Args:
        docs_path: The corpus folder.
        files: The staged uploads, in the order they arrived.
        paths: Each file's relative path (a folder upload's), parallel to ``files``;
            empty, or an empty entry, uses the file's own name.
        mtimes: Each file's modification time in milliseconds since the epoch,
            parallel to ``files``; empty, or an empty entry, leaves the upload time.
        folder: A corpus-relative folder every file goes into.

    Raises:
        ValueError: ``paths`` or ``mtimes`` is given with another length than ``files``.
        UploadRefused: ``folder`` is unsafe (the whole batch is refused).
    """
    for label, values in (("paths", paths), ("mtimes", mtimes)):
        if values and len(values) != len(files):
            raise ValueError(
                f"{label} has {len(values)} entries for {len(files)} files; send one per file "
                "(an empty entry keeps the default) or none"
            )
    prefix = target_folder(folder) if folder else ""
    results: list[UploadResult] = []
    taken: set[str] = set()
    for i, staged in enumerate(files):
        name = (paths[i] if paths else "") or staged.filename
        rel: str | None = None
        try:
            rel = upload_path(name, prefix)
            if rel in taken:
                raise UploadRefused("duplicate_path", f"{rel} appears twice in this upload")
            taken.add(rel)
            mtime_ns = parse_mtime_ms(mtimes[i]) if mtimes else None
            if staged.too_large:
                raise UploadRefused(
                    "too_large",
                    f"{rel}: over MAX_FILE_BYTES ({staged.limit} bytes); raise the limit "
                    "or split the file",
                )
            status = place_upload(docs_path, rel, staged, mtime_ns)
        except UploadRefused as refused:
            results.append(
                UploadResult(i, name, "refused", rel, None, refused.code, refused.message)
            )
            continue
        results.append(UploadResult(i, name, status, rel, staged.size))
    return results
