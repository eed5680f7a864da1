"""Conversations, their transcripts with evidence, and conversation groups."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field, model_validator

from varagity_api.schemas.common import CorpusName, DaySource, GraphEvidence, Source
from varagity_api.schemas.feedback import Feedback


class ConversationSummary(BaseModel):
    """A conversation as the sidebar lists it."""

    conversation_id: str
    title: str
    created_at: datetime
    updated_at: datetime = Field(description="Time of the latest turn.")
    group_id: str | None
    message_count: int


class SourceSnapshot(Source):
    """A source as it was when the answer was written (it outlives reingests)."""

    file_created_at: datetime | None = None
    file_modified_at: datetime | None = None


class Message(BaseModel):
    """One message; the provenance fields are null on user messages."""

    message_id: str
    role: Literal["user", "assistant"]
    content: str
    created_at: datetime
    retrieval_method: str | None
    chat_engine: str | None
    condensed_query: str | None = Field(
        description="The search rewrite that drove retrieval, if any."
    )
    reasoning: str | None
    latency_ms: dict[str, float] | None
    target_corpus: CorpusName | None = Field(
        description="The corpus the turn asked for (rag or graph; also graph when it "
        "degraded to a document answer); null on user messages and older history."
    )
    graph_evidence: GraphEvidence | None = Field(
        description="What the message graph found (entities, relations, mode); null on "
        "document answers and on graph turns that degraded to the documents."
    )
    sources: list[SourceSnapshot] = Field(description="The document evidence, numbered as cited.")
    days: list[DaySource] = Field(
        description="A graph answer's evidence: its conversation days, numbered as cited."
    )
    index_as_of: datetime | None = Field(
        default=None,
        description="When the document index last changed before the answer's retrieval; "
        "null on user messages, graph answers and older history.",
    )
    feedback: list[Feedback] = Field(
        default_factory=list,
        description="The ratings given on this answer (source null) and on its sources.",
    )


class ConversationDetail(ConversationSummary):
    """A conversation with its whole transcript."""

    messages: list[Message]


class ConversationPatch(BaseModel):
    """Rename and/or move; ``group_id: null`` takes it out of its group."""

    title: str | None = Field(default=None, min_length=1, max_length=200)
    group_id: str | None = Field(default=None, max_length=64)

    @model_validator(mode="after")
    def _something_to_change(self) -> ConversationPatch:
        if not self.model_fields_set & {"title", "group_id"}:
            raise ValueError("give a title and/or a group_id to change")
        if "title" in self.model_fields_set and (self.title is None or not self.title.strip()):
            raise ValueError("title must not be null or blank")
        return self


class GroupCreate(BaseModel):
    """A new conversation group."""

    name: str = Field(min_length=1, max_length=100)


class GroupPatch(BaseModel):
    """A group's new name."""

    name: str = Field(min_length=1, max_length=100)


class Group(BaseModel):
    """A sidebar folder of conversations."""

    group_id: str
    name: str
    created_at: datetime
    conversation_count: int
