"""The jobs package without a Dagster: its adapters, gate and follow loop over a fake
transport (the typed calls of :class:`~varagity.jobs.transport.DagsterClient`)."""

from __future__ import annotations

import asyncio
import signal
from datetime import date
from pathlib import Path
from typing import Any

import pytest

from varagity.jobs import CorpusBusy, RunEnded, RunNotFound
from varagity.jobs.backup import BackupJobs
from varagity.jobs.evaluation import EvaluationJobs
from varagity.jobs.follow import follow, follow_blocking
from varagity.jobs.gate import BACKUPS, holder, refuse_beside, writers
from varagity.jobs.graph import BuildTargetsRefused, GraphJobs, build_targets
from varagity.jobs.purge import PurgeJobs
from varagity.jobs.transport import DagsterClient, RunNode, TerminateFailed
from varagity.pipeline import (
    ANSWER_EVAL_JOB,
    BACKUP_JOB,
    BUNDLE_TAG,
    CORPUS_TAG,
    GRAPH_BUILD_JOB,
    GRAPH_FIRST_DAY,
    GRAPH_REBUILD_ASSET,
    GRAPH_REBUILD_JOB,
    GRAPH_REMOVE_JOB,
    GRAPH_RESET_JOB,
    INGEST_JOB,
    PARTITION_TAG,
    PURGE_JOB,
    RANGE_END_TAG,
    RANGE_START_TAG,
    REBUILD_ALL_TAG,
    RESTORE_JOB,
    SOURCE_TAG,
    SUITE_TAG,
    AnswerFigures,
    answer_figures_line,
    backup_progress_line,
)


def _node(
    run_id: str, job: str, status: str = "STARTED", assets: tuple[str, ...] = (), **tags: str
) -> RunNode:
    return RunNode(
        run_id=run_id,
        job=job,
        status=status,
        tags=dict(tags),
        assets=assets,
        created_at=float(int(run_id[-1]) if run_id[-1].isdigit() else 0),
        started_at=None,
        ended_at=None,
    )


class FakeDagster(DagsterClient):
    """Runs and logs held in memory; what is asked is recorded."""

    def __init__(self, nodes: list[RunNode], logs: dict[str, list[str]] | None = None) -> None:
        super().__init__("http://dagster.test/")
        self.nodes = {n.run_id: n for n in nodes}
        self.logs = logs or {}
        self.log_reads: list[tuple[str, str | None]] = []
        self.launched: list[tuple[str, dict[str, str]]] = []
        self.configs: list[dict[str, Any] | None] = []
        self.terminate_fails = False
        self.race_to_cancel = False
        self.terminated: list[str] = []

    def query(self, document: str, variables: dict[str, Any] | None = None) -> dict[str, Any]:
        raise AssertionError("the fake answers typed calls only")

    def runs(self, run_filter: dict[str, Any], limit: int | None = None) -> list[RunNode]:
        found = list(self.nodes.values())
        if "statuses" in run_filter:
            found = [n for n in found if n.status in run_filter["statuses"]]
        if "pipelineName" in run_filter:
            found = [n for n in found if n.job == run_filter["pipelineName"]]
        for tag in run_filter.get("tags", []):
            found = [n for n in found if n.tags.get(tag["key"]) == tag["value"]]
        return found[:limit]

    def run(self, run_id: str) -> RunNode:
        if run_id not in self.nodes:
            raise RunNotFound(f"Dagster has no run {run_id!r}")
        return self.nodes[run_id]

    def run_error(self, run_id: str) -> str | None:
        return f"{run_id} broke"

    def log_messages(self, run_id: str, after: str | None) -> tuple[list[str], str | None]:
        self.log_reads.append((run_id, after))
        lines = self.logs.get(run_id, [])
        start = int(after or 0)
        return lines[start:], str(len(lines))

    def launch_run(
        self, job: str, tags: dict[str, str], run_config: dict[str, Any] | None = None
    ) -> str:
        run_id = f"new{len(self.launched)}"
        self.launched.append((job, tags))
        self.configs.append(run_config)
        self.nodes[run_id] = _node(run_id, job, "QUEUED", **tags)
        return run_id

    def add_dynamic_partitions(self, definition: str, asset: str, keys: list[str]) -> list[str]:
        return list(keys)

    def terminate(self, run_id: str) -> None:
        node = self.run(run_id)
        self.terminated.append(run_id)
        if node.status == "CANCELING":  # what Dagster answers for a run already stopping
            raise TerminateFailed(
                run_id, f"Run {run_id} could not be terminated due to having status CANCELING."
            )
        if self.race_to_cancel:  # another request terminated it first
            self.nodes[run_id] = _node(run_id, node.job, "CANCELING", **node.tags)
            raise TerminateFailed(run_id, "it is being terminated already")
        if self.terminate_fails:
            self.nodes[run_id] = _node(run_id, node.job, "CANCELED", **node.tags)
            raise TerminateFailed(run_id, "it ended meanwhile")
        self.nodes[run_id] = _node(run_id, node.job, "CANCELING", **node.tags)


