"""The Dagster code location on real parts: sensor ticks and in-process runs.

Embedded Postgres + pgvector, a Tantivy index in a temp dir, the packaged model
servers, an ephemeral Dagster instance; the folder changes and the stores follow.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from urllib.parse import urlsplit

import dagster as dg
import pytest
import yaml
from dagster._core.execution.backfill import BulkActionStatus, PartitionBackfill

from tests.conftest import SettingsFactory, free_port
from tests.support.pipeline import ALL_ASSETS, DEFS, Harness, search_paths, write_file
from tests.support.relay import RestartingRelay
from varagity import pipeline
from varagity.config import Settings
from varagity.corpus import list_corpus
from varagity.corpus_lock import folder_watcher_presence
from varagity.doctor import DoctorReport, check_stores
from varagity.files import file_sha256
from varagity.ingest.discovery import partition_key_for
from varagity.records import doc_id_for
from varagity.services import Services
from varagity.stores.corpus_state import CorpusState
from varagity.stores.ingest_failures import failures_by_path
from varagity.stores.postgres import database_url
from varagity_assets.defs.ingest import sensors as folder_sensors

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[2]


def test_definitions_load(monkeypatch: pytest.MonkeyPatch) -> None:
    graph = DEFS.resolve_asset_graph()
    keys = {k.to_user_string() for k in graph.get_all_asset_keys()}
    assert keys == ALL_ASSETS
    for sensor in ("docs_folder_sensor", "chunk_contexts_sensor", "corpus_staleness_sensor"):
        assert DEFS.resolve_sensor_def(sensor).default_status == dg.DefaultSensorStatus.RUNNING
    # the names the GraphQL client uses are the location's
    ingest = DEFS.resolve_job_def(pipeline.INGEST_JOB)
    assert set(ingest.graph.node_dict) == {*pipeline.INGEST_ASSETS, "chunk_checks"}
    assert {
        p.name for p in (DEFS.resolve_assets_def(a).partitions_def for a in pipeline.INGEST_ASSETS)
    } == {pipeline.DOCUMENTS_PARTITIONS}
    # ingest has no LLM step: blurbs are their own job, on the llm pool, one run at a time
    assert "chunk_contexts" not in ingest.graph.node_dict
    blurbs = DEFS.resolve_job_def(pipeline.CONTEXTUALIZE_JOB)
    assert set(blurbs.graph.node_dict) == {"chunk_contexts"}
    assert DEFS.resolve_assets_def("chunk_contexts").op.pool == pipeline.LLM_POOL
    # embedding has no pool: the server serializes requests; ingest runs are tag-limited
    assert DEFS.resolve_assets_def("chunk_embeddings").op.pool is None
    # purges and stale-flag changes are runs of their own jobs, tagged with their stage
    for job, node, stage in (
        (pipeline.PURGE_JOB, "purged_documents", pipeline.STAGE_PURGE),
        (pipeline.STALENESS_JOB, "corpus_staleness", pipeline.STAGE_STALENESS),
    ):
        definition = DEFS.resolve_job_def(job)
        assert set(definition.graph.node_dict) == {node}
        assert definition.tags[pipeline.STAGE_TAG] == stage
    limits = yaml.safe_load((REPO / "dagster_home" / "dagster.yaml").read_text())["concurrency"]
    blurb_limit = next(
        t["limit"]
        for t in limits["runs"]["tag_concurrency_limits"]
        if (t["key"], t["value"]) == (pipeline.STAGE_TAG, blurbs.tags[pipeline.STAGE_TAG])
    )
    # a blurb run never takes the last run slot: the next ingest run always starts
    assert blurb_limit < limits["runs"]["max_concurrent_runs"]


def test_backfills_batch_by_the_ingest_batch_size(monkeypatch: pytest.MonkeyPatch) -> None:
    from varagity.config import get_settings, reset_settings
    from varagity_assets.defs.ingest.per_file import batch_policy

    policy = DEFS.resolve_assets_def("parsed_document").backfill_policy
    assert policy is not None
    assert policy.max_partitions_per_run == get_settings().INGEST_BATCH_SIZE
    for asset in (*pipeline.INGEST_ASSETS, "chunk_contexts"):
        assert DEFS.resolve_assets_def(asset).backfill_policy == policy
    monkeypatch.setenv("INGEST_BATCH_SIZE", "7")
    reset_settings()
    try:
        assert batch_policy().max_partitions_per_run == 7
    finally:
        monkeypatch.delenv("INGEST_BATCH_SIZE")
        reset_settings()


def _materialization(run: dg.ExecuteInProcessResult, asset: str) -> dict[str, object]:
    [event] = [
        e for e in run.get_asset_materialization_events() if e.asset_key == dg.AssetKey(asset)
    ]
    return {k: v.value for k, v in event.materialization.metadata.items()}


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
    assert first.run_requests[0].tags[pipeline.RANGE_START_TAG] == "kettle.md"
    assert first.run_requests[0].tags[pipeline.RANGE_END_TAG] == "notes/station power.txt"
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

    # delete a file: the tick deletes its partition and requests a purge run; the run
    # takes it out of both stores and removes its artifacts, with its own logs
    artifacts = stack_settings.home / "artifacts"
    # one stored value per ingest asset (bm25_index's included)
    assert len(list(artifacts.rglob("notes%2Fstation%20power.txt.pkl"))) == len(
        pipeline.INGEST_ASSETS
    )
    (docs / "notes/station power.txt").unlink()
    deleted = h.tick()
    assert isinstance(deleted, dg.SensorResult)
    [request] = deleted.run_requests
    assert request.job_name == pipeline.PURGE_JOB
    assert h.partitions() == {"kettle.md"}
    assert search_paths(stack_settings, "megawatts", "bm25") == [
        "notes/station power.txt"
    ]  # not yet
    [purge] = h.run_requests(deleted)
    assert purge.success
    assert purge.dagster_run.tags[pipeline.STAGE_TAG] == pipeline.STAGE_PURGE
    assert any(
        m.startswith("purged notes/station power.txt: 1 stored version(s)")
        and m.endswith(f"{len(pipeline.INGEST_ASSETS)} artifact file(s)")
        for m in h.logs(purge)
    )
    meta = _materialization(purge, "purged_documents")
    assert (meta["files_purged"], meta["documents_purged"]) == (1, 1)
    assert list(artifacts.rglob("notes%2Fstation%20power.txt.pkl")) == []
    assert len(list(artifacts.rglob("kettle.md.pkl"))) == len(pipeline.INGEST_ASSETS)
    assert "notes/station power.txt" not in search_paths(stack_settings, "megawatts", "bm25")
    services = Services.open(stack_settings)
    try:
        assert services.pg.documents_at_path("notes/station power.txt") == []
        assert services.bm25.search("megawatts", 5) == []
        assert [d.relative_path for d in services.pg.list_documents()] == ["kettle.md"]
    finally:
        services.close()
    assert isinstance(h.tick(), dg.SkipReason)


def _doctor(settings: Settings) -> DoctorReport:
    services = Services.open(settings)
    try:
        return check_stores(database_url(settings), services.bm25, settings.docs_path, settle_s=0)
    finally:
        services.close()


def _settle(h: Harness) -> None:
    """Tick and run what is asked for until a tick asks for nothing."""
    for _ in range(6):
        result = h.tick()
        if isinstance(result, dg.SkipReason):
            return
        assert all(r.success for r in h.run_requests(result))
    raise AssertionError("the folder sensor kept asking for runs")


def test_a_restore_is_reconciled_with_the_folder(stack_settings: Settings) -> None:
    docs = stack_settings.docs_path
    write_file(docs / "first.md", "# Kettles\n\nThe Tern K2 kettle boils a litre in 3 minutes.\n")
    write_file(docs / "recipes/oat-flatbread.md", "# Oat flatbread\n\nRest the dough 20 minutes.\n")
    h = Harness()
    _settle(h)
    exported = DEFS.resolve_job_def(pipeline.BACKUP_JOB).execute_in_process(
        instance=h.instance, partition_key="rag"
    )
    assert exported.success
    [name] = [p.name for p in (docs / "varagity-exports").glob("varagity-rag-*.zip")]

    # this week: a file added, one deleted, one changed; the stores follow the folder
    write_file(docs / "quokka.md", "# Quokkas\n\nA quokka weighs about 3 kilograms.\n")
    (docs / "recipes/oat-flatbread.md").unlink()
    write_file(docs / "first.md", "# Kettles\n\nThe Tern K2 kettle boils a litre in 2 minutes.\n")
    os.utime(docs / "first.md", ns=(1, 1_000_000_000_000_000_000))  # in the past: settled
    _settle(h)
    assert _doctor(stack_settings).ok

    # last week's bundle comes back: the restore says what the folder has that it lacks
    restore = DEFS.resolve_job_def(pipeline.RESTORE_JOB).execute_in_process(
        instance=h.instance,
        run_config={"ops": {"restore_corpus": {"config": {"corpus": "rag", "name": name}}}},
    )
    assert restore.success
    counts = [c for c in map(pipeline.parse_reconcile_line, h.logs(restore)) if c is not None]
    assert counts == [{"to_ingest": 2, "to_purge": 1, "failed": 0}]
    broken = {(p.invariant, p.subject.split(" ")[0]) for p in _doctor(stack_settings).problems}
    assert broken == {
        ("indexed_once", "quokka.md"),
        ("indexed_once", "first.md"),
        ("no_orphans", "recipes/oat-flatbread.md"),
    }

    # the folder sensor diffs the folder against the stores, not only its cursor
    tick = h.tick()
    assert isinstance(tick, dg.SensorResult)
    reconciling = sorted(r.tags[pipeline.RECONCILE_TAG] for r in tick.run_requests)
    assert reconciling == ["ingest", "purge"]
    assert all(r.success for r in h.run_requests(tick))
    assert isinstance(h.tick(), dg.SkipReason)
    assert _doctor(stack_settings).ok
    assert search_paths(stack_settings, "quokka kilograms", "bm25")[0] == "quokka.md"
    assert "2 minutes" in " ".join(c.record.content for c in _retrieve(stack_settings, "Tern"))

    # a hand edit of the database: the sensor asks once for what it lost, not every tick
    services = Services.open(stack_settings)
    try:
        [quokka] = services.pg.documents_at_path("quokka.md")
        services.pg.delete_documents([quokka.doc_id])
        services.bm25.delete_documents([quokka.doc_id])
    finally:
        services.close()
    again = h.tick()
    assert isinstance(again, dg.SensorResult)
    assert [r.partition_key for r in again.run_requests] == ["quokka.md"]
    assert isinstance(h.tick(), dg.SkipReason)  # asked for already: not again
    assert all(r.success for r in h.run_requests(again))
    assert _doctor(stack_settings).ok


def _retrieve(settings: Settings, query: str) -> list:
    services = Services.open(settings)
    try:
        return list(services.retriever("bm25").retrieve(query, 5).chunks)
    finally:
        services.close()


def _error_text(info: object) -> str:
    """An event's error and every error it was raised from, as one text."""
    parts = []
    while info is not None:
        parts.append(str(getattr(info, "message", "")))
        info = getattr(info, "cause", None)
    return "\n".join(parts)


