"""Graph evaluation: a graph suite's archive built into an isolated message graph, every
question answered through the graph turn runner and judged offline, beside the naive
document pipeline over the same sessions (``varagity eval --graph``).

* **Where.** Each suite (and month range, :class:`MonthSpan`) gets its own location,
  ``VARAGITY_HOME/eval/<suite>_<hash>/``, the hash over the suite's fingerprint
  (:meth:`~varagity.eval.graph_suite.GraphSuite.fingerprint`), the month range and the
  settings that decide what extraction writes (engine, chunk and reply sizes, format,
  chat and embedding models): ``messages/chat.db`` (the sessions written by
  :func:`varagity.eval.lihua.write_archive`; an archive suite's own folder instead) is
  its ``GRAPH_DOCS_PATH``, ``graph/`` its ``GRAPH_STORAGE_PATH``, with
  ``GRAPH_TIMEZONE`` the suite's zone and ``GRAPH_OWNER_NAME`` its owner. Its turns
  run on a database of their own (``eval_graph_<suite>``, empty) and an empty BM25
  folder, so a turn the graph cannot answer degrades to *no* documents (an
  abstention), never to the live index. The archive is written again on every run: the
  build's manifest diff finds what changed (sessions, the converter), nothing else.
* **Build.** The build is the caller's (:data:`Builder`): the command line and the
  Dagster gate materialize the real graph assets (``graph_archive`` ->
  ``graph_transcripts`` -> ``graph_workdir``, :mod:`varagity_assets.defs.graph.eval_build`);
  this module stays free of Dagster. A location whose manifest already holds every
  thread-day of the archive with the same content is reused without a build. The
  report gives the build's wall time (Dagster included), the engine's, and seconds per
  thread-day built.
* **Answers.** Each question is a graph turn (:func:`varagity.chat.turn.run_turn`,
  ``corpus="graph"``, the ``simple`` engine): the answer, the days it cites, time to
  first token (from the start of the turn, retrieval included, to the first streamed
  piece) and to the end, and the stop reason. The judge is
  :mod:`varagity.eval.graph_judge` (right / wrong / no information).
* **Evidence-day recall@k.** Apart from the turn, graph retrieval is asked again for
  ``k`` day cards (``GRAPH_CHUNK_TOP_K=k``, :meth:`GraphService.retrieve`); an answerable
  question is recalled when every day of its evidence stamps is among the days those
  cards cover (a card spanning several days covers each). ``k`` is the gate's (10).
* **Baseline.** With ``baseline=True`` the same sessions are written as plain text
  files, one per session (``<YYYYMMDD_HHMM>.txt``, the session file with its ``Time:``
  line), ingested into an isolated document store (:mod:`varagity.eval.stores`, the
  document pipeline with the app's settings) and each question answered by a document
  turn (``corpus="rag"``, ``RETRIEVAL_METHOD`` with ``TOP_K`` passages), judged alike.
* **Figures** per type (``single``, ``multi``, ``null`` and ``all``): n, accuracy (share
  right), error rate (share wrong), no information, abstentions (share of answers that
  abstain), evidence-day recall@k (graph, answerable questions), first token and answer
  time p50/p95. The gate (:func:`gate`) compares them with the suite's
  ``thresholds.json``.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import shutil
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any

from varagity.config import Settings
from varagity.eval.answers import AnswerError, GateOutcome, run_timed_turn
from varagity.eval.graph_judge import Verdict, judge
from varagity.eval.graph_suite import (
    DEFAULT_K,
    QUESTION_TYPES,
    GraphQuery,
    GraphSuite,
    GraphThresholds,
)
from varagity.eval.lihua import Session, parse_stamp, person_name, read_sessions, write_archive
from varagity.eval.scoring import fixed_width, percentile
from varagity.eval.stores import derive_settings
from varagity.eval.suite import Suite, SuiteError
from varagity.graph.types import split_doc_key

log = logging.getLogger(__name__)

Progress = Callable[[str], None]
#: Builds the archive ``archive`` (relative to ``GRAPH_DOCS_PATH``) of ``settings`` into
#: its graph; ``scratch`` is a folder of the location it may keep files in. Returns the
#: metadata of the ``graph_workdir`` materialization (``seconds``, ``entities`` ...).
Builder = Callable[[Settings, str, Path], Mapping[str, Any]]

#: Names of the two answering systems in a report.
GRAPH = "graph"
BASELINE = "baseline"
#: Rough build time of one thread-day on 2 cores by GRAPH_EXTRACTION (LiHua-World:
#: the year without a model in 189 s for 419; January with the 0.5B model in 701 s for
#: 31), for the up-front estimate only.
BUILD_SECONDS_PER_DAY = {"skeleton": 0.5, "model": 22.6}
#: The settings that decide what a graph build extracts (part of the location's hash).
EXTRACTION_SETTINGS = (
    "GRAPH_ENGINE",
    "GRAPH_CHUNK_TOKENS",
    "GRAPH_EXTRACT_MAX_TOKENS",
    "GRAPH_EXTRACT_FORMAT",
    "GRAPH_EXTRACTION",
    "LOCAL_LLM",
    "LLM_MODEL",
    "EMBEDDING_MODEL",
    "EMBEDDING_DIM",
)
_SLUG = re.compile(r"[^a-z0-9]+")
_MONTH = re.compile(r"^(\d{4})-(\d{2})$")
_STAMP_FILE = re.compile(r"(\d{8})_(\d{2}):?(\d{2})")
ARCHIVE_DIR = "messages"
ARCHIVE_NAME = "chat.db"


class GraphEvalError(RuntimeError):
    """The evaluation cannot go on (the build left days out, a bad month range)."""


def _slug(name: str) -> str:
    return _SLUG.sub("_", name.lower()).strip("_")[:30] or "suite"


# --- what is asked, over which sessions --------------------------------------------


@dataclass(frozen=True, slots=True)
class MonthSpan:
    """Whole months, ``first`` to ``last`` (first days of those months)."""

    first: date
    last: date

    @classmethod
    def parse(cls, text: str) -> MonthSpan:
        """``2026-01..2026-02`` (or one month, ``2026-03``).

        Raises:
            ValueError: Not that form, or the range runs backwards.
        """
        parts = [p.strip() for p in text.split("..")]
        if len(parts) not in (1, 2):
            raise ValueError(f"months must be YYYY-MM or YYYY-MM..YYYY-MM, got {text!r}")
        found = []
        for part in parts:
            match = _MONTH.match(part)
            if match is None or not 1 <= int(match[2]) <= 12:
                raise ValueError(f"months must be YYYY-MM or YYYY-MM..YYYY-MM, got {text!r}")
            found.append(date(int(match[1]), int(match[2]), 1))
        span = cls(found[0], found[-1])
        if span.last < span.first:
            raise ValueError(f"the month range {text!r} runs backwards")
        return span

    @property
    def end(self) -> date:
        """The last day of the range."""
        after = (self.last.replace(day=28) + timedelta(days=4)).replace(day=1)
        return after - timedelta(days=1)

    def __contains__(self, day: object) -> bool:
        return isinstance(day, date) and self.first <= day <= self.end

    def __str__(self) -> str:
        first, last = self.first.strftime("%Y-%m"), self.last.strftime("%Y-%m")
        return first if first == last else f"{first}..{last}"


@dataclass(frozen=True, slots=True)
class EvalScope:
    """What one evaluation asks and builds: the questions, and the sessions the archive
    is written from (None: the suite's archive as it is)."""

    suite: GraphSuite
    sessions: tuple[Session, ...] | None
    months: MonthSpan | None = None
    notes: tuple[str, ...] = ()

    @property
    def fingerprint(self) -> str:
        """The suite's fingerprint with the month range (what the archive is made of)."""
        base = self.suite.fingerprint()
        return base if self.months is None else f"{base}/{self.months}"


def scope(
    suite: GraphSuite, *, months: MonthSpan | None = None, limit: int | None = None
) -> EvalScope:
    """The questions and sessions of an evaluation of ``suite``.

    With ``months``, only the sessions of those months are written, the answerable
    questions kept are those whose every evidence day lies in them, and the null
    questions are kept in the suite's proportion (null questions per answerable one,
    rounded; the first in file order). ``limit`` then keeps the first ``limit``.

    Raises:
        GraphEvalError: ``months`` on a suite of an archive (its sessions are not
            known), or no session or question in the range.
    """
    sessions = read_sessions(suite.sessions) if suite.sessions is not None else None
    notes: list[str] = []
    chosen = suite
    if months is not None:
        if sessions is None:
            raise GraphEvalError(
                f"suite {suite.name} is an archive, not sessions: --months needs sessions"
            )
        sessions = tuple(s for s in sessions if s.day in months)
        if not sessions:
            raise GraphEvalError(f"suite {suite.name} has no session in {months}")
        answerable = [q for q in suite.queries if q.answerable]
        nulls = [q for q in suite.queries if not q.answerable]
        kept = [q for q in answerable if all(d in months for d in q.evidence_days)]
        n_null = round(len(nulls) * len(kept) / len(answerable)) if answerable else 0
        keep = {q.id for q in kept} | {q.id for q in nulls[:n_null]}
        queries = tuple(q for q in suite.queries if q.id in keep)
        if not queries:
            raise GraphEvalError(
                f"suite {suite.name} has no question whose evidence is in {months}"
            )
        chosen = replace(suite, queries=queries)
        notes.append(
            f"months {months}: {len(sessions)} session(s), {len(kept)} of {len(answerable)} "
            f"answerable question(s) (evidence in range), {n_null} of {len(nulls)} null"
        )
    try:
        chosen = chosen.limited(limit)
    except SuiteError as exc:
        raise GraphEvalError(str(exc)) from exc
    return EvalScope(chosen, sessions, months, tuple(notes))


# --- the isolated location ----------------------------------------------------------


@dataclass(frozen=True, slots=True)
class GraphLocation:
    """One evaluation's graph: its folder, the settings that point at it, and the
    archive (relative to ``GRAPH_DOCS_PATH``)."""

    name: str
    folder: Path
    settings: Settings
    archive: str

    @property
    def workdir(self) -> Path:
        """The engine's working directory."""
        from varagity.graph.registry import workdir_for

        return workdir_for(self.settings)


def location_name(base: Settings, plan: EvalScope) -> str:
    """``<suite>_<hash>``: the hash of what the archive is made of and of the settings
    that decide what extraction writes (:data:`EXTRACTION_SETTINGS`)."""
    values = {name: str(getattr(base, name)) for name in EXTRACTION_SETTINGS}
    digest = hashlib.sha256(
        json.dumps({"input": plan.fingerprint, **values}, sort_keys=True).encode()
    ).hexdigest()
    return f"{_slug(plan.suite.name)}_{digest[:12]}"


def location_overrides(
    base: Settings, plan: EvalScope, folder: Path, database_url: str
) -> dict[str, Any]:
    """The settings that point at the location in ``folder``: its archive folder and
    graph, the suite's zone, the owner's name (``GRAPH_OWNER_NAME``, the suite's owner
    as the converter spells people, so transcripts name the owner as questions do; a
    suite of an archive keeps the app's), an empty document store on ``database_url``."""
    suite = plan.suite
    db = database_url.rsplit("/", 1)[-1].split("?", 1)[0]
    overrides: dict[str, Any] = {
        "GRAPH_ENABLED": True,
        "GRAPH_STORAGE_PATH": folder / "graph",
        "GRAPH_TIMEZONE": suite.timezone,
        "DATABASE_URL": database_url,
        "DOCS_PATH": folder / "no-documents",
        "BM25_INDEX_PATH": folder / "bm25",
        "ELASTICSEARCH_INDEX": f"{base.ELASTICSEARCH_INDEX}_{db}",
    }
    if plan.sessions is not None:
        overrides["GRAPH_DOCS_PATH"] = folder / ARCHIVE_DIR
        overrides["GRAPH_OWNER_NAME"] = person_name(suite.owner)
    else:
        assert suite.archive is not None
        overrides["GRAPH_DOCS_PATH"] = suite.archive.parent
    return overrides


def graph_location(base: Settings, plan: EvalScope) -> GraphLocation:
    """The location of ``plan``'s graph, its archive written (again on every call: the
    build's manifest diff then finds what a change of sessions or of the converter
    changed, and an unchanged archive builds nothing), and its empty database created.

    Args:
        base: The app's settings (Postgres server, models, home folder).
        plan: The evaluation's scope.
    """
    from varagity.stores.postgres import database_url, ensure_database

    suite = plan.suite
    name = location_name(base, plan)
    folder = base.home / "eval" / name
    if plan.sessions is not None:
        archive = ARCHIVE_NAME
        write_suite_archive(plan, folder / ARCHIVE_DIR / archive)
    else:
        assert suite.archive is not None
        archive = suite.archive.name
    url = ensure_database(database_url(base), f"eval_graph_{_slug(suite.name)}")
    (folder / "no-documents").mkdir(parents=True, exist_ok=True)
    settings = derive_settings(base, location_overrides(base, plan, folder, url))
    return GraphLocation(name, folder, settings, archive)


def write_suite_archive(plan: EvalScope, target: Path) -> None:
    """Write the scope's sessions as the archive at ``target`` (with ``archive.json``
    beside it saying what it was written from)."""
    assert plan.sessions is not None
    target.parent.mkdir(parents=True, exist_ok=True)
    summary = write_archive(plan.sessions, target, owner=plan.suite.owner, tz=plan.suite.tz)
    marker = target.parent / "archive.json"
    marker.write_text(
        json.dumps({"fingerprint": plan.fingerprint, "archive": summary.describe()}, indent=2)
    )


# --- the build ----------------------------------------------------------------------


@dataclass(slots=True)
class BuildReport:
    """What bringing the location's graph up to date did."""

    location: str
    thread_days: int
    built: int = 0
    removed: int = 0
    reused: bool = False
    seconds: float = 0.0
    engine_seconds: float | None = None
    entities: int | None = None
    relations: int | None = None

    @property
    def seconds_per_day(self) -> float | None:
        """Wall seconds per thread-day built (None when nothing was built)."""
        return self.seconds / self.built if self.built else None

    def describe(self) -> str:
        """One line for people."""
        size = (
            f"; {self.entities} entities, {self.relations} relations"
            if self.entities is not None
            else ""
        )
        if self.reused:
            return f"graph {self.location}: reused, all {self.thread_days} thread-days built{size}"
        per = self.seconds_per_day
        return (
            f"graph {self.location}: {self.built} of {self.thread_days} thread-days built "
            f"in {self.seconds:.1f} s"
            + (f" ({per:.1f} s per thread-day)" if per is not None else "")
            + (f", engine {self.engine_seconds:.1f} s" if self.engine_seconds is not None else "")
            + size
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        per = self.seconds_per_day
        return {
            "location": self.location,
            "thread_days": self.thread_days,
            "built": self.built,
            "removed": self.removed,
            "reused": self.reused,
            "seconds": round(self.seconds, 2),
            "seconds_per_thread_day": None if per is None else round(per, 2),
            "engine_seconds": self.engine_seconds,
            "entities": self.entities,
            "relations": self.relations,
        }


def pending_days(location: GraphLocation) -> tuple[int, int, int]:
    """``(thread-days of the archive, days to insert or redo, days to remove)``: the
    archive read as the build reads it, diffed against the location's manifest."""
    from varagity.graph.contacts import load_contacts
    from varagity.graph.manifest import diff, read_manifest
    from varagity.graph.sources.registry import read_archive
    from varagity.graph.transcripts import graph_timezone

    settings = location.settings
    root = settings.graph_docs_path
    days = read_archive(
        root,
        location.archive,
        tz=graph_timezone(settings),
        contacts=load_contacts(root, location.archive, owner=settings.GRAPH_OWNER_NAME),
    )
    found = diff(days, read_manifest(location.workdir), source=location.archive)
    return len(days), len(found.new) + len(found.changed), len(found.removed)


def ensure_graph(
    location: GraphLocation, build: Builder, progress: Progress | None = None
) -> BuildReport:
    """Build the location's graph unless its manifest holds every thread-day as the
    archive renders it now.

    Raises:
        GraphEvalError: After the build, days are still missing or stale.
    """
    from varagity.graph.manifest import read_summary

    say = progress or (lambda _line: None)
    total, todo, gone = pending_days(location)
    report = BuildReport(location.name, total)
    if not todo and not gone:
        report.reused = True
    else:
        mode = location.settings.GRAPH_EXTRACTION
        each = BUILD_SECONDS_PER_DAY[mode]
        say(
            f"building the graph of {location.archive}: {todo} of {total} thread-day(s) to "
            f"extract ({mode}), {gone} to remove (~{todo * each / 60:.0f} min at {each} s "
            "each)"
        )
        started = time.perf_counter()
        metadata = build(location.settings, location.archive, location.folder)
        report.seconds = time.perf_counter() - started
        report.built, report.removed = todo, gone
        engine = metadata.get("seconds")
        report.engine_seconds = float(engine) if isinstance(engine, int | float) else None
        _, left, left_gone = pending_days(location)
        if left or left_gone:
            raise GraphEvalError(
                f"the build of {location.archive} left {left} thread-day(s) unbuilt and "
                f"{left_gone} unremoved; run again to resume it"
            )
    summary = read_summary(location.workdir)
    if summary is not None:
        report.entities, report.relations = summary.entities, summary.relations
    return report


# --- answers ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class EvalAnswer:
    """One answer as the turn runner gave it.

    Attributes:
        cited: What the answer cites, in order: graph day cards as ``<thread> <day>``,
            document passages by file.
        cited_days: The days of what it cites (``YYYY-MM-DD``), first-cited first.
        shown_days: The days of all the evidence the turn showed.
        corpus: What the evidence came from (``rag`` on a graph turn that degraded).
        degraded: Why a graph turn answered from the documents, else None.
    """

    query_id: str
    text: str
    cited: tuple[str, ...]
    cited_days: tuple[str, ...]
    shown_days: tuple[str, ...]
    first_token_ms: float | None
    total_ms: float
    stop_reason: str
    corpus: str
    degraded: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "answer": self.text,
            "cited": list(self.cited),
            "cited_days": list(self.cited_days),
            "shown_days": list(self.shown_days),
            "first_token_ms": self.first_token_ms,
            "total_ms": round(self.total_ms, 1),
            "stop_reason": self.stop_reason,
            "corpus": self.corpus,
            "degraded": self.degraded,
        }


def span_days(span: str) -> tuple[str, ...]:
    """The days a day card's span covers (``2026-03-02``, or each day of
    ``2026-03-02..2026-03-04``); none when it is not a date."""
    first, _, last = span.partition("..")
    try:
        start = date.fromisoformat(first.strip())
        end = date.fromisoformat(last.strip()) if last else start
    except ValueError:
        return ()
    return tuple((start + timedelta(days=n)).isoformat() for n in range((end - start).days + 1))


def file_day(relative_path: str) -> str | None:
    """The day a baseline file's name (``20260302_1930.txt``) stamps, else None."""
    match = _STAMP_FILE.search(Path(relative_path).name)
    if match is None:
        return None
    try:
        return parse_stamp(f"{match[1]}_{match[2]}:{match[3]}").date().isoformat()
    except ValueError:
        return None


def _card_span(card: Any) -> str:
    return str(card.span or split_doc_key(card.doc_key)[1])


def ask(
    services: Any,
    query: GraphQuery,
    corpus: str,
    *,
    method: str | None = None,
    k: int | None = None,
) -> EvalAnswer:
    """Answer ``query`` through the chat turn runner (the ``simple`` engine) from
    ``corpus`` (``graph``: the graph's day cards; ``rag``: ``k`` passages of ``method``).

    Raises:
        GraphEvalError: The turn ended with an error (the model down, a bad request).
    """
    from varagity.chat.turn import TurnRequest

    request = TurnRequest(
        query.query,
        corpus="graph" if corpus == GRAPH else "rag",
        method=method,
        k=k,
        chat_engine="simple",
    )
    try:
        turn = run_timed_turn(services, request, query.id)
    except AnswerError as exc:
        raise GraphEvalError(str(exc)) from exc.__cause__
    evidence, event = turn.evidence, turn.done
    labels: list[str] = []
    days: list[tuple[str, ...]] = []
    if evidence is not None and evidence.graph is not None:
        for card in evidence.graph.days:
            span = _card_span(card)
            labels.append(f"{card.thread_name or 'conversation'} {span}")
            days.append(span_days(span))
    elif evidence is not None:
        for chunk in evidence.chunks:
            labels.append(chunk.record.relative_path)
            day = file_day(chunk.record.relative_path)
            days.append((day,) if day else ())
    cited = [n for n in event.cited if 1 <= n <= len(labels)]
    return EvalAnswer(
        query_id=query.id,
        text=event.answer,
        cited=tuple(labels[n - 1] for n in cited),
        cited_days=tuple(dict.fromkeys(d for n in cited for d in days[n - 1])),
        shown_days=tuple(sorted({d for group in days for d in group})),
        first_token_ms=turn.first_token_ms,
        total_ms=turn.total_ms,
        stop_reason=event.stop_reason,
        corpus=evidence.corpus if evidence is not None else corpus,
        degraded=evidence.degraded if evidence is not None else None,
    )


# --- evidence-day recall --------------------------------------------------------------


def recalled(query: GraphQuery, retrieved_days: Sequence[str]) -> bool | None:
    """Whether every evidence day of ``query`` is among ``retrieved_days``
    (``YYYY-MM-DD``); None for an unanswerable question (nothing to recall)."""
    if not query.answerable:
        return None
    have = set(retrieved_days)
    return all(day.isoformat() in have for day in query.evidence_days)


def retrieved_days(graph: Any, question: str, k: int) -> tuple[str, ...]:
    """The days the first ``k`` day cards graph retrieval returns for ``question``
    cover, in card order (``graph``: a :class:`GraphService` opened with
    ``GRAPH_CHUNK_TOP_K`` at least ``k``)."""
    found = graph.retrieve(question)
    days: list[str] = []
    for card in found.days[:k]:
        days.extend(span_days(_card_span(card)))
    return tuple(dict.fromkeys(days))


# --- results ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class QuestionResult:
    """One question: its answer, the judge's verdict and (graph) its recall."""

    query: GraphQuery
    answer: EvalAnswer
    verdict: Verdict
    retrieved_days: tuple[str, ...] | None = None
    recalled: bool | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        out = {
            "id": self.query.id,
            "type": self.query.type,
            "query": self.query.query,
            "gold": self.query.answer,
            "evidence_days": [d.isoformat() for d in self.query.evidence_days],
            **self.answer.to_dict(),
            "verdict": self.verdict.to_dict(),
        }
        if self.retrieved_days is not None:
            out["retrieved_days"] = list(self.retrieved_days)
            out["recalled"] = self.recalled
        return out


@dataclass(frozen=True, slots=True)
class TypeSummary:
    """The figures of one question type (or ``all``)."""

    type: str
    n: int
    right: int
    wrong: int
    no_info: int
    abstained: int
    recall: float | None
    recall_n: int
    first_token_ms: dict[str, float]
    answer_ms: dict[str, float]

    @property
    def accuracy(self) -> float:
        """Share judged right."""
        return self.right / self.n if self.n else 0.0

    @property
    def error_rate(self) -> float:
        """Share judged wrong."""
        return self.wrong / self.n if self.n else 0.0

    @property
    def abstention_rate(self) -> float:
        """Share of answers that abstain."""
        return self.abstained / self.n if self.n else 0.0

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "n": self.n,
            "right": self.right,
            "wrong": self.wrong,
            "no_info": self.no_info,
            "abstained": self.abstained,
            "accuracy": round(self.accuracy, 4),
            "error_rate": round(self.error_rate, 4),
            "abstention_rate": round(self.abstention_rate, 4),
            "evidence_recall": None if self.recall is None else round(self.recall, 4),
            "evidence_recall_n": self.recall_n,
            "first_token_ms": self.first_token_ms,
            "answer_ms": self.answer_ms,
        }


