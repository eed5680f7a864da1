"""The backup definitions of the code location: ``backup_bundle`` partitioned by corpus
with its blocking verify check, the ``export_bundle`` and ``restore_bundle`` jobs, and
the optional schedule; then the asset materialized in process on real Postgres."""

from __future__ import annotations

from datetime import datetime

import dagster as dg
import pytest

from tests.support.pipeline import DEFS
from varagity import pipeline
from varagity.config import reset_settings
from varagity_assets.defs.backup.assets import VERIFY_CHECK
from varagity_assets.defs.backup.schedules import SCHEDULE_NAME, backup_schedules


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