@pytest.mark.parametrize("answer", [None, 503], ids=["connection-reset", "http-503"])
def test_a_model_server_outage_retries_the_step_not_the_files(
    make_settings: SettingsFactory, pg_url: str, model_urls: dict[str, str], answer: int | None
) -> None:
    """The embedding server is down when the batch reaches its embed step: it resets
    connections (being restarted) or answers 503 (still loading), past the client's own
    retries. The step is retried under the step retry policy, each retry an event of the
    run, and once the server answers again every file is indexed; none is failed for
    the server's state."""
    real = urlsplit(model_urls["EMBEDDING_BASE_URL"])
    relay = RestartingRelay(
        free_port(), (real.hostname or "127.0.0.1", real.port or 80), down_s=3.0, answer=answer
    )
    settings = make_settings(
        DATABASE_URL=pg_url,
        LLM_BASE_URL=model_urls["LLM_BASE_URL"],
        EMBEDDING_BASE_URL=f"http://127.0.0.1:{relay.port}/v1",
        MODEL_MAX_RETRIES=1,
        MODEL_STEP_RETRY_DELAY_S=2.0,  # retries after 0-4 s, then 4-8 s, ...
    )
    for name in ("a.md", "b.md"):
        write_file(settings.docs_path / name, f"The {name} kettle boils in 3 minutes.\n")
    h = Harness()
    try:
        [run] = h.run_requests(h.tick())
    finally:
        relay.close()
    assert run.success
    # what the run view lists: the instance's event log of the run
    events = [e.dagster_event for e in h.instance.all_logs(run.run_id) if e.dagster_event]
    retried = [e for e in events if e.event_type == dg.DagsterEventType.STEP_UP_FOR_RETRY]
    restarted = [e for e in events if e.event_type == dg.DagsterEventType.STEP_RESTARTED]
    assert retried and {e.step_key for e in retried} == {"chunk_embeddings"}
    assert len(restarted) == len(retried)
    assert all(e.step_key == "chunk_embeddings" for e in restarted)
    expected = "HTTP 503" if answer else "cannot connect"
    assert all(expected in _error_text(e.event_specific_data.error) for e in retried)
    assert any("retrying the step in" in line for line in h.logs(run))
    assert relay.resets >= 2 and relay.relayed >= 1  # the client's own retry, then the step's
    services = Services.open(settings)
    try:
        assert {d.relative_path for d in services.pg.list_documents()} == {"a.md", "b.md"}
        assert failures_by_path(services.pg) == {}
    finally:
        services.close()