def _p(values: Sequence[float]) -> dict[str, float]:
    return {"p50": round(percentile(values, 50), 1), "p95": round(percentile(values, 95), 1)}


def summarize(results: Sequence[QuestionResult], kind: str = "all") -> TypeSummary:
    """The figures of ``results`` (all of them; filter by type first for a type's)."""
    outcomes = [r.verdict.outcome for r in results]
    recalls = [r.recalled for r in results if r.recalled is not None]
    return TypeSummary(
        type=kind,
        n=len(results),
        right=outcomes.count("right"),
        wrong=outcomes.count("wrong"),
        no_info=outcomes.count("no_info"),
        abstained=sum(r.verdict.abstained for r in results),
        recall=sum(recalls) / len(recalls) if recalls else None,
        recall_n=len(recalls),
        first_token_ms=_p([r.answer.first_token_ms for r in results if r.answer.first_token_ms]),
        answer_ms=_p([r.answer.total_ms for r in results]),
    )


@dataclass(slots=True)
class ArmResult:
    """One answering system (the graph, or the baseline) over the questions."""

    name: str
    model: str
    k: int | None = None
    results: list[QuestionResult] = field(default_factory=list)
    setup: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    cause: BaseException | None = field(default=None, repr=False)
    """The exception behind :attr:`error` (a Dagster step retries on an outage)."""

    @property
    def ok(self) -> bool:
        """Whether every question was answered."""
        return self.error is None

    def by_type(self) -> dict[str, TypeSummary]:
        """Figures per type (types without a question left out) and ``all``."""
        out: dict[str, TypeSummary] = {}
        for kind in QUESTION_TYPES:
            rows = [r for r in self.results if r.query.type == kind]
            if rows:
                out[kind] = summarize(rows, kind)
        out["all"] = summarize(self.results)
        return out

    def failing(self) -> dict[str, list[str]]:
        """Question ids by what they lowered: ``wrong``, ``no_info``, ``null_answered``
        (a null question not abstained), ``not_recalled``."""
        return {
            "wrong": [r.query.id for r in self.results if r.verdict.outcome == "wrong"],
            "no_info": [r.query.id for r in self.results if r.verdict.outcome == "no_info"],
            "null_answered": [
                r.query.id
                for r in self.results
                if not r.query.answerable and not r.verdict.abstained
            ],
            "not_recalled": [r.query.id for r in self.results if r.recalled is False],
        }

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "name": self.name,
            "model": self.model,
            "k": self.k,
            "error": self.error,
            "setup": self.setup,
            "summary": {kind: s.to_dict() for kind, s in self.by_type().items()},
            "failing": self.failing(),
            "questions": [r.to_dict() for r in self.results],
        }


