"""The backup definitions of the code location: ``backup_bundle`` partitioned by corpus
with its blocking verify check, the ``export_bundle`` and ``restore_bundle`` jobs, and
the optional schedule; then the asset materialized in process on real Postgres."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import dagster as dg
import pytest

from tests.conftest import SettingsFactory
from tests.support.api_server import index_files
from tests.support.pipeline import DEFS, Harness, write_file
from varagity import pipeline
from varagity.backup.locks import corpus_write_lock, restore_holder
from varagity.config import Settings, reset_settings
from varagity.services import Services
from varagity_assets.defs.backup.assets import VERIFY_CHECK
from varagity_assets.defs.backup.schedules import SCHEDULE_NAME, backup_schedules
from varagity_assets.resources import VaragityResource

pytestmark = pytest.mark.integration


def test_backup_definitions() -> None:
    asset = DEFS.resolve_assets_def(pipeline.BACKUP_ASSET)
    assert asset.partitions_def is not None
    assert list(asset.partitions_def.get_partition_keys()) == list(pipeline.BACKUP_CORPORA)
    [check] = asset.check_specs
    assert (check.name, check.blocking) == (VERIFY_CHECK, True)
    # no model call, no pool: a RAG export must not wait behind a graph build
    assert asset.op.pool is None
    export = DEFS.resolve_job_def(pipeline.BACKUP_JOB)
    assert export.tags[pipeline.STAGE_TAG] == pipeline.STAGE_BACKUP
    assert export.partitions_def == asset.partitions_def
    restore = DEFS.resolve_job_def(pipeline.RESTORE_JOB)
    assert set(restore.graph.node_dict) == {"restore_corpus"}
    fields = restore.run_config_schema.config_type.fields["ops"].config_type.fields
    config = fields["restore_corpus"].config_type.fields["config"].config_type.fields
    assert set(config) == {"corpus", "name"}


def test_the_schedule_exists_only_when_a_cron_is_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("BACKUP_SCHEDULE", raising=False)
    reset_settings()
    try:
        assert not list(backup_schedules().schedules or [])
        monkeypatch.setenv("BACKUP_SCHEDULE", "15 2 * * *")
        monkeypatch.setenv("GRAPH_ENABLED", "false")
        reset_settings()
        [schedule] = list(backup_schedules().schedules or [])
        assert isinstance(schedule, dg.ScheduleDefinition)
        assert (schedule.name, schedule.cron_schedule) == (SCHEDULE_NAME, "15 2 * * *")
        assert schedule.default_status == dg.DefaultScheduleStatus.RUNNING
        context = dg.build_schedule_context(
            scheduled_execution_time=datetime(2026, 11, 8, 2, 15),
            repository_def=DEFS.get_repository_def(),
        )
        requests = schedule.evaluate_tick(context).run_requests or []
        # the graph is switched off: only the documents are backed up
        assert [(r.partition_key, r.run_key) for r in requests] == [("rag", "rag-20261108T0215")]
    finally:
        monkeypatch.delenv("BACKUP_SCHEDULE")
        monkeypatch.delenv("GRAPH_ENABLED")
        reset_settings()


def _restore(name: str, corpus: str = "rag") -> dg.ExecuteInProcessResult:
    job = DEFS.resolve_job_def(pipeline.RESTORE_JOB)
    return job.execute_in_process(
        run_config={"ops": {"restore_corpus": {"config": {"corpus": corpus, "name": name}}}},
        resources={"varagity": VaragityResource()},
        raise_on_error=False,
    )


def _chunk_ids(settings: Settings) -> list[str]:
    services = Services.open(settings)
    try:
        return sorted(
            c.chunk_id
            for d in services.pg.list_documents()
            for c in services.pg.chunks_of(d.doc_id)
        )
    finally:
        services.close()


def _failure(result: dg.ExecuteInProcessResult) -> str:
    [event] = [e for e in result.all_events if e.event_type == dg.DagsterEventType.STEP_FAILURE]
    return str(event.step_failure_data.error)  # type: ignore[union-attr]


def test_a_bundle_is_a_verified_materialization_and_restores(stack_settings: Settings) -> None:
    """Export the documents as the UI would (the rag partition), then restore the bundle
    with the job: the same rows come back; a missing or damaged bundle fails the run
    with its reason and leaves the corpus as it was."""
    index_files(stack_settings)
    export = DEFS.resolve_job_def(pipeline.BACKUP_JOB)
    result = export.execute_in_process(
        partition_key="rag", resources={"varagity": VaragityResource()}
    )
    assert result.success
    [check] = result.get_asset_check_evaluations()
    assert (check.check_name, check.passed) == (VERIFY_CHECK, True)
    [mat] = result.get_asset_materialization_events()
    meta = {k: v.value for k, v in mat.materialization.metadata.items()}
    name = str(meta["bundle"])
    assert meta["counts"] == {"documents": 3, "chunks": 3}
    folder = stack_settings.docs_path / "varagity-exports"
    assert (folder / name).stat().st_size == meta["size_bytes"]

    before = _chunk_ids(stack_settings)
    services = Services.open(stack_settings)
    try:  # the corpus changes after the export; the restore puts the exported rows back
        services.pg.delete_documents([services.pg.list_documents()[0].doc_id])
    finally:
        services.close()
    assert len(_chunk_ids(stack_settings)) == len(before) - 1
    restored = _restore(name)
    assert restored.success
    assert _chunk_ids(stack_settings) == before

    missing = _restore("varagity-rag-19990101-0000.zip")
    assert not missing.success and "bundle_not_found" in _failure(missing)
    damaged = folder / "varagity-rag-20000101-0000.zip"
    damaged.write_bytes((folder / name).read_bytes()[:-200])  # truncated
    refused = _restore(damaged.name)
    assert not refused.success and "bundle_invalid" in _failure(refused)
    assert _chunk_ids(stack_settings) == before


def test_the_graph_partition_refuses_while_the_graph_is_switched_off(
    make_settings: SettingsFactory, pg_url: str
) -> None:
    make_settings(DATABASE_URL=pg_url, GRAPH_ENABLED="false")
    export = DEFS.resolve_job_def(pipeline.BACKUP_JOB)
    result = export.execute_in_process(
        partition_key="graph", resources={"varagity": VaragityResource()}, raise_on_error=False
    )
    assert not result.success and "graph_disabled" in _failure(result)
    assert not result.get_asset_materialization_events()


def test_the_folder_sensor_never_takes_the_backups_folder(
    make_settings: SettingsFactory, pg_url: str
) -> None:
    """Bundles (and anything else) in ``varagity-exports/`` at the corpus root never
    become partitions; a folder of that name deeper down is ordinary corpus."""
    settings = make_settings(DATABASE_URL=pg_url)
    docs = settings.docs_path
    write_file(docs / "kettle.md", "The Tern K2 kettle has a warranty of 27 months.\n")
    write_file(docs / "Varagity-Exports" / "notes.md", "never corpus\n")
    (docs / "Varagity-Exports" / "varagity-rag-20261202-0630.zip").write_bytes(b"PK\x05\x06")
    write_file(docs / "team" / "varagity-exports" / "plan.md", "ordinary corpus\n")
    h = Harness()
    h.tick()
    assert h.partitions() == {"kettle.md", "team/varagity-exports/plan.md"}


def test_a_graph_export_beside_a_build_fails_naming_it_and_writes_nothing(
    make_settings: SettingsFactory, pg_url: str
) -> None:
    """The graph partition holds no Dagster pool (a RAG export must not queue behind an
    hours-long build); the graph's write lock, which every build holds, refuses it."""
    settings = make_settings(DATABASE_URL=pg_url)
    export = DEFS.resolve_job_def(pipeline.BACKUP_JOB)
    with corpus_write_lock(settings, "graph", exclusive=True, holder="a graph build (run b1)"):
        busy = export.execute_in_process(
            partition_key="graph", resources={"varagity": VaragityResource()}, raise_on_error=False
        )
    assert not busy.success
    assert "corpus_busy: the graph corpus is being written by a graph build (run b1)" in _failure(
        busy
    )
    folder = settings.graph_docs_path / "varagity-exports"
    assert not folder.exists() or not any(folder.iterdir())
    # free again, but nothing was ever built: nothing to back up, said so
    empty = export.execute_in_process(
        partition_key="graph", resources={"varagity": VaragityResource()}, raise_on_error=False
    )
    assert not empty.success and "nothing_to_export" in _failure(empty)


