"""The graph evaluation's parts that need no model: month ranges and scopes, the
location's name and archive, build reuse against the manifest, evidence-day recall,
the figures per type, the gate and the report."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, date
from pathlib import Path
from typing import Any

import pytest

from varagity.config import Settings, load_settings
from varagity.eval import graph_eval
from varagity.eval.graph_eval import (
    ArmResult,
    BuildReport,
    EvalAnswer,
    GraphEvalError,
    GraphEvalReport,
    GraphLocation,
    MonthSpan,
    QuestionResult,
)
from varagity.eval.graph_judge import judge
from varagity.eval.graph_suite import GraphQuery, GraphSuite, GraphThresholds, load_graph_suite
from varagity.eval.stores import derive_settings
from varagity.graph.base import ApplyReport
from varagity.graph.contacts import load_contacts
from varagity.graph.manifest import diff, read_manifest, update_after_apply
from varagity.graph.sources.registry import read_archive
from varagity.graph.types import DayCard, GraphRetrieval, ThreadDay

SESSIONS = {
    "week1/20260105_1100.txt": (
        "Time: 20260105_11:00\nLiHua: Lunch on the 8th?\nBo: Yes, at the noodle bar.\n"
    ),
    "week1/20260107_0900.txt": "Time: 20260107_09:00\nAda: The gym opens at 6.\nLiHua: Thanks!\n",
    "week6/20260210_1800.txt": "Time: 20260210_18:00\nBo: Movie on Friday?\nLiHua: Sure, Dune.\n",
    "week6/20260212_2000.txt": "Time: 20260212_20:00\nAda: Gym moved to 7.\nLiHua: Noted.\n",
}


def _q(qid: str, query: str, answer: str, kind: str, *evidence: str) -> dict[str, Any]:
    return {"id": qid, "query": query, "answer": answer, "type": kind, "evidence": list(evidence)}


NONE = "Insufficient information"
QUESTIONS = [
    _q("a1", "Where is lunch?", "The noodle bar", "single", "20260105_11:00"),
    _q("a2", "When does the gym open?", "6", "single", "20260107_09:00"),
    _q("a3", "Which movie on Friday?", "Dune", "single", "20260210_18:00"),
    _q("m1", "Did the gym open earlier?", "Yes", "multi", "20260107_09:00", "20260212_20:00"),
    _q("n1", "What does lunch cost?", NONE, "null"),
    _q("n2", "Where does Ada live?", NONE, "null"),
]


def _suite(root: Path, thresholds: dict[str, Any] | None = None) -> GraphSuite:
    for rel, text in SESSIONS.items():
        path = root / "sessions" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    (root / "queries.jsonl").write_text("\n".join(json.dumps(q) for q in QUESTIONS) + "\n")
    (root / "suite.json").write_text(json.dumps({"name": "tiny", "timezone": "UTC"}))
    if thresholds is not None:
        (root / "thresholds.json").write_text(json.dumps(thresholds))
    return load_graph_suite(root)


@pytest.fixture
def suite(tmp_path: Path) -> GraphSuite:
    return _suite(tmp_path / "suite", {"k": 4, "accuracy": 0.5, "max_error_rate": 0.3})


def _settings(tmp_path: Path, **extra: object) -> Settings:
    return load_settings(VARAGITY_HOME=tmp_path / "home", **extra)


# --- months and scope -----------------------------------------------------------------


def test_month_span() -> None:
    span = MonthSpan.parse("2026-01..2026-02")
    assert (span.first, span.end) == (date(2026, 1, 1), date(2026, 2, 28))
    assert date(2026, 2, 28) in span and date(2026, 3, 1) not in span
    assert date(2025, 12, 31) not in span
    assert str(span) == "2026-01..2026-02"
    one = MonthSpan.parse("2024-02")
    assert one.end == date(2024, 2, 29) and str(one) == "2024-02"
    assert MonthSpan.parse("2026-12").end == date(2026, 12, 31)
    for bad in ("2026-13", "2026-1", "2026-03..2026-01", "2026-01..2026-02..2026-03", "jan"):
        with pytest.raises(ValueError):
            MonthSpan.parse(bad)


def test_scope_by_months_keeps_evidence_in_range_and_nulls_in_proportion(
    suite: GraphSuite,
) -> None:
    plan = graph_eval.scope(suite, months=MonthSpan.parse("2026-01"))
    assert plan.sessions is not None
    assert [s.stamp for s in plan.sessions] == ["20260105_11:00", "20260107_09:00"]
    # a1 and a2 have their evidence in January; m1 reaches into February, a3 is February
    # 2 of 4 answerable kept -> 1 of the 2 null questions, the first
    assert [q.id for q in plan.suite.queries] == ["a1", "a2", "n1"]
    assert plan.notes and "2 of 4 answerable" in plan.notes[0]
    assert plan.fingerprint == f"{suite.fingerprint()}/2026-01"
    limited = graph_eval.scope(suite, months=MonthSpan.parse("2026-01"), limit=1)
    assert [q.id for q in limited.suite.queries] == ["a1"]
    whole = graph_eval.scope(suite, limit=2)
    assert whole.sessions is not None and len(whole.sessions) == 4
    assert [q.id for q in whole.suite.queries] == ["a1", "a2"]
    assert whole.fingerprint == suite.fingerprint()
    with pytest.raises(GraphEvalError, match="no session"):
        graph_eval.scope(suite, months=MonthSpan.parse("2026-05"))
    with pytest.raises(GraphEvalError, match="positive"):
        graph_eval.scope(suite, limit=0)


# --- location, archive, reuse -----------------------------------------------------------


def test_location_name_follows_the_input_and_the_extraction_settings(
    tmp_path: Path, suite: GraphSuite
) -> None:
    settings = _settings(tmp_path)
    plan = graph_eval.scope(suite)
    name = graph_eval.location_name(settings, plan)
    assert name.startswith("tiny_") and len(name) == len("tiny_") + 12
    assert graph_eval.location_name(settings, graph_eval.scope(suite, limit=1)) == name
    january = graph_eval.scope(suite, months=MonthSpan.parse("2026-01"))
    assert graph_eval.location_name(settings, january) != name
    other_model = _settings(tmp_path, GRAPH_CHUNK_TOKENS=600)
    assert graph_eval.location_name(other_model, plan) != name
    # answer-time settings do not rebuild the graph
    assert graph_eval.location_name(_settings(tmp_path, TOP_K=9), plan) == name


def _location(tmp_path: Path, suite: GraphSuite) -> GraphLocation:
    plan = graph_eval.scope(suite)
    folder = tmp_path / "loc"
    graph_eval.write_suite_archive(plan, folder / "messages" / "chat.db")
    base = _settings(tmp_path)
    overrides = graph_eval.location_overrides(base, plan, folder, "postgresql:///eval_graph_tiny")
    return GraphLocation("tiny_test", folder, derive_settings(base, overrides), "chat.db")


def test_location_settings_point_at_the_location(tmp_path: Path, suite: GraphSuite) -> None:
    base = _settings(tmp_path, GRAPH_TIMEZONE="Europe/Lisbon", GRAPH_ENABLED=False)
    folder = tmp_path / "loc"
    plan = graph_eval.scope(suite)
    url = "postgresql://u@h/eval_graph_tiny?sslmode=disable"
    settings = derive_settings(base, graph_eval.location_overrides(base, plan, folder, url))
    assert settings.graph_docs_path == (folder / "messages").resolve()
    assert settings.graph_storage_path == (folder / "graph").resolve()
    assert settings.GRAPH_TIMEZONE == "UTC"  # the suite's zone, not the app's
    assert settings.GRAPH_ENABLED
    assert settings.GRAPH_OWNER_NAME == "Li Hua"  # the owner as the converter spells people
    assert url == settings.DATABASE_URL
    assert settings.ELASTICSEARCH_INDEX.endswith("_eval_graph_tiny")
    assert folder / "bm25" == settings.BM25_INDEX_PATH
    assert settings.docs_path == (folder / "no-documents").resolve()


def test_the_archive_is_written_from_the_scope(tmp_path: Path, suite: GraphSuite) -> None:
    location = _location(tmp_path, suite)
    target = location.settings.graph_docs_path / "chat.db"
    marker = json.loads((target.parent / "archive.json").read_text())
    assert marker["fingerprint"] == suite.fingerprint()
    assert {d.span for d in read_archive(target.parent, "chat.db", tz=UTC)} == {
        "2026-01-05",
        "2026-01-07",
        "2026-02-10",
        "2026-02-12",
    }
    february = graph_eval.scope(suite, months=MonthSpan.parse("2026-02"))
    graph_eval.write_suite_archive(february, target)
    days = read_archive(target.parent, "chat.db", tz=UTC)
    assert {d.span for d in days} == {"2026-02-10", "2026-02-12"}
    assert json.loads((target.parent / "archive.json").read_text())["fingerprint"].endswith(
        "/2026-02"
    )


def _days(settings: Settings, archive: str) -> list[ThreadDay]:
    """The archive's days as graph_archive reads them (the owner named)."""
    root = settings.graph_docs_path
    contacts = load_contacts(root, archive, owner=settings.GRAPH_OWNER_NAME)
    return read_archive(root, archive, tz=UTC, contacts=contacts)


