"""One process's door to the message graph: the readers' engine and the single writer.

The graph has one writer and many readers in different processes: the graph build
(a Dagster run worker, on a concurrency pool of one) writes the working directory,
the API (chat turns, the graph view) reads it. A reader never waits for a build:

* LightRAG saves every file whole (temp sibling + ``os.replace``), so a reader
  never reads a torn file;
* a reader's engine is reopened when the working directory's files changed (their
  names, sizes and modification times: :func:`workdir_stamp`), so a finished build
  is seen without a restart. An open whose files changed while it loaded is done
  again, so what a reader holds is the files of one moment.

The graph has one writer across processes: a build holds the graph's write lock
(:func:`varagity.corpus_lock.graph_write_lock`) and one that meets another writer (a
build, a backup export or restore) fails at once with ``CorpusBusy``. A restored backup
replaces the working directory whole (:meth:`GraphService.replace_workdir`); what a
killed replacement left is healed when a service is constructed.

``GRAPH_ENABLED=false`` makes every call raise :class:`GraphDisabled`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, TypeVar

from varagity.config import Settings
from varagity.corpus_lock import graph_write_lock
from varagity.graph.base import (
    FAILED,
    PENDING,
    PROCESSED,
    PROCESSING,
    ApplyReport,
    EngineDay,
    EngineFormat,
    EntitySummary,
    GraphEngine,
    GraphEngineClosed,
    Neighbourhood,
)
from varagity.graph.day_rank import DayIndex, rank_days, with_message_days, with_named_days
from varagity.graph.exchange import with_exchange
from varagity.graph.manifest import read_manifest
from varagity.graph.order import with_order
from varagity.graph.registry import open_engine, running_engine_format, workdir_for
from varagity.graph.skeleton import Skeleton, with_skeleton
from varagity.graph.swap import commit, heal_graph_workdir, roll_back, swap_in
from varagity.graph.types import DayCard, GraphDiff, GraphRetrieval, split_doc_key

if TYPE_CHECKING:
    from varagity.models.chat import ChatClient
    from varagity.models.embeddings import EmbeddingClient
    from varagity.models.protocols import Completer

T = TypeVar("T")

#: How many times a reader's open is retried when the files change while it loads.
_OPEN_ATTEMPTS = 3


class GraphDisabled(RuntimeError):
    """The message graph is switched off (``GRAPH_ENABLED=false``)."""

    code = "graph_disabled"

    def __init__(self) -> None:
        super().__init__(
            "the message graph is disabled (GRAPH_ENABLED=false); set GRAPH_ENABLED=true "
            "to build or read it"
        )


class DayDescription(Protocol):
    """What the manifest knows of a transcript day (its entry for a doc_key)."""

    @property
    def thread_name(self) -> str: ...

    @property
    def span(self) -> str: ...

    @property
    def message_guids(self) -> Sequence[str]: ...


#: doc_key -> the manifest's description of that day, or None when it has none.
Describe = Callable[[str], DayDescription | None]


@dataclass(frozen=True)
class GraphSize:
    """The numbers of the size summary the engine can give (the manifest adds
    message guids): entities, relations, processed documents, documents by status."""

    entities: int
    relations: int
    docs: int
    statuses: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class BuildResult:
    """What :meth:`GraphService.build` did and the graph's size after it."""

    report: ApplyReport
    size: GraphSize
    seconds: float


def workdir_stamp(workdir: Path) -> tuple[tuple[str, int, int], ...]:
    """The working directory's files as (name, mtime_ns, size), in name order.

    In-flight temp files (``<file>.tmp.<pid>...``) and Varagity's own sidecars
    (``varagity_*``) are left out: neither changes what the engine reads.
    """
    try:
        entries = list(workdir.iterdir())
    except FileNotFoundError:
        return ()
    stamp = []
    for path in entries:
        if ".tmp." in path.name or path.name.startswith("varagity_"):
            continue
        try:
            st = path.stat()
        except FileNotFoundError:
            continue
        if path.is_file():
            stamp.append((path.name, st.st_mtime_ns, st.st_size))
    return tuple(sorted(stamp))