def test_a_backup_run_reads_its_log_on_and_names_its_url() -> None:
    dagster = FakeDagster(
        [_node("r1", BACKUP_JOB, **{PARTITION_TAG: "rag", CORPUS_TAG: "rag", SOURCE_TAG: "cli"})],
        {"r1": [backup_progress_line("documents", 2, 5), "backup bundle: b.zip"]},
    )
    jobs = BackupJobs(dagster)
    run = jobs.read("r1", "rag")
    assert (run.kind, run.corpus, run.source, run.state, run.done) == (
        "export",
        "rag",
        "cli",
        "running",
        False,
    )
    assert (run.progress.phase, run.progress.done, run.progress.total) == ("documents", 2, 5)
    assert run.progress.bundle == "b.zip"
    assert run.url == "http://dagster.test/runs/r1"
    dagster.logs["r1"].append(backup_progress_line("documents", 5, 5))
    again = jobs.read("r1")
    assert (again.progress.done, again.progress.bundle) == (5, "b.zip")  # read on, kept
    assert dagster.log_reads == [("r1", None), ("r1", "2")]
    with pytest.raises(RunNotFound, match="backup run of the rag corpus"):
        jobs.read("r1", "graph")


def test_a_run_of_another_kind_is_not_found() -> None:
    dagster = FakeDagster([_node("r1", INGEST_JOB)])
    with pytest.raises(RunNotFound, match="is a ingest_documents run, not a message-graph build"):
        GraphJobs(dagster).read("r1")
    with pytest.raises(RunNotFound, match="not a backup"):
        BackupJobs(dagster).read("r1")


def test_an_ended_failed_run_says_why_and_is_read_once_per_process() -> None:
    dagster = FakeDagster([_node("r9", GRAPH_BUILD_JOB, "FAILURE", **{PARTITION_TAG: "a.db"})])
    run = GraphJobs(dagster).read("r9")
    assert (run.done, run.succeeded, run.state, run.error) == (True, False, "failed", "r9 broke")
    assert run.progress.path == "a.db"
    GraphJobs(dagster).read("r9")  # another adapter: the ended run's log is not read again
    assert dagster.log_reads == [("r9", None)]


def test_kill_stops_a_run_and_refuses_an_ended_one() -> None:
    dagster = FakeDagster([_node("r1", GRAPH_BUILD_JOB), _node("r2", GRAPH_BUILD_JOB)])
    assert GraphJobs(dagster).kill("r1").status == "CANCELING"
    dagster.terminate_fails = True
    with pytest.raises(RunEnded, match="already ended"):
        GraphJobs(dagster).kill("r2")
    with pytest.raises(RunEnded):
        GraphJobs(dagster).kill("r2")


def test_a_run_already_being_terminated_is_returned_not_an_error() -> None:
    """A second kill (a double click, or two clients) finds the run CANCELING: it gets
    the run as it stands, where Dagster would refuse ("due to having status
    CANCELING") and the API answer 502; a kill that loses the race to another gets it
    too."""
    dagster = FakeDagster([_node("r1", GRAPH_BUILD_JOB), _node("r2", GRAPH_BUILD_JOB)])
    jobs = GraphJobs(dagster)
    assert jobs.kill("r1").status == "CANCELING"

    again = jobs.kill("r1")

    assert (again.status, again.state, again.done) == ("CANCELING", "running", False)
    assert dagster.terminated == ["r1"]  # nothing more was asked of Dagster
    dagster.race_to_cancel = True
    raced = jobs.kill("r2")
    assert raced.status == "CANCELING" and dagster.terminated == ["r1", "r2"]


