"""Feedback on answers and their sources, and the feedback suite it becomes."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field, model_validator

from varagity.stores.feedback_store import COMMENT_MAX_CHARS
from varagity.stores.feedback_store import Feedback as StoredFeedback

Rating = Literal["up", "down"]


class FeedbackRequest(BaseModel):
    """A thumbs up or down on an answer (``source`` null) or on its source ``n``.

    On a thumbs-down of the answer, ``answered_by`` marks the source that does answer
    the question, or ``none_answers`` says none does: either makes the question part of
    the corpus's feedback suite, which the answer gate runs.
    """

    rating: Rating
    source: int | None = Field(
        default=None, ge=1, description="The source [n] rated; null rates the answer itself."
    )
    answered_by: int | None = Field(
        default=None,
        ge=1,
        description="Thumbs-down on the answer only: the source [n] that does answer.",
    )
    none_answers: bool = Field(
        default=False, description="Thumbs-down on the answer only: no source answers."
    )
    comment: str | None = Field(default=None, max_length=COMMENT_MAX_CHARS)

    @model_validator(mode="after")
    def _marks_fit(self) -> FeedbackRequest:
        if self.answered_by is not None and self.none_answers:
            raise ValueError("give answered_by or none_answers, not both")
        if (self.answered_by is not None or self.none_answers) and (
            self.rating != "down" or self.source is not None
        ):
            raise ValueError(
                "answered_by and none_answers go with rating 'down' on the answer (source null)"
            )
        return self


class Feedback(BaseModel):
    """A stored rating."""

    feedback_id: str
    message_id: str
    conversation_id: str
    source: int | None = Field(description="The source rated; null: the answer itself.")
    rating: Rating
    answered_by: int | None
    none_answers: bool
    comment: str | None
    created_at: datetime
    updated_at: datetime


def feedback_from(row: StoredFeedback) -> Feedback:
    """The wire form of a stored rating."""
    return Feedback(
        feedback_id=row.feedback_id,
        message_id=row.message_id,
        conversation_id=row.conversation_id,
        source=row.source,
        rating=row.rating,  # type: ignore[arg-type]  # the table's CHECK constraint
        answered_by=row.answered_by,
        none_answers=row.none_answers,
        comment=row.comment,
        created_at=row.created_at,
        updated_at=row.updated_at,
    )


class FeedbackSkipped(BaseModel):
    """A marked thumbs-down left out of the suite, and why."""

    id: str
    reason: str


class FeedbackSuite(BaseModel):
    """The corpus's feedback suite: each question as its ``queries.jsonl`` record."""

    name: str
    corpus: str = Field(description="The corpus folder the passages come from (DOCS_PATH).")
    questions: list[dict[str, Any]] = Field(
        description="Records in the suite format (id, query, relevant or answerable: false), "
        "each with a feedback key naming the rating it came from."
    )
    skipped: list[FeedbackSkipped]