def test_build_is_skipped_when_the_manifest_holds_every_day(
    tmp_path: Path, suite: GraphSuite
) -> None:
    location = _location(tmp_path, suite)
    calls: list[tuple[str, Path]] = []

    def build(settings: Settings, archive: str, scratch: Path) -> dict[str, Any]:
        """What graph_workdir records, without a model: every day into the manifest."""
        calls.append((archive, scratch))
        todo = diff(_days(settings, archive), read_manifest(location.workdir), source=archive)
        update_after_apply(
            location.workdir, todo, ApplyReport(inserted=tuple(d.doc_key for d in todo.new))
        )
        return {"seconds": 12.5, "extracted_this_run": len(todo.new)}

    first = graph_eval.ensure_graph(location, build)
    assert calls == [("chat.db", location.folder)]
    assert (first.thread_days, first.built, first.reused) == (4, 4, False)
    assert first.engine_seconds == 12.5
    assert first.seconds_per_day == pytest.approx(first.seconds / 4)
    again = graph_eval.ensure_graph(location, build)
    assert len(calls) == 1  # nothing to do: no build
    assert (again.reused, again.built, again.thread_days) == (True, 0, 4)
    assert again.seconds_per_day is None
    assert "reused" in again.describe()
    # the owner's name is part of what the build reads: another name, every day the
    # owner wrote in is to be built again
    renamed = replace(
        location, settings=location.settings.model_copy(update={"GRAPH_OWNER_NAME": "Hua Li"})
    )
    assert graph_eval.pending_days(renamed) == (4, 4, 0)

    # a build that leaves a day out is an error naming what is left
    (location.workdir / "varagity_manifest.json").unlink()

    def half(settings: Settings, archive: str, scratch: Path) -> dict[str, Any]:
        todo = diff(_days(settings, archive), {}, source=archive)
        update_after_apply(location.workdir, todo, ApplyReport(inserted=(todo.new[0].doc_key,)))
        return {}

    with pytest.raises(GraphEvalError, match="left 3 thread-day"):
        graph_eval.ensure_graph(location, half)


