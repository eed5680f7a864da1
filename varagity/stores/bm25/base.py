"""The BM25 store contract shared by the embedded Tantivy index and Elasticsearch.

A BM25 store keeps identity + text only (``chunk_id``, ``doc_id``, ``original_index``,
``content``, ``contextualized_content``); full chunk rows are hydrated from Postgres by
``(doc_id, original_index)``. Documents are addressed by ``chunk_id`` so re-indexing
overwrites instead of duplicating.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from varagity.records import ChunkRecord


@dataclass(frozen=True, slots=True)
class BM25Document:
    """One chunk as the sparse index stores it."""

    chunk_id: str
    doc_id: str
    original_index: int
    content: str
    contextualized_content: str

    @classmethod
    def of(cls, record: ChunkRecord) -> BM25Document:
        """The index's copy of a stored chunk (every field is a chunks column, so the
        index can always be rebuilt from the rows)."""
        return cls(
            chunk_id=record.chunk_id,
            doc_id=record.doc_id,
            original_index=record.original_index,
            content=record.content,
            contextualized_content=record.contextualized_content,
        )


@dataclass(frozen=True, slots=True)
class BM25Hit:
    """One search result: identity, text and the BM25 relevance score."""

    chunk_id: str
    doc_id: str
    original_index: int
    score: float
    content: str
    contextualized_content: str


class BM25Error(RuntimeError):
    """A BM25 backend failed (unreachable server, corrupt index, lock timeout...)."""


@runtime_checkable
class BM25Store(Protocol):
    """What ingest, the sensor's purge and the retrievers need from a sparse index."""

    backend: str

    def index(self, documents: Sequence[BM25Document]) -> None:
        """Upsert documents by ``chunk_id``; visible to searches once this returns."""

    def delete_documents(self, doc_ids: Sequence[str]) -> None:
        """Remove every chunk of the given documents (no error for unknown ids)."""

    def replace_documents(self, doc_ids: Sequence[str], documents: Sequence[BM25Document]) -> None:
        """Make ``documents`` the only entries of ``doc_ids``: every other entry of those
        documents leaves the index (the chunks a rewrite no longer has, or ones a write
        that crashed left behind), and the documents stay searchable throughout. Raises
        ``ValueError`` for a document of another ``doc_id``."""

    def search(self, query: str, k: int) -> list[BM25Hit]:
        """Best ``k`` chunks for ``query`` over content and contextualized_content."""

    def count(self) -> int:
        """Number of indexed chunks."""

    def chunk_ids(self, doc_ids: Sequence[str] | None = None) -> dict[str, str]:
        """``chunk_id -> doc_id`` of every indexed chunk (of ``doc_ids`` only, when given):
        what the consistency checks (``varagity doctor``) compare with Postgres."""

    def ping(self) -> str:
        """Raise :class:`BM25Error` when unusable; otherwise a short status line."""

    def close(self) -> None:
        """Release handles (readers, clients)."""
