"""``eval_results`` and ``answer_eval_results``: the golden suite on the live index.

Both depend on every partition of ``bm25_index`` (any ingest run makes them
stale) and use the live stores (nothing is re-ingested). ``eval_results`` runs the
suite's answerable questions through the gate's retrieval method and records Pass@k,
MRR and latency percentiles; ``answer_eval_results`` answers every question through
the chat turn runner with the live chat model and records key-fact correctness,
citation validity, abstention accuracy, loops and time to first token / per answer.
``answer_eval_results`` also answers the live corpus's feedback suite (the marked
thumbs-downs users gave in the chat, :mod:`varagity.eval.feedback`), scored apart from
the golden suite and recorded under ``feedback_*``.
Each records numeric metadata the UI plots, the per-question verdicts and the
thresholds the blocking checks in :mod:`varagity_assets.defs.evaluation.checks` compare
against; a model server outage retries either step (:mod:`varagity_assets.retries`).
``search_index_release`` runs after those checks and so never materializes in a run
where a gate failed.

``graph_eval_results`` is the message graph's counterpart on the committed graph suite
(``eval_suites/graph``): the suite's sessions built into a graph of their own through
the graph assets (reused while nothing changed, :mod:`varagity.eval.graph_eval`), every
question answered by a graph turn and judged offline, recorded per type with the gate's
outcome; its blocking check ``graph_answer_gate`` keeps ``graph_answers_release`` from
materializing when a figure misses the suite's ``thresholds.json``. It reads no live
data, so nothing upstream makes it stale: it is run (``evaluate_message_graph``) when
the model, the prompts or the graph code change.
"""

from dataclasses import replace
from pathlib import Path
from typing import Any

import dagster as dg
from pydantic import Field

from varagity.eval import answers, graph_eval, runner
from varagity.eval.configs import EvalConfig
from varagity.eval.feedback import load_feedback_suite
from varagity.eval.graph_suite import load_graph_suite, load_graph_thresholds
from varagity.eval.suite import (
    AnswerThresholds,
    Suite,
    SuiteError,
    Thresholds,
    load_answer_thresholds,
    load_suite,
    load_thresholds,
)
from varagity.files import file_sha256
from varagity.pipeline import AnswerFigures, answer_figures_line
from varagity_assets.defs.graph.eval_build import materialize_graph
from varagity_assets.defs.ingest.assets import bm25_index
from varagity_assets.resources import VaragityResource
from varagity_assets.retries import retry_on_outage

DEFAULT_SUITE = Path(__file__).resolve().parents[3] / "eval_suites" / "sample"
DEFAULT_GRAPH_SUITE = DEFAULT_SUITE.parent / "graph"


class EvalRunConfig(dg.Config):
    """Which suite to run and, optionally, another thresholds file."""

    suite_path: str = str(DEFAULT_SUITE)
    thresholds_path: str | None = None
    ks: list[int] = Field(default_factory=lambda: [5, 10, 20])


class AnswerEvalConfig(dg.Config):
    """Which suite to answer and, optionally, another thresholds file (its ``answers``)."""

    suite_path: str = str(DEFAULT_SUITE)
    thresholds_path: str | None = None


def corpus_differences(docs_path: Path, suite: Suite) -> list[str]:
    """The suite's source files that ``DOCS_PATH`` lacks or holds in another version.

    Args:
        docs_path: The live corpus folder.
        suite: The golden suite.

    Returns:
        One line per differing file (empty when the live corpus holds the suite's files).
    """
    out = []
    for rel in suite.corpus_files():
        live = docs_path / rel
        if not live.is_file():
            out.append(f"{rel}: missing from DOCS_PATH")
        elif file_sha256(live) != file_sha256(suite.corpus / rel):
            out.append(f"{rel}: differs from the suite's copy")
    return out


def _corpus_note(
    context: dg.AssetExecutionContext, docs_path: Path, suite: Suite
) -> tuple[list[str], str]:
    """The files DOCS_PATH lacks or holds in another version, and a line saying so."""
    differences = corpus_differences(docs_path, suite)
    if differences:
        note = f"DOCS_PATH ({docs_path}) is not the suite's corpus ({suite.corpus}): " + "; ".join(
            differences
        )
        context.log.warning(note)
    elif docs_path.resolve() == suite.corpus.resolve():
        note = "DOCS_PATH is the suite's corpus"
    else:
        note = (
            f"DOCS_PATH ({docs_path}) is not the suite's corpus folder "
            f"({suite.corpus}), but holds identical copies of every file the suite cites"
        )
    return differences, note


