"""Two-fold cross-validation of retrieval settings over one or more suites.

A suite's answerable questions are split into halves A and B (:func:`split_halves`:
seeded, stratified by the file of each question's first golden passage, sizes within
one). Every configuration of a grid is scored once on the whole suite; the halves are
then read from the per-question scores, so a fold costs no extra retrieval. Each fold
picks the best configuration on one half (the *train* half) and reports it on the
other (the *held-out* half); the two folds' held-out figures estimate what choosing a
setting this way is worth on questions it never saw.

Several suites (corpora) are chosen over together: a configuration is ranked on each
train half by Pass@k (ties share a rank), and the combined choice is the one with the
best worst-case rank over those halves, then the best mean Pass@k, then the best mean
MRR; on a full tie the preferred configuration (the defaults) wins, then the name. The
final choice applies the same rule to every half of every suite.

Everything here is pure: it reads :class:`~varagity.eval.scoring.QueryScore` values and
returns dataclasses; :func:`varagity.eval.runner.run_grid` produces the scores.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from varagity.eval.scoring import QueryScore, mrr_at_k, pass_at_k
from varagity.eval.suite import EvalQuery

HALVES: tuple[str, str] = ("A", "B")
FOLDS: tuple[tuple[str, str], ...] = (("A", "B"), ("B", "A"))
"""``(train, held-out)`` per fold."""


@dataclass(frozen=True, slots=True)
class Split:
    """The question ids of the two halves of one suite."""

    a: tuple[str, ...]
    b: tuple[str, ...]

    def half(self, name: str) -> tuple[str, ...]:
        """The ids of half ``"A"`` or ``"B"``."""
        if name == "A":
            return self.a
        if name == "B":
            return self.b
        raise ValueError(f"half must be 'A' or 'B', got {name!r}")


def _order(seed: int, text: str) -> str:
    return hashlib.sha256(f"{seed}:{text}".encode()).hexdigest()


def stratum(query: EvalQuery) -> str:
    """The stratum of a question: the file of its first golden passage (``""``: none)."""
    return query.relevant[0].rel_source if query.relevant else ""


def split_halves(queries: Sequence[EvalQuery], seed: int = 0) -> Split:
    """Split questions into two halves, deterministically for a ``seed``.

    Questions are grouped by :func:`stratum`; groups and the questions inside a group
    are ordered by a seeded hash (stable across Python versions and processes, unlike
    ``hash()``), then dealt alternately to A and B across all groups. So two questions
    on the same file land in different halves where possible, the halves differ in size
    by at most one, and the split depends only on the ids, their files and the seed.
    """
    ids = [q.id for q in queries]
    if len(set(ids)) != len(ids):
        raise ValueError("question ids must be unique")
    groups: dict[str, list[str]] = {}
    for q in queries:
        groups.setdefault(stratum(q), []).append(q.id)
    a: list[str] = []
    b: list[str] = []
    turn = 0
    for key in sorted(groups, key=lambda s: (_order(seed, "file:" + s), s)):
        for qid in sorted(groups[key], key=lambda i: (_order(seed, "id:" + i), i)):
            (a if turn % 2 == 0 else b).append(qid)
            turn += 1
    return Split(tuple(a), tuple(b))


@dataclass(frozen=True, slots=True)
class HalfScore:
    """One configuration's figures on one half of one suite."""

    pass_at: float
    mrr: float
    pass_at_max: float
    n: int


@dataclass(slots=True)
class SuiteScores:
    """Per-question scores of every configuration on one suite, and its split."""

    suite: str
    split: Split
    scores: dict[str, dict[str, QueryScore]]
    """``{config: {question id: score}}``."""

    def half_scores(self, half: str, k: int, k_max: int) -> dict[str, HalfScore]:
        """``{config: figures on half}``: Pass@k, MRR@k_max, Pass@k_max."""
        ids = self.split.half(half)
        out = {}
        for config, by_id in self.scores.items():
            picked = [by_id[i] for i in ids if i in by_id]
            out[config] = HalfScore(
                pass_at_k(picked, k), mrr_at_k(picked, k_max), pass_at_k(picked, k_max), len(picked)
            )
        return out