def test_the_folder_sensors_wait_while_their_corpus_is_restored(
    make_settings: SettingsFactory, pg_url: str, tmp_path: Path
) -> None:
    """A file landing during a restore is not requested then (its run would only fail on
    the corpus lock), but on the first tick after it; the other corpus is not held up."""
    from varagity_assets.defs.graph.sensors import graph_sources_sensor

    (tmp_path / "graph-docs").mkdir()
    settings = make_settings(DATABASE_URL=pg_url, GRAPH_DOCS_PATH=tmp_path / "graph-docs")
    write_file(
        settings.docs_path / "kettle.md", "The Tern K2 kettle has a warranty of 27 months.\n"
    )
    h = Harness()
    with corpus_write_lock(settings, "rag", exclusive=True, holder=restore_holder("b.zip")):
        held = h.tick()
        assert isinstance(held, dg.SkipReason)
        assert "being restored (restore of b.zip" in str(held.skip_message)
        assert h.partitions() == set()
        with dg.build_sensor_context(
            instance=h.instance, resources={"varagity": VaragityResource()}
        ) as ctx:
            graph = graph_sources_sensor(ctx)
        assert not (isinstance(graph, dg.SkipReason) and "restored" in str(graph.skip_message))
    with corpus_write_lock(settings, "graph", exclusive=True, holder=restore_holder("g.zip")):
        with dg.build_sensor_context(
            instance=h.instance, resources={"varagity": VaragityResource()}
        ) as ctx:
            graph = graph_sources_sensor(ctx)
        assert isinstance(graph, dg.SkipReason) and "restore of g.zip" in str(graph.skip_message)
    after = h.tick()
    assert isinstance(after, dg.SensorResult) and h.partitions() == {"kettle.md"}
