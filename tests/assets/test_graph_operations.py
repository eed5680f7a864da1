"""The message graph's upkeep as Dagster runs, on real parts: a graph built from the
synthetic ``chat.db`` (four script days: eight thread-days) by real runs of
``build_message_graph``, then rebuilt over a range of days, flagged stale by the
graph-staleness sensor's run when ``LLM_MODEL`` is overridden, rebuilt whole, and reset,
all in process on the real LightRAG engine with the packaged embedding server and a
real Postgres. Extraction is the skeleton (no model call: a day in about a second), so
every day can be extracted again in seconds.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import dagster as dg
import pytest
import yaml

from tests.conftest import SettingsFactory
from tests.support.chatdb import ChatArchive, write_chat_db
from tests.support.graph_pipeline import GraphHarness, materialization
from tests.support.pipeline import DEFS
from varagity import pipeline
from varagity.config import Settings
from varagity.corpus_lock import graph_write_lock
from varagity.graph.manifest import MANIFEST_FILE, SUMMARY_FILE, read_manifest, read_summary
from varagity.graph.registry import workdir_for
from varagity.graph.sources.registry import read_archive
from varagity.services import Services
from varagity.stores.corpus_state import GraphState, graph_settings

pytestmark = [pytest.mark.integration, pytest.mark.timeout(1800)]
REPO = Path(__file__).resolve().parents[2]
#: The days a bounded rebuild takes: two of the archive's four (2026-03-02 .. 05).
RANGE = ("2026-03-03", "2026-03-04")
DOC_STATUS_FILE = "kv_store_doc_status.json"


def test_graph_upkeep_definitions_load() -> None:
    today = datetime.now(UTC).date()
    reset = DEFS.resolve_job_def(pipeline.GRAPH_RESET_JOB)
    assert set(reset.graph.node_dict) == {pipeline.GRAPH_RESET_ASSET}
    rebuild = DEFS.resolve_job_def(pipeline.GRAPH_REBUILD_JOB)
    assert set(rebuild.graph.node_dict) == {pipeline.GRAPH_REBUILD_ASSET}
    for job in (reset, rebuild):  # runs of the graph: the gate and the builds list see them
        assert job.tags[pipeline.STAGE_TAG] == pipeline.STAGE_GRAPH
    staleness = DEFS.resolve_job_def(pipeline.GRAPH_STALENESS_JOB)
    assert set(staleness.graph.node_dict) == {pipeline.GRAPH_STALENESS_ASSET}
    assert staleness.tags[pipeline.STAGE_TAG] == pipeline.STAGE_STALENESS
    # the two writers hold the graph pool's one slot, like a build
    for asset in (pipeline.GRAPH_RESET_ASSET, pipeline.GRAPH_REBUILD_ASSET):
        assert DEFS.resolve_assets_def(asset).op.pool == pipeline.GRAPH_POOL
    assert DEFS.resolve_assets_def(pipeline.GRAPH_STALENESS_ASSET).op.pool is None
    # one partition per day, as the clients name them; a backfill is one run per range
    days = DEFS.resolve_assets_def(pipeline.GRAPH_REBUILD_ASSET)
    partitions = days.partitions_def
    assert isinstance(partitions, dg.DailyPartitionsDefinition)
    assert partitions.get_first_partition_key() == pipeline.GRAPH_FIRST_DAY
    assert partitions.get_last_partition_key() == pipeline.graph_last_day(today)
    assert days.backfill_policy == dg.BackfillPolicy.single_run()
    sensor = DEFS.resolve_sensor_def("graph_staleness_sensor")
    assert sensor.default_status == dg.DefaultSensorStatus.RUNNING
    limits = yaml.safe_load((REPO / "dagster_home" / "dagster.yaml").read_text())["concurrency"]
    assert limits["pools"]["default_limit"] == 1


@dataclass
class Built:
    """A graph built from the four-day archive, and how to make settings like its own."""

    settings: Settings
    archive: ChatArchive
    harness: GraphHarness
    overrides: dict[str, Any]
    make: SettingsFactory

    def again(self, **changes: Any) -> Settings:
        """The same stack's settings with ``changes`` (exported, as a restart would)."""
        return self.make(**{**self.overrides, **changes})