def test_a_blurb_run_in_flight_does_not_hold_back_a_purge(stack_settings: Settings) -> None:
    """Only an ingest run could write a removed file back; a blurb run re-checks the
    document before each write, so the purge goes ahead while it runs (a long blurb
    run used to leave the removed file searchable until it ended)."""
    docs = stack_settings.docs_path
    write_file(docs / "drone.md", "The Velo-9 drone battery lasts 47 minutes.\n")
    h = Harness()
    assert all(r.success for r in h.run_requests(h.tick()))
    h.instance.create_run_for_job(
        DEFS.resolve_job_def(pipeline.CONTEXTUALIZE_JOB),
        status=dg.DagsterRunStatus.STARTED,
        tags={pipeline.PARTITION_TAG: "drone.md"},
    )
    (docs / "drone.md").unlink()
    purging = h.tick()
    assert isinstance(purging, dg.SensorResult)
    [purge] = h.run_requests(purging)
    assert purge.success and h.partitions() == set()
    assert search_paths(stack_settings, "drone battery", "bm25") == []


def test_a_file_removed_during_its_run_is_purged_after_it_and_can_come_back(
    stack_settings: Settings,
) -> None:
    docs = stack_settings.docs_path
    text = "The Velo-9 drone battery lasts 47 minutes.\n"
    write_file(docs / "drone.md", text)
    h = Harness()
    assert all(r.success for r in h.run_requests(h.tick()))
    mtime = (docs / "drone.md").stat().st_mtime_ns

    # a run for the file is in flight when the file goes: the purge waits for that run,
    # so the run cannot write the file back after it was purged
    in_flight = h.instance.create_run_for_job(
        DEFS.resolve_job_def(pipeline.INGEST_JOB),
        status=dg.DagsterRunStatus.STARTED,
        tags={pipeline.PARTITION_TAG: "drone.md"},
    )
    (docs / "drone.md").unlink()
    waiting = h.tick()
    assert isinstance(waiting, dg.SkipReason) and "wait for their runs" in str(waiting.skip_message)
    assert h.partitions() == {"drone.md"}
    assert search_paths(stack_settings, "drone battery", "bm25") == ["drone.md"]
    assert isinstance(h.tick(), dg.SkipReason)  # still waiting: nothing is forgotten
    h.instance.report_run_failed(in_flight)

    purging = h.tick()
    assert isinstance(purging, dg.SensorResult)
    [purge] = h.run_requests(purging)
    assert purge.success and h.partitions() == set()
    assert search_paths(stack_settings, "drone battery", "bm25") == []

    # the same file put back, same bytes and mtime: a new partition and a new run
    write_file(docs / "drone.md", text)
    os.utime(docs / "drone.md", ns=(mtime, mtime))
    back = h.tick()
    assert isinstance(back, dg.SensorResult)
    [request] = back.run_requests
    assert request.job_name == pipeline.INGEST_JOB and request.partition_key == "drone.md"
    assert all(r.success for r in h.run_requests(back))
    assert search_paths(stack_settings, "drone battery", "bm25") == ["drone.md"]

    # removed again, and put back while its purge run is still queued: the file waits
    # for that run, which keeps what is back in the folder; then it is ingested again
    (docs / "drone.md").unlink()
    second = h.tick()
    assert isinstance(second, dg.SensorResult)
    [purge_request] = second.run_requests
    queued = h.instance.create_run_for_job(
        DEFS.resolve_job_def(pipeline.PURGE_JOB),
        status=dg.DagsterRunStatus.NOT_STARTED,
        run_config=purge_request.run_config,
    )
    write_file(docs / "drone.md", text)
    held = h.tick()
    assert isinstance(held, dg.SkipReason) and h.partitions() == set()
    h.instance.report_run_canceled(queued)
    [kept] = h.run_requests(second)
    assert kept.success
    assert "drone.md is back in the folder: its stored versions are kept" in h.logs(kept)
    assert _materialization(kept, "purged_documents")["files_purged"] == 0
    again = h.tick()
    assert isinstance(again, dg.SensorResult)
    assert [r.partition_key for r in again.run_requests] == ["drone.md"]
    assert all(r.success for r in h.run_requests(again))
    assert h.partitions() == {"drone.md"}
    assert search_paths(stack_settings, "drone battery", "bm25") == ["drone.md"]


