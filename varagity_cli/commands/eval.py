"""``varagity eval``: a golden suite scored. Retrieval (and with ``--answers``, answers)
over named configs; ``--feedback``, the live corpus's feedback suite as the answer gate
answers it; ``--graph``, a graph suite answered from a message graph of its own;
``--rejudge``, a graph eval report's answers scored again by a model judge; ``--ocr``,
every OCR engine's character and word error rates on an OCR suite
(:mod:`varagity.eval.ocr`).

A graph suite's graph is built (or reused) through the real graph assets
(:func:`varagity_assets.defs.graph.eval_build.materialize_graph`); the answers, the
offline judge, recall and the report are :mod:`varagity.eval.graph_eval`'s.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from varagity.config import get_settings
from varagity_cli.common import EXIT_FAILED, EXIT_OK, EXIT_USAGE, fail, open_services

if TYPE_CHECKING:
    from varagity_cli.common import Subparsers

DEFAULT_OCR_SUITE = Path(__file__).resolve().parents[2] / "eval_suites" / "ocr"


def cmd_eval(
    *,
    suite_folder: str | None,
    config: str | None,
    matrix: bool,
    sweep_chunkers: bool,
    k: str,
    limit: int | None,
    naive: bool,
    answers: bool,
    answer_k: int | None,
    feedback: bool,
    drop: bool,
    graph: bool,
    baseline: bool,
    rejudge: str | None,
    judge_url: str | None,
    judge_model: str | None,
    judge_key_env: str | None,
    months: str | None,
    out: str | None,
    ocr: bool,
) -> int:
    """Score retrieval (and with --answers, answers) on a golden suite; print, write JSON."""
    from varagity.eval import answers as eval_answers
    from varagity.eval import configs as eval_configs
    from varagity.eval import runner
    from varagity.eval import stores as eval_stores
    from varagity.eval.graph_suite import is_graph_suite
    from varagity.eval.suite import SuiteError, load_suite
    from varagity_stack.model_servers import local_model_servers

    try:
        ks = sorted({int(cut) for cut in k.split(",") if cut.strip()})
    except ValueError:
        return fail(f"--k must be comma-separated integers, got {k!r}", EXIT_USAGE)
    if not ks or ks[0] <= 0:
        return fail("--k needs positive integers", EXIT_USAGE)
    if ocr:
        return _eval_ocr(suite_folder=suite_folder, limit=limit, out=out)
    if feedback:
        return _eval_feedback(suite_folder=suite_folder, answer_k=answer_k, limit=limit, out=out)
    if graph:
        return _eval_graph(
            suite_folder=suite_folder, months=months, limit=limit, baseline=baseline, out=out
        )
    if rejudge:
        return _rejudge(
            report_file=rejudge,
            judge_url=judge_url,
            judge_model=judge_model,
            judge_key_env=judge_key_env,
            out=out,
        )
    if baseline or months:
        return fail("--baseline and --months go with --graph", EXIT_USAGE)
    if not suite_folder:
        return fail("give --suite (a suite folder) or --feedback", EXIT_USAGE)
    if is_graph_suite(suite_folder):
        return fail(f"{suite_folder} is a graph suite: add --graph", EXIT_USAGE)
    settings = get_settings()
    suite = load_suite(suite_folder).limited(limit)
    if drop:
        removed = eval_stores.drop_stores(settings, suite)
        print(f"removed {len(removed)} isolated store(s) of suite {suite.name}")
        for name in removed:
            print(f"  {name}")
        return EXIT_OK
    if matrix:
        chosen = [eval_configs.CONFIGS[name] for name in eval_configs.MATRIX]
    elif sweep_chunkers:
        chosen = eval_configs.chunker_sweep("hybrid")
    else:
        try:
            names = [n.strip() for n in (config or "hybrid").split(",") if n.strip()]
            chosen = [eval_configs.get_config(name) for name in names]
        except KeyError as exc:
            return fail(f"{exc.args[0]}", EXIT_USAGE)
    passages = None
    if answers:
        try:
            eval_answers.require_facts(suite)
        except SuiteError as exc:
            return fail(str(exc), EXIT_USAGE)
        gate = suite.answer_thresholds
        passages = answer_k or (gate.k if gate else 5)
    guess = runner.estimate(
        settings, suite, chosen, len(suite.answerable), answers=len(suite.queries) * answers
    )
    print(
        f"suite {suite.name}: {len(suite.queries)} question(s), corpus {suite.corpus}; "
        f"estimated {runner.format_duration(guess.seconds)}"
    )
    for line in guess.lines:
        print(line)
    sys.stdout.flush()
    with local_model_servers(settings, settings.home / "logs"):
        results = runner.run_eval(settings, suite, chosen, ks, progress=print, answer_k=passages)
        if naive:
            from varagity.eval.naive import run_naive
            from varagity.models.embeddings import EmbeddingClient

            print("[naive] fixed 800-char windows, bm25s + MiniLM, RRF 0.5/0.5")
            results.append(run_naive(suite, EmbeddingClient.from_settings(settings), ks))
    print()
    print(runner.format_table(results, ks))
    answered = [r.answers for r in results if r.answers is not None]
    if answered:
        print(f"\nanswers ({passages} passages each):")
        print(eval_answers.format_table(answered))
    report = Path(out) if out else runner.default_report_path(settings, suite)
    print(f"\nreport: {runner.write_report(report, suite, results, ks, limit)}")
    return EXIT_OK if any(r.ok for r in results) else EXIT_FAILED


def _eval_feedback(
    *, suite_folder: str | None, answer_k: int | None, limit: int | None, out: str | None
) -> int:
    """Answer the live corpus's feedback suite on the live index, as the answer gate
    does; print each verdict and the pass rate against its threshold (exit 1 below it)."""
    from varagity.eval import answers as eval_answers
    from varagity.eval.feedback import load_feedback_suite, write_suite
    from varagity.eval.suite import AnswerThresholds, load_suite
    from varagity_stack.model_servers import local_model_servers

    settings = get_settings()
    gate = load_suite(suite_folder).answer_thresholds if suite_folder else None
    method = gate.method if gate else settings.RETRIEVAL_METHOD
    k = answer_k or (gate.k if gate else 5)
    minimum = (gate or AnswerThresholds(method, k, 0, 0, 0, 0)).feedback_pass_rate
    with open_services(settings) as services:
        feedback = load_feedback_suite(services.pg, settings.docs_path)
        folder = write_suite(feedback, settings.home / "eval" / "feedback")
        print(
            f"feedback suite: {len(feedback.records)} question(s) from the live corpus, "
            f"{len(feedback.skipped)} skipped; written to {folder}"
        )
        for skipped in feedback.skipped:
            print(f"  skipped {skipped['id']}: {skipped['reason']}")
        suite = feedback.suite
        if suite is None:
            print("nothing to answer: no thumbs-down marks a passage (or says none answers)")
            return EXIT_OK
        with local_model_servers(settings, settings.home / "logs"):
            result = eval_answers.evaluate_answers(
                services,
                suite.limited(limit),
                method,
                k,
                config=f"feedback/{method}",
                progress=print,
                facts_required=False,
            )
    summary = result.summary
    print()
    print(eval_answers.format_table([result]))
    verdict = "passes" if summary.pass_rate >= minimum else "FAILS"
    print(
        f"\nfeedback: {summary.pass_rate:.3f} of {summary.n} passed; the gate "
        f"(answers.feedback_pass_rate {minimum}) {verdict}"
    )
    for qid in summary.failing.get("pass_rate", []):
        print(f"  failed: {qid}")
    if out:
        report = Path(out)
        report.parent.mkdir(parents=True, exist_ok=True)
        report.write_text(json.dumps(result.to_dict(), indent=2) + "\n", encoding="utf-8")
        print(f"report: {report}")
    return EXIT_OK if summary.pass_rate >= minimum else EXIT_FAILED


def _eval_ocr(*, suite_folder: str | None, limit: int | None, out: str | None) -> int:
    """Read every page of an OCR suite with every OCR engine; print CER, WER and seconds
    per page per degradation kind, write the JSON report (exit 2 on a bad suite or image,
    1 when no engine could run)."""
    from varagity.eval import ocr as eval_ocr

    settings = get_settings()
    try:
        suite = eval_ocr.load_ocr_suite(suite_folder or DEFAULT_OCR_SUITE).limited(limit)
        print(f"OCR suite {suite.name}: {len(suite.pages)} page(s)", flush=True)
        # a bad image is refused before any engine runs
        report = eval_ocr.run_ocr_eval(suite, settings, progress=lambda s: print(s, flush=True))
    except eval_ocr.OcrSuiteError as exc:
        return fail(str(exc), EXIT_USAGE)
    print()
    print(eval_ocr.format_table(report))
    print()
    print(eval_ocr.format_pages(report))
    print(f"\nnormalisation: {eval_ocr.NORMALISATION}")
    path = Path(out) if out else eval_ocr.default_report_path(settings, suite)
    print(f"report: {eval_ocr.write_report(path, report)}")
    return EXIT_OK if report.ok else EXIT_FAILED


def _eval_graph(
    *,
    suite_folder: str | None,
    months: str | None,
    limit: int | None,
    baseline: bool,
    out: str | None,
) -> int:
    """Evaluate a graph suite; print the table and the gate, write the JSON report
    (exit 1 when the graph could not answer, 0 otherwise: the gate is reported, the
    Dagster check enforces it)."""
    from varagity.eval import graph_eval
    from varagity.eval.graph_suite import is_graph_suite, load_graph_suite
    from varagity.eval.suite import SuiteError
    from varagity_assets.defs.graph.eval_build import materialize_graph
    from varagity_stack.model_servers import local_model_servers

    if not suite_folder:
        return fail("--graph needs --suite (a graph suite folder)", EXIT_USAGE)
    if not is_graph_suite(suite_folder):
        return fail(f"{suite_folder} is not a graph suite (no sessions or archive)", EXIT_USAGE)
    try:
        span = graph_eval.MonthSpan.parse(months) if months else None
        suite = load_graph_suite(suite_folder)
        plan = graph_eval.scope(suite, months=span, limit=limit)
    except (ValueError, SuiteError, graph_eval.GraphEvalError) as exc:
        return fail(str(exc), EXIT_USAGE)
    settings = get_settings()
    for problem in suite.problems:
        print(f"  suite repair: {problem}")
    for note in plan.notes:
        print(f"  {note}")
    asked = plan.suite.queries
    kinds = ", ".join(f"{len(plan.suite.of_type(t))} {t}" for t in ("single", "multi", "null"))
    chats = f"sessions {suite.sessions}" if suite.sessions else f"archive {suite.archive}"
    print(
        f"suite {suite.name}: {len(asked)} question(s) ({kinds}); {chats}; "
        f"model {settings.LLM_MODEL}"
    )
    sys.stdout.flush()
    with local_model_servers(settings, settings.home / "logs"):
        report = graph_eval.run_graph_eval(
            settings,
            plan,
            materialize_graph,
            baseline=baseline,
            limit=limit,
            progress=lambda line: print(line, flush=True),
        )
    print()
    if report.build is not None:
        print(report.build.describe())
    print(graph_eval.format_table(report))
    print("judge: offline (varagity.eval.graph_judge), not MiniRAG's LLM judge")
    if suite.thresholds is not None and report.graph.ok:
        print("gate (eval_suites thresholds.json):")
        print(graph_eval.format_gate(graph_eval.gate(report.graph, suite.thresholds)))
    path = Path(out) if out else graph_eval.default_report_path(settings, suite)
    print(f"\nreport: {graph_eval.write_report(path, report)}")
    return EXIT_OK if report.graph.ok else EXIT_FAILED


def _rejudge(
    *,
    report_file: str,
    judge_url: str | None,
    judge_model: str | None,
    judge_key_env: str | None,
    out: str | None,
) -> int:
    """Score a graph eval report's answers with a model judge; print its table and write
    the judged report (exit 2 on a bad report or options, 1 when the endpoint fails)."""
    from varagity.eval.llm_judge import LlmJudge, format_summary, rejudge
    from varagity.models.base import ModelError

    if not judge_url or not judge_model:
        return fail("--rejudge needs --judge-url and --judge-model", EXIT_USAGE)
    source = Path(report_file)
    try:
        report = json.loads(source.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        return fail(f"cannot read the report {source}: {exc}", EXIT_USAGE)
    key = "sk-local"
    if judge_key_env:
        key = os.environ.get(judge_key_env, "")
        if not key:
            return fail(f"${judge_key_env} is not set", EXIT_USAGE)
    judge = LlmJudge.at(judge_url, judge_model, key)
    try:
        judged = rejudge(report, judge, progress=lambda line: print(line, flush=True))
    except ValueError as exc:
        return fail(f"{source}: {exc}", EXIT_USAGE)
    except ModelError as exc:
        return fail(f"the judge failed: {exc}", EXIT_FAILED)
    path = Path(out) if out else source.with_name(f"{source.stem}.judged.json")
    path.write_text(json.dumps(judged, indent=2, ensure_ascii=False), encoding="utf-8")
    print(format_summary(judged))
    print(f"judge: {judge_model} at {judge_url} (MiniRAG's scale)")
    print(f"report: {path}")
    return EXIT_OK


def register(sub: Subparsers) -> None:
    """Add ``eval``."""
    ev = sub.add_parser("eval", help="score retrieval (and answers) on a golden suite")
    ev.add_argument(
        "--suite",
        help="suite folder (queries.jsonl + corpus); with --feedback, whose answer gate applies",
    )
    which = ev.add_mutually_exclusive_group()
    which.add_argument("--config", help="named config(s), comma-separated (default hybrid)")
    which.add_argument("--matrix", action="store_true", help="every named config")
    which.add_argument(
        "--sweep-chunkers", action="store_true", help="hybrid over every chunking strategy"
    )
    ev.add_argument("--k", default="5,10,20", help="comma-separated cut-offs (default 5,10,20)")
    ev.add_argument("--limit", type=int, help="only the first N questions (a quick look)")
    ev.add_argument(
        "--naive",
        action="store_true",
        help="also score the naive baseline script (varagity.eval.naive) for comparison",
    )
    ev.add_argument(
        "--answers",
        action="store_true",
        help="also answer every question through the chat turn runner and score the answers "
        "(key facts, citations, abstention, loops, time to first token)",
    )
    ev.add_argument(
        "--answer-k",
        type=int,
        help="passages per answer (default: the suite's answer gate k, else 5)",
    )
    which.add_argument(
        "--feedback",
        action="store_true",
        help="answer the live corpus's feedback suite (marked thumbs-downs) on the live index "
        "and score it as the answer gate does; exit 1 below answers.feedback_pass_rate",
    )
    which.add_argument(
        "--drop",
        action="store_true",
        help="remove the suite's isolated stores (databases, BM25 folders) and exit",
    )
    which.add_argument(
        "--graph",
        action="store_true",
        help="a graph suite (eval_suites/graph): build or reuse its message graph through the "
        "graph assets, answer every question from it and judge the answers offline, per type",
    )
    ev.add_argument(
        "--baseline",
        action="store_true",
        help="with --graph: also answer from the sessions as plain text documents (the naive "
        "document pipeline), judged alike",
    )
    which.add_argument(
        "--rejudge",
        metavar="REPORT",
        help="score the answers of a graph eval report again with a model on MiniRAG's "
        "scale (+1 right, 0 no information, -1 wrong) through any OpenAI-compatible "
        "endpoint (--judge-url, --judge-model); written to --out, else beside the report",
    )
    which.add_argument(
        "--ocr",
        action="store_true",
        help="an OCR suite (default eval_suites/ocr): every OCR engine's character and word "
        "error rates and seconds per page, per degradation kind; an engine not installed "
        "is listed as such",
    )
    ev.add_argument("--judge-url", help="with --rejudge: the judge's base URL, ending in /v1")
    ev.add_argument("--judge-model", help="with --rejudge: the model name to ask for")
    ev.add_argument(
        "--judge-key-env",
        metavar="VAR",
        help="with --rejudge: the environment variable holding the endpoint's API key",
    )
    ev.add_argument(
        "--months",
        help="with --graph: only the sessions of these months (YYYY-MM or YYYY-MM..YYYY-MM), "
        "the answerable questions whose evidence lies in them, and null questions in the "
        "suite's proportion",
    )
    ev.add_argument("--out", help="JSON report path (default VARAGITY_HOME/eval/results/...)")
    ev.set_defaults(
        func=lambda a: cmd_eval(
            suite_folder=a.suite,
            config=a.config,
            matrix=a.matrix,
            sweep_chunkers=a.sweep_chunkers,
            k=a.k,
            limit=a.limit,
            naive=a.naive,
            answers=a.answers,
            answer_k=a.answer_k,
            feedback=a.feedback,
            drop=a.drop,
            graph=a.graph,
            baseline=a.baseline,
            rejudge=a.rejudge,
            judge_url=a.judge_url,
            judge_model=a.judge_model,
            judge_key_env=a.judge_key_env,
            months=a.months,
            out=a.out,
            ocr=a.ocr,
        )
    )
