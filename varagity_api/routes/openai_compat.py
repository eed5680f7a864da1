"""The OpenAI-compatible endpoint: ``GET /v1/models`` and ``POST /v1/chat/completions``.

Any OpenAI client (the official SDKs, Open WebUI, LibreChat, ...) can ask the corpus
questions. The last message is the question and must come from the ``user``; earlier
user/assistant pairs are the conversation the chat engine (``CHAT_ENGINE``) uses;
system messages are ignored, since the grounded prompt is Varagity's own. The model id
picks the corpus and the retrieval method: ``varagity`` uses ``RETRIEVAL_METHOD``,
``varagity-<method>`` a given one, and ``varagity-graph`` answers from the message
graph (its conversation days are the cited sources; when the graph cannot answer, the
documents do, and a "Note:" line in the footer says so). The turn runs through the same runner as
``/api/chat`` (:mod:`varagity.chat.turn`), with the same limits: ``max_tokens`` /
``max_completion_tokens`` may lower the answer cap below ``LLM_MAX_TOKENS``, never
raise it, and a question longer than the runner's cap is a 400. Sampling parameters
are accepted and ignored: the server's ``LLM_TEMPERATURE``, penalties and prompt apply,
so answers match ``/api/chat``. ``finish_reason`` is ``length`` when the answer hit its
cap, else ``stop`` (also when the repetition guard stopped a loop; ``varagity.stop_reason``
tells the two apart).

The answer's ``[n]`` citations resolve through a "Sources:" footer appended to the
content (``[n] path (page p)``, or ``[n] thread, day`` for a graph answer), so plain
clients can follow them; the non-standard
``varagity`` field carries the full evidence (on the complete response, on the first
chunk of a stream, and with ``cited`` and ``stop_reason`` on its finishing chunk).
Turns here are not saved as conversations.

Errors use OpenAI's shape, ``{"error": {"message", "type", "param", "code"}}``,
instead of the ``{"code", "message"}`` of ``/api``: OpenAI clients parse that shape
into their exceptions. Bad input is a 400 (a 404 for an unknown model), never a 5xx;
an unavailable store or model server is a 503. Once a stream has started, a failure
arrives as a final ``data: {"error": ...}`` line.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import AsyncIterator, Callable, Coroutine, Generator, Sequence
from typing import Any, Literal

from fastapi import APIRouter, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, StreamingResponse
from fastapi.routing import APIRoute
from starlette.concurrency import iterate_in_threadpool, run_in_threadpool

from varagity.chat.base import Turn
from varagity.chat.turn import (
    Corpus,
    ReasoningDelta,
    StopReason,
    TokenDelta,
    TurnDone,
    TurnError,
    TurnEvent,
    TurnRequest,
    TurnRetrieval,
    run_turn,
)
from varagity.config import RETRIEVAL_METHODS, Settings
from varagity.generation.quotes import quoted_texts
from varagity.observability.metrics import count_chat_turn, observe_stages
from varagity.records import Quote
from varagity.stores.conversation_store import new_id
from varagity_api.corpus_gate import refuse_while_restoring
from varagity_api.deps import ServicesDep
from varagity_api.errors import ApiError
from varagity_api.schemas.common import (
    DaySource,
    Source,
    day_source_from,
    graph_evidence_from,
    quotes_from,
    source_from,
)
from varagity_api.schemas.openai import (
    AssistantMessage,
    ChatCompletion,
    ChatCompletionChunk,
    ChatCompletionRequest,
    ChatMessage,
    Choice,
    ChunkChoice,
    Delta,
    ModelCard,
    ModelList,
    OpenAIError,
    OpenAIErrorBody,
    VaragityExtras,
)
from varagity_api.sse import close_quietly

log = logging.getLogger(__name__)

MODEL_PREFIX = "varagity"
#: The model id of graph turns (not a retrieval method: RETRIEVAL_METHODS has no "graph").
GRAPH_MODEL = f"{MODEL_PREFIX}-graph"
FOOTER_HEADING = "\n\nSources:\n"
ROUTE_LABEL = "openai"


def openai_error(status: int, message: str, *, code: str, param: str | None = None) -> JSONResponse:
    """An error response in OpenAI's shape."""
    kind = "invalid_request_error" if status < 500 else "server_error"
    body = OpenAIErrorBody(error=OpenAIError(message=message, type=kind, param=param, code=code))
    return JSONResponse(body.model_dump(), status_code=status)


