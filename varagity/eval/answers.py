"""Answer evaluation: every suite question answered by the chat turn runner, then scored.

Each question goes through the same code as ``/api/chat``
(:func:`varagity.chat.turn.run_turn` with the ``simple`` engine: its repetition guard,
decoding and token cap included), on whatever stores ``services`` holds: an isolated
eval store from ``varagity eval --answers``, the live index from the Dagster
``answer_eval_results`` asset. The answer (reasoning left out) is scored by
:mod:`varagity.eval.answer_scoring` against the evidence texts the prompt numbered.
Time to first token runs from the start of the turn (retrieval included) to the first
streamed piece, reasoning or answer; time per answer to the end of the turn. An answer
the repetition guard stopped counts as a loop.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from varagity.eval.answer_scoring import AnswerScore, AnswerSummary, score_answer, summarize
from varagity.eval.scoring import fixed_width, percentile
from varagity.eval.suite import AnswerThresholds, EvalQuery, Suite, SuiteError, load_suite
from varagity.services import Services

if TYPE_CHECKING:
    from varagity.chat.turn import TurnDone, TurnRequest, TurnRetrieval

Progress = Callable[[str], None]


@dataclass(frozen=True, slots=True)
class GeneratedAnswer:
    """One answer as the turn runner produced it."""

    query_id: str
    text: str
    passages: tuple[str, ...]
    sources: tuple[str, ...]
    first_token_ms: float | None
    total_ms: float
    looped: bool = False


@dataclass(slots=True)
class AnswerResult:
    """Answers of one configuration over a suite, with their scores."""

    config: str
    method: str
    k: int
    model: str
    answers: list[GeneratedAnswer] = field(default_factory=list)
    scores: list[AnswerScore] = field(default_factory=list)
    queries: dict[str, str] = field(default_factory=dict)
    error: str | None = None

    @property
    def ok(self) -> bool:
        """Whether every question was answered and scored."""
        return self.error is None

    @property
    def summary(self) -> AnswerSummary:
        """The suite figures."""
        return summarize(self.scores)

    def latency(self) -> dict[str, dict[str, float]]:
        """``{"first_token": {"p50", "p95"}, "answer": {...}}`` in milliseconds."""
        first = [a.first_token_ms for a in self.answers if a.first_token_ms is not None]
        total = [a.total_ms for a in self.answers]
        return {
            name: {
                "p50": round(percentile(values, 50), 1),
                "p95": round(percentile(values, 95), 1),
            }
            for name, values in (("first_token", first), ("answer", total))
        }

    def questions(self) -> list[dict[str, Any]]:
        """Per question: the answer, its sources, timings and every verdict."""
        by_id = {a.query_id: a for a in self.answers}
        out = []
        for score in self.scores:
            answer = by_id[score.query_id]
            out.append(
                {
                    **score.to_dict(),
                    "query": self.queries.get(score.query_id, ""),
                    "answer": answer.text,
                    "sources": list(answer.sources),
                    "passages": list(answer.passages),
                    "first_token_ms": answer.first_token_ms,
                    "total_ms": round(answer.total_ms, 1),
                }
            )
        return out

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "config": self.config,
            "method": self.method,
            "k": self.k,
            "model": self.model,
            "error": self.error,
            "summary": self.summary.to_dict(),
            "latency_ms": self.latency(),
            "questions": self.questions(),
        }


def require_facts(suite: Suite) -> None:
    """Refuse a suite whose answerable questions lack key facts (nothing to score against).

    Raises:
        SuiteError: Naming the questions without ``facts``.
    """
    missing = [q.id for q in suite.answerable if not q.facts]
    if missing:
        shown = ", ".join(missing[:10]) + (" ..." if len(missing) > 10 else "")
        raise SuiteError(
            f'suite {suite.name}: answer scoring needs key facts; add a "facts" list to '
            f"{len(missing)} answerable question(s): {shown}"
        )


def answer_suite_root(path: str) -> str:
    """The absolute folder of the answer suite at ``path``, checked as an answer
    evaluation run will read it (it loads, its answerable questions have key facts).

    Raises:
        SuiteError: It is not a suite, or one without key facts.
        OSError: It cannot be read.
    """
    suite = load_suite(path)
    require_facts(suite)
    return str(suite.root)


class AnswerError(RuntimeError):
    """The turn runner ended a question with an error (the model down, a bad request)."""


@dataclass(frozen=True)
class TimedTurn:
    """A turn run to its end: what it retrieved, its ``done`` event, and when its first
    token and its end came (ms after it started)."""

    evidence: TurnRetrieval | None
    done: TurnDone
    first_token_ms: float | None
    total_ms: float


def run_timed_turn(services: Services, request: TurnRequest, query_id: str) -> TimedTurn:
    """Run ``request`` through the chat turn runner to its end, timing it.

    Raises:
        AnswerError: The turn ended with a :class:`~varagity.chat.turn.TurnError`, or
            without an answer.
    """
    from varagity.chat.turn import (
        ReasoningDelta,
        TokenDelta,
        TurnDone,
        TurnError,
        TurnRetrieval,
        run_turn,
    )

    started = time.perf_counter()
    first: float | None = None
    evidence: TurnRetrieval | None = None
    for event in run_turn(services, request):
        if isinstance(event, TurnRetrieval):
            evidence = event
        elif isinstance(event, ReasoningDelta | TokenDelta):
            if first is None:
                first = (time.perf_counter() - started) * 1000
        elif isinstance(event, TurnError):
            raise AnswerError(f"{query_id}: {event.code}: {event.message}") from event.cause
        elif isinstance(event, TurnDone):
            total = (time.perf_counter() - started) * 1000
            return TimedTurn(evidence, event, round(first, 1) if first is not None else None, total)
    raise AnswerError(f"{query_id}: the turn ended without an answer")


def answer_question(
    services: Services, query_id: str, question: str, method: str, k: int
) -> GeneratedAnswer:
    """Answer ``question`` through the chat turn runner with ``k`` passages of ``method``.

    The ``simple`` chat engine is used: a suite question stands alone, so it is searched
    as asked.

    Raises:
        AnswerError: The turn ended with a :class:`~varagity.chat.turn.TurnError`.
    """
    from varagity.chat.turn import TurnRequest

    request = TurnRequest(question, method=method, k=k, chat_engine="simple")
    turn = run_timed_turn(services, request, query_id)
    chunks = turn.evidence.chunks if turn.evidence is not None else ()
    return GeneratedAnswer(
        query_id=query_id,
        text=turn.done.answer,
        passages=tuple(c.record.content for c in chunks),
        sources=tuple(c.record.relative_path for c in chunks),
        first_token_ms=turn.first_token_ms,
        total_ms=turn.total_ms,
        looped=turn.done.stop_reason == "repetition",
    )


def score(query: EvalQuery, answer: GeneratedAnswer) -> AnswerScore:
    """The verdicts on ``answer`` to ``query``."""
    return score_answer(
        query.id,
        answer.text,
        answer.passages,
        facts=query.facts,
        traps=query.traps,
        answerable=query.answerable,
        looped=answer.looped,
        relevant=[(p.rel_source, p.text) for p in query.relevant],
        sources=answer.sources,
    )


def evaluate_answers(
    services: Services,
    suite: Suite,
    method: str,
    k: int,
    *,
    config: str | None = None,
    progress: Progress | None = None,
    facts_required: bool = True,
) -> AnswerResult:
    """Answer and score every question of ``suite`` with ``method`` at ``k`` passages.

    With ``facts_required=False`` (the feedback suite) an answerable question without
    key facts is judged by whether the answer cites one of its golden passages
    (:func:`~varagity.eval.answer_scoring.cites_relevant`) instead of being refused.

    Raises:
        SuiteError: The suite's answerable questions lack key facts.
    """
    if facts_required:
        require_facts(suite)
    result = AnswerResult(config or method, method, k, services.settings.LLM_MODEL)
    for n, query in enumerate(suite.queries, start=1):
        generated = answer_question(services, query.id, query.query, method, k)
        verdict = score(query, generated)
        result.answers.append(generated)
        result.scores.append(verdict)
        result.queries[query.id] = query.query
        if progress:
            progress(
                f"  [{n}/{len(suite.queries)}] {query.id}: facts {sum(verdict.facts)}/"
                f"{len(verdict.facts)}, citations {sum(c.valid for c in verdict.citations)}/"
                f"{len(verdict.citations)} valid"
                + (", abstained" if verdict.abstained else "")
                + ("" if verdict.abstention_correct else ", abstention wrong")
                + (", LOOPED" if verdict.looped else "")
                + (
                    ""
                    if verdict.relevant_cited is None
                    else f", marked passage {'cited' if verdict.relevant_cited else 'NOT cited'}"
                )
                + f" (first token {(generated.first_token_ms or 0) / 1000:.1f}s,"
                f" answer {generated.total_ms / 1000:.1f}s)"
            )
    return result


@dataclass(frozen=True, slots=True)
class GateOutcome:
    """One figure against its threshold."""

    metric: str
    measured: float
    threshold: float
    passed: bool
    failing: tuple[str, ...]


def gate(summary: AnswerSummary, thresholds: AnswerThresholds) -> list[GateOutcome]:
    """Every answer figure of ``summary`` against ``thresholds`` (loops and the false
    abstention rate: at most)."""
    out = []
    for metric in ("answer_correctness", "citation_validity", "abstention_accuracy"):
        measured = float(getattr(summary, metric))
        minimum = float(getattr(thresholds, metric))
        out.append(
            GateOutcome(
                metric,
                measured,
                minimum,
                measured >= minimum,
                tuple(summary.failing.get(metric, ())),
            )
        )
    out.append(
        GateOutcome(
            "loops",
            float(summary.loops),
            float(thresholds.max_loops),
            summary.loops <= thresholds.max_loops,
            tuple(summary.failing.get("loops", ())),
        )
    )
    out.append(
        GateOutcome(
            "false_abstention_rate",
            summary.false_abstention_rate,
            thresholds.max_false_abstention,
            summary.false_abstention_rate <= thresholds.max_false_abstention,
            tuple(summary.failing.get("false_abstention_rate", ())),
        )
    )
    return out


_COLUMNS = (
    "config",
    "model",
    "n",
    "correct",
    "all facts",
    "cit. valid",
    "cited",
    "abstention",
    "unans. ok",
    "loops",
    "TTFT p50/p95 s",
    "answer p50/p95 s",
)


def _row(r: AnswerResult) -> list[str]:
    if not r.ok:
        return [r.config, r.model, "-", (r.error or "failed")[:60]]
    s = r.summary
    lat = r.latency()
    return [
        r.config,
        r.model,
        str(s.n),
        f"{s.answer_correctness:.3f}",
        f"{s.fully_correct:.3f}",
        f"{s.citation_validity:.3f}",
        f"{s.cited_share:.3f}",
        f"{s.abstention_accuracy:.3f}",
        f"{s.abstained_when_unanswerable:.3f}",
        str(s.loops),
        f"{lat['first_token']['p50'] / 1000:.1f}/{lat['first_token']['p95'] / 1000:.1f}",
        f"{lat['answer']['p50'] / 1000:.1f}/{lat['answer']['p95'] / 1000:.1f}",
    ]


def format_table(results: Sequence[AnswerResult]) -> str:
    """A fixed-width table of the answer figures, one row per result."""
    rows = [list(_COLUMNS), *(_row(r) for r in results)]
    return fixed_width(rows)


def markdown_table(results: Sequence[AnswerResult]) -> str:
    """The same table in Markdown (Dagster metadata, docs)."""
    lines = ["| " + " | ".join(_COLUMNS) + " |", "|" + "---|" * len(_COLUMNS)]
    lines += ["| " + " | ".join(_row(r)) + " |" for r in results]
    return "\n".join(lines)
