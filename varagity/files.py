"""Small file helpers every corpus folder shares: a file's streamed sha256, and pruning
the empty folders a removal or a failed write leaves behind."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path


def file_sha256(path: Path, *, chunk_bytes: int = 1 << 20) -> str:
    """Streamed sha256 of a file's bytes (the spec's ``content_hash``)."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(chunk_bytes):
            digest.update(block)
    return digest.hexdigest()


def prune_empty_folders(root: Path, folder: Path) -> list[str]:
    """Remove ``folder`` and its ancestors while they are empty, stopping below ``root``.

    Both are compared lexically (``folder`` must be spelled under ``root``); a symlinked
    folder is never removed (``rmdir`` refuses it).

    Returns:
        The removed folders relative to ``root``, deepest first.
    """
    pruned: list[str] = []
    current = folder
    while current != root and root in current.parents:
        try:
            current.rmdir()
        except OSError:  # not empty, a symlink, or gone: stop
            break
        pruned.append(current.relative_to(root).as_posix())
        current = current.parent
    return pruned


def fsync_dir(path: Path) -> None:
    """Make a folder's entries (a rename, a new file) durable: fsync the folder itself."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
