"""``varagity eval-cv``: two-fold cross-validation of retrieval settings over suites.

The grid (chunk settings x fusion settings, contextualization off) is scored on every
suite by :func:`varagity.eval.runner.run_grid`; :mod:`varagity.eval.cv` splits each
suite's questions into halves, chooses on one and reports on the other.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from varagity.config import get_settings
from varagity_cli.common import EXIT_FAILED, EXIT_OK, EXIT_USAGE, fail

if TYPE_CHECKING:
    from varagity_cli.common import Subparsers


def _csv(text: str) -> list[str]:
    values = [v.strip() for v in text.split(",") if v.strip()]
    if not values:
        raise ValueError(f"no values in {text!r}")
    return values


def cmd_eval_cv(
    *,
    suite_folders: list[str] | None,
    from_report: list[str] | None,
    seed: int,
    k: int,
    k_max: int,
    chunks: str,
    weights: str,
    rrf: str,
    arms: str,
    methods: str,
    tolerance: int,
    top: int,
    out: str | None,
) -> int:
    """Cross-validate a grid of retrieval settings over one or more suites."""
    import json

    from varagity.eval import configs as eval_configs
    from varagity.eval import cv, runner
    from varagity.eval.suite import load_suite
    from varagity_stack.model_servers import local_model_servers

    try:
        pairs = tuple(
            (int(size), int(overlap)) for size, overlap in (c.split("/") for c in _csv(chunks))
        )
        grid = eval_configs.Grid(
            chunks=pairs,
            semantic_weights=tuple(float(w) for w in _csv(weights)),
            rrf_ks=tuple(int(n) for n in _csv(rrf)),
            arm_candidates=tuple(int(n) for n in _csv(arms)),
            methods=tuple(_csv(methods)),
        )
    except ValueError as exc:
        return fail(f"bad grid: {exc}", EXIT_USAGE)
    bad = set(grid.methods) - set(runner.GRID_METHODS)
    if bad:
        return fail(f"--methods takes {', '.join(runner.GRID_METHODS)}", EXIT_USAGE)
    prefer = eval_configs.default_grid_name()
    settings = get_settings().model_copy(update={"CONTEXTUALIZE": False})
    # rows of earlier reports (--from), by suite folder; a run adds to them
    paths: dict[str, str] = {}
    rows: dict[str, dict[str, dict[str, Any]]] = {}
    for earlier in from_report or []:
        saved = json.loads(Path(earlier).read_text(encoding="utf-8"))
        for name, found in saved.get("results", {}).items():
            folder = saved.get("suites", {}).get(name)
            if folder:
                paths.setdefault(name, folder)
            for row in found:
                rows.setdefault(name, {})[row["config"]] = row
    for folder in suite_folders or []:
        paths[load_suite(folder).name] = str(Path(folder).resolve())
    if not paths:
        return fail("give --suite (or --from a report that names its suites)", EXIT_USAGE)
    suites = [load_suite(folder) for folder in paths.values()]
    missing = [name for name in rows if name not in paths]
    if missing:
        return fail(f"give --suite for {', '.join(missing)}", EXIT_USAGE)
    report_path = (
        Path(out)
        if out
        else settings.home
        / "eval"
        / "results"
        / f"cv-{runner.default_report_path(settings, suites[0]).name}"
    )
    report_path.parent.mkdir(parents=True, exist_ok=True)

    def save(report: cv.CvReport | None) -> None:
        payload = {
            "seed": seed,
            "suites": {s.name: paths[s.name] for s in suites},
            "splits": {
                s.name: {"A": list(sp.a), "B": list(sp.b)}
                for s in suites
                for sp in [cv.split_halves(s.answerable, seed=seed)]
            },
            "report": cv.report_to_dict(report) if report else None,
            "results": {name: list(by_config.values()) for name, by_config in rows.items()},
        }
        report_path.write_text(json.dumps(payload, indent=2), encoding="utf-8")

    if not from_report:
        configs = eval_configs.grid_configs(grid)
        ks = sorted({k, k_max, 5, 10, 20})
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
            return fail(f"nothing was scored on suite {suite.name}", EXIT_FAILED)
        split = cv.split_halves(suite.answerable, seed=seed)
        print(f"suite {suite.name}: halves of {len(split.a)} and {len(split.b)} questions")
        data.append(cv.SuiteScores(suite.name, split, scores))
    report = cv.cross_validate(data, k=k, k_max=k_max, prefer=prefer, rank_tolerance=tolerance)
    print()
    print(cv.format_report(report, top=top))
    save(report)
    print(f"\nreport: {report_path}")
    return EXIT_OK


def register(sub: Subparsers) -> None:
    """Add ``eval-cv``."""
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
    cvp.set_defaults(
        func=lambda a: cmd_eval_cv(
            suite_folders=a.suite,
            from_report=a.from_report,
            seed=a.seed,
            k=a.k,
            k_max=a.k_max,
            chunks=a.chunks,
            weights=a.weights,
            rrf=a.rrf,
            arms=a.arms,
            methods=a.methods,
            tolerance=a.tolerance,
            top=a.top,
            out=a.out,
        )
    )
