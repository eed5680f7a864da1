"""Embedded BM25 store on a Tantivy index directory (the default backend).

Tantivy allows one ``IndexWriter`` per index directory across *all* processes; a second
one fails with ``LockBusy`` ("Failed to acquire Lockfile").  Several processes write here
(Dagster run workers, the sensor's purge, the API's delete endpoint), so:

* writers are serialized by an exclusive ``flock`` on ``varagity-write.lock`` inside the
  index directory, taken with a timeout (``lock_timeout_s``) and held for the whole life of
  the writer;
* a writer exists only for the duration of one write (``index()`` / ``delete_documents()``):
  it is created, used, committed once, then consumed with ``wait_merging_threads()`` (which
  also finishes merges and garbage collection) before the lock is released;
* Tantivy's own garbage collection only knows the files its process's ``Index`` listed in
  ``.managed.json``, which each process caches at open and overwrites: files of a writer
  in another process, above all one killed before its commit, drop out of that list and
  would stay forever. So every write ends (still under the exclusive lock, when no other
  writer can exist) by sweeping the segment files ``meta.json`` does not reference;
* readers reload before every search/count so commits made by other processes are visible.
  Reloads take no lock (searches never queue behind a write or a merge); a reload that races
  another process's garbage collection fails harmlessly and is retried, the last time under
  the same lock taken *shared*, which excludes writers.

``flock`` (not ``lockf``) is used on a freshly opened descriptor per operation, so two store
instances in one process, or two threads sharing one instance, exclude each other too.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import re
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import tantivy

from varagity.stores.bm25.analysis import ENGLISH_STOPWORDS, query_terms, search_text
from varagity.stores.bm25.base import BM25Document, BM25Error, BM25Hit

__all__ = ["TantivyBM25Store"]

_T = TypeVar("_T")

LOCK_FILE_NAME = "varagity-write.lock"
"""The advisory lock file (inside the index directory) that serializes writers."""

_TEXT_FIELDS = ("content", "contextualized_content")
_SEARCH_FIELD = "search_text"
_TOKENIZER = "en_stem"
# words, at most 40 bytes, lower-cased, English stop words out, Snowball-stemmed
_SEARCH_TOKENIZER = "varagity_en"
_WRITER_HEAP_BYTES = 64_000_000
_LOCK_POLL_S = 0.05
_RELOAD_RETRIES = 3
# a segment file: "<32 hex segment id>.<ext>" or "<id>.<opstamp>.del"
_SEGMENT_FILE = re.compile(r"^([0-9a-f]{32})\.(?:(\d+)\.del|[a-z]+)$")


def _build_schema() -> tantivy.Schema:
    builder = tantivy.SchemaBuilder()
    # Identity: raw (untokenized) so delete-by-term matches the exact id.
    builder.add_text_field("chunk_id", stored=True, tokenizer_name="raw")
    builder.add_text_field("doc_id", stored=True, tokenizer_name="raw")
    builder.add_integer_field("original_index", stored=True)
    for name in _TEXT_FIELDS:
        builder.add_text_field(name, stored=True, tokenizer_name=_TOKENIZER)
    # The one searched field (not stored): see analysis.search_text.
    builder.add_text_field(_SEARCH_FIELD, stored=False, tokenizer_name=_SEARCH_TOKENIZER)
    return builder.build()


def _analyzer() -> tantivy.TextAnalyzer:
    """``en_stem`` plus the shared English stop words, for indexed text and queries alike."""
    return (
        tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
        .filter(tantivy.Filter.remove_long(40))
        .filter(tantivy.Filter.lowercase())
        .filter(tantivy.Filter.custom_stopword(list(ENGLISH_STOPWORDS)))
        .filter(tantivy.Filter.stemmer("english"))
        .build()
    )


class TantivyBM25Store:
    """BM25 over an embedded Tantivy index directory, safe for several writer processes.

    Args:
        path: The index directory (created if missing).
        lock_timeout_s: How long a write (or a reload) waits for the directory's lock before
            raising :class:`BM25Error`.

    Raises:
        BM25Error: The directory cannot be created or the index cannot be opened.
    """

    backend = "tantivy"

    def __init__(self, path: Path, *, lock_timeout_s: float = 60.0) -> None:
        self.path = Path(path)
        self.lock_timeout_s = lock_timeout_s
        self._lock_path = self.path / LOCK_FILE_NAME
        self._schema = _build_schema()
        self._analyzer = _analyzer()
        self._thread_lock = threading.Lock()
        try:
            self.path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise BM25Error(
                f"cannot create the Tantivy index directory {self.path}: {exc}"
            ) from exc
        # Creating the index writes meta.json: do it under the writer lock so two processes
        # opening a fresh directory at once do not both try to create it.
        with self._file_lock(exclusive=True):
            try:
                index = self._open_index()
            except Exception as exc:
                hint = ""
                if "schema does not match" in str(exc):
                    hint = (
                        " (the index was built with a different schema; remove the directory "
                        "and re-ingest to rebuild it)"
                    )
                raise BM25Error(
                    f"cannot open the Tantivy index at {self.path}: {exc}{hint}"
                ) from exc
        self._index: tantivy.Index | None = index

    # ------------------------------------------------------------------ protocol

    def index(self, documents: Sequence[BM25Document]) -> None:
        """Upsert ``documents`` by ``chunk_id`` in one commit; visible once this returns.

        Args:
            documents: The chunks to (re)index. A ``chunk_id`` repeated in the batch keeps
                its last occurrence.

        Raises:
            BM25Error: Lock timeout or a Tantivy failure (nothing of the batch is committed).
        """
        latest: dict[str, BM25Document] = {}
        for doc in documents:
            latest.pop(doc.chunk_id, None)  # keep batch order of the last occurrence
            latest[doc.chunk_id] = doc
        if not latest:
            return

        def write(writer: tantivy.IndexWriter) -> None:
            for doc in latest.values():
                # Deletes only hit documents added before them (by opstamp), so the add below
                # survives: delete-then-add is an upsert within a single commit.
                writer.delete_documents_by_term("chunk_id", doc.chunk_id)
                writer.add_document(self._to_tantivy(doc))

        self._write("index", write)

    def delete_documents(self, doc_ids: Sequence[str]) -> None:
        """Remove every chunk of the given documents in one commit (unknown ids are fine).

        Raises:
            BM25Error: Lock timeout or a Tantivy failure.
        """
        unique = list(dict.fromkeys(doc_ids))
        if not unique:
            return

        def write(writer: tantivy.IndexWriter) -> None:
            for doc_id in unique:
                writer.delete_documents_by_term("doc_id", doc_id)

        self._write("delete", write)

    def replace_documents(self, doc_ids: Sequence[str], documents: Sequence[BM25Document]) -> None:
        """Make ``documents`` the only entries of ``doc_ids``, in one commit (readers see
        the old entries until it lands, then the new ones only).

        Raises:
            ValueError: A document's ``doc_id`` is not one of ``doc_ids``.
            BM25Error: Lock timeout or a Tantivy failure (nothing is committed).
        """
        unique = list(dict.fromkeys(doc_ids))
        stray = sorted({d.doc_id for d in documents} - set(unique))
        if stray:
            raise ValueError(f"documents of {stray} are not among the replaced doc_ids")
        latest = {doc.chunk_id: doc for doc in documents}
        if not unique:
            return

        def write(writer: tantivy.IndexWriter) -> None:
            # a delete hits only what was added before it (by opstamp): the adds survive
            for doc_id in unique:
                writer.delete_documents_by_term("doc_id", doc_id)
            for doc in latest.values():
                writer.add_document(self._to_tantivy(doc))

        self._write("replace", write)

    def search(self, query: str, k: int) -> list[BM25Hit]:
        """Best ``k`` chunks for ``query`` (BM25, OR of its words over ``search_text``).

        The query is reduced to plain words first (see
        :func:`~varagity.stores.bm25.analysis.query_terms`), so query-syntax characters never
        raise; an empty or syntax-only query returns ``[]``.

        Raises:
            BM25Error: A Tantivy failure while searching.
        """
        if k <= 0 or not query or not query.strip():
            return []
        tantivy_query = self._build_query(query)
        if tantivy_query is None:
            return []
        searcher = self._fresh_searcher()

        def run() -> list[BM25Hit]:
            result = searcher.search(tantivy_query, limit=k)
            return [self._to_hit(searcher.doc(address), score) for score, address in result.hits]

        return self._call("search", run)

    def count(self) -> int:
        """Number of indexed chunks, including commits made by other processes."""
        searcher = self._fresh_searcher()
        return int(searcher.num_docs)

    def chunk_ids(self, doc_ids: Sequence[str] | None = None) -> dict[str, str]:
        """``chunk_id -> doc_id`` of every indexed chunk, or of ``doc_ids``' chunks.

        Raises:
            BM25Error: A Tantivy failure while reading.
        """
        searcher = self._fresh_searcher()
        if doc_ids is None:
            query = tantivy.Query.all_query()
        else:
            wanted = sorted(set(doc_ids))
            if not wanted:
                return {}
            query = tantivy.Query.boolean_query(
                [
                    (tantivy.Occur.Should, tantivy.Query.term_query(self._schema, "doc_id", d))
                    for d in wanted
                ]
            )

        def run() -> dict[str, str]:
            limit = max(1, int(searcher.num_docs))
            hits = searcher.search(query, limit=limit, count=False).hits
            out: dict[str, str] = {}
            for _, address in hits:
                stored = searcher.doc(address)
                out[str(stored.get_first("chunk_id"))] = str(stored.get_first("doc_id"))
            return out

        return self._call("chunk listing", run)

    def ping(self) -> str:
        """Check the directory is present, writable and its index readable.

        Returns:
            A short status line.

        Raises:
            BM25Error: The store is closed, the directory is missing or not writable, or the
                index cannot be read.
        """
        if not self.path.is_dir():
            raise BM25Error(f"Tantivy index directory {self.path} does not exist")
        if not os.access(self.path, os.W_OK | os.X_OK):
            raise BM25Error(f"Tantivy index directory {self.path} is not writable")
        if not tantivy.Index.exists(str(self.path)):
            raise BM25Error(f"no Tantivy index (meta.json) in {self.path}")
        return f"tantivy index at {self.path}: {self.count()} chunks"

    def close(self) -> None:
        """Drop the index handle (readers, mmaps). Idempotent; later calls raise BM25Error."""
        with self._thread_lock:
            self._index = None

    def __enter__(self) -> TantivyBM25Store:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"TantivyBM25Store(path={str(self.path)!r})"

    # ------------------------------------------------------------------ internals

    def _open_index(self) -> tantivy.Index:
        index = tantivy.Index(self._schema, path=str(self.path), reuse=True)
        index.register_tokenizer(_SEARCH_TOKENIZER, _analyzer())
        # Manual reloads: we reload before each read (picking up other processes' commits)
        # instead of running a file watcher thread per store.
        index.config_reader(reload_policy="manual")
        return index

    def _require_index(self) -> tantivy.Index:
        index = self._index
        if index is None:
            raise BM25Error(f"the Tantivy BM25 store at {self.path} is closed")
        return index

    def _call(self, what: str, fn: Callable[[], _T]) -> _T:
        """Run ``fn()``, turning any Tantivy exception into a BM25Error naming the path."""
        try:
            return fn()
        except BM25Error:
            raise
        except Exception as exc:  # tantivy raises ValueError/RuntimeError/OSError
            raise BM25Error(f"Tantivy {what} failed on index {self.path}: {exc}") from exc

    @contextmanager
    def _file_lock(self, *, exclusive: bool) -> Iterator[None]:
        """Hold ``flock`` on the lock file (exclusive for writers, shared for reloads)."""
        mode = fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH
        try:
            fd = os.open(self._lock_path, os.O_RDWR | os.O_CREAT, 0o666)
        except OSError as exc:
            try:  # a read-only directory still allows a shared lock on an existing file
                if exclusive:
                    raise
                fd = os.open(self._lock_path, os.O_RDONLY)
            except OSError:
                raise BM25Error(f"cannot open the lock file {self._lock_path}: {exc}") from exc
        try:
            deadline = time.monotonic() + self.lock_timeout_s
            while True:
                try:
                    fcntl.flock(fd, mode | fcntl.LOCK_NB)
                    break
                except OSError as exc:
                    if exc.errno not in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                        raise BM25Error(f"cannot lock {self._lock_path}: {exc}") from exc
                    if time.monotonic() >= deadline:
                        raise BM25Error(
                            f"timed out after {self.lock_timeout_s:g}s waiting for the "
                            f"Tantivy writer lock {self._lock_path} (another process is "
                            "writing to this index)"
                        ) from None
                    time.sleep(_LOCK_POLL_S)
            try:
                yield
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    def _write(self, what: str, body: Callable[[tantivy.IndexWriter], None]) -> None:
        """Create a writer under the lock, run ``body(writer)``, commit once, consume it."""
        with self._thread_lock, self._file_lock(exclusive=True):
            index = self._require_index()
            writer = self._acquire_writer(index)
            try:
                self._call(what, lambda: body(writer))
                self._call(f"{what} commit", writer.commit)
            except BaseException:
                with contextlib.suppress(Exception):
                    writer.rollback()
                raise
            finally:
                # Consumes the writer: joins merge threads, runs GC, releases Tantivy's
                # own lockfile -- all before our flock is released.
                with contextlib.suppress(Exception):
                    writer.wait_merging_threads()
            self._sweep_unreferenced_files()

    def _sweep_unreferenced_files(self) -> None:
        """Delete segment files the committed ``meta.json`` does not reference.

        Called with the exclusive lock held and the writer consumed, so no writer (and no
        merge) is producing files. A reader of another process that still maps a deleted
        file keeps it open (POSIX); one racing the sweep in a reload retries (see
        ``_fresh_searcher``).
        """
        try:
            meta = json.loads((self.path / "meta.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return  # nothing committed yet (or unreadable): nothing is known to be dead
        live: dict[str, int | None] = {}
        for segment in meta.get("segments", []):
            deletes = segment.get("deletes") or {}
            live[segment["segment_id"].replace("-", "")] = deletes.get("opstamp")
        for entry in os.scandir(self.path):
            match = _SEGMENT_FILE.match(entry.name)
            if match is None:
                continue
            segment_id, del_opstamp = match.group(1), match.group(2)
            dead = segment_id not in live or (
                del_opstamp is not None and int(del_opstamp) != live[segment_id]
            )
            if dead:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(entry.path)

    def _acquire_writer(self, index: tantivy.Index) -> tantivy.IndexWriter:
        """Open the IndexWriter, retrying a ``LockBusy`` until the lock timeout.

        With our flock held, ``LockBusy`` only happens if a process that does not use this
        class (or an older version of it) holds a writer; waiting is the right answer.
        """
        deadline = time.monotonic() + self.lock_timeout_s
        while True:
            try:
                return index.writer(heap_size=_WRITER_HEAP_BYTES, num_threads=1)
            except Exception as exc:
                busy = "LockBusy" in str(exc) or "Lockfile" in str(exc)
                if not busy:
                    raise BM25Error(f"cannot open a Tantivy writer on {self.path}: {exc}") from exc
                if time.monotonic() >= deadline:
                    raise BM25Error(
                        f"Tantivy index {self.path} is locked by another writer "
                        f"(waited {self.lock_timeout_s:g}s): {exc}"
                    ) from exc
                time.sleep(_LOCK_POLL_S * 4)

    def _fresh_searcher(self) -> tantivy.Searcher:
        """Reload the reader (to see every process's latest commit) and return a searcher.

        Reloads take no lock, so searches never wait behind a write.  The one race -- another
        process's writer garbage-collecting segment files between our read of ``meta.json``
        and the opening of those files -- makes the reload fail (the old searcher stays
        valid); it is retried, last under the shared lock, which excludes writers.
        """
        index = self._require_index()

        def reload() -> tantivy.Searcher:
            index.reload()
            return index.searcher()

        for attempt in range(_RELOAD_RETRIES):
            try:
                return reload()
            except Exception:
                time.sleep(_LOCK_POLL_S * (attempt + 1))
        with self._file_lock(exclusive=False):
            return self._call("reload", reload)

    def _build_query(self, query: str) -> tantivy.Query | None:
        """OR of term queries for every analyzed query word over ``search_text``.

        The query is never handed to Tantivy's query parser: words come from
        :func:`query_terms` and are analyzed with the indexing chain, so no user input
        can be syntax.
        """
        tokens: list[str] = []
        seen: set[str] = set()
        for word in query_terms(query):
            for token in self._analyzer.analyze(word):
                if token not in seen:
                    seen.add(token)
                    tokens.append(token)
        if not tokens:
            return None
        clauses = [
            (tantivy.Occur.Should, tantivy.Query.term_query(self._schema, _SEARCH_FIELD, token))
            for token in tokens
        ]
        return tantivy.Query.boolean_query(clauses)

    @staticmethod
    def _to_tantivy(doc: BM25Document) -> tantivy.Document:
        return tantivy.Document(
            chunk_id=doc.chunk_id,
            doc_id=doc.doc_id,
            original_index=int(doc.original_index),
            content=doc.content,
            contextualized_content=doc.contextualized_content,
            search_text=search_text(doc.content, doc.contextualized_content),
        )

    @staticmethod
    def _to_hit(stored: tantivy.Document, score: float) -> BM25Hit:
        def first(name: str, default: Any) -> Any:
            value = stored.get_first(name)
            return default if value is None else value

        return BM25Hit(
            chunk_id=str(first("chunk_id", "")),
            doc_id=str(first("doc_id", "")),
            original_index=int(first("original_index", 0)),
            score=float(score),
            content=str(first("content", "")),
            contextualized_content=str(first("contextualized_content", "")),
        )