def test_the_gate_names_the_newest_holder_and_filters_by_kind() -> None:
    dagster = FakeDagster(
        [
            _node("r1", INGEST_JOB),
            _node("r2", RESTORE_JOB, **{CORPUS_TAG: "rag", BUNDLE_TAG: "b.zip"}),
            _node("r3", GRAPH_BUILD_JOB),
            _node("r4", PURGE_JOB, "SUCCESS"),
        ]
    )
    assert [r.id for r in writers(dagster, "rag")] == ["r2", "r1"]
    assert holder(writers(dagster, "graph")[0]) == "a graph build (run r3)"
    with pytest.raises(CorpusBusy) as busy:
        refuse_beside(dagster, "rag")
    assert str(busy.value) == (
        "the rag corpus is busy: a restore (run r2) is in flight; try again once it has finished"
    )
    assert (busy.value.code, busy.value.corpus, busy.value.holder) == (
        "corpus_busy",
        "rag",
        "a restore (run r2)",
    )
    refuse_beside(dagster, "graph", kinds=BACKUPS)  # a build is no backup: not refused
    with pytest.raises(CorpusBusy):
        PurgeJobs(dagster).launch(["gone.md"], source="doctor")
    assert dagster.launched == []


def test_a_launch_beside_no_writer_goes_ahead() -> None:
    dagster = FakeDagster([])
    run_id = PurgeJobs(dagster).launch(["a.md", "b.md"], source="doctor")
    run = PurgeJobs(dagster).read(run_id)
    assert (run.kind, run.corpus, run.progress.files, run.state) == ("purge", "rag", 2, "queued")


def test_follow_yields_changes_then_the_done_state() -> None:
    states = iter([1, 1, 2, 2, 3, 4])
    seen = list(follow_blocking(lambda: next(states), done=lambda s: s >= 3, poll_s=0))
    assert seen == [1, 2, 3]


def test_ctrl_c_between_polls_ends_a_blocking_follow_as_an_interrupt() -> None:
    def interrupt(*_: object) -> None:
        raise KeyboardInterrupt

    seen: list[int] = []
    previous = signal.signal(signal.SIGALRM, interrupt)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.2)  # while the loop sleeps between polls
        with pytest.raises(KeyboardInterrupt):
            seen.extend(follow_blocking(lambda: 1, done=lambda s: False, poll_s=30))
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert seen == [1]


def test_follow_stops_when_told() -> None:
    async def read() -> int:
        return 1

    async def stop() -> bool:
        return True

    async def run() -> list[int]:
        return [s async for s in follow(read, done=lambda s: False, poll_s=0, stop=stop)]

    assert asyncio.run(run()) == [1]


def test_an_answer_evaluation_counts_its_questions_then_reads_its_figures() -> None:
    dagster = FakeDagster([])
    jobs = EvaluationJobs(dagster)
    run_id = jobs.launch("/suites/tiny", source="cli")
    assert dagster.launched == [(ANSWER_EVAL_JOB, {SOURCE_TAG: "cli", SUITE_TAG: "/suites/tiny"})]
    assert dagster.configs == [
        {"ops": {"answer_eval_results": {"config": {"suite_path": "/suites/tiny"}}}}
    ]
    run = jobs.read(run_id)
    assert (run.kind, run.corpus, run.state, run.source) == ("evaluation", "rag", "queued", "cli")
    assert (run.progress.suite, run.progress.done, run.progress.total) == ("/suites/tiny", 0, 0)
    assert run.progress.question is None and run.progress.figures is None

    log = dagster.logs.setdefault(run_id, [])
    log += ["Started execution", "  [1/2] k1: facts 1/1, citations 1/1 valid (...)"]
    assert (jobs.read(run_id).progress.done, jobs.read(run_id).progress.total) == (1, 2)
    figures = AnswerFigures(2, 0.5, 0.5, 1.0, 1.0, 0, 812.0)
    log += [
        "  [2/2] u1: facts 0/0, citations 0/0 valid, abstained (...)",
        "feedback:  [1/1] fb: facts 0/0, citations 0/0 valid (...)",  # not the suite's
        answer_figures_line(figures),
    ]
    progress = jobs.read(run_id).progress
    assert (progress.done, progress.total, progress.figures) == (2, 2, figures)
    assert progress.lines == (
        "[1/2] k1: facts 1/1, citations 1/1 valid (...)",
        "[2/2] u1: facts 0/0, citations 0/0 valid, abstained (...)",
    )
    assert progress.question == progress.lines[-1]
    # the shipped suite: no config, no suite tag; listed newest first, killed as any run
    other = jobs.launch(None, source="api")
    assert dagster.configs[-1] is None and SUITE_TAG not in dagster.launched[-1][1]
    assert [r.id for r in jobs.recent(5)] == [other, run_id]
    assert jobs.kill(other).status == "CANCELING"
    with pytest.raises(RunNotFound, match="not an answer evaluation"):
        EvaluationJobs(FakeDagster([_node("r1", INGEST_JOB)])).read("r1")


