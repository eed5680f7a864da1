"""The graph-engine seam: what a message-graph engine must do (``GRAPH_ENGINE``).

An engine keeps its own storages in one working directory
(``GRAPH_STORAGE_PATH/<engine name>``), single-writer: only the graph build (the
``graph_workdir`` asset, on a Dagster pool of one) calls :meth:`GraphEngine.apply`;
reads (chat turns, the graph view) open the same directory read-only and never wait.
Engines call Varagity's own OpenAI-compatible chat and embedding clients, so they
work with the packaged local models and with any configured server.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from varagity.graph.types import GraphDiff, GraphEntity, GraphRelation, GraphRetrieval

#: An engine's per-document statuses (the resume ledger).
PROCESSED, PENDING, PROCESSING, FAILED = "processed", "pending", "processing", "failed"


@dataclass(frozen=True)
class EngineFormat:
    """Which engine wrote a working directory: its registry name, the package that
    implements it and that package's version (backups compare major.minor)."""

    name: str
    package: str
    version: str


@dataclass(frozen=True)
class ApplyReport:
    """What one :meth:`GraphEngine.apply` did."""

    inserted: tuple[str, ...] = ()
    deleted: tuple[str, ...] = ()
    failed: dict[str, str] | None = None  # doc_key -> reason
    # a model call that failed transiently during the apply (after the client's own
    # retries): the failed days may be the server's fault rather than their own
    model_outage: BaseException | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class EntitySummary:
    """An entity as the graph view lists it: how connected it is, and the transcript
    days (doc_keys) it was extracted from."""

    name: str
    type: str = ""
    description: str = ""
    degree: int = 0
    doc_keys: tuple[str, ...] = ()


@dataclass(frozen=True)
class Neighbourhood:
    """An entity and what lies within some hops of it (the graph view)."""

    center: str
    entities: tuple[GraphEntity, ...]
    relations: tuple[GraphRelation, ...]
    truncated: bool = False  # more lay within reach than the limit allowed

    @property
    def doc_keys(self) -> tuple[str, ...]:
        """The transcript days its entities and relations come from, first seen first."""
        keys = [k for entity in self.entities for k in entity.doc_keys]
        keys += [k for relation in self.relations for k in relation.doc_keys]
        return tuple(dict.fromkeys(keys))


@dataclass(frozen=True)
class EngineDay:
    """A transcript day as the engine holds it: the text it was given (without the
    engine's own caption) and its document status."""

    doc_key: str
    text: str
    status: str
    thread_name: str = ""


class GraphEngineError(RuntimeError):
    """An engine could not open its working directory or do what it was asked."""


class GraphEngineClosed(GraphEngineError):
    """The engine was closed (a reader replaced by a newer one, or shut down)."""


class GraphEngine(Protocol):
    """A message-graph engine over one working directory."""

    def apply(
        self,
        diff: GraphDiff,
        *,
        progress: Callable[[str], None] | None = None,
        forget: bool = False,
    ) -> ApplyReport:
        """Insert ``diff.new``, delete then reinsert ``diff.changed``, delete
        ``diff.removed``. Documents already processed are not redone; one left
        pending or failed by a killed build is picked up again (resume). With
        ``forget`` the engine's cached extraction replies of every deleted document go
        with it (a forgotten source; a build keeps them, to rebuild shared entities)."""
        ...

    def statuses(self) -> dict[str, str]:
        """doc_key -> one of PROCESSED / PENDING / PROCESSING / FAILED."""
        ...

    def retrieve(
        self, question: str, *, top_k: int = 20, days: int | None = None
    ) -> GraphRetrieval:
        """Entities, relations and at most ``days`` transcript days (None: the
        engine's setting) for ``question`` (no answer)."""
        ...

    def neighbourhood(
        self, entity: str, *, depth: int = 1, limit: int = 50
    ) -> Neighbourhood | None:
        """``entity`` (its exact name, else the one name equal to it ignoring case) and
        what is within ``depth`` hops of it, at most ``limit`` entities (the graph
        view); None when the graph has no such entity."""
        ...

    def entities(
        self, query: str | None = None, *, limit: int = 50
    ) -> tuple[list[EntitySummary], int]:
        """Entities whose name contains ``query`` (ignoring case; names starting with it
        first), or all of them, the most connected first, at most ``limit``; and how
        many entities the graph holds."""
        ...

    def day(self, doc_key: str) -> EngineDay | None:
        """One transcript day as the engine was given it; None when it holds no such day."""
        ...

    def transcripts(self) -> tuple[EngineDay, ...]:
        """Every processed transcript day as the engine was given it."""
        ...

    def counts(self) -> tuple[int, int]:
        """(entities, relations) in the graph."""
        ...

    def engine_format(self) -> EngineFormat:
        """The engine that writes this working directory."""
        ...

    def close(self) -> None:
        """Flush and release the working directory."""
        ...