class OpenAIRoute(APIRoute):
    """Answers validation and :class:`ApiError` failures in OpenAI's error shape."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        """Wrap FastAPI's handler so its errors leave in OpenAI's shape."""
        handler = super().get_route_handler()

        async def route(request: Request) -> Response:
            try:
                return await handler(request)
            except RequestValidationError as exc:
                errors = exc.errors()
                where = [".".join(str(p) for p in e.get("loc", ()) if p != "body") for e in errors]
                message = "; ".join(
                    f"{w or 'body'}: {e.get('msg')}" for w, e in zip(where, errors, strict=True)
                )
                param = where[0] if where and where[0] else None
                return openai_error(400, message, code="invalid_request", param=param)
            except ApiError as exc:
                return openai_error(exc.status, exc.message, code=exc.code)

        return route


_ERRORS: dict[int | str, dict[str, Any]] = {
    400: {"model": OpenAIErrorBody, "description": "Invalid request."},
    404: {"model": OpenAIErrorBody, "description": "Unknown model."},
    503: {
        "model": OpenAIErrorBody,
        "description": "Store or model server unavailable, or the corpus is being restored "
        "(corpus_restoring).",
    },
}

router = APIRouter(tags=["openai"], route_class=OpenAIRoute)


def model_ids() -> list[str]:
    """``varagity``, one ``varagity-<method>`` id per retrieval method, and the graph's."""
    return [MODEL_PREFIX, *(f"{MODEL_PREFIX}-{m}" for m in RETRIEVAL_METHODS), GRAPH_MODEL]


def target_for(model: str, settings: Settings) -> tuple[Corpus, str]:
    """The corpus and retrieval method a model id asks for (a graph turn's method is
    the one its document fallback uses).

    Raises:
        ApiError: 404 for an id :func:`model_ids` does not list.
    """
    if model == MODEL_PREFIX:
        return "rag", settings.RETRIEVAL_METHOD
    if model == GRAPH_MODEL:
        return "graph", settings.RETRIEVAL_METHOD
    method = model.removeprefix(f"{MODEL_PREFIX}-")
    if model.startswith(f"{MODEL_PREFIX}-") and method in RETRIEVAL_METHODS:
        return "rag", method
    raise ApiError(
        404,
        "model_not_found",
        f"Unknown model {model!r}; GET /v1/models lists: " + ", ".join(model_ids()),
    )


def strip_footer(content: str) -> str:
    """An earlier answer of this endpoint without its "Sources:" footer."""
    return content.split(FOOTER_HEADING, 1)[0]


def split_conversation(messages: Sequence[ChatMessage]) -> tuple[str, list[Turn]]:
    """The question (the last message) and the earlier user/assistant turns.

    Raises:
        ApiError: 400 when the last message is not a non-empty user message.
    """
    last = messages[-1]
    question = last.text().strip()
    if last.role != "user" or not question:
        raise ApiError(
            400,
            "invalid_request",
            "The last message must be a user message with text: it is the question.",
        )
    turns: list[Turn] = []
    pending: str | None = None
    for message in messages[:-1]:
        if message.role == "user":
            pending = message.text().strip() or None
        elif message.role == "assistant" and pending is not None:
            turns.append(Turn(pending, strip_footer(message.text()).strip()))
            pending = None
    return question, turns


def sources_footer(
    sources: Sequence[Source],
    days: Sequence[DaySource] = (),
    note: str | None = None,
    quotes: Sequence[Quote] = (),
) -> str:
    """The "Sources:" block that resolves the answer's ``[n]`` citations, each cited
    source with what the answer quotes of it, then the degradation ``note`` if any (""
    when there is neither)."""
    lines = []
    for s in sources:
        page = f" (page {s.page})" if s.page is not None else ""
        lines.append(f"[{s.n}] {s.relative_path}{page}")
        lines.extend(_quoted(quotes, s.n))
    for d in days:
        lines.append(f"[{d.n}] {d.thread_name}, {d.span}")
        lines.extend(_quoted(quotes, d.n))
    footer = FOOTER_HEADING + "\n".join(lines) if lines else ""
    return footer + (f"\n\nNote: {note}" if note else "")


