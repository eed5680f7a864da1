"""``POST /api/chat``: one conversation turn, streamed as server-sent events.

Event order: ``retrieval`` (the evidence, numbered as the answer cites it, and the
query that found it), then ``reasoning`` and ``token`` deltas, then ``done``; any
failure is an in-band ``error`` event that ends the stream. An unknown
``conversation_id`` is a plain 404 before any streaming starts.

The turn is saved only once the answer is complete, in one transaction, and ``done``
carries the saved message's id. A client that disconnects stops generation and
nothing is saved.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Generator

import psycopg
from fastapi import APIRouter, Request
from sse_starlette.sse import EventSourceResponse, ServerSentEvent
from starlette.concurrency import iterate_in_threadpool, run_in_threadpool

from varagity.chat.base import ChatEngine, Turn, build_chat_engine
from varagity.chat.turn import answer_pieces, ground
from varagity.generation.answer import cited_numbers
from varagity.generation.think import Piece
from varagity.models.clients import ModelError
from varagity.observability.metrics import count_chat_turn, observe_stages
from varagity.services import Services
from varagity.stores.conversation_store import (
    AssistantReply,
    ConversationNotFound,
    ConversationStore,
    new_id,
)
from varagity_api.deps import ServicesDep
from varagity_api.routes.conversations import ConversationStoreDep, not_found
from varagity_api.schemas.chat import (
    ChatRequest,
    DoneEvent,
    ErrorEvent,
    ReasoningEvent,
    RetrievalEvent,
    TokenEvent,
)
from varagity_api.schemas.common import ErrorBody, source_from
from varagity_api.sse import PING_SECONDS, sse_event

router = APIRouter(tags=["chat"])
log = logging.getLogger(__name__)


def _ms(since: float) -> float:
    return round((time.perf_counter() - since) * 1000, 2)


def close_quietly(pieces: Generator[Piece, None, None]) -> None:
    """Close an answer stream early (which closes the model's HTTP stream)."""
    try:
        pieces.close()
    except ValueError:  # a worker thread is inside next(); it is collected when that returns
        log.debug("answer stream still running in a worker thread; left to the collector")


async def turn_events(
    request: Request,
    body: ChatRequest,
    services: Services,
    store: ConversationStore,
    engine: ChatEngine,
    conversation_id: str,
    history: list[Turn],
) -> AsyncIterator[ServerSentEvent]:
    """The SSE events of one turn; saves the turn just before ``done``."""
    settings = services.settings
    started = time.perf_counter()
    timings: dict[str, float] = {}
    method: str = body.method or settings.RETRIEVAL_METHOD
    outcome = "aborted"  # until the turn is saved or fails
    pieces: Generator[Piece, None, None] | None = None
    try:
        retriever = services.retriever(body.method)
        method = retriever.method
        grounding = await run_in_threadpool(
            ground, engine, retriever, body.question, history, body.k
        )
        timings.update(grounding.timings_ms)
        prepared, chunks = grounding.prepared, grounding.retrieval.chunks
        sources = [source_from(c, n) for n, c in enumerate(chunks, start=1)]
        yield sse_event(
            "retrieval",
            RetrievalEvent(
                conversation_id=conversation_id,
                query=prepared.search_query,
                condensed_query=prepared.condensed_query,
                chat_engine=engine.name,  # type: ignore[arg-type]  # a registry name
                method=method,  # type: ignore[arg-type]
                sources=sources,
                timings_ms=dict(timings),
            ),
        )
        generating = time.perf_counter()
        answer: list[str] = []
        reasoning: list[str] = []
        pieces = answer_pieces(
            services.chat,
            grounding,
            context_tokens=settings.LLM_CONTEXT_TOKENS,
            answer_tokens=settings.LLM_MAX_TOKENS,
        )
        async for piece in iterate_in_threadpool(pieces):
            if await request.is_disconnected():
                log.info("client went away mid-answer; stopping generation, saving nothing")
                return
            timings.setdefault("first_token", _ms(generating))
            if piece.kind == "reasoning":
                reasoning.append(piece.text)
                yield sse_event("reasoning", ReasoningEvent(delta=piece.text))
            else:
                answer.append(piece.text)
                yield sse_event("token", TokenEvent(delta=piece.text))
        timings["generate"] = _ms(generating)
        timings["total"] = _ms(started)
        text, thought = "".join(answer), "".join(reasoning) or None
        reply = AssistantReply(
            content=text,
            sources=chunks,
            retrieval_method=method,
            chat_engine=engine.name,
            latency_ms=dict(timings),
            reasoning=thought,
            condensed_query=prepared.condensed_query,
        )
        try:
            turn = await run_in_threadpool(store.append_turn, conversation_id, body.question, reply)
        except psycopg.Error as exc:
            outcome = "error"
            log.error("saving the turn of conversation %s failed: %s", conversation_id, exc)
            message = f"The answer was generated but could not be saved: {exc}"
            yield sse_event("error", ErrorEvent(code="persistence_failed", message=message))
            return
        outcome = "ok"
        yield sse_event(
            "done",
            DoneEvent(
                conversation_id=conversation_id,
                message_id=turn.assistant_message_id,
                answer=text,
                reasoning=thought,
                cited=cited_numbers(text, len(sources)),
                timings_ms=timings,
            ),
        )
    except ModelError as exc:
        outcome = "error"
        yield sse_event("error", ErrorEvent(code="model_unavailable", message=str(exc)))
    except ValueError as exc:
        outcome = "error"
        yield sse_event("error", ErrorEvent(code="invalid_request", message=str(exc)))
    except Exception as exc:  # the stream must end with an event, never a torn connection
        outcome = "error"
        log.exception("chat failed")
        message = f"{type(exc).__name__}: {exc}"
        yield sse_event("error", ErrorEvent(code="internal_error", message=message))
    finally:
        if pieces is not None:
            close_quietly(pieces)
        count_chat_turn(engine.name, method, outcome)
        observe_stages("chat", timings)


@router.post(
    "/chat",
    response_class=EventSourceResponse,
    responses={
        200: {
            "content": {"text/event-stream": {}},
            "description": "SSE stream: retrieval (RetrievalEvent), reasoning (ReasoningEvent) "
            "and token (TokenEvent) deltas, then done (DoneEvent) or error (ErrorEvent).",
        },
        404: {"model": ErrorBody, "description": "Unknown conversation_id."},
    },
)
async def chat(
    request: Request, body: ChatRequest, services: ServicesDep, store: ConversationStoreDep
) -> EventSourceResponse:
    """Stream the evidence, reasoning and answer deltas, then ``done`` with the saved ids."""
    settings = services.settings
    if body.conversation_id is None:
        conversation_id, pairs = new_id(), []
    else:
        conversation_id = body.conversation_id
        try:
            pairs = await run_in_threadpool(
                store.history, conversation_id, settings.CHAT_HISTORY_TURNS
            )
        except ConversationNotFound as exc:
            raise not_found(exc) from exc
    engine = build_chat_engine(
        body.chat_engine or settings.CHAT_ENGINE,
        completer=services.chat,
        condense_enabled=settings.CONDENSE_ENABLED,
        condense_max_tokens=settings.CONDENSE_MAX_TOKENS,
    )
    history = [Turn(question, answer) for question, answer in pairs]
    events = turn_events(request, body, services, store, engine, conversation_id, history)
    return EventSourceResponse(events, ping=PING_SECONDS)