# the evaluation assets read the whole live index: they depend on every file's BM25
# entries (the ingest stage's last asset), so a materialization after ingest sees what
# that ingest wrote
_on_live_index = dg.asset(
    group_name="evaluation",
    deps=[dg.AssetDep(bm25_index, partition_mapping=dg.AllPartitionMapping())],
    kinds={"python"},
)


@_on_live_index
@retry_on_outage
def eval_results(
    context: dg.AssetExecutionContext, config: EvalRunConfig, varagity: VaragityResource
) -> dg.MaterializeResult:
    """Pass@k, MRR and latency of the golden suite on the live index (no re-ingest)."""
    settings = varagity.settings
    suite = load_suite(config.suite_path)
    thresholds = (
        load_thresholds(Path(config.thresholds_path))
        if config.thresholds_path
        else suite.thresholds
    )
    gate = thresholds or Thresholds(settings.RETRIEVAL_METHOD, 5, 0.0, 0.0)
    ks = sorted({*config.ks, gate.k})
    differences, corpus_note = _corpus_note(context, settings.docs_path, suite)
    result = runner.evaluate(
        varagity.services, suite, EvalConfig(f"live/{gate.method}", gate.method), ks
    )
    if not result.ok:
        raise dg.Failure(description=f"evaluation could not run: {result.error}")
    latency = result.latency()
    total = latency.get("total", {"p50": 0.0, "p95": 0.0})
    metadata: dict[str, Any] = {
        "results": dg.MetadataValue.md(runner.markdown_table([result], ks)),
        "method": gate.method,
        "suite": suite.name,
        "n_queries": len(result.scores),
        "mrr": dg.MetadataValue.float(round(result.mrr(gate.k), 4)),
        "latency_p50_ms": dg.MetadataValue.float(total["p50"]),
        "latency_p95_ms": dg.MetadataValue.float(total["p95"]),
        "stage_latency_ms": dg.MetadataValue.json(latency),
        "thresholds": dg.MetadataValue.json(
            {**gate.to_dict(), "source": config.thresholds_path or "suite"}
            if thresholds
            else {**gate.to_dict(), "source": "none (gate disabled)"}
        ),
        "questions": dg.MetadataValue.json(result.to_dict()["questions"]),
        "docs_path": str(settings.docs_path),
        "corpus_matches_suite": not differences,
        "corpus_note": corpus_note,
    }
    for k in ks:
        metadata[f"pass_at_{k}"] = dg.MetadataValue.float(round(result.pass_at(k), 4))
        metadata[f"mrr_at_{k}"] = dg.MetadataValue.float(round(result.mrr(k), 4))
    context.log.info(
        f"{suite.name} on {gate.method}: Pass@{gate.k} {result.pass_at(gate.k):.3f}, "
        f"MRR@{gate.k} {result.mrr(gate.k):.3f}"
    )
    return dg.MaterializeResult(metadata=metadata)


ANSWER_FIGURES = (
    "answer_correctness",
    "fully_correct",
    "citation_validity",
    "cited_share",
    "abstention_accuracy",
    "abstained_when_unanswerable",
    "false_abstention_rate",
)


