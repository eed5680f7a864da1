"""Server-sent events: named events whose data is a schema's JSON (see contract.py)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Generator
from typing import Any, TypeVar

from pydantic import BaseModel
from sse_starlette.sse import ServerSentEvent
from starlette.requests import Request

from varagity.dagster_client import DagsterError
from varagity_api.errors import ApiError
from varagity_api.schemas.common import ErrorBody

log = logging.getLogger(__name__)

#: Seconds between keep-alive comments on every stream.
PING_SECONDS = 15
#: How often a followed Dagster job (an ingest backfill, a graph build run) is re-read.
POLL_SECONDS = 1.0

T = TypeVar("T")


def sse_event(name: str, payload: BaseModel) -> ServerSentEvent:
    """One named event carrying ``payload`` as JSON."""
    return ServerSentEvent(event=name, data=payload.model_dump_json())


def close_quietly(events: Generator[Any, None, None]) -> None:
    """Close a turn's event stream early (which closes the model's HTTP stream)."""
    try:
        events.close()
    except ValueError:  # a worker thread is inside next(); it is collected when that returns
        log.debug("turn still running in a worker thread; left to the collector")


async def follow_job(
    request: Request,
    first: T,
    read: Callable[[T], Awaitable[T]],
    *,
    view: Callable[[T], BaseModel],
    done: Callable[[T], bool],
    failure: Callable[[DagsterError], ApiError],
    what: str,
) -> AsyncIterator[ServerSentEvent]:
    """Follow a Dagster job as SSE: ``progress`` (``view`` of its state) whenever it
    changes, re-read every :data:`POLL_SECONDS`, then ``done`` once ``done`` says so; a
    Dagster failure (``failure`` names it) or any other error ends the stream with an
    ``error`` event, never a torn connection. Stops when the client goes away.

    Args:
        request: The streaming request (to notice a client that left).
        first: The job's state when the stream opened.
        read: The job's next state from its current one.
        view: The wire form of a state.
        done: Whether a state is final.
        failure: The HTTP error for a failed Dagster call.
        what: The stream, as the log names it.
    """
    state, sent = first, ""
    try:
        while True:
            payload = view(state)
            if done(state):
                yield sse_event("done", payload)
                return
            text = payload.model_dump_json()
            if text != sent:
                yield ServerSentEvent(event="progress", data=text)
                sent = text
            await asyncio.sleep(POLL_SECONDS)
            if await request.is_disconnected():
                log.info("%s: client went away", what)
                return
            state = await read(state)
    except DagsterError as exc:
        error = failure(exc)
        yield sse_event("error", ErrorBody(code=error.code, message=error.message))
    except Exception as exc:
        log.exception("%s failed", what)
        yield sse_event(
            "error", ErrorBody(code="internal_error", message=f"{type(exc).__name__}: {exc}")
        )
