"""Blocking release gates against ``thresholds.json``.

On ``eval_results``: Pass@k and MRR@k. On ``answer_eval_results``: key-fact
correctness, citation validity and abstention accuracy (each at least its threshold),
degenerate loops (at most ``max_loops``) and false abstentions (the share of answerable
questions whose passages held the answer that abstained: at most
``max_false_abstention``); ``feedback_gate``: the share of the live
corpus's feedback questions (marked thumbs-downs) that pass is at least
``answers.feedback_pass_rate`` (it passes when there are none). Each check reads the latest
materialization of its asset (the one of the same run when they run together),
compares it with the thresholds that materialization recorded, and lists the
questions that lowered the figure. They are ``blocking``: a failure stops
``search_index_release`` from materializing in that run.

``graph_answer_gate`` on ``graph_eval_results``: every figure the graph suite's
``thresholds.json`` names (accuracy and evidence-day recall at least, error rate at
most, over all questions; the share of null questions abstained at least), as that
materialization measured and recorded it; blocking, so ``graph_answers_release`` does
not materialize when one misses.
"""

from collections.abc import Callable
from typing import Any

import dagster as dg

from varagity.eval.answer_scoring import AnswerSummary
from varagity.eval.answers import gate as answer_gate
from varagity.eval.suite import AnswerThresholds
from varagity_assets.defs.evaluation.assets import (
    answer_eval_results,
    eval_results,
    graph_eval_results,
)


def _latest(
    context: dg.AssetCheckExecutionContext, asset: dg.AssetsDefinition = eval_results
) -> tuple[dict[str, Any], str | None]:
    event = context.instance.get_latest_materialization_event(asset.key)
    if event is None or event.asset_materialization is None:
        return {}, None
    values = {k: v.value for k, v in event.asset_materialization.metadata.items()}
    return values, event.run_id


def _missed_table(questions: list[dict[str, Any]], k: int) -> tuple[list[str], str]:
    rows = []
    ids = []
    for q in questions:
        ranks = q.get("found_ranks") or []
        found = sum(1 for r in ranks if r is not None and r <= k)
        if not ranks or found < len(ranks):
            ids.append(q["id"])
            first = q.get("first_rank")
            rows.append(
                f"| {q['id']} | {str(q.get('query', '')).replace('|', '/')} | "
                f"{found}/{len(ranks)} | {first if first is not None else '-'} |"
            )
    table = f"| id | question | found by {k} | first rank |\n|---|---|---|---|\n" + "\n".join(rows)
    return ids, table if rows else "every question found"


def _gate(context: dg.AssetCheckExecutionContext, metric: str) -> dg.AssetCheckResult:
    values, run_id = _latest(context)
    if not values:
        return dg.AssetCheckResult(
            passed=False, metadata={"reason": "eval_results has never materialized"}
        )
    gate = values["thresholds"]
    k = int(gate["k"])
    measured_key = f"pass_at_{k}" if metric == "pass_at_k" else f"mrr_at_{k}"
    measured = float(values[measured_key])
    minimum = float(gate[metric])
    ids, table = _missed_table(values.get("questions", []), k)
    return _verdict(
        measured >= minimum,
        {measured_key: dg.MetadataValue.float(measured)},
        minimum,
        gate.get("method"),
        gate.get("source"),
        (ids, table),
        run_id,
        values,
    )


def _verdict(
    passed: bool,
    figures: dict[str, Any],
    threshold: float,
    method: object,
    source: object,
    failing: tuple[list[str], str],
    run_id: str | None,
    values: dict[str, Any],
) -> dg.AssetCheckResult:
    """A gate's result with the metadata every gate shows: the figure, its threshold,
    where that came from, and the questions that lowered it."""
    ids, table = failing
    return dg.AssetCheckResult(
        passed=passed,
        metadata={
            **figures,
            "threshold": dg.MetadataValue.float(threshold),
            "method": str(method),
            "thresholds_source": str(source),
            "failing_questions": dg.MetadataValue.md(table),
            "failing_question_ids": ", ".join(ids) or "none",
            "evaluated_run": str(run_id),
            "corpus_note": str(values.get("corpus_note", "")),
        },
    )


@dg.asset_check(
    asset=eval_results,
    blocking=True,
    description="Pass@k of the golden suite is at least thresholds.json's pass_at_k.",
)
def pass_at_k_gate(context: dg.AssetCheckExecutionContext) -> dg.AssetCheckResult:
    """Fail (blocking) when Pass@k is below its threshold; list the questions missed."""
    return _gate(context, "pass_at_k")


