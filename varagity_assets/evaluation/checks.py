"""Blocking release gates on ``eval_results``: Pass@k and MRR@k against ``thresholds.json``.

Both checks read the latest ``eval_results`` materialization (the one of the same run
when they run together), compare its scores with the thresholds it recorded, and list
the questions that were not found by rank k. They are ``blocking``: a failure stops
``search_index_release`` from materializing in that run.
"""

from typing import Any

import dagster as dg

from varagity_assets.evaluation.assets import eval_results, search_index_release


def _latest(context: dg.AssetCheckExecutionContext) -> tuple[dict[str, Any], str | None]:
    event = context.instance.get_latest_materialization_event(eval_results.key)
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
    return dg.AssetCheckResult(
        passed=measured >= minimum,
        metadata={
            measured_key: dg.MetadataValue.float(measured),
            "threshold": dg.MetadataValue.float(minimum),
            "method": str(gate.get("method")),
            "thresholds_source": str(gate.get("source")),
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


evaluation_checks = [pass_at_k_gate, mrr_gate]

evaluate_index_job = dg.define_asset_job(
    "evaluate_index",
    selection=dg.AssetSelection.assets(eval_results, search_index_release),
    description="Score the golden suite on the live index; release it when the gates pass.",
)