def test_an_answer_evaluation_waits_for_a_restore_of_the_documents_only() -> None:
    restoring = _node("r2", RESTORE_JOB, **{CORPUS_TAG: "rag", BUNDLE_TAG: "b.zip"})
    dagster = FakeDagster([restoring, _node("r3", INGEST_JOB), _node("r4", BACKUP_JOB)])
    with pytest.raises(CorpusBusy, match=r"a restore \(run r2\)"):
        EvaluationJobs(dagster).launch(None, source="api")
    assert dagster.launched == []
    del dagster.nodes["r2"]  # an ingest or an export beside it: launched
    run_id = EvaluationJobs(dagster).launch(None, source="api")
    # and a restore is refused beside the evaluation, naming it
    with pytest.raises(CorpusBusy, match=rf"an answer evaluation \(run {run_id}\)"):
        BackupJobs(FakeDagster([dagster.nodes[run_id]])).launch("rag", "b.zip", source="api")
    # an export only reads, as the evaluation does: launched beside it
    beside = FakeDagster([dagster.nodes[run_id]])
    BackupJobs(beside).launch("rag", source="api")
    assert [job for job, _tags in beside.launched] == [BACKUP_JOB]


def test_a_reset_is_refused_beside_any_graph_run_and_holds_the_graph_itself() -> None:
    for job in (GRAPH_BUILD_JOB, GRAPH_REMOVE_JOB, GRAPH_REBUILD_JOB):
        dagster = FakeDagster([_node("r1", job)])
        with pytest.raises(CorpusBusy, match="the graph corpus is busy"):
            GraphJobs(dagster).launch_reset(source="api")
        assert dagster.launched == []
    dagster = FakeDagster([_node("r1", INGEST_JOB)])  # the documents' runs do not count
    run = GraphJobs(dagster).launch_reset(source="cli")
    assert (run.kind, run.corpus, run.source, run.state) == ("reset", "graph", "cli", "queued")
    assert dagster.launched == [(GRAPH_RESET_JOB, {SOURCE_TAG: "cli"})]
    # then no build, rebuild, export or restore is launched beside it
    assert holder(writers(dagster, "graph")[0]) == "a graph reset (run new0)"
    with pytest.raises(CorpusBusy, match="a graph reset"):
        GraphJobs(dagster).launch_rebuild(source="api")
    with pytest.raises(CorpusBusy, match="a graph reset"):
        BackupJobs(dagster).launch("graph", None, source="api")
    assert [r.id for r in GraphJobs(dagster).in_flight()] == ["new0"]


def test_a_build_is_refused_beside_a_reset(tmp_path: Path) -> None:
    dagster = FakeDagster([_node("r1", GRAPH_RESET_JOB)])
    with pytest.raises(CorpusBusy, match="a graph reset"):
        GraphJobs(dagster).launch(tmp_path, ["chat.db"], source="api")