@dataclass(slots=True)
class GraphEvalReport:
    """A graph evaluation: the scope, the build, the graph's answers, the baseline's."""

    suite: GraphSuite
    plan: EvalScope
    k: int
    build: BuildReport | None
    graph: ArmResult
    baseline: ArmResult | None = None
    limit: int | None = None
    created_at: str = field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))

    @property
    def thresholds(self) -> GraphThresholds | None:
        """The suite's gate."""
        return self.suite.thresholds

    def arms(self) -> list[ArmResult]:
        """The graph's result, then the baseline's."""
        return [self.graph] + ([self.baseline] if self.baseline is not None else [])

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        gate_rows = gate(self.graph, self.thresholds) if self.thresholds and self.graph.ok else []
        return {
            "suite": self.suite.name,
            "suite_path": str(self.suite.root),
            "created_at": self.created_at,
            "judge": "offline (varagity.eval.graph_judge)",
            "scope": {
                "months": None if self.plan.months is None else str(self.plan.months),
                "limit": self.limit,
                "n_questions": len(self.plan.suite.queries),
                "notes": list(self.plan.notes),
            },
            "k": self.k,
            "build": None if self.build is None else self.build.to_dict(),
            "thresholds": None if self.thresholds is None else self.thresholds.to_dict(),
            "gate": [
                {
                    "metric": g.metric,
                    "measured": round(g.measured, 4),
                    "threshold": g.threshold,
                    "passed": g.passed,
                    "failing": list(g.failing),
                }
                for g in gate_rows
            ],
            "results": [arm.to_dict() for arm in self.arms()],
        }