@dg.asset_check(
    asset=eval_results,
    blocking=True,
    description="MRR@k of the golden suite is at least thresholds.json's mrr.",
)
def mrr_gate(context: dg.AssetCheckExecutionContext) -> dg.AssetCheckResult:
    """Fail (blocking) when MRR@k is below its threshold; list the questions missed."""
    return _gate(context, "mrr")


def _cell(text: object) -> str:
    return " ".join(str(text).split())[:160].replace("|", "/")


def _yes(flag: object) -> str:
    return "yes" if flag else "no"


Column = tuple[str, Callable[[dict[str, Any]], str]]


def _question_table(questions: list[dict[str, Any]], ids: set[str], middle: list[Column]) -> str:
    """The failing questions as a Markdown table: id, question, ``middle``, answer."""
    columns: list[Column] = [
        ("id", lambda q: str(q["id"])),
        ("question", lambda q: _cell(q.get("query", ""))),
        *middle,
        ("answer", lambda q: _cell(q.get("answer", ""))),
    ]
    rows = [
        "| " + " | ".join(get(q) for _, get in columns) + " |"
        for q in questions
        if q.get("id") in ids
    ]
    head = "| " + " | ".join(name for name, _ in columns) + " |\n"
    head += "|" + "---|" * len(columns) + "\n"
    return head + "\n".join(rows) if rows else "none"


def _answer_table(questions: list[dict[str, Any]], ids: set[str]) -> str:
    return _question_table(
        questions,
        ids,
        [
            ("facts", lambda q: f"{sum(q.get('facts_found', []))}/{len(q.get('facts_found', []))}"),
            ("citation validity", lambda q: str(q.get("citation_validity"))),
            ("abstained", lambda q: _yes(q.get("abstained"))),
        ],
    )


def _answer_check(context: dg.AssetCheckExecutionContext, metric: str) -> dg.AssetCheckResult:
    values, run_id = _latest(context, answer_eval_results)
    if not values:
        return dg.AssetCheckResult(
            passed=False, metadata={"reason": "answer_eval_results has never materialized"}
        )
    recorded = dict(values["thresholds"])
    source = recorded.pop("source", None)
    summary = AnswerSummary(
        answer_correctness=float(values["answer_correctness"]),
        citation_validity=float(values["citation_validity"]),
        abstention_accuracy=float(values["abstention_accuracy"]),
        loops=int(values["loops"]),
        false_abstention_rate=float(values.get("false_abstention_rate", 0.0)),
        failing=dict(values.get("failing") or {}),
    )
    (outcome,) = [
        o for o in answer_gate(summary, AnswerThresholds(**recorded)) if o.metric == metric
    ]
    table = _answer_table(values.get("questions", []), set(outcome.failing))
    return _verdict(
        outcome.passed,
        {
            metric: dg.MetadataValue.float(outcome.measured),
            "rule": "at most" if metric in ("loops", "false_abstention_rate") else "at least",
            "model": str(values.get("model")),
        },
        outcome.threshold,
        recorded.get("method"),
        source,
        (list(outcome.failing), table),
        run_id,
        values,
    )


@dg.asset_check(
    asset=answer_eval_results,
    blocking=True,
    description="Mean key-fact share of the answers is at least answers.answer_correctness.",
)
def answer_correctness_gate(context: dg.AssetCheckExecutionContext) -> dg.AssetCheckResult:
    """Fail (blocking) when answers miss too many key facts; list the questions."""
    return _answer_check(context, "answer_correctness")


@dg.asset_check(
    asset=answer_eval_results,
    blocking=True,
    description="Mean citation validity of the answers is at least answers.citation_validity.",
)
def citation_validity_gate(context: dg.AssetCheckExecutionContext) -> dg.AssetCheckResult:
    """Fail (blocking) when answers cite too little or cite passages lacking the claim."""
    return _answer_check(context, "citation_validity")


@dg.asset_check(
    asset=answer_eval_results,
    blocking=True,
    description="Share of questions abstained on exactly when unanswerable is at least "
    "answers.abstention_accuracy.",
)
def abstention_gate(context: dg.AssetCheckExecutionContext) -> dg.AssetCheckResult:
    """Fail (blocking) when answers invent on unanswerable questions or abstain wrongly."""
    return _answer_check(context, "abstention_accuracy")


@dg.asset_check(
    asset=answer_eval_results,
    blocking=True,
    description="At most answers.max_loops answers run into a degenerate repetition loop.",
)
def loops_gate(context: dg.AssetCheckExecutionContext) -> dg.AssetCheckResult:
    """Fail (blocking) when more answers loop than allowed; list them."""
    return _answer_check(context, "loops")


