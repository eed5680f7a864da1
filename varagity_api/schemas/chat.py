"""Chat request and the SSE event payloads."""

from __future__ import annotations

from pydantic import BaseModel, Field

from varagity_api.schemas.common import Method, Source


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
