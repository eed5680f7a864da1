"""One writer per corpus, across processes: the lock primitives the stores, the graph
service and the backups share.

The document corpus (``rag``) is guarded by a Postgres advisory lock: every store write
(ingest's store step, the blurb stage, purges) holds it *shared* for its transaction
(:func:`rag_shared_xact_lock`, taken inside ``PgVectorStore.document_lock``), so writers
run side by side; a restore holds it *exclusive* on a session of its own
(:func:`rag_lock`) for its whole duration. An advisory lock dies with its session.

The message graph (``graph``) is guarded by an ``flock`` on a file in the graph storage
folder (:func:`graph_write_lock`), taken exclusive by the graph build, a graph export
and a graph restore; the holder's name is written into the file. A restore also holds a
second file, which :func:`graph_restoring` probes, so a reader can tell "being
restored" from "being built". An ``flock`` dies with its process.

Every lock here is non-blocking: whoever cannot have it gets :class:`CorpusBusy`
naming the holder, and a killed holder never leaves a corpus locked.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

import psycopg

from varagity.config import Settings

#: Namespace (first key) of the corpus advisory locks, apart from the per-document ones.
CORPUS_LOCK_SPACE = 0x76626B70  # "vbkp"
RAG_LOCK_KEY = 1
#: Prefix of the ``application_name`` of a session holding the lock by name: the holder
#: follows, so another process can name it (``pg_stat_activity``).
HOLDER_PREFIX = "varagity-lock:"


class CorpusBusy(Exception):
    """Another writer holds the corpus (``holder`` says who, as well as it is known)."""

    code = "corpus_busy"

    def __init__(self, corpus: str, holder: str) -> None:
        super().__init__(
            f"the {corpus} corpus is busy: {holder} holds it; try again once it has finished"
        )
        self.corpus = corpus
        self.holder = holder


def rag_holders(conn: psycopg.Connection, *, exclusive_only: bool = False) -> list[str]:
    """The other sessions holding the document corpus lock, by the name they gave (a
    nameless store write by its Postgres pid)."""
    rows = conn.execute(
        "SELECT l.pid, l.mode, a.application_name FROM pg_locks l"
        " LEFT JOIN pg_stat_activity a ON a.pid = l.pid"
        " WHERE l.locktype = 'advisory' AND l.granted AND l.classid = %s AND l.objid = %s"
        " AND l.objsubid = 2"
        " AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())"
        " AND l.pid <> pg_backend_pid()",
        (CORPUS_LOCK_SPACE, RAG_LOCK_KEY),
    ).fetchall()
    names = []
    for pid, mode, app in rows:
        if exclusive_only and mode != "ExclusiveLock":
            continue
        app = app or ""
        if app.startswith(HOLDER_PREFIX):
            names.append(app.removeprefix(HOLDER_PREFIX))
        else:
            names.append(f"a corpus write (Postgres pid {pid})")
    return names


#: The holder :class:`CorpusBusy` names when the lock was taken but its holder is gone
#: from the catalog by the time it is asked (a session ending).
NO_HOLDER = "another writer"


def _busy(conn: psycopg.Connection) -> CorpusBusy:
    holders = rag_holders(conn)
    return CorpusBusy("rag", ", ".join(sorted(set(holders))) or NO_HOLDER)


def rag_shared_xact_lock(conn: psycopg.Connection) -> None:
    """Hold the document corpus lock shared until ``conn``'s transaction ends.

    Raises:
        CorpusBusy: A restore holds it.
    """
    row = conn.execute(
        "SELECT pg_try_advisory_xact_lock_shared(%s, %s)", (CORPUS_LOCK_SPACE, RAG_LOCK_KEY)
    ).fetchone()
    if not (row and row[0]):
        raise _busy(conn)


@contextlib.contextmanager
def rag_lock(url: str, *, exclusive: bool, holder: str) -> Iterator[psycopg.Connection]:
    """Hold the document corpus lock on a session of its own for the block (named
    ``holder``); yields that session.

    Raises:
        CorpusBusy: It cannot be had now.
    """
    name = (HOLDER_PREFIX + holder).encode()[:63].decode("utf-8", "ignore")  # 63-byte limit
    conn = psycopg.connect(url, autocommit=True, application_name=name, connect_timeout=10)
    try:
        fn = "pg_try_advisory_lock" if exclusive else "pg_try_advisory_lock_shared"
        row = conn.execute(f"SELECT {fn}(%s, %s)", (CORPUS_LOCK_SPACE, RAG_LOCK_KEY)).fetchone()
        if not (row and row[0]):
            raise _busy(conn)
        yield conn
    finally:
        conn.close()  # ending the session releases the lock


# --- the folder watcher's presence ------------------------------------------------------
#: Second key of the advisory lock a live folder watcher holds shared (on a session of its
#: own) for as long as it watches, so the folder sensor can tell that new files are being
#: launched as they land; it dies with the watcher's process.
WATCHER_LOCK_KEY = 3
WATCHER_HOLDER = "folder watcher"


@contextlib.contextmanager
def folder_watcher_presence(url: str) -> Iterator[psycopg.Connection]:
    """Say, for the block, that a folder watcher launches new files as they land."""
    name = (HOLDER_PREFIX + WATCHER_HOLDER).encode()[:63].decode("utf-8", "ignore")
    conn = psycopg.connect(url, autocommit=True, application_name=name, connect_timeout=10)
    try:
        conn.execute(
            "SELECT pg_advisory_lock_shared(%s, %s)", (CORPUS_LOCK_SPACE, WATCHER_LOCK_KEY)
        )
        yield conn
    finally:
        conn.close()  # ending the session releases the lock


def folder_watcher_live(conn: psycopg.Connection) -> bool:
    """Whether some session holds :func:`folder_watcher_presence` now."""
    row = conn.execute(
        "SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted"
        " AND classid = %s AND objid = %s AND objsubid = 2"
        " AND database = (SELECT oid FROM pg_database WHERE datname = current_database()))",
        (CORPUS_LOCK_SPACE, WATCHER_LOCK_KEY),
    ).fetchone()
    return bool(row and row[0])


# --- the graph: flock ---------------------------------------------------------------------
WRITE_LOCK_FILE = ".varagity-graph-write.lock"
RESTORE_LOCK_FILE = ".varagity-graph-restore.lock"


def _lock_path(settings: Settings, name: str) -> Path:
    folder = settings.graph_storage_path
    folder.mkdir(parents=True, exist_ok=True)
    return folder / name


def _read_holder(fd: int) -> str:
    with contextlib.suppress(OSError):
        text = os.pread(fd, 512, 0).decode("utf-8", "replace").strip()
        if text:
            return text
    return "another graph writer"


@contextlib.contextmanager
def _flock(path: Path, *, holder: str, blocking: bool = False) -> Iterator[None]:
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
        except BlockingIOError:
            raise CorpusBusy("graph", _read_holder(fd)) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{holder} (pid {os.getpid()})".encode(), 0)
        try:
            yield
        finally:
            os.ftruncate(fd, 0)
    finally:
        os.close(fd)  # closing releases the lock


@contextlib.contextmanager
def graph_write_lock(settings: Settings, *, holder: str, restore: bool = False) -> Iterator[None]:
    """Be the graph's single writer for the block.

    Args:
        holder: Who is writing, as :class:`CorpusBusy` names it to others.
        restore: A restore: also mark the graph as being restored.

    Raises:
        CorpusBusy: Another writer holds the graph.
    """
    with _flock(_lock_path(settings, WRITE_LOCK_FILE), holder=holder):
        if not restore:
            yield
            return
        # only a restore takes this one, and only while it holds the write lock, so the
        # wait is at most a graph_restoring() probe's
        with _flock(_lock_path(settings, RESTORE_LOCK_FILE), holder=holder, blocking=True):
            yield


def graph_restoring(settings: Settings) -> str | None:
    """Who is restoring the graph now, or None (one lock probe)."""
    try:
        fd = os.open(settings.graph_storage_path / RESTORE_LOCK_FILE, os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return _read_holder(fd)
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)
