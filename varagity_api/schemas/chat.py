"""Chat request and the SSE event payloads of ``POST /api/chat``."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field

from varagity.chat.queue import QueueReason
from varagity.chat.turn import QUESTION_MAX_CHARS, StopReason
from varagity.config import ChatEngineName
from varagity_api.schemas.common import (
    AnswerQuote,
    CorpusName,
    DaySource,
    EvidenceMethod,
    GraphEvidence,
    Method,
    Source,
)


class ChatRequest(BaseModel):
    """A question answered over the corpus, streamed as SSE."""

    question: str = Field(min_length=1, max_length=QUESTION_MAX_CHARS)
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
    corpus: CorpusName = Field(
        default="rag",
        description="rag: answer from the documents; graph: from the message graph (its "
        "conversation days are the evidence; k and method then apply only if the turn "
        "falls back to the documents).",
    )
    debug: bool = Field(
        default=False,
        description="Developer mode: done also carries the prompt sent to the model and its "
        "raw output (done.debug). The retrieval trace and stage timings come either way.",
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
    method: EvidenceMethod = Field(description="The retrieval method, or graph.")
    sources: list[Source] = Field(description="Document evidence (empty on a graph answer).")
    timings_ms: dict[str, float]
    corpus: CorpusName = Field(description="What the evidence came from.")
    target_corpus: CorpusName = Field(description="What the request asked for.")
    degraded: str | None = Field(
        description="Why a graph-targeted turn is answered from the documents instead "
        "(graph switched off, unreadable or without a matching day): show it to the user. "
        "Null when the turn got the corpus it asked for."
    )
    graph: GraphEvidence | None = Field(
        description="The message graph's entities, relations and query mode on a graph "
        "answer; null otherwise."
    )
    days: list[DaySource] = Field(
        description="Graph evidence: the conversation days the answer cites as [n] "
        "(empty on a document answer)."
    )
    index_as_of: datetime | None = Field(
        default=None,
        description="When the document index last changed before this retrieval (the "
        "newest ingest): the index state the answer is given from. Null on a graph "
        "answer and on an empty corpus.",
    )


class QueuedEvent(BaseModel):
    """The model is busy: this turn waits (sent after ``retrieval``, again whenever the
    position or the reason changes, before the first delta)."""

    position: int = Field(ge=1, description="Place in line; 1 is answered next.")
    reason: QueueReason = Field(
        description="What holds the model: other chats' answers, or the search context "
        "(blurbs) being written for new files, which gives the model up within moments."
    )
    message: str = Field(description="What to show the user while waiting.")


class ReasoningEvent(BaseModel):
    """A delta of the model's ``<think>`` reasoning (reasoning models only)."""

    delta: str


class TokenEvent(BaseModel):
    """An answer delta."""

    delta: str


class DoneEvent(BaseModel):
    """Last SSE event of a successful answer, sent once the turn is saved.

    ``answer`` is the final text to show: replace the streamed tokens with it.
    """

    conversation_id: str
    message_id: str = Field(description="Id of the saved assistant message.")
    answer: str
    reasoning: str | None
    cited: list[int] = Field(description="Source numbers the answer cites, first-seen order.")
    stop_reason: StopReason = Field(
        description="Why generation ended: finished, length (hit LLM_MAX_TOKENS), or "
        "repetition (the answer began looping; answer is trimmed before the repeats, so "
        "it can be shorter than the streamed tokens)."
    )
    timings_ms: dict[str, float] = Field(
        description="Stage timings in ms: condense, retrieval stages, first_token, generate, total."
    )
    quotes: list[AnswerQuote] = Field(
        default_factory=list,
        description="The verbatim passage text each answer sentence rests on, in sentence "
        "order (ANSWER_CITATIONS=quoted; empty otherwise and on an abstention). Show each "
        "with source n's card; highlight it in the page preview.",
    )
    debug: AnswerDebug | None = Field(
        default=None,
        description="The prompt and the model's raw output when the request asked for them "
        "(debug: true); null otherwise. Not saved with the conversation.",
    )


class PromptMessage(BaseModel):
    """One chat message of the prompt sent to the model."""

    role: str = Field(description="system, user or assistant (an earlier turn).")
    content: str


class AnswerDebug(BaseModel):
    """What the model was sent and what it wrote, before any check (ChatRequest.debug)."""

    messages: list[PromptMessage] = Field(
        description="The prompt in order: the system message, earlier turns, then the user "
        "turn with the numbered passages. Empty when no model was asked (no evidence, or a "
        "graph answer computed from the archive)."
    )
    raw_output: str = Field(
        description="The model's stream as written: reasoning in its <think> tags, sentences "
        "the quote check dropped, citations before attribution, a repeated tail before "
        "trimming. The fixed or computed reply when no model was asked."
    )


class ErrorEvent(BaseModel):
    """In-band failure; the stream ends after it and nothing is saved."""

    code: str
    message: str
