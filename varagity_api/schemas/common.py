"""Shapes shared across resources: errors, methods and evidence."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, Field

from varagity.graph.evidence import day_trace, graph_evidence
from varagity.graph.types import DayCard, GraphRetrieval
from varagity.records import Quote, RetrievalTrace, RetrievedChunk

Method = Literal["semantic", "bm25", "hybrid", "reranked", "hyde"]
#: How a turn's evidence was found: a retrieval method, or ``graph`` (the message graph).
EvidenceMethod = Literal["semantic", "bm25", "hybrid", "reranked", "hyde", "graph"]
#: What a turn is answered from: the documents (chunk RAG) or the message graph.
CorpusName = Literal["rag", "graph"]


class ErrorBody(BaseModel):
    """Every error response: a machine-readable code and a human message."""

    code: str
    message: str


class QuoteSpan(BaseModel):
    """Verbatim text of a passage that an answer sentence rests on."""

    text: str = Field(description="The passage's own text, content[start:end].")
    start: int = Field(ge=0, description="Offset of the quote in the passage's content.")
    end: int = Field(ge=0, description="End offset (exclusive).")


class AnswerQuote(QuoteSpan):
    """A quote of the answer, with the source number its sentence cites."""

    source: int = Field(ge=1, description="The [n] of the passage quoted.")


def quotes_from(quotes: Sequence[Quote]) -> list[AnswerQuote]:
    """The wire form of an answer's quotes, in sentence order."""
    return [AnswerQuote(source=q.source, text=q.text, start=q.start, end=q.end) for q in quotes]


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
    quotes: list[QuoteSpan] = Field(
        default_factory=list,
        description="What the answer quotes of this passage (ANSWER_CITATIONS=quoted): "
        "empty while the answer is written; the done event carries them, and a stored "
        "conversation's sources keep them.",
    )


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


class EvidenceEntity(BaseModel):
    """An entity the message graph found for the question."""

    name: str
    type: str
    description: str
    doc_keys: list[str] = Field(description="The transcript days it was extracted from.")


class EvidenceRelation(BaseModel):
    """A relation between two entities, with the days it was seen on."""

    source: str
    target: str
    description: str
    keywords: str
    weight: float
    doc_keys: list[str]


class GraphEvidence(BaseModel):
    """What the message graph found besides the days: the shape stored as the assistant
    message's ``graph_evidence``."""

    entities: list[EvidenceEntity]
    relations: list[EvidenceRelation]
    mode: str = Field(description="The engine's query mode (GRAPH_QUERY_MODE).")


class DaySource(BaseModel):
    """A conversation day cited as evidence: day-grain, never a single message."""

    n: int = Field(description="1-based number the answer cites as [n].")
    doc_key: str = Field(description="The day's graph identity, thread_id::YYYY-MM-DD.")
    thread_name: str
    span: str = Field(description="The day (YYYY-MM-DD) or first..last days.")
    excerpt: str = Field(description="The transcript lines the answer was given.")
    message_guids: list[str] = Field(description="The source's ids of the day's messages.")


def graph_evidence_from(found: GraphRetrieval) -> GraphEvidence:
    """The wire form of a graph retrieval's entities, relations and mode."""
    return GraphEvidence.model_validate(graph_evidence(found))


def day_source_from(day: DayCard, n: int) -> DaySource:
    """The wire form of a day card."""
    return day_source_from_trace(day.doc_key, day_trace(day), n)


def day_source_from_trace(doc_key: str, trace: Mapping[str, Any], n: int) -> DaySource:
    """The wire form of a stored ``graph_transcript`` snapshot."""
    fields = {k: v for k, v in trace.items() if k != "kind"}
    return DaySource.model_validate({**fields, "n": n, "doc_key": doc_key})
