"""Chat request and the SSE event payloads of ``POST /api/chat``."""

from __future__ import annotations

from pydantic import BaseModel, Field

from varagity.config import ChatEngineName
from varagity_api.schemas.common import Method, Source


class ChatRequest(BaseModel):
    """A question answered over the corpus, streamed as SSE."""

    question: str = Field(min_length=1, max_length=4000)
    k: int = Field(default=5, ge=1, le=20)
    method: Method | None = Field(default=None, description="Default: RETRIEVAL_METHOD.")
    conversation_id: str | None = Field(
        default=None,
        min_length=1,
        max_length=64,
        description="Continue this conversation; omit it to start a new one.",
    )
    chat_engine: ChatEngineName | None = Field(
        default=None, description="Override CHAT_ENGINE for this turn."
    )


class RetrievalEvent(BaseModel):
    """First SSE event: the evidence the answer will cite, and how it was found."""

    conversation_id: str
    query: str = Field(description="What retrieval searched for.")
    condensed_query: str | None = Field(
        description="The chat engine's standalone rewrite when it drove retrieval; "
        "null when the question was searched as asked."
    )
    chat_engine: ChatEngineName
    method: Method
    sources: list[Source]
    timings_ms: dict[str, float]


class ReasoningEvent(BaseModel):
    """A delta of the model's ``<think>`` reasoning (reasoning models only)."""

    delta: str


class TokenEvent(BaseModel):
    """An answer delta."""

    delta: str


class DoneEvent(BaseModel):
    """Last SSE event of a successful answer, sent once the turn is saved."""

    conversation_id: str
    message_id: str = Field(description="Id of the saved assistant message.")
    answer: str
    reasoning: str | None
    cited: list[int] = Field(description="Source numbers the answer cites, first-seen order.")
    timings_ms: dict[str, float]


class ErrorEvent(BaseModel):
    """In-band failure; the stream ends after it and nothing is saved."""

    code: str
    message: str