@pytest.fixture
def built(
    make_settings: SettingsFactory, pg_url: str, model_urls: dict[str, str]
) -> Iterator[Built]:
    overrides: dict[str, Any] = {
        "DATABASE_URL": pg_url,
        "GRAPH_DOCS_PATH": Path(os.getcwd()) / "graph-docs",
        "GRAPH_TIMEZONE": "UTC",
        "GRAPH_EXTRACTION": "skeleton",
        **model_urls,
    }
    settings = make_settings(**overrides)
    archive = write_chat_db(settings.graph_docs_path, days=4)
    h = GraphHarness()
    [run] = h.run_graph(h.tick())
    assert run.success, h.logs(run)
    assert materialization(run, "graph_workdir")["inserted"] == 8
    yield Built(settings, archive, h, overrides, make_settings)


def _rows(settings: Settings) -> dict[str, dict[str, Any]]:
    """The engine's document status rows (LightRAG's ``kv_store_doc_status.json``): each
    day's row is written anew when the day is inserted, so an untouched row was not
    extracted again."""
    path = workdir_for(settings) / DOC_STATUS_FILE
    return dict(json.loads(path.read_text()))


def _in_range(key: str) -> bool:
    return RANGE[0] <= key.rpartition("::")[2] <= RANGE[1]


def _state(settings: Settings) -> tuple[GraphState, Services]:
    services = Services.open(settings)
    return GraphState(services.pg), services


def test_a_bounded_rebuild_re_extracts_only_its_days_and_a_full_one_clears_the_stale_flag(
    built: Built,
) -> None:
    settings, h = built.settings, built.harness
    manifest = read_manifest(workdir_for(settings))
    keys = set(manifest)
    inside = {k for k in keys if _in_range(k)}
    assert len(keys) == 8 and len(inside) == 4  # two thread-days a day
    before = _rows(settings)
    state, services = _state(settings)
    try:
        assert state.built_with() == graph_settings(settings)  # the first build recorded them
        assert state.stale() is None
        assert isinstance(h.tick_graph_staleness(), dg.SkipReason)

        # a backfill of two day partitions, as the Dagster UI's picker launches it (one
        # run over the range): those days extracted again, the others untouched
        job = DEFS.resolve_job_def(pipeline.GRAPH_REBUILD_JOB)
        bounded = job.execute_in_process(
            instance=h.instance,
            tags={pipeline.RANGE_START_TAG: RANGE[0], pipeline.RANGE_END_TAG: RANGE[1]},
            raise_on_error=False,
        )
        assert bounded.success, h.logs(bounded)
        events = [
            e
            for e in bounded.get_asset_materialization_events()
            if e.asset_key == dg.AssetKey(pipeline.GRAPH_REBUILD_ASSET)
        ]
        assert sorted(e.partition for e in events) == list(RANGE)  # one per day partition
        meta = materialization_of(events[0])
        assert set(meta["rebuilt_days"]) == inside and meta["days_rebuilt"] == 4
        assert meta["extracted_this_run"] == 4 and meta["failed"] == 0
        assert meta["days_outside_range"] == 4 and meta["every_day"] is False
        assert meta["rebuilt"] == f"days {RANGE[0]}..{RANGE[1]}"
        after = _rows(settings)
        assert set(after) == keys
        for key in keys - inside:
            assert after[key] == before[key], f"{key} is outside the range but was touched"
        for key in inside:
            assert after[key]["created_at"] != before[key]["created_at"], f"{key} not rebuilt"
            assert after[key]["status"] == "processed"
        assert read_manifest(workdir_for(settings)) == manifest  # same days, same text
        logs = "\n".join(h.logs(bounded))
        assert f"rebuilding days {RANGE[0]}..{RANGE[1]}" in logs

        # the chat model overridden (a restart with LLM_MODEL set): the staleness
        # sensor asks for a run, which flags the graph
        moved = built.again(LLM_MODEL="another-chat-model")
        request = h.tick_graph_staleness()
        assert isinstance(request, dg.RunRequest), request
        [flagged] = h.run_requests(request)
        assert flagged.success, h.logs(flagged)
        flag = state.stale()
        assert flag is not None and "LLM_MODEL" in flag.reason
        assert "another-chat-model" in flag.reason
        assert materialization(flagged, pipeline.GRAPH_STALENESS_ASSET)["stale"] is True
        assert isinstance(h.tick_graph_staleness(), dg.SkipReason)  # flagged once

        # a bounded rebuild leaves it stale: the other days keep the old model's work
        again = job.execute_in_process(
            instance=h.instance,
            tags={pipeline.RANGE_START_TAG: RANGE[0], pipeline.RANGE_END_TAG: RANGE[0]},
            raise_on_error=False,
        )
        assert again.success, h.logs(again)
        assert state.stale() is not None

        # every day (as the API and the CLI launch it: the held days, tagged all)
        whole = job.execute_in_process(
            instance=h.instance,
            tags={
                pipeline.RANGE_START_TAG: "2026-03-02",
                pipeline.RANGE_END_TAG: "2026-03-05",
                pipeline.REBUILD_ALL_TAG: "true",
            },
            raise_on_error=False,
        )
        assert whole.success, h.logs(whole)
        meta = materialization_of(
            next(
                e
                for e in whole.get_asset_materialization_events()
                if e.asset_key == dg.AssetKey(pipeline.GRAPH_REBUILD_ASSET)
            )
        )
        assert set(meta["rebuilt_days"]) == keys and meta["every_day"] is True
        assert meta["rebuilt"] == "every day"
        assert state.stale() is None
        assert state.built_with() == graph_settings(moved)
        assert state.built_with()["LLM_MODEL"] == "another-chat-model"  # type: ignore[index]
        assert isinstance(h.tick_graph_staleness(), dg.SkipReason)
        rows = _rows(settings)
        assert all(rows[k]["created_at"] != before[k]["created_at"] for k in keys)
    finally:
        services.close()


