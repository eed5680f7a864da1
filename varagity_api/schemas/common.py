"""Shapes shared across resources: errors, methods and evidence."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from varagity.records import RetrievalTrace, RetrievedChunk

Method = Literal["semantic", "bm25", "hybrid", "reranked", "hyde"]


class ErrorBody(BaseModel):
    """Every error response: a machine-readable code and a human message."""

    code: str
    message: str


class Source(BaseModel):
    """One piece of evidence as the client shows it."""

    n: int = Field(description="1-based number the answer cites as [n].")
    chunk_id: str
    doc_id: str
    relative_path: str
    file_name: str
    file_type: str
    page: int | None
    extraction: str
    chunk_index: int
    content: str
    context: str | None
    score: float
    trace: RetrievalTrace | None


def source_from(chunk: RetrievedChunk, n: int) -> Source:
    """The wire form of a retrieved chunk."""
    rec = chunk.record
    return Source(
        n=n,
        chunk_id=rec.chunk_id,
        doc_id=rec.doc_id,
        relative_path=rec.relative_path,
        file_name=rec.file_name,
        file_type=rec.file_type,
        page=rec.page,
        extraction=rec.extraction,
        chunk_index=rec.chunk_index,
        content=rec.content,
        context=rec.context,
        score=chunk.score,
        trace=chunk.trace,
    )
