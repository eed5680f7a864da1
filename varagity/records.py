"""Identity rules and the records every store and retriever agrees on.

Identity (spec, data model):

* ``content_hash = sha256(file_bytes)`` - bytes, not parsed text, so an unchanged
  file is skipped before it is parsed;
* ``doc_id = sha256(f"{relative_path}:{content_hash}")[:16]`` - the path relative to
  ``DOCS_PATH`` so ids survive moving the corpus between machines;
* ``chunk_id = f"{doc_id}::{chunk_index}"`` - primary key in Postgres, ``_id`` in the
  BM25 index;
* ``original_index`` - a corpus-wide monotonic counter, the fusion key together with
  ``doc_id``.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import PurePosixPath

from pydantic import BaseModel, Field

#: The reserved folder for backups at the root of the corpus and message folders: never
#: corpus, never a message archive.
RESERVED_DIR = "varagity-exports"


def content_hash(data: bytes) -> str:
    """Hex sha256 of a file's raw bytes."""
    return hashlib.sha256(data).hexdigest()


def doc_id_for(relative_path: str, file_hash: str) -> str:
    """Stable per-document id from the corpus-relative path and the byte hash."""
    return hashlib.sha256(f"{relative_path}:{file_hash}".encode()).hexdigest()[:16]


def chunk_id_for(doc_id: str, chunk_index: int) -> str:
    """Per-chunk id: ``doc_id::chunk_index``."""
    if chunk_index < 0:
        raise ValueError(f"chunk_index must be >= 0, got {chunk_index}")
    return f"{doc_id}::{chunk_index}"


def normalize_relative_path(relative_path: str) -> str:
    """POSIX form of a corpus-relative path; refuses absolute paths and ``..`` escapes."""
    posix = PurePosixPath(relative_path.replace("\\", "/"))
    if posix.is_absolute() or ".." in posix.parts or not posix.parts:
        raise ValueError(f"{relative_path!r} is not a path inside the corpus")
    return posix.as_posix()


def utcnow() -> datetime:
    """Timezone-aware now, in UTC."""
    return datetime.now(UTC)


class ChunkRecord(BaseModel):
    """Everything stored about one chunk (the ``chunks.metadata`` JSONB holds it whole)."""

    doc_id: str
    chunk_id: str
    original_index: int = Field(ge=0)
    chunk_index: int = Field(ge=0)
    source: str = Field(description="Absolute path of the file (provenance, never identity).")
    relative_path: str
    file_name: str
    file_type: str
    page: int | None = Field(
        default=None, description="The page this chunk starts on (slide/sheet for decks)."
    )
    char_start: int | None = Field(default=None, ge=0, description="Offset in the parsed text.")
    char_end: int | None = Field(default=None, ge=0)
    content: str
    context: str | None = None
    contextualized_content: str
    chunk_size: int
    chunk_overlap: int
    chunking_strategy: str
    embedding_model: str
    n_tokens: int = Field(ge=0)
    content_hash: str
    created_at: datetime = Field(default_factory=utcnow)
    file_created_at: datetime | None = None
    file_modified_at: datetime | None = None
    extraction: str = "text"
    heading_path: str | None = None
    header: str | None = Field(
        default=None,
        description="Deterministic contextual header (path, headings, code symbol) indexed "
        "with the chunk.",
    )


class RetrievalTrace(BaseModel):
    """Why a chunk ranked where it did (query-time only, never stored on chunk rows).

    All ranks are 1-based. Single-arm retrievers report their arm's rank and score as
    the fused values.
    """

    semantic_rank: int | None = None
    semantic_score: float | None = None
    bm25_rank: int | None = None
    bm25_score: float | None = None
    fused_score: float
    fused_rank: int
    rerank_score: float | None = None
    rerank_delta: int | None = None
    final_rank: int


@dataclass(frozen=True, slots=True)
class Quote:
    """The verbatim text of passage ``source`` (1-based) that an answer sentence rests on
    (:mod:`varagity.generation.quotes`).

    Attributes:
        source: The passage's number as the answer cites it (``[source]``).
        text: The passage's own text, ``passage[start:end]``.
        start: Offset of the quote in the passage's text.
        end: End offset (exclusive).
    """

    source: int
    text: str
    start: int
    end: int


class RetrievedChunk(BaseModel):
    """A chunk as a retriever returns it: the stored record, its score and its trace."""

    record: ChunkRecord
    score: float
    trace: RetrievalTrace | None = None

    @property
    def identity(self) -> tuple[str, int]:
        """The cross-store fusion key ``(doc_id, original_index)``."""
        return (self.record.doc_id, self.record.original_index)