@dg.asset_check(
    asset=answer_eval_results,
    blocking=True,
    description="Share of the answerable questions whose shown passages held the answer "
    "that abstained anyway is at most answers.max_false_abstention.",
)
def false_abstention_gate(context: dg.AssetCheckExecutionContext) -> dg.AssetCheckResult:
    """Fail (blocking) when answers say the documents do not say what their passages
    state; list those questions."""
    return _answer_check(context, "false_abstention_rate")


def _feedback_table(questions: list[dict[str, Any]], ids: set[str]) -> str:
    return _question_table(
        questions,
        ids,
        [
            ("marked", lambda q: "answerable" if q.get("answerable") else "none answers"),
            (
                "marked passage cited",
                lambda q: "-" if q.get("relevant_cited") is None else _yes(q["relevant_cited"]),
            ),
            ("abstained", lambda q: _yes(q.get("abstained"))),
        ],
    )


@dg.asset_check(
    asset=answer_eval_results,
    blocking=True,
    description="Share of the live corpus's feedback questions (thumbs-downs marking the "
    "passage that answers, or that none does) that now pass is at least "
    "answers.feedback_pass_rate.",
)
def feedback_gate(context: dg.AssetCheckExecutionContext) -> dg.AssetCheckResult:
    """Fail (blocking) when too few feedback questions pass; list the ones that fail."""
    values, run_id = _latest(context, answer_eval_results)
    if not values:
        return dg.AssetCheckResult(
            passed=False, metadata={"reason": "answer_eval_results has never materialized"}
        )
    recorded = dict(values["thresholds"])
    source = recorded.pop("source", None)
    threshold = float(recorded.get("feedback_pass_rate", 0.0))
    n = int(values.get("feedback_n", 0))
    measured = float(values.get("feedback_pass_rate", 1.0))
    failing = list(values.get("feedback_failing") or [])
    table = _feedback_table(values.get("feedback_questions") or [], set(failing))
    result = _verdict(
        n == 0 or measured >= threshold,
        {
            "feedback_pass_rate": dg.MetadataValue.float(measured),
            "feedback_questions": n,
            "rule": "at least",
            "model": str(values.get("model")),
        },
        threshold,
        recorded.get("method"),
        source,
        (failing, table),
        run_id,
        values,
    )
    skipped = values.get("feedback_skipped") or []
    return dg.AssetCheckResult(
        passed=result.passed,
        metadata={**result.metadata, "skipped": dg.MetadataValue.json(skipped)},
    )


def _graph_table(questions: list[dict[str, Any]], ids: set[str]) -> str:
    return _question_table(
        questions,
        ids,
        [
            ("type", lambda q: str(q.get("type"))),
            ("gold", lambda q: _cell(q.get("gold", ""))),
            ("verdict", lambda q: str((q.get("verdict") or {}).get("outcome"))),
            ("days found", lambda q: "-" if q.get("recalled") is None else _yes(q["recalled"])),
        ],
    )


@dg.asset_check(
    asset=graph_eval_results,
    blocking=True,
    description="The graph suite's answers meet its thresholds.json: accuracy, error rate, "
    "null questions abstained, evidence-day recall@k (offline judge).",
)
def graph_answer_gate(context: dg.AssetCheckExecutionContext) -> dg.AssetCheckResult:
    """Fail (blocking) when a gated figure of the graph's answers misses its threshold;
    list each figure and the questions that lowered it."""
    values, run_id = _latest(context, graph_eval_results)
    if not values:
        return dg.AssetCheckResult(
            passed=False, metadata={"reason": "graph_eval_results has never materialized"}
        )
    rows = list(values.get("gate") or [])
    failed = [row for row in rows if not row["passed"]]
    ids = {qid for row in failed for qid in row["failing"]}
    figures = {row["metric"]: dg.MetadataValue.float(float(row["measured"])) for row in rows}
    summary = "\n".join(
        f"- {row['metric']}: {row['measured']} ({row['rule']} {row['threshold']}) "
        + ("passes" if row["passed"] else "FAILS")
        for row in rows
    )
    return dg.AssetCheckResult(
        passed=not failed,
        metadata={
            **figures,
            "gate": dg.MetadataValue.md(summary or "no thresholds: the gate is disabled"),
            "thresholds_source": str((values.get("thresholds") or {}).get("source")),
            "model": str(values.get("model")),
            "failing_questions": dg.MetadataValue.md(
                _graph_table(values.get("questions") or [], ids)
            ),
            "failing_question_ids": ", ".join(sorted(ids)) or "none",
            "evaluated_run": str(run_id),
        },
    )
