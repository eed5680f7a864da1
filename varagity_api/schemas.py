"""The wire contract: request and response bodies, and the SSE event payloads."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from varagity.records import RetrievalTrace, RetrievedChunk

Method = Literal["semantic", "bm25", "hybrid", "reranked", "hyde"]


class ErrorBody(BaseModel):
    """Every error response: a machine-readable code and a human message."""

    code: str
    message: str


class ComponentHealth(BaseModel):
    """One dependency's state."""

    ok: bool
    detail: str


class HealthResponse(BaseModel):
    """Overall status plus each store, model server and Dagster."""

    status: Literal["ok", "degraded"]
    components: dict[str, ComponentHealth]


class SearchRequest(BaseModel):
    """A retrieval-only query."""

    query: str = Field(min_length=1, max_length=4000)
    k: int = Field(default=5, ge=1, le=100)
    method: Method | None = Field(default=None, description="Defaults to RETRIEVAL_METHOD.")


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


class SearchResponse(BaseModel):
    """Ranked chunks with their traces and per-stage timings."""

    query: str
    method: Method
    results: list[Source]
    timings_ms: dict[str, float]


class ChatRequest(BaseModel):
    """A question answered over the corpus, streamed as SSE."""

    question: str = Field(min_length=1, max_length=4000)
    k: int = Field(default=5, ge=1, le=20)
    method: Method | None = None


class RetrievalEvent(BaseModel):
    """First SSE event: the evidence the answer will cite."""

    query: str
    method: Method
    sources: list[Source]
    timings_ms: dict[str, float]


class TokenEvent(BaseModel):
    """An answer delta."""

    delta: str


class DoneEvent(BaseModel):
    """Last SSE event of a successful answer."""

    answer: str
    cited: list[int]
    timings_ms: dict[str, float]


class ErrorEvent(BaseModel):
    """In-band failure; the stream ends after it."""

    code: str
    message: str


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