def _quoted(quotes: Sequence[Quote], n: int) -> list[str]:
    """The footer lines quoting source ``n`` (each quote once, on one line)."""
    return [f'    "{text}"' for text in quoted_texts(quotes, n)]


#: HTTP status of a turn that fails before any output.
_STATUS = {"invalid_request": 400, "model_unavailable": 503, "internal_error": 500}


def finish_reason(stop: StopReason) -> Literal["stop", "length"]:
    """OpenAI's ``finish_reason`` for a turn's stop reason (a stopped loop is a stop)."""
    return "length" if stop == "length" else "stop"


class _Completion:
    """One grounded request on its way to an answer: ids, evidence, timings, metrics."""

    def __init__(
        self,
        evidence: TurnRetrieval,
        model: str,
        events: Generator[TurnEvent, None, None],
    ) -> None:
        """Remember the request's evidence and the rest of its events."""
        self.evidence = evidence
        self.model = model
        self.events = events
        self.id = f"chatcmpl-{new_id()}"
        self.created = int(time.time())
        self.timings: dict[str, float] = dict(evidence.timings_ms)
        self.sources = [source_from(c, n) for n, c in enumerate(evidence.chunks, start=1)]
        self.days = [day_source_from(d, n) for n, d in enumerate(evidence.days, start=1)]

    def footer(self, done: TurnDone) -> str:
        """The "Sources:" footer (with the answer's quotes, and the degradation note)."""
        return sources_footer(self.sources, self.days, self.evidence.degraded, done.quotes)

    def extras(self, done: TurnDone | None = None) -> VaragityExtras:
        """The ``varagity`` field: evidence, queries, timings, and the outcome once done."""
        return VaragityExtras(
            query=self.evidence.query,
            condensed_query=self.evidence.condensed_query,
            chat_engine=self.evidence.chat_engine,
            method=self.evidence.method,  # type: ignore[arg-type]  # a retriever's method name
            sources=self.sources,
            corpus=self.evidence.corpus,
            target_corpus=self.evidence.target_corpus,
            degraded=self.evidence.degraded,
            graph=graph_evidence_from(self.evidence.graph) if self.evidence.graph else None,
            days=self.days,
            index_as_of=self.evidence.index_as_of,
            cited=done.cited if done else None,
            quotes=quotes_from(done.quotes) if done else None,
            stop_reason=done.stop_reason if done else None,
            timings_ms=dict(done.timings_ms if done else self.timings),
        )

    def chunk_line(
        self,
        delta: Delta,
        *,
        finish: Literal["stop", "length"] | None = None,
        extras: VaragityExtras | None = None,
    ) -> str:
        """One ``data:`` line; ``finish_reason`` stays null until ``finish``."""
        chunk = ChatCompletionChunk(
            id=self.id,
            created=self.created,
            model=self.model,
            choices=[ChunkChoice(delta=delta, finish_reason=finish)],
            varagity=extras,
        )
        data = chunk.model_dump(mode="json", exclude_none=True)
        data["choices"][0]["finish_reason"] = chunk.choices[0].finish_reason  # null mid-stream
        if extras is not None:  # the same fields as the complete response, nulls included
            data["varagity"] = extras.model_dump(mode="json")
        return f"data: {json.dumps(data, ensure_ascii=False)}\n\n"

    def finish(self, outcome: str) -> None:
        """Record the turn's outcome and stage timings in the metrics."""
        count_chat_turn(self.evidence.chat_engine, self.evidence.method, outcome)
        observe_stages(ROUTE_LABEL, self.timings)


