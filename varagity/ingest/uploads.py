"""Writing uploaded documents into ``DOCS_PATH``, where the folder sensor picks them up.

The staging, path checks and atomic placement are :mod:`varagity.uploads` (shared with
the message-archive uploads); a document must also have a suffix a parser reads
(:func:`upload_path`), and may carry its original modification time
(:func:`parse_mtime_ms`). Past ``MAX_FILE_BYTES`` nothing more of a file is written.
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal, InvalidOperation
from pathlib import Path, PurePosixPath

from varagity.ingest.parsers.registry import supported_suffixes
from varagity.uploads import (
    StagedFile,
    UploadRefused,
    UploadResult,
    place_upload,
    safe_upload_path,
    target_folder,
)

# File.lastModified is milliseconds since the epoch; refuse what no filesystem stores.
_MAX_MTIME_MS = 253402300799000  # 9999-12-31T23:59:59Z


def upload_path(name: str, folder: str = "") -> str:
    """The corpus-relative path an uploaded file named ``name`` is stored at
    (:func:`safe_upload_path`, and a suffix a parser reads).

    Raises:
        UploadRefused: The path is unsafe, reserved, or its type is not parsed.
    """
    rel = safe_upload_path(name, folder)
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
