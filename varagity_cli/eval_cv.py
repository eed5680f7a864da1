"""``varagity eval-cv``: two-fold cross-validation of retrieval settings over suites.

The grid (chunk settings x fusion settings, contextualization off) is scored on every
suite by :func:`varagity.eval.runner.run_grid`; :mod:`varagity.eval.cv` splits each
suite's questions into halves, chooses on one and reports on the other.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from varagity.config import get_settings


def _csv(text: str) -> list[str]:
    values = [v.strip() for v in text.split(",") if v.strip()]
    if not values:
        raise ValueError(f"no values in {text!r}")
    return values


def cmd_eval_cv(args: argparse.Namespace) -> int:
    """Cross-validate a grid of retrieval settings over one or more suites."""
    import json

    from varagity.eval import configs as eval_configs
    from varagity.eval import cv, runner
    from varagity.eval.suite import load_suite
    from varagity_stack.model_servers import local_model_servers

    try:
        chunks = tuple(
            (int(size), int(overlap)) for size, overlap in (c.split("/") for c in _csv(args.chunks))
        )
        grid = eval_configs.Grid(
            chunks=chunks,
            semantic_weights=tuple(float(w) for w in _csv(args.weights)),
            rrf_ks=tuple(int(k) for k in _csv(args.rrf)),
            arm_candidates=tuple(int(n) for n in _csv(args.arms)),
            methods=tuple(_csv(args.methods)),
        )
    except ValueError as exc:
        print(f"error: bad grid: {exc}", file=sys.stderr)
        return 2
    bad = set(grid.methods) - set(runner.GRID_METHODS)
    if bad:
        print(f"error: --methods takes {', '.join(runner.GRID_METHODS)}", file=sys.stderr)
        return 2
    prefer = eval_configs.default_grid_name()
    settings = get_settings().model_copy(update={"CONTEXTUALIZE": False})
    # rows of earlier reports (--from), by suite folder; a run adds to them
    paths: dict[str, str] = {}
    rows: dict[str, dict[str, dict[str, Any]]] = {}
    for earlier in args.from_report or []:
        saved = json.loads(Path(earlier).read_text(encoding="utf-8"))
        for name, found in saved.get("results", {}).items():
            folder = saved.get("suites", {}).get(name)
            if folder:
                paths.setdefault(name, folder)
            for row in found:
                rows.setdefault(name, {})[row["config"]] = row
    for folder in args.suite or []:
        paths[load_suite(folder).name] = str(Path(folder).resolve())
    if not paths:
        print("error: give --suite (or --from a report that names its suites)", file=sys.stderr)
        return 2
    suites = [load_suite(folder) for folder in paths.values()]
    missing = [name for name in rows if name not in paths]
    if missing:
        print(f"error: give --suite for {', '.join(missing)}", file=sys.stderr)
        return 2
    out = (
        Path(args.out)
        if args.out
        else settings.home
        / "eval"
        / "results"
        / f"cv-{runner.default_report_path(settings, suites[0]).name}"
    )
    out.parent.mkdir(parents=True, exist_ok=True)

    def save(report: cv.CvReport | None) -> None:
        payload = {
            "seed": args.seed,
            "suites": {s.name: paths[s.name] for s in suites},
            "splits": {
                s.name: {"A": list(sp.a), "B": list(sp.b)}
                for s in suites
                for sp in [cv.split_halves(s.answerable, seed=args.seed)]
            },
            "report": cv.report_to_dict(report) if report else None,
            "results": {name: list(by_config.values()) for name, by_config in rows.items()},
        }
        out.write_text(json.dumps(payload, indent=2), encoding="utf-8")

    if not args.from_report:
        configs = eval_configs.grid_configs(grid)
        ks = sorted({args.k, args.k_max, 5, 10, 20})
        print(
            f"{len(configs)} configuration(s) x {len(suites)} suite(s), "
            f"{len(grid.chunks)} ingest(s) per suite; defaults: {prefer}"
        )
        vectors: dict[str, list[float]] = {}
        with local_model_servers(settings, settings.home / "logs", chat=False):
            for suite in suites:
                print(f"suite {suite.name}: {len(suite.answerable)} answerable question(s)")
                sys.stdout.flush()
                results = runner.run_grid(
                    settings, suite, configs, ks, progress=print, query_vectors=vectors
                )
                for r in results:
                    if not r.ok:
                        print(f"  {r.config}: {r.error}")
                    rows.setdefault(suite.name, {})[r.config] = r.to_dict()
                save(None)  # a run cut short keeps the suites it finished (--from)
    data = []
    for suite in suites:
        scores = cv.scores_from_rows(rows.get(suite.name, {}).values())
        if not scores:
            print(f"error: nothing was scored on suite {suite.name}", file=sys.stderr)
            return 1
        split = cv.split_halves(suite.answerable, seed=args.seed)
        print(f"suite {suite.name}: halves of {len(split.a)} and {len(split.b)} questions")
        data.append(cv.SuiteScores(suite.name, split, scores))
    report = cv.cross_validate(
        data, k=args.k, k_max=args.k_max, prefer=prefer, rank_tolerance=args.tolerance
    )
    print()
    print(cv.format_report(report, top=args.top))
    save(report)
    print(f"\nreport: {out}")
    return 0


def add_eval_cv_parser(sub: Any) -> None:
    """Register ``eval-cv`` on the ``varagity`` subparsers."""
    cvp = sub.add_parser(
        "eval-cv",
        help="cross-validate a grid of retrieval settings (chunks, fusion) over suites: "
        "choose on one half of the questions, report on the other, then swap",
    )
    cvp.add_argument("--suite", action="append", help="suite folder; repeat for several")
    cvp.add_argument(
        "--from",
        dest="from_report",
        action="append",
        help="recompute the folds from an earlier eval-cv report (repeat to merge several; "
        "no retrieval runs): another --seed, --k or --tolerance on the same scores",
    )
    cvp.add_argument("--seed", type=int, default=0, help="the split's seed (default 0)")
    cvp.add_argument("--k", type=int, default=5, help="choose on Pass@k (default 5)")
    cvp.add_argument("--k-max", type=int, default=20, help="MRR / second Pass@ cut-off (20)")
    cvp.add_argument(
        "--chunks",
        default="1200/200,1600/200,2000/200",
        help="CHUNK_SIZE/CHUNK_OVERLAP pairs, comma-separated (an ingest each)",
    )
    cvp.add_argument("--weights", default="0.2,0.3,0.4,0.5", help="SEMANTIC_WEIGHT values")
    cvp.add_argument("--rrf", default="0,10,30,60", help="RRF_K values")
    cvp.add_argument("--arms", default="20,40,80", help="ARM_CANDIDATES values")
    cvp.add_argument(
        "--methods", default="semantic,bm25,hybrid", help="methods of the grid (default all)"
    )
    cvp.add_argument(
        "--tolerance",
        type=int,
        default=2,
        help="list configs whose Pass@k rank differs between halves by more than this (2)",
    )
    cvp.add_argument("--top", type=int, default=15, help="rows of the final standings shown")
    cvp.add_argument("--out", help="JSON report path (default VARAGITY_HOME/eval/results/cv-...)")
    cvp.set_defaults(func=cmd_eval_cv)
