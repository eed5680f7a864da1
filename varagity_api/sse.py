"""Server-sent events: named events whose data is a schema's JSON (see contract.py)."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Generator
from typing import Any

from pydantic import BaseModel
from sse_starlette.sse import ServerSentEvent
from starlette.requests import Request

from varagity.jobs import DagsterError, Run
from varagity.jobs.follow import follow
from varagity_api.errors import ApiError
from varagity_api.schemas.common import ErrorBody

log = logging.getLogger(__name__)

#: Seconds between keep-alive comments on every stream.
PING_SECONDS = 15
#: How often a followed job (an ingest backfill, a graph build, a backup run) is re-read.
POLL_SECONDS = 1.0


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
    first: Run[Any],
    read: Callable[[], Awaitable[Run[Any]]],
    *,
    view: Callable[[Run[Any]], BaseModel],
    failure: Callable[[DagsterError], ApiError],
    what: str,
) -> AsyncIterator[ServerSentEvent]:
    """Follow a job as SSE (:func:`varagity.jobs.follow.follow`, re-read every
    :data:`POLL_SECONDS`): ``progress`` (``view`` of it) whenever it changes, then
    ``done`` once it is; a Dagster failure (``failure`` names it) or any other error ends
    the stream with an ``error`` event, never a torn connection. Stops when the client
    goes away.

    Args:
        request: The streaming request (to notice a client that left).
        first: The job when the stream opened.
        read: The job as it is now.
        view: The wire form of the job.
        failure: The HTTP error for a failed Dagster call.
        what: The stream, as the log names it.
    """

    def seen(run: Run[Any]) -> tuple[Run[Any], str]:
        return run, view(run).model_dump_json()

    async def read_seen() -> tuple[Run[Any], str]:
        return seen(await read())

    try:
        async for run, text in follow(
            read_seen,
            first=seen(first),
            done=lambda state: state[0].done,
            key=lambda state: state[1],
            poll_s=POLL_SECONDS,
            stop=request.is_disconnected,
        ):
            if run.done:
                yield ServerSentEvent(event="done", data=text)
                return
            yield ServerSentEvent(event="progress", data=text)
        log.info("%s: client went away", what)
    except DagsterError as exc:
        error = failure(exc)
        yield sse_event("error", ErrorBody(code=error.code, message=error.message))
    except Exception as exc:
        log.exception("%s failed", what)
        yield sse_event(
            "error", ErrorBody(code="internal_error", message=f"{type(exc).__name__}: {exc}")
        )
