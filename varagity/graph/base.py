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
from dataclasses import dataclass
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


class GraphEngineError(RuntimeError):
    """An engine could not open its working directory or do what it was asked."""


class GraphEngineClosed(GraphEngineError):
    """The engine was closed (a reader replaced by a newer one, or shut down)."""


class GraphEngine(Protocol):
    """A message-graph engine over one working directory."""

    def apply(
        self, diff: GraphDiff, *, progress: Callable[[str], None] | None = None
    ) -> ApplyReport:
        """Insert ``diff.new``, delete then reinsert ``diff.changed``, delete
        ``diff.removed``. Documents already processed are not redone; one left
        pending or failed by a killed build is picked up again (resume)."""
        ...

    def statuses(self) -> dict[str, str]:
        """doc_key -> one of PROCESSED / PENDING / PROCESSING / FAILED."""
        ...

    def retrieve(self, question: str, *, top_k: int = 20) -> GraphRetrieval:
        """Entities, relations and transcript days for ``question`` (no answer)."""
        ...

    def neighbourhood(
        self, entity: str, *, depth: int = 1, limit: int = 50
    ) -> tuple[list[GraphEntity], list[GraphRelation]]:
        """``entity`` and what is within ``depth`` hops of it (the graph view)."""
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
