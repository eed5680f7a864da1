"""``POST /api/chat``: one conversation turn, streamed as server-sent events.

An adapter over the shared turn runner (:mod:`varagity.chat.turn`). Event order:
``retrieval`` (the evidence, numbered as the answer cites it, and the query that found
it), ``queued`` (with the turn's place in line) while the model is busy with other
chats, then ``reasoning`` and ``token`` deltas, then ``done``; any failure is an in-band
``error`` event that ends the stream. An unknown ``conversation_id`` is a plain 404
before any streaming starts.

``corpus`` picks what the turn is answered from: ``rag`` (the documents, the default)
or ``graph`` (the message graph, whose conversation days are then the numbered
evidence, in ``retrieval.days``, beside its entities and relations in
``retrieval.graph``). A graph turn the graph cannot answer (switched off, unreadable,
no matching day) is answered from the documents, and ``retrieval.degraded`` says so.
The saved assistant message records the corpus asked for (``target_corpus``) and what
the graph found (``graph_evidence``, null on a degraded turn).

``done`` carries the final answer (when the repetition guard stopped a loop, without
the repeated tail the tokens already showed) and why generation stopped. The turn is
saved only once the answer is complete, in one transaction, and ``done`` carries the
saved message's id. A client that disconnects stops generation and nothing is saved.
With ``debug`` (the web client's developer mode), ``done`` also carries the prompt sent
to the model and its raw output (``done.debug``, never saved).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator

import psycopg
from fastapi import APIRouter, Request
from sse_starlette.sse import EventSourceResponse, ServerSentEvent
from starlette.concurrency import iterate_in_threadpool, run_in_threadpool

from varagity.chat.base import Turn
from varagity.chat.conversation import history, save_turn
from varagity.chat.turn import (
    ReasoningDelta,
    TokenDelta,
    TurnDone,
    TurnError,
    TurnQueued,
    TurnRequest,
    TurnRetrieval,
    run_turn,
)
from varagity.observability.metrics import count_chat_turn, observe_stages
from varagity.services import Services
from varagity.stores.conversation_store import ConversationNotFound, ConversationStore, new_id
from varagity_api.corpus_gate import refuse_while_restoring
from varagity_api.deps import ConversationStoreDep, ServicesDep
from varagity_api.errors import ApiError, not_found
from varagity_api.schemas.chat import (
    AnswerDebug,
    ChatRequest,
    DoneEvent,
    ErrorEvent,
    PromptMessage,
    QueuedEvent,
    ReasoningEvent,
    RetrievalEvent,
    TokenEvent,
)
from varagity_api.schemas.common import (
    ErrorBody,
    day_source_from,
    graph_evidence_from,
    quotes_from,
    source_from,
)
from varagity_api.sse import PING_SECONDS, close_quietly, sse_event

router = APIRouter(tags=["chat"])
log = logging.getLogger(__name__)


async def turn_events(
    request: Request,
    turn: TurnRequest,
    services: Services,
    store: ConversationStore,
    conversation_id: str,
) -> AsyncIterator[ServerSentEvent]:
    """The SSE events of one turn; saves the turn just before ``done``."""
    engine = turn.chat_engine or services.settings.CHAT_ENGINE
    method = turn.method or services.settings.RETRIEVAL_METHOD
    timings: dict[str, float] = {}
    outcome = "aborted"  # until the turn is saved or fails
    evidence: TurnRetrieval | None = None
    told: tuple[int, str] = (0, "")  # the place in line and reason the client was last told
    events = run_turn(services, turn)
    try:
        async for event in iterate_in_threadpool(events):
            if await request.is_disconnected():
                log.info("client went away mid-answer; stopping generation, saving nothing")
                return
            if isinstance(event, TurnRetrieval):
                evidence, engine, method = event, event.chat_engine, event.method
                timings = event.timings_ms
                yield sse_event(
                    "retrieval",
                    RetrievalEvent(
                        conversation_id=conversation_id,
                        query=event.query,
                        condensed_query=event.condensed_query,
                        chat_engine=event.chat_engine,  # type: ignore[arg-type]  # a registry name
                        method=event.method,  # type: ignore[arg-type]
                        sources=[source_from(c, n) for n, c in enumerate(event.chunks, start=1)],
                        timings_ms=dict(event.timings_ms),
                        corpus=event.corpus,
                        target_corpus=event.target_corpus,
                        degraded=event.degraded,
                        graph=graph_evidence_from(event.graph) if event.graph else None,
                        days=[day_source_from(d, n) for n, d in enumerate(event.days, start=1)],
                        index_as_of=event.index_as_of,
                    ),
                )
            elif isinstance(event, TurnQueued):
                if (event.position, event.reason) == told:  # the runner's heartbeat
                    continue
                told = (event.position, event.reason)
                ahead = event.position - 1
                if event.reason == "context":
                    message = "Waiting for the model: it is writing search context for new files."
                elif ahead == 0:
                    message = "Waiting for the model: it is answering another chat."
                else:
                    message = f"Waiting for the model: {ahead} chats ahead of this one."
                yield sse_event(
                    "queued",
                    QueuedEvent(position=event.position, reason=event.reason, message=message),
                )
            elif isinstance(event, ReasoningDelta):
                yield sse_event("reasoning", ReasoningEvent(delta=event.text))
            elif isinstance(event, TokenDelta):
                yield sse_event("token", TokenEvent(delta=event.text))
            elif isinstance(event, TurnError):
                outcome = "error"
                yield sse_event("error", ErrorEvent(code=event.code, message=event.message))
                return
            elif isinstance(event, TurnDone):
                assert evidence is not None  # the runner sends retrieval first
                timings = event.timings_ms
                saved = await _save(store, conversation_id, turn.question, evidence, event)
                if isinstance(saved, ErrorEvent):
                    outcome = "error"
                    yield sse_event("error", saved)
                    return
                outcome = "ok"
                yield sse_event(
                    "done",
                    DoneEvent(
                        conversation_id=conversation_id,
                        message_id=saved,
                        answer=event.answer,
                        reasoning=event.reasoning,
                        cited=event.cited,
                        stop_reason=event.stop_reason,
                        timings_ms=event.timings_ms,
                        quotes=quotes_from(event.quotes),
                        debug=_debug_from(event),
                    ),
                )
    finally:
        close_quietly(events)
        count_chat_turn(engine, method, outcome)
        observe_stages("chat", timings)


def _debug_from(done: TurnDone) -> AnswerDebug | None:
    """The wire form of a turn's debug record (None unless the request asked for it)."""
    if done.debug is None:
        return None
    return AnswerDebug(
        messages=[PromptMessage(role=m["role"], content=m["content"]) for m in done.debug.messages],
        raw_output=done.debug.raw,
    )