def test_stale_flag_changes_are_runs_with_logs(
    make_settings: SettingsFactory, pg_url: str, model_urls: dict[str, str]
) -> None:
    settings = make_settings(DATABASE_URL=pg_url, CHUNK_SIZE=600, **model_urls)
    write_file(settings.docs_path / "soup.txt", "Red lentil soup simmers for 25 minutes.\n")
    h = Harness()
    assert all(r.success for r in h.run_requests(h.tick()))

    # nothing recorded the corpus's settings yet: one run records them
    [adopt] = h.run_requests(h.tick_staleness())
    assert adopt.success
    assert adopt.dagster_run.tags[pipeline.STAGE_TAG] == pipeline.STAGE_STALENESS
    assert "the corpus matches the ingest settings" in h.logs(adopt)
    assert isinstance(h.tick_staleness(), dg.SkipReason)

    # a reingest-affecting setting changes: one run raises the flag and says why
    make_settings(DATABASE_URL=pg_url, CHUNK_SIZE=300, **model_urls)
    [raised] = h.run_requests(h.tick_staleness())
    assert raised.success
    [warning] = [m for m in h.logs(raised) if m.startswith("corpus is stale")]
    assert "CHUNK_SIZE 600->300" in warning and pipeline.REINGEST_TAG in warning
    assert _materialization(raised, "corpus_staleness")["stale"] is True
    services = Services.open(settings)
    try:
        corpus = CorpusState(services.pg)
        flag = corpus.stale()
        assert flag is not None and "CHUNK_SIZE 600->300" in flag.reason
        # the same drift asks again with the same run key: Dagster launches nothing more
        assert h.run_requests(h.tick_staleness()) == []

        # a reingest backfill completes after the flag: one run clears it
        h.instance.add_backfill(
            PartitionBackfill(
                backfill_id="reingest1",
                status=BulkActionStatus.COMPLETED_SUCCESS,
                from_failure=False,
                tags={pipeline.REINGEST_TAG: "true"},
                backfill_timestamp=max(time.time(), flag.since.timestamp() + 1),
            )
        )
        [cleared] = h.run_requests(h.tick_staleness())
        assert cleared.success
        assert any("reingest1" in m and "stale flag cleared" in m for m in h.logs(cleared))
        assert _materialization(cleared, "corpus_staleness")["stale"] is False
        assert corpus.stale() is None
        assert corpus.built_with() == {**(corpus.built_with() or {}), "CHUNK_SIZE": "300"}
    finally:
        services.close()
    assert isinstance(h.tick_staleness(), dg.SkipReason)


