"""Graph suites: the committed ``eval_suites/graph`` (its shape, and that it is ours), the
loader's reading of stamps, sessions and archives, and what it refuses, with where and why."""

from __future__ import annotations

import json
import shutil
from datetime import date
from pathlib import Path
from typing import Any

import pytest

from varagity.eval.graph_suite import (
    GraphSuite,
    is_graph_suite,
    load_graph_suite,
    load_graph_thresholds,
)
from varagity.eval.lihua import assign_chats, person_name, read_sessions, write_archive
from varagity.eval.suite import SuiteError

REPO = Path(__file__).resolve().parents[2]
GRAPH = REPO / "eval_suites" / "graph"
LIHUA_POINTER = REPO / "eval_suites" / "lihua_world"
LIHUA = REPO.parent / "shared" / "eval_data" / "lihua_world"

SESSION = "Time: 20260105_11:00\nLiHua: Lunch on the 8th?\nBo: Yes, at the noodle bar.\n"
SINGLE = {
    "id": "q1",
    "query": "Where is lunch?",
    "answer": "The noodle bar",
    "type": "single",
    "answerable": True,
    "evidence": ["20260105_11:00"],
}
NULL = {
    "id": "q2",
    "query": "What does lunch cost?",
    "answer": "Insufficient information",
    "type": "null",
    "answerable": False,
    "evidence": [],
}


def _suite(
    tmp_path: Path,
    rows: list[dict[str, Any]] | None = None,
    *,
    meta: dict[str, Any] | None = None,
    thresholds: object = None,
    raw: str | None = None,
) -> Path:
    root = tmp_path / "suite"
    (root / "sessions" / "week1").mkdir(parents=True, exist_ok=True)
    (root / "sessions" / "week1" / "20260105_1100.txt").write_text(SESSION)
    lines = raw if raw is not None else "".join(json.dumps(r) + "\n" for r in rows or [SINGLE])
    (root / "queries.jsonl").write_text(lines)
    if meta is not None:
        (root / "suite.json").write_text(json.dumps(meta))
    if thresholds is not None:
        (root / "thresholds.json").write_text(json.dumps(thresholds))
    return root


# --- the committed suite ----------------------------------------------------------------


@pytest.fixture(scope="module")
def graph() -> GraphSuite:
    return load_graph_suite(GRAPH)


def test_the_graph_suite_shape(graph: GraphSuite) -> None:
    assert graph.name == "graph" and graph.owner == "NoorHaddad" and graph.timezone == "UTC"
    assert graph.sessions == GRAPH / "sessions" and graph.archive is None
    assert graph.problems == ()
    assert len(graph.queries) >= 20
    single, multi, null = (graph.of_type(t) for t in ("single", "multi", "null"))
    assert len(single) >= 8 and len(multi) >= 4 and len(null) >= 5
    assert sum(q.answer in ("Yes", "No") for q in multi) >= 3  # order questions, both ways
    assert {q.answer for q in multi} >= {"Yes", "No"}
    assert all(not q.answerable and not q.evidence for q in null)
    assert all(len(q.evidence) == 1 for q in single)
    assert all(len(q.evidence_days) >= 2 for q in multi)
    assert graph.thresholds is not None and graph.thresholds.k == 10


def test_the_graph_suite_sessions(graph: GraphSuite) -> None:
    assert graph.sessions is not None
    sessions = read_sessions(graph.sessions)
    assert 8 <= len(sessions) <= 12
    weeks = {s.path.parent.name for s in sessions}
    assert len(weeks) >= 3
    owner = person_name(graph.owner)  # "NoorHaddad" writes as "Noor Haddad"
    people = set().union(*(s.speakers for s in sessions)) - {owner}
    assert 4 <= len(people) <= 6
    assert all(owner in s.speakers for s in sessions)
    chats = assign_chats(sessions, owner=graph.owner)
    recurring = [c for c in chats if c.group and len(c.sessions) >= 3]
    assert len(recurring) == 1
    # every session is evidence of some question
    cited = {stamp for q in graph.queries for stamp in q.evidence}
    assert cited == {s.stamp for s in sessions}


