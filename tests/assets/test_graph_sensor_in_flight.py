"""The graph-sources sensor and builds launched outside it (an upload, the build routes):
an archive whose partition already has a build run in flight gets no second run, and
one that changed under a running build is built once that run has ended.

Runs are recorded in the instance as the daemon would record them (queued, started at
a given moment, ended), so nothing here executes a build.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from tests.conftest import SettingsFactory
from tests.support.chatdb import grow_chat_db, write_chat_db
from tests.support.graph_pipeline import GraphHarness, requests
from tests.support.pipeline import DEFS
from varagity import pipeline
from varagity.config import Settings
from varagity.graph.archives import scan_archives

pytestmark = pytest.mark.integration
PHONE = "phone/chat.db"


@pytest.fixture
def root(make_settings: SettingsFactory, pg_url: str, tmp_path: Path) -> Path:
    """An empty GRAPH_DOCS_PATH the sensor watches."""
    settings: Settings = make_settings(DATABASE_URL=pg_url, GRAPH_DOCS_PATH=tmp_path / "graph-docs")
    settings.graph_docs_path.mkdir(parents=True)
    return settings.graph_docs_path


def _launched_build(
    h: GraphHarness, *, started_at: float | None = None, sha256: str | None = None
) -> dg.DagsterRun:
    """A build of PHONE launched outside the sensor (its partition added first, as the
    launch does): queued, or started at ``started_at``; tagged with the archive's
    signature when given (as the upload and build routes tag theirs)."""
    h.instance.add_dynamic_partitions(pipeline.GRAPH_PARTITIONS, [PHONE])
    tags = {pipeline.PARTITION_TAG: PHONE, pipeline.SOURCE_TAG: "upload"}
    if sha256 is not None:
        tags[pipeline.ARCHIVE_TAG] = sha256
    run = h.instance.create_run_for_job(
        DEFS.resolve_job_def(pipeline.GRAPH_BUILD_JOB),
        status=dg.DagsterRunStatus.NOT_STARTED
        if started_at is None
        else dg.DagsterRunStatus.STARTING,
        tags=tags,
    )
    if started_at is not None:
        start = dg.DagsterEvent(
            event_type_value=dg.DagsterEventType.RUN_START.value, job_name=run.job_name
        )
        h.instance.report_dagster_event(start, run.run_id, timestamp=started_at)
    return run


def _succeeded(h: GraphHarness, run: dg.DagsterRun) -> None:
    success = dg.DagsterEvent(
        event_type_value=dg.DagsterEventType.RUN_SUCCESS.value, job_name=run.job_name
    )
    h.instance.report_dagster_event(success, run.run_id)
    stored = h.instance.get_run_by_id(run.run_id)
    assert stored is not None and stored.status == dg.DagsterRunStatus.SUCCESS


def _entry(h: GraphHarness) -> dict[str, Any]:
    return dict(json.loads(h.cursor or "{}")["archives"][PHONE])


def _sha(root: Path) -> str:
    [archive] = scan_archives(root)
    return archive.content_sha256()


def test_a_queued_build_is_not_requested_twice(root: Path) -> None:
    archive = write_chat_db(root / "phone", days=1)
    h = GraphHarness()
    queued = _launched_build(h)

    first = h.tick()
    assert requests(first) == []  # the queued run reads the archive as it is now
    assert h.partitions() == {PHONE}
    assert _entry(h) == {"stat": _entry(h)["stat"], "sha256": _sha(root)}
    assert requests(h.tick()) == []

    # once that run has ended, a change is a build as usual
    h.instance.report_run_failed(queued)
    grow_chat_db(archive)
    [build] = requests(h.tick())
    assert (build.job_name, build.partition_key) == (pipeline.GRAPH_BUILD_JOB, PHONE)
    assert _sha(root) in (build.run_key or "")


def test_a_build_that_started_after_the_archive_last_changed_covers_it(root: Path) -> None:
    write_chat_db(root / "phone", days=1)
    h = GraphHarness()
    _launched_build(h, started_at=time.time() + 60)  # started after the files were written

    assert requests(h.tick()) == []
    assert "waiting" not in _entry(h)


def test_an_archive_changed_under_a_running_build_is_built_once_that_run_ends(
    root: Path,
) -> None:
    archive = write_chat_db(root / "phone", days=1)
    h = GraphHarness()
    [first] = requests(h.tick())  # the sensor's own build of the first export
    running = _launched_build(h, started_at=time.time() - 60)  # it read the old bytes

    grow_chat_db(archive)  # re-exported while that build runs
    held = h.tick()
    assert requests(held) == []
    assert _entry(h)["waiting"] is True and _entry(h)["sha256"] == _sha(root)
    assert requests(h.tick()) == []  # still running: still waiting, nothing forgotten

    h.instance.report_run_failed(running)
    [build] = requests(h.tick())
    assert build.partition_key == PHONE and build.run_key != first.run_key
    assert _sha(root) in (build.run_key or "")
    assert "waiting" not in _entry(h)
    assert requests(h.tick()) == []  # requested once


def test_an_archive_whose_partition_an_upload_just_added_waits_a_tick(root: Path) -> None:
    """The upload adds the partition, then launches the build: a tick in between must
    not request a second one; if no run comes, the next tick builds it."""
    write_chat_db(root / "phone", days=1)
    h = GraphHarness()
    h.instance.add_dynamic_partitions(pipeline.GRAPH_PARTITIONS, [PHONE])

    assert requests(h.tick()) == []
    [build] = requests(h.tick())  # no run came (Dagster refused the launch): built now
    assert build.partition_key == PHONE and _sha(root) in (build.run_key or "")
    assert requests(h.tick()) == []


def test_a_finished_build_of_the_same_bytes_is_not_requested_again(root: Path) -> None:
    """An upload placed the archive and launched its build, which ended before the
    sensor's first look: the run's signature tag says these bytes are built."""
    archive = write_chat_db(root / "phone", days=1)
    h = GraphHarness()
    failed = _launched_build(h, started_at=time.time(), sha256=_sha(root))
    h.instance.report_run_failed(failed)  # a failed build does not count ...
    assert requests(h.tick()) == []  # (a partition an upload added waits a tick)
    [retry] = requests(h.tick())
    assert retry.tags[pipeline.ARCHIVE_TAG] == _sha(root)

    grow_chat_db(archive)  # a new export, uploaded and built before the next tick
    _succeeded(h, _launched_build(h, started_at=time.time(), sha256=_sha(root)))
    assert requests(h.tick()) == []  # ... a successful one does
    assert requests(h.tick()) == []


def test_a_build_of_the_same_bytes_before_they_were_put_back_does_not_count(root: Path) -> None:
    """The same export removed and put back: the build launched for it before is older
    than the files, and their days left the graph with the removal."""
    write_chat_db(root / "phone", days=1)
    h = GraphHarness()
    _succeeded(h, _launched_build(h, started_at=time.time(), sha256=_sha(root)))
    assert requests(h.tick()) == []
    saved = {p.name: p.read_bytes() for p in (root / "phone").iterdir()}
    for path in (root / "phone").iterdir():
        path.unlink()
    [removal] = requests(h.tick())
    assert removal.job_name == pipeline.GRAPH_REMOVE_JOB
    time.sleep(1.1)  # past the clock margin: the files come back later than that build
    for name, data in saved.items():
        (root / "phone" / name).write_bytes(data)
    [again] = requests(h.tick())
    assert again.job_name == pipeline.GRAPH_BUILD_JOB and again.partition_key == PHONE
