"""The message-graph build as Dagster assets, on real parts: the graph-sources sensor
ticked over a real ``GRAPH_DOCS_PATH``, real runs of ``build_message_graph`` (in
process, and in a worker process of its own that is killed -9), the real LightRAG
engine on its file storages with the packaged local models, the synthetic ``chat.db``
of :mod:`tests.support.chatdb`.

Model work is kept small (the 0.5B model extracts a transcript day in about a minute
on two cores): archives of the script's first day (two thread-days), grown by one day
(two more).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from datetime import UTC
from pathlib import Path

import dagster as dg
import pytest
import yaml

from tests.conftest import SettingsFactory
from tests.support.chatdb import grow_chat_db, write_chat_db
from tests.support.graph_pipeline import (
    GraphHarness,
    check_results,
    materialization,
    requests,
)
from tests.support.pipeline import DEFS
from varagity import pipeline
from varagity.config import Settings
from varagity.graph.base import PROCESSED
from varagity.graph.folder import graph_diff
from varagity.graph.manifest import (
    MANIFEST_FILE,
    ManifestEntry,
    read_manifest,
    read_summary,
    write_manifest,
)
from varagity.graph.registry import workdir_for
from varagity.graph.service import GraphService
from varagity.graph.sources.registry import read_archive
from varagity.ingest.discovery import RESERVED_DIR
from varagity.models.chat import ChatClient
from varagity.models.embeddings import EmbeddingClient

pytestmark = [pytest.mark.integration, pytest.mark.timeout(2400)]
REPO = Path(__file__).resolve().parents[2]
CHECKS = {"graph_manifest_agrees", "graph_documents_not_failed", "graph_size"}


@pytest.fixture
def graph_settings(
    make_settings: SettingsFactory, pg_url: str, model_urls: dict[str, str]
) -> Settings:
    """The stack's settings with a message folder and days taken in UTC."""
    settings = make_settings(
        DATABASE_URL=pg_url,
        GRAPH_DOCS_PATH=Path(os.getcwd()) / "graph-docs",
        GRAPH_TIMEZONE="UTC",
        MODEL_TIMEOUT_S=600,  # one extraction takes minutes on two shared cores
        # the model's extraction: a worker is killed mid-extraction and the run resumed
        GRAPH_EXTRACTION="model",
        **model_urls,
    )
    settings.graph_docs_path.mkdir(parents=True, exist_ok=True)
    return settings


def _statuses(settings: Settings) -> dict[str, str]:
    service = GraphService(
        settings, ChatClient.from_settings(settings), EmbeddingClient.from_settings(settings)
    )
    try:
        return service.statuses()
    finally:
        service.close()


def _keys(settings: Settings, rel: str) -> set[str]:
    return {d.doc_key for d in read_archive(settings.graph_docs_path, rel, tz=UTC)}


def test_graph_definitions_load() -> None:
    keys = {k.to_user_string() for k in DEFS.resolve_asset_graph().get_all_asset_keys()}
    assert {*pipeline.GRAPH_ASSETS, pipeline.GRAPH_REMOVED_ASSET} <= keys
    build = DEFS.resolve_job_def(pipeline.GRAPH_BUILD_JOB)
    assert set(pipeline.GRAPH_ASSETS) <= set(build.graph.node_dict)
    assert build.tags[pipeline.STAGE_TAG] == pipeline.STAGE_GRAPH
    for asset in pipeline.GRAPH_ASSETS:
        assert DEFS.resolve_assets_def(asset).partitions_def.name == pipeline.GRAPH_PARTITIONS  # type: ignore[union-attr]
    # the two writers of the working directory share the graph pool; nothing else is on it
    assert DEFS.resolve_assets_def(pipeline.GRAPH_WORKDIR_ASSET).op.pool == pipeline.GRAPH_POOL
    assert DEFS.resolve_assets_def(pipeline.GRAPH_REMOVED_ASSET).op.pool == pipeline.GRAPH_POOL
    for reader in ("graph_archive", "graph_transcripts"):
        assert DEFS.resolve_assets_def(reader).op.pool is None
    workdir_key = dg.AssetKey(pipeline.GRAPH_WORKDIR_ASSET)
    checks = {
        k.name for k in DEFS.resolve_asset_graph().asset_check_keys if k.asset_key == workdir_key
    }
    assert checks == CHECKS
    sensor = DEFS.resolve_sensor_def("graph_sources_sensor")
    assert sensor.default_status == dg.DefaultSensorStatus.RUNNING
    # the documents jobs are untouched: no graph asset in ingest or blurbs
    ingest = DEFS.resolve_job_def(pipeline.INGEST_JOB)
    assert set(ingest.graph.node_dict) == {*pipeline.INGEST_ASSETS, "chunk_checks"}
    assert set(DEFS.resolve_job_def(pipeline.CONTEXTUALIZE_JOB).graph.node_dict) == {
        "chunk_contexts"
    }
    # the pool has one slot: dagster.yaml gives every pool one
    limits = yaml.safe_load((REPO / "dagster_home" / "dagster.yaml").read_text())["concurrency"]
    assert limits["pools"]["default_limit"] == 1
    assert limits["pools"]["granularity"] == "run"


