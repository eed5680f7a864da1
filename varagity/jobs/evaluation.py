"""Answer evaluations: Dagster runs of ``evaluate_answers`` (``answer_eval_results`` and
its gates alone), a golden suite answered on the live index. Progress is read from the
run's log: a line per question answered, then the suite's figures
(:func:`~varagity.pipeline.parse_answer_figures`). A run whose gate misses a threshold
fails, its figures read all the same.
"""

from __future__ import annotations

from dataclasses import dataclass

from varagity.jobs.gate import refuse_beside
from varagity.jobs.model import Kind, Run
from varagity.jobs.runs import RunJobs
from varagity.jobs.transport import RunNode
from varagity.pipeline import (
    ANSWER_EVAL_JOB,
    SOURCE_TAG,
    SUITE_TAG,
    AnswerFigures,
    parse_answer_figures,
    parse_answer_question,
)

#: What an evaluation waits for: a restore replacing the documents it reads.
_RESTORE: tuple[Kind, ...] = ("restore",)


@dataclass(frozen=True, slots=True)
class EvaluationProgress:
    """What an answer evaluation's tags and log say so far."""

    suite: str | None
    """The suite folder it answers (None: the shipped golden suite)."""
    done: int
    total: int
    """Questions answered, of the suite's (0 until the first is)."""
    lines: tuple[str, ...]
    """The line of each question answered, in order."""
    figures: AnswerFigures | None
    """Once the suite is scored."""

    @property
    def question(self) -> str | None:
        """The last question's line."""
        return self.lines[-1] if self.lines else None


class EvaluationJobs(RunJobs[EvaluationProgress]):
    """Launch, read, list and kill answer evaluations."""

    what = "an answer evaluation"

    def _owns(self, node: RunNode) -> bool:
        return node.job == ANSWER_EVAL_JOB

    def _progress(self, node: RunNode, seen: EvaluationProgress | None) -> EvaluationProgress:
        done, total, lines, figures = (
            (seen.done, seen.total, seen.lines, seen.figures) if seen else (0, 0, (), None)
        )
        for message in self._new_log_messages(node.run_id):
            figures = parse_answer_figures(message) or figures
            asked = parse_answer_question(message)
            if asked is not None:
                done, total, _ = asked
                lines = (*lines, message.strip()) if done > 1 else (message.strip(),)
        return EvaluationProgress(node.tags.get(SUITE_TAG), done, total, lines, figures)

    def recent(self, limit: int = 20) -> list[Run[EvaluationProgress]]:
        """The newest answer evaluations, newest first."""
        return self._recent({"pipelineName": ANSWER_EVAL_JOB}, limit)

    def launch(self, suite_path: str | None, *, source: str) -> str:
        """Launch an answer evaluation of the suite folder ``suite_path`` (an absolute
        path the run can read; None: the shipped golden suite); its run id. Refused while
        a restore of the documents is in flight.

        Raises:
            CorpusBusy: A restore of the documents is in flight.
            DagsterError: Dagster cannot be reached or refused the launch.
        """
        refuse_beside(self.client, "rag", kinds=_RESTORE)
        if suite_path is None:
            return self.client.launch_run(ANSWER_EVAL_JOB, {SOURCE_TAG: source})
        config = {"ops": {"answer_eval_results": {"config": {"suite_path": suite_path}}}}
        tags = {SOURCE_TAG: source, SUITE_TAG: suite_path}
        return self.client.launch_run(ANSWER_EVAL_JOB, tags, config)