def gate(arm: ArmResult, thresholds: GraphThresholds) -> list[GateOutcome]:
    """The graph's figures against the gate: accuracy and evidence recall (at least),
    error rate (at most) over all questions; the share of null questions abstained (at
    least). A figure the gate leaves out is not compared; a null figure with no null
    question, or recall with no answerable one, passes."""
    figures = arm.by_type()
    every = figures["all"]
    nulls = figures.get("null")
    failing = arm.failing()
    out = []
    if thresholds.accuracy is not None:
        out.append(
            GateOutcome(
                "accuracy",
                every.accuracy,
                thresholds.accuracy,
                every.accuracy >= thresholds.accuracy,
                tuple(failing["wrong"] + failing["no_info"]),
            )
        )
    if thresholds.max_error_rate is not None:
        out.append(
            GateOutcome(
                "error_rate",
                every.error_rate,
                thresholds.max_error_rate,
                every.error_rate <= thresholds.max_error_rate,
                tuple(failing["wrong"]),
            )
        )
    if thresholds.null_abstention is not None:
        share = nulls.abstention_rate if nulls else 1.0
        out.append(
            GateOutcome(
                "null_abstention",
                share,
                thresholds.null_abstention,
                share >= thresholds.null_abstention,
                tuple(failing["null_answered"]),
            )
        )
    if thresholds.evidence_recall is not None:
        recall = every.recall if every.recall is not None else 1.0
        out.append(
            GateOutcome(
                "evidence_recall",
                recall,
                thresholds.evidence_recall,
                recall >= thresholds.evidence_recall,
                tuple(failing["not_recalled"]),
            )
        )
    return out


