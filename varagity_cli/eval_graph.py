"""``varagity eval --graph``: a graph suite answered from a message graph of its own.

The graph is built (or reused) through the real graph assets
(:func:`varagity_assets.defs.graph.eval_build.materialize_graph`); the answers, the
offline judge, recall and the report are :mod:`varagity.eval.graph_eval`'s.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from varagity.config import get_settings


def add_graph_arguments(
    ev: argparse.ArgumentParser, which: argparse._MutuallyExclusiveGroup
) -> None:
    """The graph options of ``varagity eval`` (``--graph`` is one of its modes)."""
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


def cmd_eval_graph(args: argparse.Namespace) -> int:
    """Evaluate a graph suite; print the table and the gate, write the JSON report
    (exit 1 when the graph could not answer, 0 otherwise: the gate is reported, the
    Dagster check enforces it)."""
    from varagity.eval import graph_eval
    from varagity.eval.graph_suite import is_graph_suite, load_graph_suite
    from varagity.eval.suite import SuiteError
    from varagity_assets.defs.graph.eval_build import materialize_graph
    from varagity_stack.model_servers import local_model_servers

    if not args.suite:
        print("error: --graph needs --suite (a graph suite folder)", file=sys.stderr)
        return 2
    if not is_graph_suite(args.suite):
        print(f"error: {args.suite} is not a graph suite (no sessions or archive)", file=sys.stderr)
        return 2
    try:
        months = graph_eval.MonthSpan.parse(args.months) if args.months else None
        suite = load_graph_suite(args.suite)
        plan = graph_eval.scope(suite, months=months, limit=args.limit)
    except (ValueError, SuiteError, graph_eval.GraphEvalError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
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
            baseline=args.baseline,
            limit=args.limit,
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
    out = Path(args.out) if args.out else graph_eval.default_report_path(settings, suite)
    print(f"\nreport: {graph_eval.write_report(out, report)}")
    return 0 if report.graph.ok else 1


def cmd_rejudge(args: argparse.Namespace) -> int:
    """Score a graph eval report's answers with a model judge; print its table and write
    the judged report (exit 2 on a bad report or options, 1 when the endpoint fails)."""
    from varagity.eval.llm_judge import LlmJudge, format_summary, rejudge
    from varagity.models.base import ModelError

    if not args.judge_url or not args.judge_model:
        print("error: --rejudge needs --judge-url and --judge-model", file=sys.stderr)
        return 2
    source = Path(args.rejudge)
    try:
        report = json.loads(source.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        print(f"error: cannot read the report {source}: {exc}", file=sys.stderr)
        return 2
    key = "sk-local"
    if args.judge_key_env:
        key = os.environ.get(args.judge_key_env, "")
        if not key:
            print(f"error: ${args.judge_key_env} is not set", file=sys.stderr)
            return 2
    judge = LlmJudge.at(args.judge_url, args.judge_model, key)
    try:
        judged = rejudge(report, judge, progress=lambda line: print(line, flush=True))
    except ValueError as exc:
        print(f"error: {source}: {exc}", file=sys.stderr)
        return 2
    except ModelError as exc:
        print(f"error: the judge failed: {exc}", file=sys.stderr)
        return 1
    out = Path(args.out) if args.out else source.with_name(f"{source.stem}.judged.json")
    out.write_text(json.dumps(judged, indent=2, ensure_ascii=False), encoding="utf-8")
    print(format_summary(judged))
    print(f"judge: {args.judge_model} at {args.judge_url} (MiniRAG's scale)")
    print(f"report: {out}")
    return 0