@pytest.mark.skipif(not LIHUA.is_dir(), reason="../shared/eval_data/lihua_world is not here")
def test_the_graph_suite_is_our_own_writing(graph: GraphSuite) -> None:
    theirs = [
        json.loads(line)
        for line in (LIHUA / "queries.jsonl").read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    their_text = " ".join(
        p.read_text(encoding="utf-8") for p in (LIHUA / "sessions").rglob("*.txt")
    )
    ours = {q.query for q in graph.queries}
    assert not ours & {q["query"] for q in theirs}
    assert graph.sessions is not None
    for session in read_sessions(graph.sessions):
        assert all(m.text not in their_text for m in session.messages if len(m.text) > 30)


@pytest.mark.skipif(not LIHUA.is_dir(), reason="../shared/eval_data/lihua_world is not here")
def test_lihua_world_loads_by_pointer_with_its_one_repair() -> None:
    suite = load_graph_suite(LIHUA_POINTER)
    assert suite.sessions == (LIHUA / "sessions").resolve()
    assert len(suite.queries) == 316
    assert [len(suite.of_type(t)) for t in ("single", "multi", "null")] == [254, 28, 34]
    fixed = next(q for q in suite.queries if q.id == "lh297")
    assert fixed.evidence == ("20260916_16:00",) and "\t" not in fixed.answer
    assert len(suite.problems) == 2 and all("lh297" in p for p in suite.problems)
    # the raw folder is a suite too, strict unless told
    with pytest.raises(SuiteError, match=r"lh297.*'What'.*lenient"):
        load_graph_suite(LIHUA)
    assert len(load_graph_suite(LIHUA, lenient=True).queries) == 316


def test_only_graph_suites_are_graph_suites(tmp_path: Path) -> None:
    assert is_graph_suite(GRAPH) and is_graph_suite(LIHUA_POINTER)
    assert not is_graph_suite(REPO / "eval_suites" / "sample")
    assert not is_graph_suite(tmp_path)


# --- loading ------------------------------------------------------------------------------


def test_stamps_are_read_in_every_spelling(tmp_path: Path) -> None:
    rows = [
        {**SINGLE, "id": "a", "evidence": ["20260105_1100"]},
        {**SINGLE, "id": "b", "evidence": ["Time: 20260105_11:00", "20260105_11:00"]},
        NULL,
        {k: v for k, v in NULL.items() if k not in ("answerable", "evidence")} | {"id": "c"},
    ]
    suite = load_graph_suite(_suite(tmp_path, rows))
    a, b, null, bare = suite.queries
    assert a.evidence == b.evidence == ("20260105_11:00",)
    assert a.evidence_days == (date(2026, 1, 5),)
    assert not null.answerable and not bare.answerable and bare.evidence == ()
    assert suite.name == "suite" and suite.owner == "LiHua" and suite.thresholds is None
    assert suite.limited(1).queries == (a,)


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ({k: v for k, v in SINGLE.items() if k != "answer"}, r":1: question lacks 'answer'"),
        ({k: v for k, v in SINGLE.items() if k not in ("id", "type")}, "lacks 'id', 'type'"),
        ({**SINGLE, "type": "multihop"}, r"\(q1\): unknown type 'multihop'; one of single"),
        ({**SINGLE, "answerable": False}, "type 'single' with 'answerable': false"),
        ({**NULL, "answerable": True}, "type 'null' with 'answerable': true"),
        ({**SINGLE, "answerable": "yes"}, "'answerable' must be true or false"),
        ({**NULL, "evidence": ["20260105_11:00"]}, "a null question names no evidence"),
        ({**SINGLE, "evidence": ["2026-01-05 11:00"]}, "evidence '2026-01-05 11:00' is not a"),
        ({**SINGLE, "evidence": ["20260105_12:00"]}, "20260105_12:00 names no session"),
        ({**SINGLE, "evidence": ["20260230_11:00"]}, "is not a session stamp"),
        ({**SINGLE, "evidence": []}, "needs at least one evidence stamp"),
        ({**SINGLE, "evidence": "20260105_11:00"}, "'evidence' must be a list"),
        ({**SINGLE, "query": "  "}, "'query' must be a non-empty string"),
        ({**SINGLE, "id": True}, "'id' must be a non-empty string"),
    ],
)
def test_malformed_questions_are_refused(tmp_path: Path, row: dict[str, Any], message: str) -> None:
    with pytest.raises(SuiteError, match=message) as caught:
        load_graph_suite(_suite(tmp_path, [row]))
    assert "queries.jsonl:1" in str(caught.value)


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("{not json\n", "not JSON"),
        ('["q1"]\n', "a question is a JSON object"),
        ("\n\n", "holds no questions"),
        (json.dumps(SINGLE) + "\n" + json.dumps(SINGLE) + "\n", "'q1' appears twice"),
    ],
)
def test_malformed_question_files_are_refused(tmp_path: Path, raw: str, message: str) -> None:
    with pytest.raises(SuiteError, match=message):
        load_graph_suite(_suite(tmp_path, raw=raw))


@pytest.mark.parametrize(
    ("meta", "message"),
    [
        ({"sessions": "elsewhere"}, r"sessions folder .*elsewhere .* does not exist"),
        ({"archive": "chat.db"}, r"archive .*chat\.db .* does not exist"),
        ({"sessions": "sessions", "archive": "chat.db"}, "not both"),
        ({"session": "sessions"}, "unknown keys session; known: archive"),
        ({"timezone": "Mars/Olympus"}, "'Mars/Olympus' is not a known IANA"),
        ({"owner": ""}, "'owner' must be a speaker's name"),
        ({"lenient_evidence": "yes"}, "'lenient_evidence' must be true or false"),
        ({"queries": "other.jsonl"}, r"other\.jsonl does not exist"),
        ({"sessions": 3}, "'sessions' must be a path"),
    ],
)
def test_malformed_suite_files_are_refused(
    tmp_path: Path, meta: dict[str, Any], message: str
) -> None:
    with pytest.raises(SuiteError, match=message):
        load_graph_suite(_suite(tmp_path, meta=meta))


