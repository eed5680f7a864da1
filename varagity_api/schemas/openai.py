"""The OpenAI wire format for ``/v1/models`` and ``/v1/chat/completions``.

Only what the endpoint reads or writes is modelled; request fields it does not use
(sampling parameters, tools, ``user``, ...) are accepted and ignored.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from varagity.chat.turn import StopReason
from varagity_api.schemas.common import (
    AnswerQuote,
    CorpusName,
    DaySource,
    EvidenceMethod,
    GraphEvidence,
    Source,
)


class ContentPart(BaseModel):
    """A part of a multi-part message; only ``text`` parts are read."""

    model_config = ConfigDict(extra="allow")

    type: str
    text: str | None = None


class ChatMessage(BaseModel):
    """One message of the request's conversation."""

    model_config = ConfigDict(extra="allow")

    role: Literal["system", "developer", "user", "assistant", "tool"]
    content: str | list[ContentPart] | None = None

    def text(self) -> str:
        """The message's text (text parts joined; other parts skipped)."""
        if self.content is None:
            return ""
        if isinstance(self.content, str):
            return self.content
        return "\n".join(p.text for p in self.content if p.type == "text" and p.text)


class ChatCompletionRequest(BaseModel):
    """The last message is the question (role ``user``); earlier ones are history."""

    model: str = Field(description='"varagity", or "varagity-<method>" to pick a method.')
    messages: list[ChatMessage] = Field(min_length=1)
    stream: bool = False
    max_tokens: int | None = Field(default=None, ge=1)
    max_completion_tokens: int | None = Field(default=None, ge=1)
    n: int = Field(default=1, ge=1, le=1, description="Only one choice is generated.")


class ModelCard(BaseModel):
    """One model id the endpoint answers to."""

    id: str
    object: Literal["model"] = "model"
    created: int
    owned_by: str = "varagity"


class ModelList(BaseModel):
    """``GET /v1/models``."""

    object: Literal["list"] = "list"
    data: list[ModelCard]


class VaragityExtras(BaseModel):
    """Non-standard ``varagity`` field: the evidence and how it was found."""

    query: str = Field(description="What retrieval searched for.")
    condensed_query: str | None
    chat_engine: str
    method: EvidenceMethod = Field(description="The retrieval method, or graph.")
    sources: list[Source] = Field(description="Document evidence (empty on a graph answer).")
    corpus: CorpusName = Field(description="What the evidence came from.")
    target_corpus: CorpusName = Field(
        description="What the model id asked for (varagity-graph: graph)."
    )
    degraded: str | None = Field(
        description="Why a varagity-graph answer comes from the documents instead; null "
        "when the turn got the corpus it asked for."
    )
    graph: GraphEvidence | None = Field(
        description="The message graph's entities, relations and query mode (graph answers)."
    )
    days: list[DaySource] = Field(
        description="A graph answer's cited conversation days, numbered as [n]."
    )
    index_as_of: datetime | None = Field(
        default=None,
        description="When the document index last changed before this retrieval: the "
        "index state the answer is given from (null on a graph answer or empty corpus).",
    )
    cited: list[int] | None = Field(
        default=None,
        description="Source numbers the answer cites (complete responses, last chunk).",
    )
    quotes: list[AnswerQuote] | None = Field(
        default=None,
        description="The verbatim passage text each answer sentence rests on (complete "
        "responses, last chunk); the Sources footer prints them under their source.",
    )
    stop_reason: StopReason | None = Field(
        default=None,
        description="Why generation ended (complete responses, last chunk): finished, "
        "length, or repetition (the answer began looping and was cut).",
    )
    timings_ms: dict[str, float]


class AssistantMessage(BaseModel):
    """The generated message: the cited answer followed by its "Sources:" footer."""

    role: Literal["assistant"] = "assistant"
    content: str
    reasoning_content: str | None = None


class Choice(BaseModel):
    """The one choice of a complete response."""

    index: int = 0
    message: AssistantMessage
    finish_reason: Literal["stop", "length"] = "stop"


class ChatCompletion(BaseModel):
    """A complete (non-streamed) response."""

    id: str
    object: Literal["chat.completion"] = "chat.completion"
    created: int
    model: str
    choices: list[Choice]
    varagity: VaragityExtras


class Delta(BaseModel):
    """What one streamed chunk adds."""

    role: Literal["assistant"] | None = None
    content: str | None = None
    reasoning_content: str | None = None


class ChunkChoice(BaseModel):
    """The one choice of a streamed chunk."""

    index: int = 0
    delta: Delta
    finish_reason: Literal["stop", "length"] | None = None


class ChatCompletionChunk(BaseModel):
    """One ``data:`` line of a streamed response; the first carries ``varagity``."""

    id: str
    object: Literal["chat.completion.chunk"] = "chat.completion.chunk"
    created: int
    model: str
    choices: list[ChunkChoice]
    varagity: VaragityExtras | None = None


class OpenAIError(BaseModel):
    """OpenAI's error object."""

    message: str
    type: str
    param: str | None = None
    code: str | None = None


class OpenAIErrorBody(BaseModel):
    """Errors of the ``/v1`` routes, in OpenAI's shape (its clients parse it)."""

    error: OpenAIError