def scores_from_rows(rows: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, QueryScore]]:
    """``{config: {question id: score}}`` from saved result rows (``ConfigResult.to_dict``).

    Rows that did not run (``available`` false or an ``error``) are left out.
    """
    out: dict[str, dict[str, QueryScore]] = {}
    for row in rows:
        if not row.get("available", True) or row.get("error"):
            continue
        out[row["config"]] = {
            q["id"]: QueryScore(q["id"], tuple(q["found_ranks"])) for q in row["questions"]
        }
    return out


def ranks(scores: Mapping[str, HalfScore], digits: int = 9) -> dict[str, int]:
    """Competition ranks by Pass@k (1 is best; equal Pass@k shares a rank: 1, 2, 2, 4)."""
    values = {c: round(s.pass_at, digits) for c, s in scores.items()}
    ordered = sorted(values.values(), reverse=True)
    first: dict[float, int] = {}
    for i, v in enumerate(ordered, start=1):
        first.setdefault(v, i)
    return {c: first[v] for c, v in values.items()}


@dataclass(frozen=True, slots=True)
class Standing:
    """A configuration's standing over a set of halves (lower key is better)."""

    config: str
    worst_rank: int
    mean_pass: float
    mean_mrr: float

    def key(self, prefer: str | None) -> tuple[Any, ...]:
        """Sort key: worst rank, then mean Pass@k, mean MRR, the preferred one, name."""
        return (
            self.worst_rank,
            -round(self.mean_pass, 9),
            -round(self.mean_mrr, 9),
            self.config != prefer,
            self.config,
        )


def standings(
    tables: Sequence[Mapping[str, HalfScore]], prefer: str | None = None
) -> list[Standing]:
    """Every configuration scored in all ``tables``, best first (see the module doc)."""
    if not tables:
        return []
    common = set(tables[0])
    for t in tables[1:]:
        common &= set(t)
    ranked = [ranks({c: t[c] for c in common}) for t in tables]
    rows = [
        Standing(
            config=c,
            worst_rank=max(r[c] for r in ranked),
            mean_pass=sum(t[c].pass_at for t in tables) / len(tables),
            mean_mrr=sum(t[c].mrr for t in tables) / len(tables),
        )
        for c in common
    ]
    return sorted(rows, key=lambda s: s.key(prefer))


def choose(tables: Sequence[Mapping[str, HalfScore]], prefer: str | None = None) -> str:
    """The best configuration over ``tables``.

    Raises:
        ValueError: No configuration is scored in every table.
    """
    rows = standings(tables, prefer)
    if not rows:
        raise ValueError("no configuration is scored in every table")
    return rows[0].config


@dataclass(frozen=True, slots=True)
class FoldPick:
    """One fold's choice and what it scores on each suite's train and held-out halves."""

    train: str
    test: str
    chosen: str
    train_scores: dict[str, HalfScore]
    """``{suite: figures of the chosen config on its train half}``."""
    test_scores: dict[str, HalfScore]
    """``{suite: figures of the chosen config on its held-out half}``."""
    baseline_test: dict[str, HalfScore]
    """``{suite: the preferred (default) config on the held-out half}``."""


@dataclass(slots=True)
class RankShift:
    """A configuration whose Pass@k rank differs between the halves of a suite."""

    suite: str
    config: str
    rank_a: int
    rank_b: int
    pass_a: float
    pass_b: float


@dataclass(slots=True)
class CvReport:
    """Everything :func:`cross_validate` found."""

    k: int
    k_max: int
    prefer: str | None
    suites: list[str]
    halves: dict[str, dict[str, dict[str, HalfScore]]]
    """``{suite: {half: {config: figures}}}``."""
    per_suite: dict[str, list[FoldPick]]
    """Folds choosing on one suite alone."""
    combined: list[FoldPick]
    """Folds choosing on every suite's train half together."""
    final: list[Standing]
    """Standings over every half of every suite, best first."""
    shifts: list[RankShift] = field(default_factory=list)

    @property
    def chosen(self) -> str:
        """The final choice."""
        return self.final[0].config

    def held_out(self, picks: Sequence[FoldPick], suite: str) -> float:
        """Mean held-out Pass@k of ``picks`` on ``suite`` (both folds)."""
        return sum(p.test_scores[suite].pass_at for p in picks) / len(picks)