def test_many_files_become_few_runs(make_settings, pg_url: str, model_urls: dict[str, str]) -> None:
    settings = make_settings(DATABASE_URL=pg_url, INGEST_BATCH_SIZE=4, **model_urls)
    for i in range(10):
        write_file(settings.docs_path / f"f{i:02d}.txt", f"File number {i} talks about topic{i}.\n")
    h = Harness()
    result = h.tick()
    assert isinstance(result, dg.SensorResult)
    # a quarter and a three-quarter run first, so that two ingest runs work out of step,
    # then full ones (a one-file run names its partition)
    assert [r.tags.get(pipeline.FILES_TAG) for r in result.run_requests] == [None, "3", "4", "2"]
    assert result.run_requests[0].partition_key == "f00.txt"
    assert all(r.success for r in h.run_requests(result))
    # each file's materializations carry its own metadata (added per partition key)
    run_sizes = [1, 3, 3, 3, 4, 4, 4, 4, 2, 2]
    for i in range(10):
        key = f"f{i:02d}.txt"
        for asset, stage, field in (
            ("document_chunks", "chunk", "chunks"),
            ("chunk_embeddings", "embed", "vectors"),
            ("indexed_document", "store", "chunks"),
        ):
            (record,) = h.instance.fetch_materializations(
                dg.AssetRecordsFilter(asset_key=dg.AssetKey(asset), asset_partitions=[key]),
                limit=1,
            ).records
            metadata = record.asset_materialization.metadata  # type: ignore[union-attr]
            assert metadata[field].value == 1, (asset, key)
            assert f"{stage}_seconds" in metadata, (asset, key)
            if stage != "chunk" and i > 0:  # embedded and stored with its run's others
                assert metadata[f"{stage}_batch_files"].value == run_sizes[i]
                assert metadata[f"{stage}_batch_seconds"].value > 0, (asset, key)
            elif stage != "chunk":  # the first run's lone file: nothing done together
                assert f"{stage}_batch_files" not in metadata
        # this file's own: the doc id of its path and content, not a neighbour's
        (record,) = h.instance.fetch_materializations(
            dg.AssetRecordsFilter(
                asset_key=dg.AssetKey("indexed_document"), asset_partitions=[key]
            ),
            limit=1,
        ).records
        stored = record.asset_materialization.metadata["doc_id"].value  # type: ignore[union-attr]
        assert stored == doc_id_for(key, file_sha256(settings.docs_path / key))
    services = Services.open(settings)
    try:
        documents = services.pg.list_documents()
        assert len(documents) == 10
        # a run embeds its files' chunks together: each vector still lands on its chunk
        for doc in documents:
            (chunk,) = services.pg.chunks_of(doc.doc_id)
            (vector,) = services.embedder.embed_passages([chunk.content])
            (nearest, _), *_ = services.pg.search(vector, 1)
            assert nearest.chunk_id == chunk.chunk_id, doc.relative_path
    finally:
        services.close()