# --- running it -----------------------------------------------------------------------


def _say_question(say: Progress, n: int, total: int, result: QuestionResult, arm: str) -> None:
    a, v = result.answer, result.verdict
    recall = "" if result.recalled is None else f", days {'found' if result.recalled else 'MISSED'}"
    say(
        f"  [{arm} {n}/{total}] {result.query.id} ({result.query.type}): {v.outcome}"
        + (" (abstained)" if v.abstained else "")
        + recall
        + (", degraded" if a.degraded else "")
        + f" (first token {(a.first_token_ms or 0) / 1000:.1f}s, answer {a.total_ms / 1000:.1f}s)"
    )


def run_graph_arm(
    location: GraphLocation, queries: Sequence[GraphQuery], k: int, progress: Progress | None = None
) -> ArmResult:
    """Answer ``queries`` through graph turns on the location and judge them, with
    evidence-day recall at ``k`` retrieved days."""
    from varagity.graph.exchange import MAX_SCORE
    from varagity.graph.manifest import provenance
    from varagity.graph.service import GraphService
    from varagity.services import Services

    say = progress or (lambda _line: None)
    services = Services.open(location.settings)
    arm = ArmResult(GRAPH, services.settings.LLM_MODEL, k)
    arm.setup = {
        "location": str(location.folder),
        "query_mode": services.settings.GRAPH_QUERY_MODE,
        "graph_top_k": services.settings.GRAPH_TOP_K,
        "graph_chunk_top_k": services.settings.GRAPH_CHUNK_TOP_K,
        "answer_citations": services.settings.ANSWER_CITATIONS,
        "graph_reader": services.reader.model if services.reader else "the chat model",
        "exchange_read_score": services.settings.GRAPH_EXCHANGE_READ_SCORE,
        "exchange_min_score": services.settings.GRAPH_EXCHANGE_MIN_SCORE,
    }
    try:
        # recall reads the days only: no exchange is ranked or read for it
        off = MAX_SCORE + 1
        recall_settings = services.settings.model_copy(
            update={
                "GRAPH_CHUNK_TOP_K": k,
                "GRAPH_EXCHANGE_MIN_SCORE": off,
                "GRAPH_EXCHANGE_READ_SCORE": off,
            }
        )
        wide = GraphService(
            recall_settings,
            services.chat,
            services.embedder,
            describe=partial(provenance, location.workdir),
        )
        try:
            days = {q.id: retrieved_days(wide, q.query, k) for q in queries if q.answerable}
        finally:
            wide.close()
        for n, query in enumerate(queries, start=1):
            given = ask(services, query, GRAPH)
            verdict = judge(query.query, query.answer, given.text, answerable=query.answerable)
            found = days.get(query.id)
            result = QuestionResult(
                query,
                given,
                verdict,
                retrieved_days=found,
                recalled=recalled(query, found) if found is not None else None,
            )
            arm.results.append(result)
            _say_question(say, n, len(queries), result, GRAPH)
    except Exception as exc:
        log.debug("graph answers failed", exc_info=True)
        arm.error, arm.cause = f"{type(exc).__name__}: {exc}", exc
    finally:
        services.close()
    return arm