def size_of(engine: GraphEngine) -> GraphSize:
    """The size summary numbers of ``engine``'s graph."""
    entities, relations = engine.counts()
    by_status = {PROCESSED: 0, PENDING: 0, PROCESSING: 0, FAILED: 0}
    for status in engine.statuses().values():
        by_status[status] = by_status.get(status, 0) + 1
    return GraphSize(entities, relations, by_status[PROCESSED], by_status)


class GraphService:
    """The message graph of one process: a cached reader and the single writer."""

    def __init__(
        self,
        settings: Settings,
        chat: ChatClient,
        embedder: EmbeddingClient,
        *,
        describe: Describe | None = None,
        reader: Completer | None = None,
    ) -> None:
        """Create the service (nothing is opened until it is used; a working directory
        a killed restore left half-swapped is put right first).

        Args:
            settings: ``GRAPH_*`` settings (where the graph lives, the engine, the switch).
            chat: The chat client the engine extracts with.
            embedder: The embedding client of the engine's indexes.
            describe: The manifest lookup that names each cited day's thread, span
                and messages (:meth:`retrieve`); without it day cards keep what the
                engine knows (thread and span, no message guids).
            reader: The model that reads the best exchange of a graph turn
                (:func:`~varagity.graph.exchange.with_exchange`); ``chat`` when None.
        """
        self.settings = settings
        self.workdir = workdir_for(settings)
        self._chat = chat
        self._embedder = embedder
        self._describe = describe
        self._exchange_reader: Completer = reader or chat
        self._lock = threading.Lock()  # swaps of the reader
        self._write_lock = threading.RLock()  # one build at a time in this process
        self._writing = 0  # depth of writing() in this process
        self._reader: GraphEngine | None = None
        self._writer: GraphEngine | None = None  # during a build, reads use it
        self._reader_stamp: tuple[tuple[str, int, int], ...] = ()
        # every day's messages, for ranking them (the engine and files it was read from)
        self._index_lock = threading.Lock()
        self._index: tuple[int, tuple[tuple[str, int, int], ...], DayIndex] | None = None
        heal_graph_workdir(settings)

    def _check_enabled(self) -> None:
        if not self.settings.GRAPH_ENABLED:
            raise GraphDisabled()

    # --- reading ------------------------------------------------------------------
    def reader(self) -> GraphEngine:
        """The read-only engine, reopened first when the working directory changed.

        Raises:
            GraphDisabled: ``GRAPH_ENABLED=false``.
            GraphEngineError: The engine could not open the working directory.
        """
        self._check_enabled()
        with self._lock:
            if self._writer is not None:
                return self._writer
            stamp = workdir_stamp(self.workdir)
            if self._reader is not None and stamp == self._reader_stamp:
                return self._reader
            self._close_reader()
            for attempt in range(_OPEN_ATTEMPTS):
                engine = open_engine(
                    self.settings, chat=self._chat, embedder=self._embedder, writer=False
                )
                loaded = workdir_stamp(self.workdir)
                if loaded == stamp or attempt == _OPEN_ATTEMPTS - 1:
                    break
                engine.close()  # a save landed while it loaded: load the newer files
                stamp = loaded
            self._reader, self._reader_stamp = engine, loaded
            return engine

    def _close_reader(self) -> None:
        if self._reader is not None:
            reader, self._reader = self._reader, None
            reader.close()

    def _read(self, call: Callable[[GraphEngine], T]) -> T:
        try:
            return call(self.reader())
        except GraphEngineClosed:  # replaced by a newer reader between the two
            return call(self.reader())

    def retrieve(self, question: str, *, top_k: int | None = None) -> GraphRetrieval:
        """The engine's entities, relations and transcript days for ``question``: the
        engine's ``GRAPH_DAY_CANDIDATES`` days ranked again by their messages, the first
        ``GRAPH_CHUNK_TOP_K`` kept (:mod:`varagity.graph.day_rank`), each day card
        completed from the manifest (thread name, span, message guids); a question
        no computed answer is found for is answered with the exchange that answers it
        best when there is a clear one, or abstains when the model reads no answer in
        it (:mod:`varagity.graph.exchange`).

        Raises:
            GraphDisabled: ``GRAPH_ENABLED=false``.
        """
        k = top_k or self.settings.GRAPH_TOP_K
        keep = self.settings.GRAPH_CHUNK_TOP_K
        candidates = max(keep, self.settings.GRAPH_DAY_CANDIDATES)

        def search(engine: GraphEngine) -> tuple[GraphRetrieval, DayIndex]:
            return engine.retrieve(question, top_k=k, days=candidates), self._day_index(engine)

        found, index = self._read(search)
        skeleton = self.skeleton()
        found = with_message_days(found, index, question, candidates)
        found = with_skeleton(found, skeleton, question)
        found = replace(found, days=rank_days(question, found.days, keep, index))
        found = with_named_days(found, index, question, keep)
        found = with_order(found, question, index, skeleton, keep)
        found = self._described(found)
        return with_exchange(
            found,
            question,
            self._embedder,
            self._exchange_reader,
            min_score=self.settings.GRAPH_EXCHANGE_MIN_SCORE,
            read_score=self.settings.GRAPH_EXCHANGE_READ_SCORE,
        )

    def _described(self, found: GraphRetrieval) -> GraphRetrieval:
        """``found`` with each day card completed from the manifest."""
        if self._describe is None:
            return found
        days = []
        for card in found.days:
            known = self._describe(card.doc_key)
            if known is not None:
                card = replace(
                    card,
                    thread_name=known.thread_name or card.thread_name,
                    span=known.span or card.span,
                    message_guids=tuple(known.message_guids),
                )
            days.append(card)
        return replace(found, days=tuple(days))

    def _day_index(self, engine: GraphEngine) -> DayIndex:
        """Every day ``engine`` holds, indexed by its messages (built again when the
        engine or its files changed)."""
        stamp = workdir_stamp(self.workdir)
        with self._index_lock:
            if self._index is None or self._index[:2] != (id(engine), stamp):
                cards = [
                    DayCard(day.doc_key, day.thread_name, split_doc_key(day.doc_key)[1], day.text)
                    for day in engine.transcripts()
                ]
                self._index = (id(engine), stamp, DayIndex(cards))
            return self._index[2]

    def skeleton(self) -> Skeleton:
        """Who wrote in which conversation on which day, as the build manifest records
        it (:mod:`varagity.graph.skeleton`)."""
        return Skeleton.of(read_manifest(self.workdir))

    def neighbourhood(
        self, entity: str, *, depth: int = 1, limit: int = 50
    ) -> Neighbourhood | None:
        """``entity`` and what lies within ``depth`` hops of it (the graph view); None
        when the graph has no entity of that name. A person or conversation of the
        skeleton has its writers, conversations and "wrote in/with" relations, whatever
        the extraction made of it."""
        found = self._read(lambda engine: engine.neighbourhood(entity, depth=depth, limit=limit))
        bones = self.skeleton().neighbourhood(entity)
        if bones is None:
            return found
        if found is None:
            return bones
        known = {e.name.casefold() for e in found.entities}
        return replace(
            found,
            entities=(
                *found.entities,
                *(e for e in bones.entities if e.name.casefold() not in known),
            ),
            relations=(*bones.relations, *found.relations),
        )

    def entities(
        self, query: str | None = None, *, limit: int = 50
    ) -> tuple[list[EntitySummary], int]:
        """Entities whose name contains ``query`` (or all), the most connected first, at
        most ``limit``; and how many entities the graph holds (the graph view). The
        skeleton's people and conversations are among them."""
        listed, found = self._read(lambda engine: engine.entities(query, limit=limit))
        bones = self.skeleton().summaries()
        if not bones:
            return listed, found
        # the total counts the whole graph whatever the query: the engine's entities
        # and the skeleton's it does not hold
        everything, total = self._read(lambda engine: engine.entities(None, limit=10**9))
        held = {e.name.casefold() for e in everything}
        extra = [e for e in bones if e.name.casefold() not in held]
        if query:
            extra = [e for e in extra if query.casefold() in e.name.casefold()]
        merged = sorted([*listed, *extra], key=lambda e: -e.degree)[:limit]
        return merged, total + sum(1 for e in bones if e.name.casefold() not in held)

    def day(self, doc_key: str) -> EngineDay | None:
        """One transcript day as the engine holds it (text and status); None when the
        graph holds no such day."""
        return self._read(lambda engine: engine.day(doc_key))

    def statuses(self) -> dict[str, str]:
        """doc_key -> the engine's status of that transcript."""
        return self._read(lambda engine: engine.statuses())

    def size(self) -> GraphSize:
        """The graph's size summary numbers, as the working directory holds it now."""
        return self._read(size_of)

    def engine_format(self) -> EngineFormat:
        """The engine this stack writes with (no working directory is opened)."""
        return running_engine_format(self.settings)

    # --- writing ------------------------------------------------------------------
    def build(
        self,
        diff: GraphDiff,
        *,
        progress: Callable[[str], None] | None = None,
        forget: bool = False,
    ) -> BuildResult:
        """Apply ``diff`` as the graph's single writer and report the size after it.

        Only one process may write a working directory (the ``graph_workdir`` asset
        runs on a pool of one); within this process builds take turns. One engine is
        open per process at a time, so the reader is closed first and reads in this
        process use the writer's engine until the build ends. ``forget`` deletes the
        cached extraction replies of the documents it deletes (:mod:`varagity.forget`).

        Raises:
            GraphDisabled: ``GRAPH_ENABLED=false``.
            GraphEngineError: The engine could not open the working directory.
            CorpusBusy: Another process writes the graph (a build, a backup).
        """
        self._check_enabled()
        with self.writing():
            with self._lock:
                self._close_reader()
                started = time.monotonic()
                engine = open_engine(
                    self.settings, chat=self._chat, embedder=self._embedder, writer=True
                )
                self._writer = engine
            try:
                report = engine.apply(diff, progress=progress, forget=forget)
                size = size_of(engine)
            finally:
                with self._lock:
                    self._writer = None
                    engine.close()
            return BuildResult(report, size, time.monotonic() - started)

    @contextmanager
    def writing(self, holder: str = "a graph build") -> Iterator[None]:
        """Be the graph's writer for the block: the process-wide write lock, taken once
        (re-entrant in this service), so a build and what records it (the manifest, the
        size summary) are one write no export or restore can come between.

        Raises:
            CorpusBusy: Another process writes the graph (a build, a backup).
        """
        with self._write_lock:
            if self._writing:
                self._writing += 1
                try:
                    yield
                finally:
                    self._writing -= 1
                return
            with graph_write_lock(self.settings, holder=holder):
                self._writing = 1
                try:
                    yield
                finally:
                    self._writing = 0

    def replace_workdir(self, staged: Path, run: str) -> GraphSize:
        """Swap ``staged`` in as the working directory and open it; returns its size.

        The caller holds the graph's write lock. Reads in this process wait for the
        swap. When the new graph does not open, the previous one is put back and the
        error raised; once it opened, the previous one is deleted.
        """
        with self._write_lock, self._lock:
            self._close_reader()
            swap_in(self.workdir, staged, run)
            try:
                engine = open_engine(
                    self.settings, chat=self._chat, embedder=self._embedder, writer=False
                )
                try:
                    size = size_of(engine)
                finally:
                    engine.close()
            except BaseException:
                roll_back(self.workdir, run)
                raise
            commit(self.workdir, run)
            return size

    def close(self) -> None:
        """Close the reader (a later call opens it again)."""
        with self._lock:
            self._close_reader()