def test_the_sensor_diffs_the_folder(graph_settings: Settings) -> None:
    """Partitions and requests only (no run): companions are no partitions, a change to
    the -wal/-shm alone is a change, unsupported files are reported once, the exports
    folder is not looked at, a removed archive is a removal run."""
    root = graph_settings.graph_docs_path
    archive = write_chat_db(root / "phone", days=1)
    (root / "notes.txt").write_text("not an archive\n")
    (root / RESERVED_DIR).mkdir()
    (root / RESERVED_DIR / "backup.db").write_bytes(b"SQLite format 3\0 rest")
    h = GraphHarness()

    first = h.tick()
    assert isinstance(first, dg.SensorResult)
    assert h.partitions() == {"phone/chat.db"}
    [build] = requests(first)
    assert (build.job_name, build.partition_key) == (pipeline.GRAPH_BUILD_JOB, "phone/chat.db")
    assert build.tags[pipeline.SOURCE_TAG] == "sensor"  # the builds list names who asked
    skipped = json.loads(h.cursor or "{}")["skipped"]
    assert set(skipped) == {"notes.txt"}
    assert "imessage" in skipped["notes.txt"]["reason"]
    again = h.tick()
    assert isinstance(again, dg.SkipReason)
    assert "nothing changed" in (again.skip_message or "")

    # only the -shm changed: the archive changed (a new run key), no new partition
    shm = Path(f"{archive.path}-shm")
    shm.write_bytes(bytes(b ^ 0xFF for b in shm.read_bytes()))
    changed = h.tick()
    assert isinstance(changed, dg.SensorResult)
    [rebuild] = requests(changed)
    assert rebuild.partition_key == "phone/chat.db" and rebuild.run_key != build.run_key
    assert not changed.dynamic_partitions_requests
    assert h.partitions() == {"phone/chat.db"}

    # removed: the partition goes, a removal run names the archive
    for path in archive.files():
        path.unlink()
    removed = h.tick()
    assert isinstance(removed, dg.SensorResult)
    [purge] = requests(removed)
    assert purge.job_name == pipeline.GRAPH_REMOVE_JOB
    assert purge.tags[pipeline.SOURCE_TAG] == "sensor"
    assert purge.run_config["ops"]["graph_removed_sources"]["config"]["relative_paths"] == [
        "phone/chat.db"
    ]
    assert h.partitions() == set()


def _workdir_holding(path: Path, sources: list[str]) -> None:
    """A working directory whose manifest says the graph holds one day of each source."""
    path.mkdir(parents=True)
    write_manifest(
        path,
        {
            f"{source}#t1#2026-01-05": ManifestEntry("0" * 64, ("g1",), "t1", "day", source)
            for source in sources
        },
    )


def test_a_restored_graph_is_reconciled_with_the_folder(graph_settings: Settings) -> None:
    """Another working directory swapped in (a restore, however it was run): every
    archive is built again (its build diffs the days against the restored manifest) and
    the archives the restored graph holds that are gone from the folder are removed."""
    root = graph_settings.graph_docs_path
    write_chat_db(root / "phone", days=1)
    workdir = workdir_for(graph_settings)
    _workdir_holding(workdir, ["phone/chat.db"])
    h = GraphHarness()
    [build] = requests(h.tick())
    assert isinstance(h.tick(), dg.SkipReason)

    # the restore's staged folder swapped in by renames, as varagity.graph.swap does
    staged = workdir.with_name(f"{workdir.name}.restore-t")
    _workdir_holding(staged, ["phone/chat.db", "gone/chat.db"])
    workdir.rename(workdir.with_name(f"{workdir.name}.replaced-t"))
    staged.rename(workdir)
    said = graph_diff(graph_settings)  # what the restore run reports
    assert (said.to_ingest, said.to_purge, dict(said.failed)) == (
        ("phone/chat.db",),
        ("gone/chat.db",),
        {},
    )
    after = h.tick()
    assert isinstance(after, dg.SensorResult)
    by_job = {r.job_name: r for r in requests(after)}
    assert set(by_job) == {pipeline.GRAPH_BUILD_JOB, pipeline.GRAPH_REMOVE_JOB}
    rebuild = by_job[pipeline.GRAPH_BUILD_JOB]
    assert rebuild.partition_key == "phone/chat.db" and rebuild.run_key != build.run_key
    removal = by_job[pipeline.GRAPH_REMOVE_JOB].run_config["ops"]["graph_removed_sources"]
    assert removal["config"]["relative_paths"] == ["gone/chat.db"]
    assert isinstance(h.tick(), dg.SkipReason)  # asked for once


