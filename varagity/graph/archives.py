"""What lies under ``GRAPH_DOCS_PATH``: candidate archives with their companion files,
a stat signature that says when one may have changed, and a content signature that
says whether it did.

An archive is one file plus the companions its source keeps beside it (an iMessage
``chat.db`` with its ``chat.db-wal`` and ``chat.db-shm``): a change to any of them
changes the archive, and a companion is never an archive of its own. Which files are
companions is the source registry's call
(:func:`~varagity.graph.sources.registry.is_companion`); here a companion belongs to the
file in its folder whose name it extends (``chat.db`` + ``-wal``). Whether a file *is*
a supported archive is judged by content, by the registry, and only when its stat
signature moved (the sensor keeps the verdict in its cursor).

A contacts file (:mod:`~varagity.graph.contacts`: ``contacts.vcf``, ``.csv`` or
``.tsv``) is no archive: it names the handles of every archive in its folder and below,
so it is part of each such archive's signatures (:attr:`ArchiveFiles.contacts`), and
a changed contacts file is a change of those archives, whose builds then re-extract
the days it renames.

Hidden files and folders and the reserved ``varagity-exports/`` folder at the root are
not looked at. Nothing here writes anything. The graph-sources sensor and the API (the
sources list, build requests) scan the folder with the same function.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

from varagity.graph.contacts import contacts_files, is_contacts_file
from varagity.graph.sources.registry import is_companion
from varagity.records import RESERVED_DIR

#: (size, mtime_ns) of each file of an archive, in :attr:`ArchiveFiles.paths` order.
StatSignature = list[list[int]]


@dataclass(frozen=True)
class ArchiveFiles:
    """A candidate archive under the graph folder, the companions beside it, and the
    contacts files that name its handles."""

    relative_path: str
    path: Path
    companions: tuple[Path, ...] = ()
    #: The contacts files that apply to it (:func:`~varagity.graph.contacts.contacts_files`:
    #: the graph folder's first, its own folder's last), read into its transcripts.
    contacts: tuple[Path, ...] = ()

    @property
    def paths(self) -> tuple[Path, ...]:
        """The archive file first, then its companions by name."""
        return (self.path, *self.companions)

    @property
    def inputs(self) -> tuple[Path, ...]:
        """Every file its transcripts are read from: :attr:`paths`, then
        :attr:`contacts`."""
        return (*self.paths, *self.contacts)

    def stat_signature(self) -> StatSignature:
        """Size and modification time of every file of the archive, then of its
        contacts files.

        Raises:
            OSError: A file vanished or cannot be read.
        """
        signature = []
        for path in self.inputs:
            st = path.stat()
            signature.append([st.st_size, st.st_mtime_ns])
        return signature

    def content_sha256(self, *, chunk_bytes: int = 1 << 20) -> str:
        """sha256 over every file of the archive (each under its name's suffix), so the
        same database with a different ``-wal`` is a different archive, and over its
        contacts files (each under its path from the archive's folder), so a changed
        name is a change too. An archive with no contacts file hashes as its own files.

        Raises:
            OSError: A file vanished or cannot be read.
        """
        digest = hashlib.sha256()
        labelled = [(path.name[len(self.path.name) :], path) for path in self.paths]
        labelled += [
            (f"contacts:{Path(os.path.relpath(path, self.path.parent)).as_posix()}", path)
            for path in self.contacts
        ]
        for label, path in labelled:
            digest.update(f"\0{label}\0".encode())
            with path.open("rb") as handle:
                while block := handle.read(chunk_bytes):
                    digest.update(block)
        return digest.hexdigest()


def scan_archives(root: Path) -> list[ArchiveFiles]:
    """The candidate archives under ``root``, sorted by relative path, each with its
    companions and its contacts files (which are no candidates). A missing ``root``
    holds nothing."""
    if not root.is_dir():
        return []
    archives: list[ArchiveFiles] = []
    for folder, dirs, names in os.walk(root):
        here = Path(folder)
        top = here == root
        dirs[:] = sorted(
            d for d in dirs if not d.startswith(".") and not (top and d.lower() == RESERVED_DIR)
        )
        files = sorted(
            n
            for n in names
            if not n.startswith(".") and not is_contacts_file(n) and (here / n).is_file()
        )
        # a companion exists only beside its archive (the registry says so by looking)
        companions = {n for n in files if is_companion(here / n)}
        owners = [n for n in files if n not in companions]
        owned: dict[str, list[Path]] = {n: [] for n in owners}
        for name in sorted(companions):
            owner = max((o for o in owners if name.startswith(o + "-")), key=len, default=None)
            if owner is not None:
                owned[owner].append(here / name)
        contacts: tuple[Path, ...] | None = None  # the same for every archive here
        for name in owners:
            path = here / name
            relative = path.relative_to(root).as_posix()
            if contacts is None:
                contacts = contacts_files(root, relative)
            archives.append(ArchiveFiles(relative, path, tuple(owned[name]), contacts))
    archives.sort(key=lambda a: a.relative_path)
    return archives