def baseline_suite(location: GraphLocation, plan: EvalScope) -> Suite:
    """The sessions as plain text files, one per session (``YYYYMMDD_HHMM.txt``, the
    session file as it is), in ``<location>/baseline/corpus``, as a document suite (no
    questions of its own: the graph suite's are asked). Files of sessions no longer in
    the scope are removed."""
    if plan.sessions is None:
        raise GraphEvalError(
            f"suite {plan.suite.name} is an archive: the baseline needs its sessions as text"
        )
    corpus = location.folder / "baseline" / "corpus"
    corpus.mkdir(parents=True, exist_ok=True)
    wanted: dict[str, str] = {}
    for session in plan.sessions:
        name = f"{session.start:%Y%m%d_%H%M}.txt"
        n = 2
        while name in wanted:
            name = f"{session.start:%Y%m%d_%H%M}-{n}.txt"
            n += 1
        wanted[name] = session.path.read_text(encoding="utf-8-sig")
    for path in corpus.iterdir():
        if path.name not in wanted:
            if path.is_dir():
                shutil.rmtree(path)
            else:
                path.unlink()
    for name, text in wanted.items():
        path = corpus / name
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
    return Suite(f"{plan.suite.name}-baseline", location.folder / "baseline", corpus, (), None)


def run_baseline_arm(
    base: Settings,
    location: GraphLocation,
    plan: EvalScope,
    progress: Progress | None = None,
) -> ArmResult:
    """The naive baseline: the sessions as text files through the document pipeline
    (an isolated store), each question answered by a document turn and judged."""
    from varagity.eval.stores import ensure_ingested, isolated_settings
    from varagity.services import Services

    say = progress or (lambda _line: None)
    arm = ArmResult(BASELINE, base.LLM_MODEL, base.TOP_K)
    try:
        docs = baseline_suite(location, plan)
        settings = isolated_settings(base, docs, {})
        services = Services.open(settings)
    except Exception as exc:
        arm.error, arm.cause = f"{type(exc).__name__}: {exc}", exc
        return arm
    try:
        method, k = services.settings.RETRIEVAL_METHOD, services.settings.TOP_K
        arm.model, arm.k = services.settings.LLM_MODEL, k
        ingest = ensure_ingested(services, docs, say)
        arm.setup = {
            "corpus": str(docs.corpus),
            "method": method,
            "k": k,
            "contextualize": services.settings.CONTEXTUALIZE,
            "ingest": ingest.to_dict(),
        }
        say(
            f"  baseline store {ingest.store}: {ingest.ingested} file(s) ingested, "
            f"{ingest.reused} reused, {ingest.chunks} chunks ({ingest.seconds:.1f}s)"
        )
        queries = plan.suite.queries
        for n, query in enumerate(queries, start=1):
            given = ask(services, query, "rag", method=method, k=k)
            verdict = judge(query.query, query.answer, given.text, answerable=query.answerable)
            result = QuestionResult(query, given, verdict)
            arm.results.append(result)
            _say_question(say, n, len(queries), result, BASELINE)
    except Exception as exc:
        log.debug("baseline answers failed", exc_info=True)
        arm.error, arm.cause = f"{type(exc).__name__}: {exc}", exc
    finally:
        services.close()
    return arm