def _fold(
    data: Sequence[SuiteScores],
    halves: Mapping[str, Mapping[str, Mapping[str, HalfScore]]],
    train: str,
    test: str,
    prefer: str | None,
) -> FoldPick:
    chosen = choose([halves[s.suite][train] for s in data], prefer)
    base = prefer if prefer is not None else chosen
    return FoldPick(
        train=train,
        test=test,
        chosen=chosen,
        train_scores={s.suite: halves[s.suite][train][chosen] for s in data},
        test_scores={s.suite: halves[s.suite][test][chosen] for s in data},
        baseline_test={
            s.suite: halves[s.suite][test][base] for s in data if base in halves[s.suite][test]
        },
    )


def cross_validate(
    data: Sequence[SuiteScores],
    *,
    k: int = 5,
    k_max: int = 20,
    prefer: str | None = None,
    rank_tolerance: int = 2,
) -> CvReport:
    """Two-fold cross-validation over one or more suites.

    Args:
        data: Each suite's split and per-question scores.
        k: The cut-off chosen on (Pass@k).
        k_max: The cut-off of the MRR tie-break and the reported Pass@k_max.
        prefer: The configuration that wins exact ties (the current defaults).
        rank_tolerance: A configuration whose Pass@k rank on A and on B differ by more
            than this is listed in ``shifts``.
    """
    if not data:
        raise ValueError("cross-validation needs at least one suite")
    names = [s.suite for s in data]
    if len(set(names)) != len(names):
        raise ValueError(f"suite names must be unique, got {names}")
    halves = {s.suite: {h: s.half_scores(h, k, k_max) for h in HALVES} for s in data}
    per_suite = {
        s.suite: [_fold([s], halves, train, test, prefer) for train, test in FOLDS] for s in data
    }
    combined = [_fold(data, halves, train, test, prefer) for train, test in FOLDS]
    final = standings([halves[s.suite][h] for s in data for h in HALVES], prefer)
    shifts = []
    for s in data:
        ra = ranks(halves[s.suite]["A"])
        rb = ranks(halves[s.suite]["B"])
        for c in sorted(set(ra) & set(rb)):
            if abs(ra[c] - rb[c]) > rank_tolerance:
                shifts.append(
                    RankShift(
                        s.suite,
                        c,
                        ra[c],
                        rb[c],
                        halves[s.suite]["A"][c].pass_at,
                        halves[s.suite]["B"][c].pass_at,
                    )
                )
    return CvReport(k, k_max, prefer, names, halves, per_suite, combined, final, shifts)


# --- printing -------------------------------------------------------------------------


def _pct(x: float) -> str:
    return f"{100 * x:.1f}"