def test_large_files_are_cut_into_runs_by_bytes(
    make_settings, pg_url: str, model_urls: dict[str, str]
) -> None:
    settings = make_settings(
        DATABASE_URL=pg_url, INGEST_BATCH_SIZE=50, INGEST_BATCH_BYTES=3000, **model_urls
    )
    sizes = [1000, 1000, 1000, 2500, 500, 4000, 100, 100]
    for i, size in enumerate(sizes):
        write_file(settings.docs_path / f"g{i}.txt", ("word " * size)[:size])
    result = Harness().tick()
    assert isinstance(result, dg.SensorResult)
    # in order, at most 3000 bytes a run (1000 x 3 | 2500 + 500 | 4000 alone | 100 x 2)
    assert [
        (r.partition_key, r.tags.get(pipeline.RANGE_START_TAG), r.tags.get(pipeline.FILES_TAG))
        for r in result.run_requests
    ] == [
        (None, "g0.txt", "3"),
        (None, "g3.txt", "2"),
        ("g5.txt", None, None),
        (None, "g6.txt", "2"),
    ]


def test_a_file_an_upload_run_is_ingesting_is_not_requested_again(
    stack_settings: Settings,
) -> None:
    """The upload route adds the partition and launches the run; the sensor then sees a
    file it has not seen, whose partition exists: it waits for that run."""
    docs = stack_settings.docs_path
    write_file(docs / "up.md", "# Uploaded\n\nThe Orbo lamp runs 19 hours on a charge.\n")
    h = Harness()
    h.instance.add_dynamic_partitions(pipeline.DOCUMENTS_PARTITIONS, ["up.md"])
    # the route has added the partition, its run is not there yet: the sensor waits a tick
    assert isinstance(h.tick(), dg.SkipReason)
    in_flight = h.instance.create_run_for_job(
        DEFS.resolve_job_def(pipeline.INGEST_JOB),
        status=dg.DagsterRunStatus.STARTED,
        tags={pipeline.PARTITION_TAG: "up.md", pipeline.SOURCE_TAG: "upload"},
    )
    assert isinstance(h.tick(), dg.SkipReason)
    assert isinstance(h.tick(), dg.SkipReason)  # still in flight: still nothing asked
    # that run died before indexing the file: the sensor asks for it now
    h.instance.report_run_failed(in_flight)
    retry = h.tick()
    assert isinstance(retry, dg.SensorResult)
    assert [r.partition_key for r in retry.run_requests] == ["up.md"]
    assert all(r.success for r in h.run_requests(retry))
    assert search_paths(stack_settings, "Orbo lamp", "bm25") == ["up.md"]
    assert isinstance(h.tick(), dg.SkipReason)


