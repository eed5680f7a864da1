"""``/api/evaluations``: launch, list, follow and kill answer evaluations (Dagster runs
of ``evaluate_answers``: a golden suite answered on the live index, its answer gates
checked), through :class:`~varagity.jobs.evaluation.EvaluationJobs`.

A launch answers ``202`` with the run, ``422 invalid_suite`` for a path that is not an
answer suite, ``409 corpus_busy`` while a restore of the documents is in flight; reading,
following (``/events``) and killing one are routes of
:func:`~varagity_api.job_routes.add_job_routes`.
"""

from __future__ import annotations

import logging

from fastapi import APIRouter, Query
from starlette.concurrency import run_in_threadpool

from varagity.eval.answers import answer_suite_root
from varagity.jobs import DagsterError
from varagity.jobs.evaluation import EvaluationJobs
from varagity_api.deps import SettingsDep, dagster_client
from varagity_api.errors import DAGSTER_DOWN, DAGSTER_FAILED, ApiError, dagster_error
from varagity_api.job_routes import Job, add_job_routes
from varagity_api.schemas.common import ErrorBody
from varagity_api.schemas.evaluations import (
    EvaluationList,
    EvaluationRequest,
    EvaluationRun,
    evaluation_from,
)

log = logging.getLogger(__name__)

router = APIRouter(prefix="/evaluations", tags=["evaluations"])


def dagster_failure(exc: DagsterError) -> ApiError:
    """The HTTP error for a failed Dagster call about an answer evaluation."""
    return dagster_error(exc, not_found="evaluation_not_found", ended="evaluation_ended")


def checked_suite(path: str) -> str:
    """The absolute path of the answer suite at ``path`` (the run reads it). Blocking.

    Raises:
        ApiError: 422 ``invalid_suite`` saying why it is not one.
    """
    try:
        return answer_suite_root(path)
    except (ValueError, OSError) as exc:  # a SuiteError is a ValueError
        raise ApiError(422, "invalid_suite", f"{path!r} is not an answer suite: {exc}") from exc


@router.post(
    "",
    status_code=202,
    response_model=EvaluationRun,
    responses={
        409: {"model": ErrorBody, "description": "A restore of the documents is in flight."},
        422: {"model": ErrorBody, "description": "The path is not an answer suite."},
        502: DAGSTER_FAILED,
        503: DAGSTER_DOWN,
    },
)
async def launch_evaluation(
    settings: SettingsDep, body: EvaluationRequest | None = None
) -> EvaluationRun:
    """Answer a suite (the shipped golden suite by default) on the live index and check
    its answer gates; follow the run at ``/api/evaluations/{run_id}/events``."""
    suite = body.suite if body else None
    path = None if suite is None else await run_in_threadpool(checked_suite, suite)

    def launch() -> EvaluationRun:
        jobs = EvaluationJobs(dagster_client(settings))
        run_id = jobs.launch(path, source="api")
        log.info("answer evaluation launched: run %s (%s)", run_id, path or "golden suite")
        return evaluation_from(jobs.read(run_id))

    try:
        return await run_in_threadpool(launch)
    except DagsterError as exc:
        raise dagster_failure(exc) from exc


@router.get("", response_model=EvaluationList, responses={502: DAGSTER_FAILED, 503: DAGSTER_DOWN})
async def list_evaluations(
    settings: SettingsDep, limit: int = Query(default=20, ge=1, le=100)
) -> EvaluationList:
    """Recent answer evaluations, newest first."""

    def read() -> EvaluationList:
        runs = EvaluationJobs(dagster_client(settings)).recent(limit)
        return EvaluationList(runs=[evaluation_from(run) for run in runs])

    try:
        return await run_in_threadpool(read)
    except DagsterError as exc:
        raise dagster_failure(exc) from exc


def _evaluation(run_id: str, settings: SettingsDep) -> Job:
    jobs = EvaluationJobs(dagster_client(settings))
    return Job(run_id, lambda: jobs.read(run_id), lambda: jobs.kill(run_id))


add_job_routes(
    router,
    "/{run_id}",
    job_of=_evaluation,
    view=evaluation_from,
    model=EvaluationRun,
    failure=dagster_failure,
    name="evaluation",
    what="answer evaluation",
    not_found="No answer evaluation has this run id.",
    read_doc="An evaluation's state, questions answered, figures once scored, error if failed.",
    events_doc="""Stream an evaluation: ``progress`` (an EvaluationRun) whenever it changes,
    then ``done`` with the final state; ``error`` ends the stream if Dagster stops
    answering.""",
    kill_doc="Stop a queued or running evaluation.",
    ended="The evaluation has already ended.",
)
