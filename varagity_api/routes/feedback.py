"""Thumbs up and down on answers: ``/api/messages/{message_id}/feedback`` and ``/api/feedback``.

A rating is about an assistant message (``source`` null) or one of its numbered
sources; ``PUT`` replaces the earlier rating of the same target. A thumbs-down on the
answer that marks the source that does answer (``answered_by``) or says none does
(``none_answers``) becomes a question of the corpus's feedback suite, which
``GET /api/feedback/suite`` exports (JSON, or ``?format=jsonl``: the ``queries.jsonl``
file itself) and the Dagster answer gate runs (``feedback_gate``).
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query, Response
from starlette.concurrency import run_in_threadpool

from varagity.eval.feedback import SUITE_NAME, load_feedback_suite
from varagity.stores.feedback_store import FeedbackNotFound, InvalidFeedback, MessageNotFound
from varagity_api.deps import FeedbackStoreDep, ServicesDep
from varagity_api.errors import ApiError
from varagity_api.schemas.common import ErrorBody
from varagity_api.schemas.feedback import (
    Feedback,
    FeedbackRequest,
    FeedbackSkipped,
    FeedbackSuite,
    feedback_from,
)

router = APIRouter(tags=["feedback"])

_ERRORS: dict[int | str, dict[str, Any]] = {
    404: {"model": ErrorBody, "description": "Unknown message, or no such rating."},
    422: {"model": ErrorBody, "description": "The rating does not fit the message."},
}


def _error(exc: Exception) -> ApiError:
    if isinstance(exc, MessageNotFound):
        return ApiError(404, "message_not_found", str(exc))
    if isinstance(exc, FeedbackNotFound):
        return ApiError(404, "feedback_not_found", str(exc))
    return ApiError(422, "invalid_feedback", str(exc))


@router.put("/messages/{message_id}/feedback", responses=_ERRORS)
async def put_feedback(message_id: str, body: FeedbackRequest, store: FeedbackStoreDep) -> Feedback:
    """Rate the answer or one of its sources (replacing an earlier rating of it)."""
    try:
        row = await run_in_threadpool(
            store.put,
            message_id,
            body.rating,
            source=body.source,
            answered_by=body.answered_by,
            none_answers=body.none_answers,
            comment=body.comment,
        )
    except (MessageNotFound, InvalidFeedback) as exc:
        raise _error(exc) from exc
    return feedback_from(row)


@router.get("/messages/{message_id}/feedback", responses=_ERRORS)
async def message_feedback(message_id: str, store: FeedbackStoreDep) -> list[Feedback]:
    """The message's ratings: the answer's first, then by source number."""
    try:
        rows = await run_in_threadpool(store.of_message, message_id)
    except MessageNotFound as exc:
        raise _error(exc) from exc
    return [feedback_from(r) for r in rows]


@router.delete("/messages/{message_id}/feedback", status_code=204, responses=_ERRORS)
async def delete_feedback(
    message_id: str,
    store: FeedbackStoreDep,
    source: Annotated[int | None, Query(ge=1, description="Omit for the answer's rating.")] = None,
) -> Response:
    """Take back the rating of the answer (no ``source``) or of its source ``n``."""
    try:
        await run_in_threadpool(store.delete, message_id, source)
    except (MessageNotFound, FeedbackNotFound) as exc:
        raise _error(exc) from exc
    return Response(status_code=204)


@router.get("/feedback")
async def list_feedback(
    store: FeedbackStoreDep,
    rating: Annotated[Literal["up", "down"] | None, Query()] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 200,
) -> list[Feedback]:
    """Every rating, most recently given first."""
    rows = await run_in_threadpool(store.recent, rating=rating, limit=limit)
    return [feedback_from(r) for r in rows]


@router.get(
    "/feedback/suite",
    response_model=FeedbackSuite,
    responses={
        200: {
            "content": {"application/x-ndjson": {}},
            "description": "The suite (JSON), or with format=jsonl its queries.jsonl file.",
        }
    },
)
async def feedback_suite(
    services: ServicesDep,
    fmt: Annotated[Literal["json", "jsonl"], Query(alias="format")] = "json",
) -> Any:
    """The corpus's feedback suite in the suite format, for review or ``varagity eval``."""
    suite = await run_in_threadpool(load_feedback_suite, services.pg, services.settings.docs_path)
    if fmt == "jsonl":
        text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in suite.records)
        return Response(
            text,
            media_type="application/x-ndjson",
            headers={"content-disposition": 'attachment; filename="queries.jsonl"'},
        )
    return FeedbackSuite(
        name=SUITE_NAME,
        corpus=str(suite.corpus),
        questions=suite.records,
        skipped=[FeedbackSkipped(**s) for s in suite.skipped],
    )