def test_baseline_files_are_the_sessions(tmp_path: Path, suite: GraphSuite) -> None:
    location = _location(tmp_path, suite)
    plan = graph_eval.scope(suite, months=MonthSpan.parse("2026-02"))
    docs = graph_eval.baseline_suite(location, plan)
    files = sorted(p.name for p in docs.corpus.iterdir())
    assert files == ["20260210_1800.txt", "20260212_2000.txt"]
    assert (docs.corpus / "20260210_1800.txt").read_text() == SESSIONS["week6/20260210_1800.txt"]
    assert docs.name == "tiny-baseline" and docs.queries == ()
    # another scope: files of sessions left out go
    graph_eval.baseline_suite(location, graph_eval.scope(suite, months=MonthSpan.parse("2026-01")))
    assert sorted(p.name for p in docs.corpus.iterdir()) == [
        "20260105_1100.txt",
        "20260107_0900.txt",
    ]


# --- recall ----------------------------------------------------------------------------


def test_span_days_and_file_days() -> None:
    assert graph_eval.span_days("2026-03-02") == ("2026-03-02",)
    assert graph_eval.span_days("2026-02-27..2026-03-01") == (
        "2026-02-27",
        "2026-02-28",
        "2026-03-01",
    )
    assert graph_eval.span_days("someday") == ()
    assert graph_eval.file_day("week1/20260302_1930.txt") == "2026-03-02"
    assert graph_eval.file_day("notes.txt") is None


