"""``/api/graph/messages``: forget messages of the archives in ``GRAPH_DOCS_PATH``: a
thread, a handle, or a range of days.

The archives are never written: the messages stay in the user's files and every later
read of them leaves them out (:mod:`varagity.graph.forgotten`). The graph forgets them
now, as its writer: the days they were in are deleted, or extracted again without them
when they keep other messages (a bounded rebuild of exactly those days). Each answers
with the receipt of :mod:`varagity.forget`.
"""

from __future__ import annotations

import uuid
from datetime import date
from typing import Annotated

from fastapi import APIRouter, Depends, Query
from starlette.concurrency import run_in_threadpool

from varagity.forget import NothingToForget, forget_messages
from varagity.graph.forgotten import ForgetRule
from varagity.services import Services
from varagity_api.corpus_gate import refuse_while_restoring
from varagity_api.deps import ServicesDep, require_graph_enabled
from varagity_api.errors import ApiError
from varagity_api.schemas.common import ErrorBody
from varagity_api.schemas.forget import ForgetReceiptInfo

router = APIRouter(
    prefix="/graph/messages",
    tags=["graph"],
    dependencies=[Depends(require_graph_enabled)],
    responses={
        403: {"model": ErrorBody, "description": "GRAPH_ENABLED is false."},
        404: {"model": ErrorBody, "description": "No archive holds such a message."},
        409: {"model": ErrorBody, "description": "The graph is being written or restored."},
    },
)


def _forget(services: Services, rule: ForgetRule) -> ForgetReceiptInfo:
    settings = services.settings
    refuse_while_restoring(settings, "graph", status=409)
    try:
        receipt = forget_messages(settings, services.pg, services.graph, rule)
    except NothingToForget as exc:
        raise ApiError(404, "not_found", str(exc)) from exc
    return ForgetReceiptInfo.of(receipt)


def _id() -> str:
    return uuid.uuid4().hex


@router.delete("/threads/{thread_id}", response_model=ForgetReceiptInfo)
async def forget_thread(thread_id: str, services: ServicesDep) -> ForgetReceiptInfo:
    """Forget every message of a thread (its id as the graph's days name it: the
    part of a doc_key before ``::``, ``iMessage;-;maya@example.com``)."""
    rule = ForgetRule("thread", _id(), thread_id=thread_id)
    return await run_in_threadpool(_forget, services, rule)


@router.delete("/handles/{handle}", response_model=ForgetReceiptInfo)
async def forget_handle(handle: str, services: ServicesDep) -> ForgetReceiptInfo:
    """Forget every message a handle (a phone number or e-mail address, as the archive
    writes it) sent, in every thread of every archive."""
    rule = ForgetRule("handle", _id(), handle=handle)
    return await run_in_threadpool(_forget, services, rule)


@router.delete(
    "",
    response_model=ForgetReceiptInfo,
    responses={422: {"model": ErrorBody, "description": "The range is reversed."}},
)
async def forget_range(
    services: ServicesDep,
    first_day: Annotated[date, Query(alias="from", description="The first day forgotten.")],
    last_day: Annotated[date, Query(alias="to", description="The last day forgotten (inclusive).")],
    thread_id: Annotated[
        str | None, Query(description="Only this thread's messages of those days.")
    ] = None,
) -> ForgetReceiptInfo:
    """Forget every message of the days ``from`` .. ``to`` (in ``GRAPH_TIMEZONE``, as
    the graph's days are cut), of one thread when ``thread_id`` is given."""
    if first_day > last_day:
        raise ApiError(422, "invalid_range", f"{first_day} is after {last_day}")
    rule = ForgetRule(
        "range",
        _id(),
        thread_id=thread_id,
        first_day=first_day.isoformat(),
        last_day=last_day.isoformat(),
    )
    return await run_in_threadpool(_forget, services, rule)