async def _complete(turn: _Completion) -> ChatCompletion:
    """Generate the whole answer, then answer with one ChatCompletion."""
    try:
        events = await run_in_threadpool(list, turn.events)
    finally:
        close_quietly(turn.events)
    last = events[-1] if events else TurnError("internal_error", "the turn ended without a result")
    if not isinstance(last, TurnDone):
        turn.finish("error")
        error = last if isinstance(last, TurnError) else TurnError("internal_error", repr(last))
        raise ApiError(_STATUS[error.code], error.code, error.message)
    turn.timings = dict(last.timings_ms)
    turn.finish("ok")
    message = AssistantMessage(
        content=last.answer + turn.footer(last), reasoning_content=last.reasoning
    )
    return ChatCompletion(
        id=turn.id,
        created=turn.created,
        model=turn.model,
        choices=[Choice(message=message, finish_reason=finish_reason(last.stop_reason))],
        varagity=turn.extras(last),
    )


async def _stream(request: Request, turn: _Completion) -> AsyncIterator[str]:
    """The chunk lines: role + evidence, deltas, the footer, the finish, ``[DONE]``."""
    outcome = "aborted"  # until the last chunk is out or a failure is reported
    try:
        yield turn.chunk_line(Delta(role="assistant", content=""), extras=turn.extras())
        async for event in iterate_in_threadpool(turn.events):
            if await request.is_disconnected():
                log.info("OpenAI client went away mid-answer; stopping generation")
                return
            if isinstance(event, ReasoningDelta):
                yield turn.chunk_line(Delta(reasoning_content=event.text))
            elif isinstance(event, TokenDelta):
                yield turn.chunk_line(Delta(content=event.text))
            elif isinstance(event, TurnError):
                outcome = "error"
                error = OpenAIError(message=event.message, type="server_error", code=event.code)
                yield f"data: {OpenAIErrorBody(error=error).model_dump_json()}\n\n"
                return
            elif isinstance(event, TurnDone):
                turn.timings = dict(event.timings_ms)
                footer = turn.footer(event)
                if footer:
                    yield turn.chunk_line(Delta(content=footer))
                yield turn.chunk_line(
                    Delta(), finish=finish_reason(event.stop_reason), extras=turn.extras(event)
                )
                yield "data: [DONE]\n\n"
                outcome = "ok"
    finally:
        close_quietly(turn.events)
        turn.finish(outcome)


@router.get("/v1/models", response_model=ModelList)
async def list_models() -> ModelList:
    """The model ids: ``varagity``, one ``varagity-<method>`` per retrieval method, and
    ``varagity-graph`` (answers from the message graph)."""
    now = int(time.time())
    return ModelList(data=[ModelCard(id=m, created=now) for m in model_ids()])


@router.post(
    "/v1/chat/completions",
    response_model=ChatCompletion,
    responses={
        200: {
            "content": {"text/event-stream": {}},
            "description": "A ChatCompletion, or with stream=true ChatCompletionChunk lines "
            "ending in data: [DONE].",
        },
        **_ERRORS,
    },
)
async def chat_completions(
    request: Request, body: ChatCompletionRequest, services: ServicesDep
) -> Response | ChatCompletion:
    """Answer the last user message over the corpus, with citations and sources."""
    settings = services.settings
    corpus, method = target_for(body.model, settings)
    question, turns = split_conversation(body.messages)
    await run_in_threadpool(refuse_while_restoring, settings, corpus, status=503, pg=services.pg)
    try:
        turn = TurnRequest(
            question=question,
            history=tuple(turns),
            method=method,
            corpus=corpus,
            max_answer_tokens=body.max_completion_tokens or body.max_tokens,
        )
    except ValueError as exc:
        raise ApiError(400, "invalid_request", str(exc)) from exc
    events = run_turn(services, turn)
    first = await run_in_threadpool(next, events)  # the evidence, or why there is none
    if not isinstance(first, TurnRetrieval):
        close_quietly(events)
        count_chat_turn(settings.CHAT_ENGINE, method, "error")
        error = first if isinstance(first, TurnError) else TurnError("internal_error", repr(first))
        raise ApiError(_STATUS[error.code], error.code, error.message)
    completion = _Completion(first, body.model, events)
    if body.stream:
        return StreamingResponse(_stream(request, completion), media_type="text/event-stream")
    return await _complete(completion)