def _query(qid: str, kind: str, evidence: tuple[str, ...] = ()) -> GraphQuery:
    gold = "Yes" if kind != "null" else NONE
    return GraphQuery(qid, f"question {qid}?", gold, kind, evidence)  # type: ignore[arg-type]


def test_recalled_needs_every_evidence_day() -> None:
    multi = _query("m", "multi", ("20260304_08:15", "20260317_09:00"))
    assert graph_eval.recalled(multi, ["2026-03-17", "2026-03-04", "2026-03-09"]) is True
    assert graph_eval.recalled(multi, ["2026-03-04"]) is False
    same_day = _query("s", "single", ("20260304_08:15", "20260304_19:00"))
    assert graph_eval.recalled(same_day, ["2026-03-04"]) is True
    assert graph_eval.recalled(_query("n", "null"), ["2026-03-04"]) is None


class _Graph:
    """A graph that returns fixed day cards, and records what it was asked."""

    def __init__(self, spans: list[str]) -> None:
        self.spans = spans
        self.asked: list[str] = []

    def retrieve(self, question: str, *, top_k: int | None = None) -> GraphRetrieval:
        self.asked.append(question)
        cards = tuple(
            DayCard(f"iMessage;-;Bo::{span}", "Bo", span if n else "", "text")
            for n, span in enumerate(self.spans)
        )
        return GraphRetrieval(days=cards)


def test_retrieved_days_take_the_first_k_cards() -> None:
    graph = _Graph(["2026-03-04", "2026-03-06..2026-03-07", "2026-03-17", "2026-03-19"])
    # the first card has no span of its own: its doc_key's is read
    assert graph_eval.retrieved_days(graph, "q?", 2) == ("2026-03-04", "2026-03-06", "2026-03-07")
    assert graph.asked == ["q?"]
    assert len(graph_eval.retrieved_days(graph, "q?", 10)) == 5


# --- figures, gate, report ----------------------------------------------------------------


def _result(
    query: GraphQuery, text: str, recalled: bool | None = None, first: float = 1000.0
) -> QuestionResult:
    given = EvalAnswer(query.id, text, (), (), (), first, first * 2, "finished", "graph")
    verdict = judge(query.query, query.answer, text, answerable=query.answerable)
    days = None if recalled is None else ("2026-03-04",)
    return QuestionResult(query, given, verdict, days, recalled)


def _arm() -> ArmResult:
    arm = ArmResult("graph", "qwen", 10)
    day, other = "20260304_08:15", "20260306_10:00"
    abstain = "The documents do not say."
    arm.results = [
        _result(_query("s1", "single", (day,)), "Yes [1].", True, 1000),
        _result(_query("s2", "single", (day,)), "No [1].", True, 2000),
        _result(_query("s3", "single", (day,)), abstain, False, 3000),
        _result(_query("m1", "multi", (day, other)), "Yes.", False, 4000),
        _result(_query("n1", "null"), abstain, None, 5000),
        _result(_query("n2", "null"), "Kofi lives there [1].", None, 6000),
    ]
    return arm