def test_a_just_landed_archive_waits_for_a_later_tick(graph_settings: Settings) -> None:
    """An archive written moments ago is left alone (an upload launches its own build
    between storing and the next tick; a copy may be half done); once it has been left
    alone for the settling time it is built; a change is judged the same way; a removal
    is not held back."""
    root = graph_settings.graph_docs_path
    archive = write_chat_db(root, days=1)
    h = GraphHarness(settle_s=2.0)
    fresh = h.tick()
    assert isinstance(fresh, dg.SkipReason), fresh
    assert h.partitions() == set()
    time.sleep(2.5)
    [build] = requests(h.tick())
    assert build.partition_key == "chat.db"

    # the archive changes again: the change is not judged until it has settled either
    shm = Path(f"{archive.path}-shm")
    shm.write_bytes(bytes(b ^ 0xFF for b in shm.read_bytes()))
    assert isinstance(h.tick(), dg.SkipReason)
    time.sleep(2.5)
    [rebuild] = requests(h.tick())
    assert rebuild.run_key != build.run_key

    # removed while still settling: its partition and days go at once
    for path in archive.files():
        path.unlink()
    removed = h.tick()
    assert [r.job_name for r in requests(removed)] == [pipeline.GRAPH_REMOVE_JOB]
    assert h.partitions() == set()


def test_sensor_to_graph_grown_by_a_day_then_removed(graph_settings: Settings) -> None:
    root = graph_settings.graph_docs_path
    archive = write_chat_db(root, days=1)
    first_keys = _keys(graph_settings, "chat.db")
    assert len(first_keys) == 2
    h = GraphHarness()

    [run] = h.run_graph(h.tick())
    assert run.success, h.logs(run)
    read = materialization(run, "graph_archive")
    assert (read["threads"], read["days"]) == (2, 2)
    assert read["messages"] == sum(1 for r in archive.conversation)
    diff = materialization(run, "graph_transcripts")
    assert (diff["new"], diff["changed"], diff["removed"]) == (2, 0, 0)
    built = materialization(run, "graph_workdir")
    assert built["inserted"] == 2 and built["failed"] == 0
    assert built["documents"] == 2
    checks = check_results(run)
    assert set(checks) == CHECKS
    for name in ("graph_manifest_agrees", "graph_documents_not_failed"):
        assert checks[name].passed, checks[name].description
    # the counts the UI plots are the engine's; the size check warns when nothing was
    # extracted from processed days (the packaged 0.5B model often echoes a transcript)
    size = checks["graph_size"]
    assert size.metadata["entities"].value == built["entities"]
    assert size.metadata["relations"].value == built["relations"]
    assert size.metadata["documents_processed"].value == 2
    assert size.passed == (built["entities"] > 0)
    workdir = workdir_for(graph_settings)
    assert set(read_manifest(workdir)) == first_keys
    summary = read_summary(workdir)
    assert summary is not None and summary.docs == 2 and summary.entities == built["entities"]
    assert isinstance(h.tick(), dg.SkipReason)

    # the archive re-exported a day longer: only the new day's transcripts go to the engine
    grow_chat_db(archive)
    grown_keys = _keys(graph_settings, "chat.db")
    added = grown_keys - first_keys
    assert added and first_keys < grown_keys
    [grown] = h.run_graph(h.tick())
    assert grown.success, h.logs(grown)
    diff = materialization(grown, "graph_transcripts")
    assert (diff["new"], diff["changed"], diff["removed"], diff["unchanged"]) == (
        len(added),
        0,
        0,
        2,
    )
    built = materialization(grown, "graph_workdir")
    assert set(built["given_new"]) == added
    assert built["given_changed"] == [] and built["given_removed"] == []
    assert built["extracted_this_run"] == len(added)
    grown_checks = check_results(grown)
    assert grown_checks["graph_manifest_agrees"].passed
    assert grown_checks["graph_documents_not_failed"].passed
    statuses = _statuses(graph_settings)
    assert statuses == {key: PROCESSED for key in grown_keys}
    assert set(read_manifest(workdir)) == grown_keys

    # removed from the folder: its days leave the graph in a run of their own
    for path in archive.files():
        path.unlink()
    removal = h.tick()
    assert h.partitions() == set()
    [gone] = h.run_graph(removal)
    assert gone.success, h.logs(gone)
    meta = materialization(gone, pipeline.GRAPH_REMOVED_ASSET)
    assert set(meta["given_removed"]) == grown_keys
    assert meta["archives_removed"] == 1
    assert _statuses(graph_settings) == {}
    assert read_manifest(workdir) == {}


