"""The source gate: the file behind a chunk, if it is still the one that was indexed.

A preview reads a file the user may have moved, edited or replaced since ingest, and a
file named by a stored path: the path must resolve inside ``DOCS_PATH`` (a ``..`` or a
symlink leading out is refused), and its bytes must hash to the content hash stored with
the chunk. The bytes are read once and returned, so what is rendered is exactly what
was hashed.
"""

from __future__ import annotations

import threading
from pathlib import Path

from varagity.files import file_sha256
from varagity.preview.types import PreviewUnavailable
from varagity.records import content_hash, normalize_relative_path

_StatKey = tuple[int, int, int, int]
_VERIFIED: dict[Path, tuple[_StatKey, str]] = {}
_VERIFIED_LOCK = threading.Lock()


def source_path(docs_path: Path, relative_path: str) -> Path:
    """The file of ``relative_path`` inside the corpus, resolved.

    Raises:
        PreviewUnavailable: ``outside_corpus`` when the path or a symlink on it leads
            out of ``docs_path``; ``file_missing`` when nothing regular is there.
    """
    root = docs_path.resolve()
    try:
        rel = normalize_relative_path(relative_path)
    except ValueError as exc:
        raise PreviewUnavailable("outside_corpus", str(exc)) from None
    path = (root / rel).resolve()
    if root not in path.parents:
        raise PreviewUnavailable(
            "outside_corpus", f"{rel} resolves outside the corpus folder; it is not shown"
        )
    if not path.is_file():
        raise PreviewUnavailable(
            "file_missing", f"{rel} is no longer in the corpus folder (deleted or moved)"
        )
    return path


def _changed(rel: str) -> PreviewUnavailable:
    return PreviewUnavailable(
        "file_changed",
        f"{rel} has changed since it was indexed; the page shown would not be the one "
        "this passage came from (it is reindexed on the next ingest)",
    )


def verify_source(docs_path: Path, relative_path: str, expected_hash: str) -> Path:
    """The file's path when its bytes still hash to ``expected_hash``.

    The hash of a file whose size, modification time and inode have not moved since it
    last matched is not computed again.

    Raises:
        PreviewUnavailable: ``outside_corpus``, ``file_missing`` or ``file_changed``.
    """
    path = source_path(docs_path, relative_path)
    stat = path.stat()
    key = (stat.st_size, stat.st_mtime_ns, stat.st_ino, stat.st_dev)
    with _VERIFIED_LOCK:
        known = _VERIFIED.get(path)
    if known is not None and known[0] == key:
        digest = known[1]
    else:
        try:
            digest = file_sha256(path)
        except OSError as exc:
            raise PreviewUnavailable(
                "file_missing", f"{relative_path} cannot be read: {exc.strerror}"
            ) from None
        with _VERIFIED_LOCK:
            _VERIFIED[path] = (key, digest)
    if digest != expected_hash:
        raise _changed(relative_path)
    return path


def read_source(docs_path: Path, relative_path: str, expected_hash: str) -> bytes:
    """The file's bytes, checked against ``expected_hash`` after reading them.

    Raises:
        PreviewUnavailable: ``outside_corpus``, ``file_missing`` or ``file_changed``.
    """
    path = source_path(docs_path, relative_path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise PreviewUnavailable(
            "file_missing", f"{relative_path} cannot be read: {exc.strerror}"
        ) from None
    if content_hash(data) != expected_hash:
        raise _changed(relative_path)
    return data