def test_a_file_that_just_landed_is_left_to_a_live_folder_watcher(
    stack_settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While the API's folder watcher says it is live, the sensor leaves a file that
    landed moments ago to it (both asking could make two runs of it) and takes it once
    the grace is over; with no watcher live, at once."""
    docs = stack_settings.docs_path
    write_file(docs / "landed.md", "# Landed\n\nThe Pemba kite flies in 9 knots of wind.\n")
    h = Harness()
    with folder_watcher_presence(database_url(stack_settings)):
        left = h.tick()
        assert isinstance(left, dg.SkipReason)
        assert "1 file(s) that just landed are the folder watcher's" in str(left.skip_message)
        assert h.instance.get_dynamic_partitions(pipeline.DOCUMENTS_PARTITIONS) == []
        with monkeypatch.context() as later:
            later.setattr(folder_sensors, "_WATCHER_GRACE_NS", 0)
            taken = h.tick()
        assert isinstance(taken, dg.SensorResult)
        assert [r.partition_key for r in taken.run_requests] == ["landed.md"]
        assert all(r.success for r in h.run_requests(taken))
        # a file the watcher indexed and that went again before the grace was over is
        # still purged: the sensor kept it in its cursor, unhashed
        write_file(docs / "brief.md", "# Brief\n\nThe Pemba kite bag weighs 800 g.\n")
        assert isinstance(h.tick(), dg.SkipReason)
        h.instance.add_dynamic_partitions(pipeline.DOCUMENTS_PARTITIONS, ["brief.md"])
        [watchers_run] = h.run_requests(dg.RunRequest(partition_key="brief.md"))
        assert watchers_run.success
        assert search_paths(stack_settings, "Pemba kite bag", "bm25")[0] == "brief.md"
        (docs / "brief.md").unlink()
        gone = h.tick()
        assert isinstance(gone, dg.SensorResult)
        [purge] = h.run_requests(gone)
        assert purge.success and purge.dagster_run.job_name == pipeline.PURGE_JOB
        assert "brief.md" not in search_paths(stack_settings, "Pemba kite bag", "bm25")
        # and one the sensor never saw at all (landed, indexed and gone between ticks)
        write_file(docs / "quick.md", "# Quick\n\nThe Pemba kite line is 24 m long.\n")
        h.instance.add_dynamic_partitions(pipeline.DOCUMENTS_PARTITIONS, ["quick.md"])
        assert all(r.success for r in h.run_requests(dg.RunRequest(partition_key="quick.md")))
        (docs / "quick.md").unlink()
        unseen = h.tick()
        assert isinstance(unseen, dg.SensorResult)
        assert all(r.success for r in h.run_requests(unseen))
        assert "quick.md" not in search_paths(stack_settings, "Pemba kite line", "bm25")
        assert "quick.md" not in h.partitions()
        # one that went before anything ingested it leaves nothing to purge
        write_file(docs / "blip.md", "# Blip\n\nGone at once.\n")
        assert isinstance(h.tick(), dg.SkipReason)
        (docs / "blip.md").unlink()
        assert isinstance(h.tick(), dg.SkipReason)
        assert "blip.md" not in json.loads(h.cursor or "{}")["files"]
    write_file(docs / "next.md", "# Next\n\nThe Pemba kite packs into 2 litres.\n")
    at_once = h.tick()  # the watcher is gone
    assert isinstance(at_once, dg.SensorResult)
    assert [r.partition_key for r in at_once.run_requests] == ["next.md"]


def _crash(h: Harness, request: dg.RunRequest) -> None:
    """A run whose worker died: started, then failed by run monitoring (no step failed)."""
    run = h.instance.create_run_for_job(
        DEFS.resolve_job_def(request.job_name or pipeline.INGEST_JOB),
        tags=dict(request.tags),
        status=dg.DagsterRunStatus.STARTED,
    )
    h.instance.report_run_failed(run)
    assert request.run_key is not None
    h.launched_keys.add(request.run_key)


def test_crashed_batch_is_recovered_in_batches(
    make_settings, pg_url: str, model_urls: dict[str, str]
) -> None:
    """Issue 12 #3: a crashed batch's files were re-run one run per file."""
    settings = make_settings(DATABASE_URL=pg_url, INGEST_BATCH_SIZE=4, **model_urls)
    for i in range(6):  # runs of 1, 3 and 2 files (ingest_batches)
        write_file(settings.docs_path / f"f{i}.txt", f"File {i} is about subject{i}.\n")
    h = Harness()
    first = h.tick()
    assert isinstance(first, dg.SensorResult) and len(first.run_requests) == 3
    lone, crashed, rest = first.run_requests
    assert crashed.tags[pipeline.FILES_TAG] == "3"
    _crash(h, crashed)
    assert all(r.success for r in h.run_requests(dg.SensorResult(run_requests=[lone, rest])))

    recovery = h.tick()
    assert isinstance(recovery, dg.SensorResult)
    (again,) = recovery.run_requests  # one batch run, not one run per file
    assert again.partition_key is None
    assert again.tags[pipeline.RANGE_START_TAG] == crashed.tags[pipeline.RANGE_START_TAG]
    assert again.tags[pipeline.RANGE_END_TAG] == crashed.tags[pipeline.RANGE_END_TAG]
    # the recovery run crashes too: now its files are re-run one each, to find the one
    # that kills its worker
    _crash(h, again)
    solo = h.tick()
    assert isinstance(solo, dg.SensorResult)
    assert sorted(r.partition_key or "" for r in solo.run_requests) == [
        "f1.txt",
        "f2.txt",
        "f3.txt",
    ]
    assert all(r.success for r in h.run_requests(solo))
    assert isinstance(h.tick(), dg.SkipReason)
    services = Services.open(settings)
    try:
        assert len(services.pg.list_documents()) == 6
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
    solo = {r.dagster_run.tags[pipeline.PARTITION_TAG]: r.success for r in h.run_requests(isolate)}
    assert solo == {"good.md": True, "broken.txt": False}
    assert isinstance(h.tick(), dg.SkipReason)

    # the corpus listing says broken.txt failed, and why (not "pending" forever)
    services = Services.open(stack_settings)
    try:
        listed = {e.relative_path: e for e in list_corpus(services.pg, docs)}
        assert listed["good.md"].status == "indexed" and listed["good.md"].reason is None
        assert listed["broken.txt"].status == "failed"
        assert "binary" in (listed["broken.txt"].reason or "")
        # fixed: pending again until the next run stores it, then indexed, reason gone
        time.sleep(0.01)
        write_file(docs / "broken.txt", "Now plain text about harbour cranes.\n")
        assert {e.relative_path: e.status for e in list_corpus(services.pg, docs)}[
            "broken.txt"
        ] == "pending"
        assert all(r.success for r in h.run_requests(h.tick()))
        fixed = {e.relative_path: e for e in list_corpus(services.pg, docs)}["broken.txt"]
        assert (fixed.status, fixed.reason) == ("indexed", None)
    finally:
        services.close()


def test_partition_keys_are_reversible() -> None:
    from varagity.ingest.discovery import relative_path_for

    for rel in ["a.md", "dir/b c.txt", "odd...name.md", "100%.md", "tab\there.txt"]:
        key = partition_key_for(rel)
        assert "..." not in key and "\t" not in key
        assert relative_path_for(key) == rel