_WORKER = """
import sys
import dagster as dg
from varagity_assets.definitions import defs
job = defs().resolve_job_def(sys.argv[1])
job.execute_in_process(instance=dg.DagsterInstance.get(), partition_key=sys.argv[2],
                       raise_on_error=False)
"""


def _messages(instance: dg.DagsterInstance, run_id: str) -> list[str]:
    return [e.user_message for e in instance.all_logs(run_id) if e.user_message]


def test_a_killed_build_resumes_with_no_day_lost_or_doubled(
    graph_settings: Settings, tmp_path: Path
) -> None:
    """The run worker is killed -9 while ``graph_workdir`` extracts; materializing
    again finishes the build from the engine's statuses."""
    write_chat_db(graph_settings.graph_docs_path, days=1)
    keys = _keys(graph_settings, "chat.db")
    dagster_home = tmp_path / "dagster"
    dagster_home.mkdir()
    instance = dg.DagsterInstance.from_config(str(dagster_home))
    h = GraphHarness(instance)
    [request] = requests(h.tick())
    env = {**os.environ, "DAGSTER_HOME": str(dagster_home), "PYTHONPATH": str(REPO)}
    worker = subprocess.Popen(
        [sys.executable, "-c", _WORKER, pipeline.GRAPH_BUILD_JOB, request.partition_key or ""],
        env=env,
        cwd=os.getcwd(),
    )
    try:
        run_id, deadline = "", time.monotonic() + 600
        while time.monotonic() < deadline and worker.poll() is None:
            runs = instance.get_runs(limit=1)
            run_id = runs[0].run_id if runs else ""
            if run_id and any(m.startswith("graph build: ") for m in _messages(instance, run_id)):
                break  # the engine reports its first progress: extraction is under way
            time.sleep(0.5)
        assert worker.poll() is None, "the build ended before it could be killed"
        os.kill(worker.pid, signal.SIGKILL)
        worker.wait(30)
    finally:
        if worker.poll() is None:
            worker.kill()
    killed = instance.get_run_by_id(run_id)
    assert killed is not None and killed.status != dg.DagsterRunStatus.SUCCESS
    workdir = workdir_for(graph_settings)
    assert not (workdir / MANIFEST_FILE).exists()  # the killed run recorded nothing
    before = _statuses(graph_settings)
    assert set(before) <= keys and not all(before.get(k) == PROCESSED for k in keys), (
        "the kill came after the last day was done"
    )

    # materialized again (the run of the same request): resumes and finishes
    resumed = DEFS.resolve_job_def(pipeline.GRAPH_BUILD_JOB).execute_in_process(
        instance=instance, partition_key=request.partition_key, raise_on_error=False
    )
    assert resumed.success, _messages(instance, resumed.run_id)
    built = materialization(resumed, "graph_workdir")
    assert built["inserted"] == len(keys) and built["failed"] == 0
    # each day once in the engine and the manifest, every one processed
    assert _statuses(graph_settings) == {key: PROCESSED for key in keys}
    assert set(read_manifest(workdir)) == keys
    full_docs = json.loads((workdir / "kv_store_full_docs.json").read_text())
    assert sorted(full_docs) == sorted(keys)
    # days the killed run finished were not extracted again
    assert built["extracted_this_run"] == sum(1 for k in keys if before.get(k) != PROCESSED)
    resumed_checks = check_results(resumed)
    assert resumed_checks["graph_manifest_agrees"].passed
    assert resumed_checks["graph_documents_not_failed"].passed


def test_graph_disabled_builds_nothing_and_says_why(
    make_settings: SettingsFactory, pg_url: str, model_urls: dict[str, str]
) -> None:
    settings = make_settings(
        DATABASE_URL=pg_url,
        GRAPH_DOCS_PATH=Path(os.getcwd()) / "graph-docs",
        GRAPH_ENABLED="false",
        **model_urls,
    )
    write_chat_db(settings.graph_docs_path, days=1)
    h = GraphHarness()
    skip = h.tick()
    assert isinstance(skip, dg.SkipReason)
    assert "GRAPH_ENABLED is false" in (skip.skip_message or "")
    assert h.partitions() == set()
    # a build launched anyway (UI, API) fails at once, saying why, and writes nothing
    h.instance.add_dynamic_partitions(pipeline.GRAPH_PARTITIONS, ["chat.db"])
    run = DEFS.resolve_job_def(pipeline.GRAPH_BUILD_JOB).execute_in_process(
        instance=h.instance, partition_key="chat.db", raise_on_error=False
    )
    assert not run.success
    failure = next(e for e in run.all_events if e.event_type == dg.DagsterEventType.STEP_FAILURE)
    assert "GRAPH_ENABLED=false" in str(failure.step_failure_data.error)
    assert not workdir_for(settings).exists()