def test_a_rebuild_names_its_days_and_is_not_launched_twice() -> None:
    dagster = FakeDagster([_node("r1", GRAPH_BUILD_JOB)])  # builds and rebuilds take turns
    jobs = GraphJobs(dagster)
    today = date(2026, 3, 10)
    launched = jobs.launch_rebuild("2026-03-03", "2026-03-04", source="api", today=today)
    [run] = launched.launched
    assert (run.kind, run.corpus, run.progress.first_day, run.progress.last_day) == (
        "rebuild",
        "graph",
        "2026-03-03",
        "2026-03-04",
    )
    assert dagster.launched[-1] == (
        GRAPH_REBUILD_JOB,
        {SOURCE_TAG: "api", RANGE_START_TAG: "2026-03-03", RANGE_END_TAG: "2026-03-04"},
    )
    again = jobs.launch_rebuild("2026-03-03", "2026-03-04", source="api", today=today)
    assert again.launched == [] and [r.id for r in again.in_flight] == [run.id]
    # every day: the partitions it names are the days the graph holds, tagged as all
    every = jobs.launch_rebuild(held=("2026-03-02", "2026-03-05"), source="cli", today=today)
    [whole] = every.launched
    assert (whole.progress.first_day, whole.progress.last_day) == (None, None)
    assert dagster.launched[-1][1] == {
        SOURCE_TAG: "cli",
        RANGE_START_TAG: "2026-03-02",
        RANGE_END_TAG: "2026-03-05",
        REBUILD_ALL_TAG: "true",
    }
    # an empty graph: the last partition; a range beyond the partitions is clamped
    GraphJobs(FakeDagster([])).launch_rebuild(source="api", today=today)
    clamped = FakeDagster([])
    GraphJobs(clamped).launch_rebuild("1990-01-01", "2040-01-01", source="api", today=today)
    assert clamped.launched[0][1][RANGE_START_TAG] == GRAPH_FIRST_DAY
    assert clamped.launched[0][1][RANGE_END_TAG] == "2026-03-11"
    building = {r.id: r.kind for r in jobs.in_flight()}
    assert building == {"r1": "build", run.id: "rebuild", whole.id: "rebuild"}


def test_a_rebuild_backfilled_from_the_dagster_ui_is_a_graph_run() -> None:
    node = _node(
        "r7",
        "__ASSET_JOB",
        assets=(GRAPH_REBUILD_ASSET,),
        **{RANGE_START_TAG: "2026-03-03", RANGE_END_TAG: "2026-03-05", "dagster/backfill": "b"},
    )
    one_day = _node("r8", "__ASSET_JOB", assets=(GRAPH_REBUILD_ASSET,), **{PARTITION_TAG: "x"})
    dagster = FakeDagster([node, one_day])
    run = GraphJobs(dagster).read("r7")
    assert (run.kind, run.corpus) == ("rebuild", "graph")
    assert (run.progress.first_day, run.progress.last_day, run.progress.path) == (
        "2026-03-03",
        "2026-03-05",
        None,
    )
    assert GraphJobs(dagster).read("r8").progress.first_day == "x"
    with pytest.raises(CorpusBusy, match="a graph rebuild"):
        GraphJobs(dagster).launch_reset(source="api")


def test_build_targets_name_every_path_that_is_not_an_archive(tmp_path: Path) -> None:
    with pytest.raises(BuildTargetsRefused) as none:
        build_targets(tmp_path, None)
    assert none.value.code == "no_archives"
    (tmp_path / "notes.txt").write_text("not an archive\n")
    with pytest.raises(BuildTargetsRefused) as bad:
        build_targets(tmp_path, ["notes.txt", "../x.db", "missing.db"])
    assert bad.value.code == "invalid_paths" and str(bad.value).startswith("3 path(s)")


def test_a_run_still_starting_is_killed_once_it_has_started() -> None:
    dagster = FakeDagster([_node("r1", GRAPH_BUILD_JOB, "STARTING")])
    refused: list[str] = []
    terminate = dagster.terminate

    def starting_then_started(run_id: str) -> None:
        if dagster.nodes[run_id].status == "STARTING":
            refused.append(run_id)
            dagster.nodes[run_id] = _node(run_id, GRAPH_BUILD_JOB, "STARTED")
            raise TerminateFailed(run_id, "could not be terminated due to having status STARTING")
        terminate(run_id)

    dagster.terminate = starting_then_started  # type: ignore[method-assign]
    assert GraphJobs(dagster).kill("r1").status == "CANCELING"
    assert refused == ["r1"]