def run_graph_eval(
    base: Settings,
    plan: EvalScope,
    build: Builder,
    *,
    baseline: bool = False,
    limit: int | None = None,
    progress: Progress | None = None,
) -> GraphEvalReport:
    """Build (or reuse) the scope's graph, answer and judge every question on it, and
    with ``baseline`` on the naive document pipeline too (the module doc).

    Raises:
        GraphEvalError: The build failed or left days out.
    """
    say = progress or (lambda _line: None)
    suite = plan.suite
    k = suite.thresholds.k if suite.thresholds else DEFAULT_K
    location = graph_location(base, plan)
    say(f"location {location.folder}")
    built = ensure_graph(location, build, say)
    say(built.describe())
    say(f"answering {len(suite.queries)} question(s) from the graph (recall at {k} days)")
    graph = run_graph_arm(location, suite.queries, k, say)
    report = GraphEvalReport(suite, plan, k, built, graph, limit=limit)
    if baseline:
        say(f"answering {len(suite.queries)} question(s) from the sessions as documents")
        report.baseline = run_baseline_arm(base, location, plan, say)
    return report


# --- output -----------------------------------------------------------------------------


def _columns(k: int) -> tuple[str, ...]:
    return (
        "system",
        "type",
        "n",
        "right",
        "wrong",
        "no info",
        "accuracy",
        "error",
        "abstained",
        f"recall@{k}",
        "TTFT p50/p95 s",
        "answer p50/p95 s",
    )


