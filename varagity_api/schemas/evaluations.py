"""Answer evaluations (Dagster runs of ``evaluate_answers``) as ``/api/evaluations``
shows them."""

from __future__ import annotations

from dataclasses import asdict
from datetime import UTC, datetime

from pydantic import BaseModel, Field

from varagity.jobs import Run
from varagity.jobs.evaluation import EvaluationProgress
from varagity_api.schemas.graph import BuildState


class EvaluationRequest(BaseModel):
    """Which suite to answer."""

    suite: str | None = Field(
        default=None,
        min_length=1,
        max_length=4096,
        description="A suite folder on the server (queries.jsonl, suite.json or corpus/, "
        "optionally thresholds.json; eval_suites/README.md); the shipped golden suite "
        "(eval_suites/sample) when absent.",
    )


class AnswerFigures(BaseModel):
    """The suite's figures, once every question is answered and scored (shares 0..1)."""

    n: int = Field(description="Questions answered.")
    answer_correctness: float = Field(description="Mean share of key facts stated.")
    fully_correct: float = Field(description="Share of answers stating every key fact.")
    citation_validity: float
    abstention_accuracy: float
    loops: int = Field(description="Answers stopped by the repetition guard.")
    first_token_p50_ms: float


class EvaluationRun(BaseModel):
    """An answer evaluation, where it stands and what it reported."""

    run_id: str
    state: BuildState = Field(description="failed also when a gate missed its threshold.")
    status: str = Field(description="Dagster's run status.")
    done: bool
    source: str | None = Field(description="Who launched it: api, cli.")
    suite: str | None = Field(description="The suite folder; null: the shipped golden suite.")
    questions_done: int = Field(description="Questions answered so far.")
    questions_total: int = Field(description="The suite's questions (0 until one is answered).")
    question: str | None = Field(description="The last answered question's verdict line.")
    figures: AnswerFigures | None = Field(description="Once the suite is scored.")
    error: str | None = Field(description="Why the run failed (a gate that missed, an error).")
    created_at: datetime
    started_at: datetime | None
    ended_at: datetime | None
    dagster_url: str = Field(description="The run's page in the Dagster UI.")


class EvaluationList(BaseModel):
    """Recent answer evaluations, newest first."""

    runs: list[EvaluationRun]


def _when(timestamp: float | None) -> datetime | None:
    return None if timestamp is None else datetime.fromtimestamp(timestamp, UTC)


def evaluation_from(run: Run[EvaluationProgress]) -> EvaluationRun:
    """The wire form of an answer evaluation."""
    progress = run.progress
    return EvaluationRun(
        run_id=run.id,
        state=run.state,
        status=run.status,
        done=run.done,
        source=run.source,
        suite=progress.suite,
        questions_done=progress.done,
        questions_total=progress.total,
        question=progress.question,
        figures=AnswerFigures(**asdict(progress.figures)) if progress.figures else None,
        error=run.error,
        created_at=datetime.fromtimestamp(run.created_at, UTC),
        started_at=_when(run.started_at),
        ended_at=_when(run.ended_at),
        dagster_url=run.url,
    )