def _table(head: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    out = ["  ".join(c.ljust(widths[i]) for i, c in enumerate(head)).rstrip()]
    out.append("  ".join("-" * w for w in widths))
    out += ["  ".join(c.ljust(widths[i]) for i, c in enumerate(r)).rstrip() for r in rows]
    return "\n".join(out)


def format_report(report: CvReport, top: int = 15) -> str:
    """The folds, the top of the final standings and the rank shifts, as text tables."""
    k, km = report.k, report.k_max
    parts = []
    fold_rows = []
    for label, picks in [*report.per_suite.items(), ("combined", report.combined)]:
        for p in picks:
            for suite in p.test_scores:
                base = p.baseline_test.get(suite)
                fold_rows.append(
                    [
                        label,
                        f"{p.train}->{p.test}",
                        p.chosen,
                        suite,
                        _pct(p.train_scores[suite].pass_at),
                        _pct(p.test_scores[suite].pass_at),
                        _pct(p.test_scores[suite].pass_at_max),
                        f"{p.test_scores[suite].mrr:.3f}",
                        _pct(base.pass_at) if base else "-",
                    ]
                )
    parts.append(
        "folds (chosen on the train half by Pass@k, reported on the held-out half):\n"
        + _table(
            [
                "chosen on",
                "fold",
                "chosen",
                "suite",
                f"train P@{k}",
                f"held-out P@{k}",
                f"held-out P@{km}",
                f"MRR@{km}",
                f"default P@{k}",
            ],
            fold_rows,
        )
    )
    summary = []
    for label, picks in [*report.per_suite.items(), ("combined", report.combined)]:
        for suite in picks[0].test_scores:
            cv = report.held_out(picks, suite)
            defaults = [p.baseline_test[suite].pass_at for p in picks if suite in p.baseline_test]
            summary.append(
                [
                    label,
                    suite,
                    _pct(cv),
                    _pct(sum(defaults) / len(defaults)) if len(defaults) == len(picks) else "-",
                ]
            )
    parts.append(
        f"held-out Pass@{k}, mean of the two folds:\n"
        + _table(["chosen on", "suite", "chosen setting", "default"], summary)
    )
    head = ["#", "config", "worst rank", f"mean P@{k}", f"mean MRR@{km}"]
    for suite in report.suites:
        head += [f"{suite} A", f"{suite} B"]
    rows = []
    shown = report.final[:top]
    if report.prefer and all(s.config != report.prefer for s in shown):
        shown += [s for s in report.final if s.config == report.prefer]
    for s in shown:
        row = [
            str(report.final.index(s) + 1),
            s.config + (" (default)" if s.config == report.prefer else ""),
            str(s.worst_rank),
            _pct(s.mean_pass),
            f"{s.mean_mrr:.3f}",
        ]
        for suite in report.suites:
            for h in HALVES:
                row.append(_pct(report.halves[suite][h][s.config].pass_at))
        rows.append(row)
    parts.append(
        f"final standings over every half (Pass@{k} per half; {len(report.final)} configs):\n"
        + _table(head, rows)
    )
    if report.shifts:
        shift_rows = [
            [r.suite, r.config, str(r.rank_a), str(r.rank_b), _pct(r.pass_a), _pct(r.pass_b)]
            for r in sorted(report.shifts, key=lambda r: (r.suite, -abs(r.rank_a - r.rank_b)))
        ]
        parts.append(
            f"rank shifts between halves ({len(report.shifts)} configs; largest first, 20 shown):\n"
            + _table(
                ["suite", "config", "rank A", "rank B", f"P@{k} A", f"P@{k} B"], shift_rows[:20]
            )
        )
    parts.append(f"chosen: {report.chosen}")
    return "\n\n".join(parts)


def report_to_dict(report: CvReport) -> dict[str, Any]:
    """JSON-ready form."""

    def fig(s: HalfScore) -> dict[str, Any]:
        return {
            "pass_at_k": round(s.pass_at, 4),
            "mrr": round(s.mrr, 4),
            "pass_at_k_max": round(s.pass_at_max, 4),
            "n": s.n,
        }

    def pick(p: FoldPick) -> dict[str, Any]:
        return {
            "train": p.train,
            "test": p.test,
            "chosen": p.chosen,
            "train_scores": {s: fig(v) for s, v in p.train_scores.items()},
            "test_scores": {s: fig(v) for s, v in p.test_scores.items()},
            "default_test_scores": {s: fig(v) for s, v in p.baseline_test.items()},
        }

    return {
        "k": report.k,
        "k_max": report.k_max,
        "prefer": report.prefer,
        "chosen": report.chosen,
        "per_suite": {s: [pick(p) for p in ps] for s, ps in report.per_suite.items()},
        "combined": [pick(p) for p in report.combined],
        "final": [
            {
                "config": s.config,
                "worst_rank": s.worst_rank,
                "mean_pass_at_k": round(s.mean_pass, 4),
                "mean_mrr": round(s.mean_mrr, 4),
            }
            for s in report.final
        ],
        "halves": {
            suite: {h: {c: fig(v) for c, v in t.items()} for h, t in hs.items()}
            for suite, hs in report.halves.items()
        },
        "shifts": [
            {
                "suite": r.suite,
                "config": r.config,
                "rank_a": r.rank_a,
                "rank_b": r.rank_b,
                "pass_a": round(r.pass_a, 4),
                "pass_b": round(r.pass_b, 4),
            }
            for r in report.shifts
        ],
    }