async def _save(
    store: ConversationStore,
    conversation_id: str,
    question: str,
    evidence: TurnRetrieval,
    done: TurnDone,
) -> str | ErrorEvent:
    """Save the turn; the assistant message's id, or the error event to send instead."""
    try:
        saved = await run_in_threadpool(save_turn, store, conversation_id, question, evidence, done)
    except psycopg.Error as exc:
        log.error("saving the turn of conversation %s failed: %s", conversation_id, exc)
        message = f"The answer was generated but could not be saved: {exc}"
        return ErrorEvent(code="persistence_failed", message=message)
    return saved.assistant_message_id


@router.post(
    "/chat",
    response_class=EventSourceResponse,
    responses={
        200: {
            "content": {"text/event-stream": {}},
            "description": "SSE stream: retrieval (RetrievalEvent), queued (QueuedEvent) while "
            "the model is busy, reasoning (ReasoningEvent) and token (TokenEvent) deltas, then "
            "done (DoneEvent) or error (ErrorEvent).",
        },
        404: {"model": ErrorBody, "description": "Unknown conversation_id."},
        503: {"model": ErrorBody, "description": "The corpus is being restored."},
    },
)
async def chat(
    request: Request, body: ChatRequest, services: ServicesDep, store: ConversationStoreDep
) -> EventSourceResponse:
    """Stream the evidence, reasoning and answer deltas, then ``done`` with the saved ids."""
    settings = services.settings
    await run_in_threadpool(
        refuse_while_restoring, settings, body.corpus, status=503, pg=services.pg
    )
    earlier: tuple[Turn, ...] = ()
    if body.conversation_id is None:
        conversation_id = new_id()
    else:
        conversation_id = body.conversation_id
        try:
            earlier = await run_in_threadpool(
                history, store, conversation_id, settings.CHAT_HISTORY_TURNS
            )
        except ConversationNotFound as exc:
            raise not_found(exc) from exc
    try:
        turn = TurnRequest(
            question=body.question,
            history=earlier,
            method=body.method,
            k=body.k,
            chat_engine=body.chat_engine,
            corpus=body.corpus,
            debug=body.debug,
        )
    except ValueError as exc:
        raise ApiError(422, "invalid_request", str(exc)) from exc
    events = turn_events(request, turn, services, store, conversation_id)
    return EventSourceResponse(events, ping=PING_SECONDS)