def test_a_folder_without_sessions_is_not_a_graph_suite(tmp_path: Path) -> None:
    root = _suite(tmp_path)
    shutil.rmtree(root / "sessions")
    with pytest.raises(SuiteError, match="is not a graph suite: no sessions/ folder"):
        load_graph_suite(root)
    (root / "sessions").mkdir()
    (root / "sessions" / "bad.txt").write_text("LiHua: no stamp line\n")
    with pytest.raises(SuiteError, match=r"bad\.txt:1: does not begin with 'Time:"):
        load_graph_suite(root)


def test_lenient_evidence_drops_and_repairs_with_a_record(tmp_path: Path) -> None:
    shifted = {**SINGLE, "id": "s", "answer": "The noodle bar\t20260105_11:00", "evidence": ["x"]}
    unknown = {**SINGLE, "id": "u", "evidence": ["20260105_11:00", "20991231_10:00"]}
    root = _suite(tmp_path, [shifted, unknown])
    with pytest.raises(SuiteError, match=r"\(s\): evidence 'x' is not a session stamp"):
        load_graph_suite(root)
    suite = load_graph_suite(root, lenient=True)
    s, u = suite.queries
    assert s.answer == "The noodle bar" and s.evidence == ("20260105_11:00",)
    assert u.evidence == ("20260105_11:00",)
    assert len(suite.problems) == 3
    assert "taken from the end of the answer" in suite.problems[1]
    assert "20991231_10:00 names no session" in suite.problems[2]
    (root / "suite.json").write_text(json.dumps({"lenient_evidence": True}))
    assert load_graph_suite(root).problems == suite.problems
    with pytest.raises(SuiteError, match="evidence 'x'"):  # the argument beats suite.json
        load_graph_suite(root, lenient=False)


def test_an_archive_suite_and_its_fingerprint(tmp_path: Path) -> None:
    root = _suite(tmp_path, meta={"archive": "archive/chat.db", "owner": "LiHua"})
    write_archive(root / "sessions", root / "archive" / "chat.db")
    suite = load_graph_suite(root)
    assert suite.archive == root / "archive" / "chat.db" and suite.sessions is None
    before = suite.fingerprint()
    assert before == load_graph_suite(root).fingerprint()
    (root / "sessions" / "week1" / "20260106_0900.txt").write_text(
        "Time: 20260106_09:00\nBo: Running late!\n"
    )
    assert load_graph_suite(root).fingerprint() == before  # the sessions are not its input
    write_archive(root / "sessions", root / "archive" / "chat.db")
    assert load_graph_suite(root).fingerprint() != before


def test_a_sessions_suite_fingerprint_follows_its_files(tmp_path: Path) -> None:
    root = _suite(tmp_path)
    before = load_graph_suite(root).fingerprint()
    assert load_graph_suite(root).fingerprint() == before
    (root / "sessions" / "week1" / "20260105_1100.txt").write_text(SESSION + "Bo: See you!\n")
    assert load_graph_suite(root).fingerprint() != before
    (root / "suite.json").write_text(json.dumps({"timezone": "Asia/Shanghai"}))
    changed = load_graph_suite(root)
    assert changed.tz.key == "Asia/Shanghai" and changed.fingerprint() != before


# --- thresholds -------------------------------------------------------------------------


def test_thresholds_load_with_defaults(tmp_path: Path) -> None:
    root = _suite(tmp_path, thresholds={"accuracy": 0.6, "null_abstention": 1, "note": "n"})
    thresholds = load_graph_suite(root).thresholds
    assert thresholds is not None
    assert (thresholds.k, thresholds.accuracy, thresholds.null_abstention) == (10, 0.6, 1.0)
    assert thresholds.max_error_rate is None and thresholds.evidence_recall is None
    assert thresholds.to_dict() == {"k": 10, "accuracy": 0.6, "null_abstention": 1.0, "note": "n"}


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"accuarcy": 0.6}, "unknown thresholds accuarcy; known: accuracy"),
        ({"accuracy": 60}, "'accuracy' must be a share between 0 and 1, got 60"),
        ({"max_error_rate": True}, "'max_error_rate' must be a share"),
        ({"accuracy": 0.6, "k": 0}, "'k' must be a positive whole number"),
        ({"accuracy": 0.6, "k": 2.5}, "'k' must be a positive whole number"),
        ({"k": 10}, "no threshold set"),
        ([0.6], "thresholds are a JSON object"),
    ],
)
def test_malformed_thresholds_are_refused(tmp_path: Path, raw: object, message: str) -> None:
    path = tmp_path / "thresholds.json"
    path.write_text(json.dumps(raw))
    with pytest.raises(SuiteError, match=message):
        load_graph_thresholds(path)
