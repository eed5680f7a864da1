"""The Dagster code location on real parts: sensor ticks and in-process runs.

Embedded Postgres + pgvector, a Tantivy index in a temp dir, the packaged model
servers, an ephemeral Dagster instance; the folder changes and the stores follow.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import dagster as dg
import pytest
import yaml

from tests.support.pipeline import ALL_ASSETS, Harness, search_paths, write_file
from varagity.config import Settings
from varagity.ingest.discovery import partition_key_for
from varagity.services import Services
from varagity_assets.definitions import defs
from varagity_assets.documents.partitions import RANGE_END, RANGE_START

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[2]


def test_definitions_load() -> None:
    graph = defs.resolve_asset_graph()
    keys = {k.to_user_string() for k in graph.get_all_asset_keys()}
    assert keys == ALL_ASSETS
    for sensor in ("docs_folder_sensor", "chunk_contexts_sensor"):
        assert defs.resolve_sensor_def(sensor).default_status == dg.DefaultSensorStatus.RUNNING
    # ingest has no LLM step: blurbs are their own job, on the llm pool, one run at a time
    ingest = defs.resolve_job_def("ingest_documents")
    assert "chunk_contexts" not in ingest.graph.node_dict
    blurbs = defs.resolve_job_def("contextualize_documents")
    assert set(blurbs.graph.node_dict) == {"chunk_contexts"}
    assert defs.resolve_assets_def("chunk_contexts").op.pool == "llm"
    limits = yaml.safe_load((REPO / "dagster_home" / "dagster.yaml").read_text())["concurrency"]
    blurb_limit = next(
        t["limit"]
        for t in limits["runs"]["tag_concurrency_limits"]
        if (t["key"], t["value"]) == next(iter(blurbs.tags.items()))
    )
    # a blurb run never takes the last run slot: the next ingest run always starts
    assert blurb_limit < limits["runs"]["max_concurrent_runs"]


def test_add_change_delete_follow_the_folder(stack_settings: Settings) -> None:
    docs = stack_settings.docs_path
    write_file(docs / "kettle.md", "# Kettle\n\nThe Tern kettle has a warranty of 27 months.\n")
    write_file(docs / "notes/station power.txt", "Aurora station peak output is 4.2 megawatts.\n")
    write_file(docs / "ignored.bin", "not a supported format")
    h = Harness()

    first = h.tick()
    assert isinstance(first, dg.SensorResult)
    # two new files -> one batched run over a partition range
    assert len(first.run_requests) == 1
    assert first.run_requests[0].tags[RANGE_START] == "kettle.md"
    assert first.run_requests[0].tags[RANGE_END] == "notes/station power.txt"
    runs = h.run_requests(first)
    assert all(r.success for r in runs)
    assert h.partitions() == {"kettle.md", "notes/station power.txt"}
    mats = [
        e.partition
        for r in runs
        for e in r.get_asset_materialization_events()
        if e.asset_key == dg.AssetKey("indexed_document")
    ]
    assert sorted(mats) == ["kettle.md", "notes/station power.txt"]
    assert search_paths(stack_settings, "kettle warranty months")[0] == "kettle.md"
    assert search_paths(stack_settings, "megawatts", "bm25")[0] == "notes/station power.txt"

    # nothing changed: the sensor skips; the unsupported file was reported once, by name
    assert "ignored.bin" in json.loads(h.cursor or "{}")["skipped"]
    assert isinstance(h.tick(), dg.SkipReason)

    # change a file: one run for that partition; the old version leaves both stores
    write_file(docs / "kettle.md", "# Kettle\n\nThe Tern kettle now has a warranty of 36 months.\n")
    os.utime(docs / "kettle.md", ns=(1, 2_000_000_000_000_000_000))
    changed = h.tick()
    assert isinstance(changed, dg.SensorResult)
    assert [r.partition_key for r in changed.run_requests] == ["kettle.md"]
    assert all(r.success for r in h.run_requests(changed))
    services = Services.open(stack_settings)
    try:
        versions = services.pg.documents_at_path("kettle.md")
        assert len(versions) == 1
        texts = [
            c.record.content for c in services.retriever("bm25").retrieve("warranty", 5).chunks
        ]
        assert any("36 months" in t for t in texts)
        assert not any("27 months" in t for t in texts)
        assert all(hit.doc_id == versions[0].doc_id for hit in services.bm25.search("warranty", 10))
    finally:
        services.close()

    # delete a file: purged from both stores, partition gone, its artifacts removed
    artifacts = stack_settings.home / "artifacts"
    assert len(list(artifacts.rglob("notes%2Fstation%20power.txt.pkl"))) == 4
    (docs / "notes/station power.txt").unlink()
    deleted = h.tick()
    assert isinstance(deleted, dg.SensorResult)
    assert not deleted.run_requests
    assert h.partitions() == {"kettle.md"}
    assert list(artifacts.rglob("notes%2Fstation%20power.txt.pkl")) == []
    assert len(list(artifacts.rglob("kettle.md.pkl"))) == 4
    assert "notes/station power.txt" not in search_paths(stack_settings, "megawatts", "bm25")
    services = Services.open(stack_settings)
    try:
        assert services.pg.documents_at_path("notes/station power.txt") == []
        assert services.bm25.search("megawatts", 5) == []
    finally:
        services.close()


def test_many_files_become_few_runs(make_settings, pg_url: str, model_urls: dict[str, str]) -> None:
    settings = make_settings(DATABASE_URL=pg_url, INGEST_BATCH_SIZE=4, **model_urls)
    for i in range(10):
        write_file(settings.docs_path / f"f{i:02d}.txt", f"File number {i} talks about topic{i}.\n")
    h = Harness()
    result = h.tick()
    assert isinstance(result, dg.SensorResult)
    assert len(result.run_requests) == 3  # 4 + 4 + 2
    assert all(r.success for r in h.run_requests(result))
    services = Services.open(settings)
    try:
        assert len(services.pg.list_documents()) == 10
    finally:
        services.close()


def test_bad_file_fails_by_name_and_spares_the_batch(stack_settings: Settings) -> None:
    docs = stack_settings.docs_path
    write_file(docs / "good.md", "Useful text about lighthouses and their lenses.\n")
    (docs / "broken.txt").write_bytes(bytes(range(256)) * 8)  # binary named .txt
    h = Harness()
    runs = h.run_requests(h.tick())
    assert len(runs) == 1 and not runs[0].success
    failure = next(e for e in runs[0].all_events if e.event_type_value == "STEP_FAILURE")
    message = str(failure.event_specific_data.error.message)
    assert "broken.txt" in message and "binary" in message
    assert search_paths(stack_settings, "lighthouses lenses", "bm25") == ["good.md"]

    # the next tick re-runs each file of the failed batch alone: good.md materializes,
    # broken.txt fails by itself, and the sensor does not ask again afterwards
    isolate = h.tick()
    assert isinstance(isolate, dg.SensorResult)
    assert sorted(r.partition_key for r in isolate.run_requests) == ["broken.txt", "good.md"]
    solo = {r.dagster_run.tags["dagster/partition"]: r.success for r in h.run_requests(isolate)}
    assert solo == {"good.md": True, "broken.txt": False}
    assert isinstance(h.tick(), dg.SkipReason)


def test_partition_keys_are_reversible() -> None:
    from varagity.ingest.discovery import relative_path_for

    for rel in ["a.md", "dir/b c.txt", "odd...name.md", "100%.md", "tab\there.txt"]:
        key = partition_key_for(rel)
        assert "..." not in key and "\t" not in key
        assert relative_path_for(key) == rel