def test_figures_per_type() -> None:
    figures = _arm().by_type()
    assert list(figures) == ["single", "multi", "null", "all"]
    single, multi, null, every = (figures[k] for k in ("single", "multi", "null", "all"))
    assert (single.n, single.right, single.wrong, single.no_info) == (3, 1, 1, 1)
    assert single.accuracy == pytest.approx(1 / 3) and single.error_rate == pytest.approx(1 / 3)
    assert single.abstained == 1 and single.recall == pytest.approx(2 / 3)
    assert (multi.right, multi.recall, multi.recall_n) == (1, 0.0, 1)
    assert (null.right, null.wrong, null.abstained, null.recall) == (1, 1, 1, None)
    assert (every.n, every.right, every.wrong, every.no_info) == (6, 3, 2, 1)
    assert every.recall == pytest.approx(2 / 4)
    assert every.first_token_ms == {"p50": 3500.0, "p95": 5750.0}
    assert every.answer_ms["p50"] == 7000.0


def test_gate() -> None:
    arm = _arm()
    thresholds = GraphThresholds(
        k=10, accuracy=0.5, max_error_rate=0.3, null_abstention=0.8, evidence_recall=0.5
    )
    outcomes = {g.metric: g for g in graph_eval.gate(arm, thresholds)}
    assert list(outcomes) == ["accuracy", "error_rate", "null_abstention", "evidence_recall"]
    assert outcomes["accuracy"].passed and outcomes["accuracy"].measured == 0.5
    assert not outcomes["error_rate"].passed
    assert set(outcomes["error_rate"].failing) == {"s2", "n2"}
    assert not outcomes["null_abstention"].passed
    assert outcomes["null_abstention"].failing == ("n2",)
    assert outcomes["evidence_recall"].passed
    assert set(outcomes["evidence_recall"].failing) == {"s3", "m1"}
    # figures the gate leaves out are not compared
    assert [g.metric for g in graph_eval.gate(arm, GraphThresholds(accuracy=0.9))] == ["accuracy"]
    text = graph_eval.format_gate(graph_eval.gate(arm, thresholds))
    assert "error_rate: 0.333 (gate <= 0.3) FAILS" in text
    assert "accuracy: 0.500 (gate >= 0.5) passes" in text


def test_report_table_and_json(tmp_path: Path, suite: GraphSuite) -> None:
    plan = graph_eval.scope(suite)
    build = BuildReport("tiny_x", 4, built=4, seconds=60.0, engine_seconds=50.0)
    baseline = ArmResult("baseline", "qwen", 5, error="RuntimeError: model down")
    report = GraphEvalReport(suite, plan, 10, build, _arm(), baseline)
    table = graph_eval.format_table(report)
    lines = table.splitlines()
    assert lines[0].split()[:3] == ["system", "type", "n"] and "recall@10" in lines[0]
    single = ["graph", "single", "3", "1", "1", "1", "0.333", "0.333", "0.333", "0.667"]
    assert lines[2].split()[:10] == single
    assert lines[4].split()[9] == "-"  # no recall for null questions
    assert lines[-1].startswith("baseline") and "model down" in lines[-1]
    assert graph_eval.markdown_table(report).count("\n") == len(lines) - 1
    assert "15.0 s per thread-day" in build.describe()
    out = graph_eval.write_report(tmp_path / "r" / "graph.json", report)
    saved = json.loads(out.read_text())
    assert saved["suite"] == "tiny" and saved["k"] == 10
    assert saved["build"]["seconds_per_thread_day"] == 15.0
    assert [g["metric"] for g in saved["gate"]] == ["accuracy", "error_rate"]
    assert saved["gate"][1]["passed"] is False
    graph, base = saved["results"]
    assert graph["summary"]["all"]["accuracy"] == 0.5
    assert graph["summary"]["null"]["evidence_recall"] is None
    assert graph["failing"]["null_answered"] == ["n2"]
    first = graph["questions"][0]
    assert first["id"] == "s1" and first["verdict"]["outcome"] == "right"
    assert first["recalled"] is True and first["evidence_days"] == ["2026-03-04"]
    assert base["error"] == "RuntimeError: model down"