def materialization_of(event: dg.DagsterEvent) -> dict[str, Any]:
    """The metadata of one materialization event."""
    return {k: v.value for k, v in event.materialization.metadata.items()}


def test_a_reset_empties_the_graph_keeps_the_archives_and_a_build_gives_it_back(
    built: Built,
) -> None:
    settings, h = built.settings, built.harness
    workdir = workdir_for(settings)
    keys = set(read_manifest(workdir))
    archive = {p.name: p.read_bytes() for p in built.archive.files()}
    job = DEFS.resolve_job_def(pipeline.GRAPH_RESET_JOB)

    # the run holds the graph's write lock: beside another writer it fails, naming it
    with graph_write_lock(settings, holder="a graph export"):
        refused = job.execute_in_process(instance=h.instance, raise_on_error=False)
    assert not refused.success
    failure = next(
        e for e in refused.all_events if e.event_type == dg.DagsterEventType.STEP_FAILURE
    )
    assert "a graph export" in str(failure.step_failure_data.error)
    assert set(read_manifest(workdir)) == keys  # nothing was touched

    state, services = _state(settings)
    try:
        drifted = settings.model_copy(update={"GRAPH_EXTRACT_FORMAT": "json_object"})
        state.observe(drifted, empty=False)  # as a staleness run under other settings
        assert state.stale() is not None
        reset = job.execute_in_process(instance=h.instance, raise_on_error=False)
        assert reset.success, h.logs(reset)
        meta = materialization(reset, pipeline.GRAPH_RESET_ASSET)
        assert meta["days_dropped"] == 8 and meta["archives_kept"] == 1
        assert meta["files_removed"] > 2
        assert workdir.is_dir() and list(workdir.iterdir()) == []  # the folder itself stays
        assert read_manifest(workdir) == {} and read_summary(workdir) is None
        assert {p.name: p.read_bytes() for p in built.archive.files()} == archive
        assert state.stale() is None and state.built_with() is None
        # nothing is rebuilt on its own: the folder did not change
        assert isinstance(h.tick(), dg.SkipReason)

        # building the archive again gives the graph back, every day extracted anew
        rebuilt = DEFS.resolve_job_def(pipeline.GRAPH_BUILD_JOB).execute_in_process(
            instance=h.instance, partition_key="chat.db", raise_on_error=False
        )
        assert rebuilt.success, h.logs(rebuilt)
        assert materialization(rebuilt, "graph_transcripts")["new"] == 8
        assert (
            set(read_manifest(workdir))
            == keys
            == {d.doc_key for d in read_archive(settings.graph_docs_path, "chat.db", tz=UTC)}
        )
        assert (workdir / MANIFEST_FILE).is_file() and (workdir / SUMMARY_FILE).is_file()
        assert state.built_with() == graph_settings(settings)
    finally:
        services.close()