def _rows(report: GraphEvalReport) -> list[list[str]]:
    rows = []
    for arm in report.arms():
        if not arm.ok:
            rows.append([arm.name, "-", "-", (arm.error or "failed")[:80]])
            continue
        for kind, s in arm.by_type().items():
            rows.append(
                [
                    arm.name,
                    kind,
                    str(s.n),
                    str(s.right),
                    str(s.wrong),
                    str(s.no_info),
                    f"{s.accuracy:.3f}",
                    f"{s.error_rate:.3f}",
                    f"{s.abstention_rate:.3f}",
                    "-" if s.recall is None else f"{s.recall:.3f}",
                    f"{s.first_token_ms['p50'] / 1000:.1f}/{s.first_token_ms['p95'] / 1000:.1f}",
                    f"{s.answer_ms['p50'] / 1000:.1f}/{s.answer_ms['p95'] / 1000:.1f}",
                ]
            )
    return rows


def format_table(report: GraphEvalReport) -> str:
    """A fixed-width table: one row per system and type."""
    head = list(_columns(report.k))
    rows = [head, *_rows(report)]
    return fixed_width(rows)


def markdown_table(report: GraphEvalReport) -> str:
    """The same table in Markdown (Dagster metadata, docs)."""
    head = _columns(report.k)
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(row) + " |" for row in _rows(report)]
    return "\n".join(lines)


def format_gate(outcomes: Sequence[GateOutcome]) -> str:
    """One line per gated figure: measured, threshold, verdict, the questions that
    lowered it."""
    lines = []
    for g in outcomes:
        bound = "<=" if g.metric == "error_rate" else ">="
        listed = ", ".join(g.failing[:12]) + (" ..." if len(g.failing) > 12 else "")
        lines.append(
            f"  {g.metric}: {g.measured:.3f} (gate {bound} {g.threshold}) "
            f"{'passes' if g.passed else 'FAILS'}"
            + (f"; {listed}" if listed and not g.passed else "")
        )
    return "\n".join(lines)


def write_report(path: Path, report: GraphEvalReport) -> Path:
    """Write the JSON report (parents created); returns its path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report.to_dict(), indent=2) + "\n", encoding="utf-8")
    return path


def default_report_path(settings: Settings, suite: GraphSuite) -> Path:
    """``VARAGITY_HOME/eval/results/<suite>-graph-<UTC timestamp>.json``."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
    return settings.home / "eval" / "results" / f"{suite.name}-graph-{stamp}.json"
