"""The routes every kind of job has, made by one factory: ``GET {path}`` (the job),
``GET {path}/events`` (SSE: ``progress`` whenever it changes, then ``done``, or an
in-band ``error``) and, for a kind that can stop its jobs, ``POST {path}/kill``.

A kind's route module keeps its launch and list endpoints and gives the factory the
dependency that turns the path into a :class:`Job` (an adapter of :mod:`varagity.jobs`
bound to the id), the job's wire form and the errors' codes.

(No ``from __future__ import annotations`` here: the endpoints' dependency is a local,
which FastAPI could not resolve from a string annotation.)
"""

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request
from pydantic import BaseModel
from sse_starlette.sse import EventSourceResponse
from starlette.concurrency import run_in_threadpool

from varagity.jobs import DagsterError, Run
from varagity_api.errors import DAGSTER_DOWN, DAGSTER_FAILED, ApiError
from varagity_api.schemas.common import ErrorBody
from varagity_api.sse import PING_SECONDS, follow_job

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Job:
    """The job a request's path names: how to read it and, if its kind can, stop it
    (blocking calls, on one adapter, so a followed run's log is read on)."""

    id: str
    read: Callable[[], Run[Any]]
    kill: Callable[[], Run[Any]] | None = None


def add_job_routes(
    router: APIRouter,
    path: str,
    *,
    job_of: Callable[..., Job],
    view: Callable[[Run[Any]], BaseModel],
    model: type[BaseModel],
    failure: Callable[[DagsterError], ApiError],
    name: str,
    what: str,
    not_found: str,
    read_doc: str,
    events_doc: str,
    kill_doc: str | None = None,
    ended: str | None = None,
) -> None:
    """Add a kind's job routes to ``router``.

    Args:
        router: The kind's router.
        path: The job's path in it, naming its id (``/{run_id}``).
        job_of: A dependency turning the path (and whatever else it declares) into a
            :class:`Job`.
        view: The job's wire form.
        model: The wire form's model (the routes' response model).
        failure: The HTTP error of a failed Dagster call about the job.
        name: The read route's name (the operation id's stem); the others are
            ``{name}_events`` and ``kill_{name}``.
        what: The job as the log names it (``graph build``).
        not_found: What the 404 says.
        read_doc: The read route's description.
        events_doc: The event stream's.
        kill_doc: The kill route's, which is added only when given.
        ended: What the kill route's 409 says.
    """
    missing = {"model": ErrorBody, "description": not_found}

    async def read(job: Annotated[Job, Depends(job_of)]) -> BaseModel:
        try:
            run = await run_in_threadpool(job.read)
        except DagsterError as exc:
            raise failure(exc) from exc
        return view(run)

    async def events(job: Annotated[Job, Depends(job_of)], request: Request) -> EventSourceResponse:
        try:
            first = await run_in_threadpool(job.read)
        except DagsterError as exc:
            raise failure(exc) from exc

        async def read_now() -> Run[Any]:
            return await run_in_threadpool(job.read)

        stream = follow_job(
            request, first, read_now, view=view, failure=failure, what=f"{what} events for {job.id}"
        )
        return EventSourceResponse(stream, ping=PING_SECONDS)

    async def kill(job: Annotated[Job, Depends(job_of)]) -> BaseModel:
        assert job.kill is not None, "a kind that cannot stop its jobs has no kill route"
        try:
            run = await run_in_threadpool(job.kill)
        except DagsterError as exc:
            raise failure(exc) from exc
        log.info("%s %s: termination requested (now %s)", what, run.id, run.status)
        return view(run)

    read.__doc__, events.__doc__, kill.__doc__ = read_doc, events_doc, kill_doc
    router.add_api_route(
        path,
        read,
        methods=["GET"],
        name=name,
        response_model=model,
        responses={404: missing, 502: DAGSTER_FAILED, 503: DAGSTER_DOWN},
    )
    router.add_api_route(
        f"{path}/events",
        events,
        methods=["GET"],
        name=f"{name}_events",
        response_class=EventSourceResponse,
        responses={
            200: {"content": {"text/event-stream": {}}, "description": "SSE stream"},
            404: missing,
            502: DAGSTER_FAILED,
            503: DAGSTER_DOWN,
        },
    )
    if kill_doc is not None:
        router.add_api_route(
            f"{path}/kill",
            kill,
            methods=["POST"],
            name=f"kill_{name}",
            response_model=model,
            responses={
                404: missing,
                409: {"model": ErrorBody, "description": ended or "The job has already ended."},
                502: DAGSTER_FAILED,
                503: DAGSTER_DOWN,
            },
        )