@_on_live_index
@retry_on_outage
def answer_eval_results(
    context: dg.AssetExecutionContext, config: AnswerEvalConfig, varagity: VaragityResource
) -> dg.MaterializeResult:
    """Key facts, citations, abstention, loops and answer latency on the live index."""
    settings = varagity.settings
    suite = load_suite(config.suite_path)
    thresholds = (
        load_answer_thresholds(Path(config.thresholds_path))
        if config.thresholds_path
        else suite.answer_thresholds
    )
    gate = thresholds or AnswerThresholds(
        settings.RETRIEVAL_METHOD, 5, 0.0, 0.0, 0.0, len(suite.queries), 0.0
    )
    differences, corpus_note = _corpus_note(context, settings.docs_path, suite)
    try:
        result = answers.evaluate_answers(
            varagity.services,
            suite,
            gate.method,
            gate.k,
            config=f"live/{gate.method}",
            progress=context.log.info,
        )
    except (answers.AnswerError, SuiteError) as exc:
        raise dg.Failure(description=f"answer evaluation could not run: {exc}") from exc
    feedback_md = _feedback_results(context, varagity, gate)
    summary = result.summary
    latency = result.latency()
    metadata: dict[str, Any] = {
        "results": dg.MetadataValue.md(answers.markdown_table([result])),
        "model": result.model,
        "method": gate.method,
        "k": gate.k,
        "suite": suite.name,
        "n_questions": summary.n,
        "n_answerable": summary.n_answerable,
        **{
            name: dg.MetadataValue.float(round(getattr(summary, name), 4))
            for name in ANSWER_FIGURES
        },
        "false_abstentions": summary.false_abstentions,
        "missed_abstentions": summary.missed_abstentions,
        "loops": summary.loops,
        "first_token_p50_ms": dg.MetadataValue.float(latency["first_token"]["p50"]),
        "first_token_p95_ms": dg.MetadataValue.float(latency["first_token"]["p95"]),
        "answer_p50_ms": dg.MetadataValue.float(latency["answer"]["p50"]),
        "answer_p95_ms": dg.MetadataValue.float(latency["answer"]["p95"]),
        "failing": dg.MetadataValue.json(summary.failing),
        "thresholds": dg.MetadataValue.json(
            {**gate.to_dict(), "source": config.thresholds_path or "suite"}
            if thresholds
            else {**gate.to_dict(), "source": "none (gate disabled)"}
        ),
        "questions": dg.MetadataValue.json(result.questions()),
        "docs_path": str(settings.docs_path),
        "corpus_matches_suite": not differences,
        "corpus_note": corpus_note,
        **feedback_md,
    }
    context.log.info(
        f"{suite.name} answers by {result.model} on {gate.method}@{gate.k}: correctness "
        f"{summary.answer_correctness:.3f}, citations {summary.citation_validity:.3f}, "
        f"abstention {summary.abstention_accuracy:.3f}, loops {summary.loops}"
    )
    figures = AnswerFigures(
        n=summary.n,
        answer_correctness=round(summary.answer_correctness, 4),
        fully_correct=round(summary.fully_correct, 4),
        citation_validity=round(summary.citation_validity, 4),
        abstention_accuracy=round(summary.abstention_accuracy, 4),
        loops=summary.loops,
        first_token_p50_ms=latency["first_token"]["p50"],
    )
    context.log.info(answer_figures_line(figures))  # read by varagity.jobs.evaluation
    return dg.MaterializeResult(metadata=metadata)


def _feedback_results(
    context: dg.AssetExecutionContext, varagity: VaragityResource, gate: AnswerThresholds
) -> dict[str, Any]:
    """Answer the live corpus's feedback suite as the golden one is answered; its
    metadata (``feedback_*``), which ``feedback_gate`` reads."""
    services = varagity.services
    feedback = load_feedback_suite(services.pg, varagity.settings.docs_path)
    fb_suite = feedback.suite
    metadata: dict[str, Any] = {
        "feedback_n": len(feedback.records),
        "feedback_skipped": dg.MetadataValue.json(feedback.skipped),
    }
    if fb_suite is None:
        context.log.info(f"no feedback questions ({len(feedback.skipped)} skipped)")
        return {**metadata, "feedback_pass_rate": dg.MetadataValue.float(1.0)}
    try:
        result = answers.evaluate_answers(
            services,
            fb_suite,
            gate.method,
            gate.k,
            config=f"feedback/{gate.method}",
            progress=lambda line: context.log.info(f"feedback:{line}"),
            facts_required=False,
        )
    except answers.AnswerError as exc:
        raise dg.Failure(description=f"feedback evaluation could not run: {exc}") from exc
    summary = result.summary
    context.log.info(
        f"feedback suite: {summary.pass_rate:.3f} of {summary.n} question(s) passed "
        f"({len(feedback.skipped)} skipped)"
    )
    return {
        **metadata,
        "feedback_pass_rate": dg.MetadataValue.float(round(summary.pass_rate, 4)),
        "feedback_failing": dg.MetadataValue.json(summary.failing.get("pass_rate", [])),
        "feedback_questions": dg.MetadataValue.json(result.questions()),
    }


@dg.asset(group_name="evaluation", deps=[eval_results, answer_eval_results], kinds={"python"})
def search_index_release(context: dg.AssetExecutionContext) -> dg.MaterializeResult:
    """The live index, released: materializes only after every blocking eval gate passed."""
    metadata: dict[str, Any] = {}
    for asset, keep in (
        (eval_results, ("pass_at_", "mrr")),
        (
            answer_eval_results,
            (*ANSWER_FIGURES, "loops", "model", "feedback_n", "feedback_pass_rate"),
        ),
    ):
        event = context.instance.get_latest_materialization_event(asset.key)
        md = event.asset_materialization.metadata if event and event.asset_materialization else {}
        metadata[f"{asset.key.to_user_string()}_run"] = event.run_id if event else "unknown"
        metadata.update({k: v for k, v in md.items() if k.startswith(keep)})
    return dg.MaterializeResult(metadata=metadata)


