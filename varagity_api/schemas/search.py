"""Retrieval-only search bodies."""

from __future__ import annotations

from pydantic import BaseModel, Field

from varagity_api.schemas.common import Method, Source


class SearchRequest(BaseModel):
    """A retrieval-only query."""

    query: str = Field(min_length=1, max_length=4000)
    k: int = Field(default=5, ge=1, le=100)
    method: Method | None = Field(default=None, description="Defaults to RETRIEVAL_METHOD.")


class SearchResponse(BaseModel):
    """Ranked chunks with their traces and per-stage timings."""

    query: str
    method: Method
    results: list[Source]
    timings_ms: dict[str, float]
