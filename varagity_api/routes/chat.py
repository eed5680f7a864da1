"""``POST /api/chat``: a grounded answer streamed as server-sent events.

Event order: ``retrieval`` (the evidence, numbered as the answer cites it), then
``token`` deltas, then ``done``; any failure is an in-band ``error`` event that ends
the stream. A client that disconnects stops generation.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator

from fastapi import APIRouter, Request
from sse_starlette.sse import EventSourceResponse, ServerSentEvent
from starlette.concurrency import iterate_in_threadpool, run_in_threadpool

from varagity.generation.answer import cited_numbers, stream_answer
from varagity.models.clients import ModelError
from varagity.services import Services
from varagity_api.deps import ServicesDep
from varagity_api.schemas.chat import (
    ChatRequest,
    DoneEvent,
    ErrorEvent,
    RetrievalEvent,
    TokenEvent,
)
from varagity_api.schemas.common import source_from

router = APIRouter(tags=["chat"])
log = logging.getLogger(__name__)


def _event(name: str, payload: object) -> ServerSentEvent:
    return ServerSentEvent(event=name, data=payload.model_dump_json())  # type: ignore[attr-defined]


async def answer_events(
    request: Request, body: ChatRequest, services: Services
) -> AsyncIterator[ServerSentEvent]:
    """The SSE event sequence for one question."""
    settings = services.settings
    timings: dict[str, float] = {}
    try:
        retriever = services.retriever(body.method)
        result = await run_in_threadpool(retriever.retrieve, body.question, body.k)
        timings.update(result.timings_ms)
        sources = [source_from(c, n) for n, c in enumerate(result.chunks, start=1)]
        yield _event(
            "retrieval",
            RetrievalEvent(
                query=result.query,
                method=retriever.method,  # type: ignore[arg-type]
                sources=sources,
                timings_ms=result.timings_ms,
            ),
        )
        started = time.perf_counter()
        first_token: float | None = None
        parts: list[str] = []
        deltas = stream_answer(
            services.chat,
            body.question,
            result.chunks,
            context_tokens=settings.LLM_CONTEXT_TOKENS,
            answer_tokens=settings.LLM_MAX_TOKENS,
        )
        async for delta in iterate_in_threadpool(deltas):
            if await request.is_disconnected():
                log.info("client went away; stopping generation")
                return
            if first_token is None:
                first_token = time.perf_counter()
                timings["first_token"] = round((first_token - started) * 1000, 2)
            parts.append(delta)
            yield _event("token", TokenEvent(delta=delta))
        timings["generate"] = round((time.perf_counter() - started) * 1000, 2)
        answer = "".join(parts)
        yield _event(
            "done",
            DoneEvent(answer=answer, cited=cited_numbers(answer, len(sources)), timings_ms=timings),
        )
    except ModelError as exc:
        yield _event("error", ErrorEvent(code="model_unavailable", message=str(exc)))
    except ValueError as exc:
        yield _event("error", ErrorEvent(code="invalid_request", message=str(exc)))
    except Exception as exc:  # the stream must end with an event, never a torn connection
        log.exception("chat failed")
        yield _event(
            "error", ErrorEvent(code="internal_error", message=f"{type(exc).__name__}: {exc}")
        )


@router.post(
    "/chat",
    response_class=EventSourceResponse,
    responses={200: {"content": {"text/event-stream": {}}, "description": "SSE stream"}},
)
async def chat(request: Request, body: ChatRequest, services: ServicesDep) -> EventSourceResponse:
    """Stream retrieval evidence, answer tokens and a final ``done`` event."""
    return EventSourceResponse(answer_events(request, body, services), ping=15)