class GraphEvalConfig(dg.Config):
    """Which graph suite to answer, optionally another thresholds file, a month range
    (``YYYY-MM..YYYY-MM``) and the first ``limit`` questions."""

    suite_path: str = str(DEFAULT_GRAPH_SUITE)
    thresholds_path: str | None = None
    months: str | None = None
    limit: int | None = None


#: The figures of each question type a ``graph_eval_results`` materialization records.
GRAPH_FIGURES = ("accuracy", "error_rate", "abstention_rate", "evidence_recall")


@dg.asset(group_name="evaluation", kinds={"lightrag"})
@retry_on_outage
def graph_eval_results(
    context: dg.AssetExecutionContext, config: GraphEvalConfig, varagity: VaragityResource
) -> dg.MaterializeResult:
    """The graph suite answered from a graph of its own sessions, judged offline: figures
    per type, evidence-day recall, timings, and the gate's outcome."""
    try:
        suite = load_graph_suite(config.suite_path)
        if config.thresholds_path:
            suite = replace(suite, thresholds=load_graph_thresholds(Path(config.thresholds_path)))
        months = graph_eval.MonthSpan.parse(config.months) if config.months else None
        plan = graph_eval.scope(suite, months=months, limit=config.limit)
    except (ValueError, graph_eval.GraphEvalError) as exc:  # SuiteError is a ValueError
        raise dg.Failure(f"graph suite {config.suite_path}: {exc}", allow_retries=False) from exc
    report = graph_eval.run_graph_eval(
        varagity.settings, plan, materialize_graph, limit=config.limit, progress=context.log.info
    )
    if not report.graph.ok:
        raise dg.Failure(
            description=f"the graph's answers could not be evaluated: {report.graph.error}"
        ) from report.graph.cause
    figures = report.graph.by_type()
    thresholds = suite.thresholds
    outcomes = graph_eval.gate(report.graph, thresholds) if thresholds else []
    every = figures["all"]
    metadata: dict[str, Any] = {
        "results": dg.MetadataValue.md(graph_eval.markdown_table(report)),
        "suite": suite.name,
        "model": report.graph.model,
        "judge": "offline (varagity.eval.graph_judge)",
        "n_questions": every.n,
        "k": report.k,
        "first_token_p50_ms": dg.MetadataValue.float(every.first_token_ms["p50"]),
        "answer_p50_ms": dg.MetadataValue.float(every.answer_ms["p50"]),
        "build": dg.MetadataValue.json(report.build.to_dict() if report.build else {}),
        "thresholds": dg.MetadataValue.json(
            {**thresholds.to_dict(), "source": config.thresholds_path or "suite"}
            if thresholds
            else {"source": "none (gate disabled)"}
        ),
        "gate": dg.MetadataValue.json(
            [
                {
                    "metric": g.metric,
                    "measured": round(g.measured, 4),
                    "threshold": g.threshold,
                    "rule": "at most" if g.metric == "error_rate" else "at least",
                    "passed": g.passed,
                    "failing": list(g.failing),
                }
                for g in outcomes
            ]
        ),
        "questions": dg.MetadataValue.json(
            [r.to_dict() for r in report.graph.results]  # answers, verdicts, days
        ),
    }
    for kind, summary in figures.items():
        for figure in GRAPH_FIGURES:
            value = getattr(summary, "recall" if figure == "evidence_recall" else figure)
            if value is not None:
                metadata[f"{kind}_{figure}"] = dg.MetadataValue.float(round(float(value), 4))
    context.log.info(
        f"{suite.name} from the graph by {report.graph.model}: accuracy {every.accuracy:.3f}, "
        f"error rate {every.error_rate:.3f}, recall@{report.k} "
        + ("-" if every.recall is None else f"{every.recall:.3f}")
    )
    return dg.MaterializeResult(metadata=metadata)


@dg.asset(group_name="evaluation", deps=[graph_eval_results], kinds={"python"})
def graph_answers_release(context: dg.AssetExecutionContext) -> dg.MaterializeResult:
    """Graph answering, released: materializes only after ``graph_answer_gate`` passed."""
    event = context.instance.get_latest_materialization_event(graph_eval_results.key)
    md = event.asset_materialization.metadata if event and event.asset_materialization else {}
    metadata: dict[str, Any] = {"graph_eval_results_run": event.run_id if event else "unknown"}
    metadata.update({k: v for k, v in md.items() if k.startswith(("all_", "model", "build"))})
    return dg.MaterializeResult(metadata=metadata)
