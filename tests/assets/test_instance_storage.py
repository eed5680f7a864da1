"""The instance storage of ``dagster_home/dagster.yaml`` on a real Postgres: what its
batched writes leave is what Dagster's one-by-one path leaves."""

import multiprocessing
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import dagster as dg
import pytest
from dagster import AssetExecutionContext
from dagster_postgres import PostgresEventLogStorage, PostgresScheduleStorage

from varagity.stores.postgres import sqlalchemy_psycopg2_url
from varagity_assets import instance_storage

pytestmark = pytest.mark.integration

files = dg.DynamicPartitionsDefinition(name="files")


@dg.asset(partitions_def=files)
def parsed(context: AssetExecutionContext) -> None:
    for key in context.partition_keys:
        context.log.info(key)


@dg.asset(partitions_def=files, deps=[parsed])
def indexed() -> None:
    return None


JOB = dg.define_asset_job("both", selection=[parsed, indexed])
DEFS = dg.Definitions(assets=[parsed, indexed], jobs=[JOB])


@contextmanager
def _instance(url: str) -> Iterator[dg.DagsterInstance]:
    storage = {
        "custom": {
            "module": "varagity_assets.instance_storage",
            "class": "PooledPostgresStorage",
            "config": {"postgres_url": sqlalchemy_psycopg2_url(url)},
        }
    }
    with dg.instance_for_test(overrides={"storage": storage}) as instance:
        assert isinstance(instance.event_log_storage, instance_storage._EventLogStorage)
        yield instance


def _planned_run(instance: dg.DagsterInstance, keys: list[str]) -> dg.DagsterRun:
    instance.add_dynamic_partitions("files", keys)
    return instance.create_run_for_job(
        DEFS.resolve_job_def("both"),
        tags={
            "dagster/asset_partition_range_start": keys[0],
            "dagster/asset_partition_range_end": keys[-1],
        },
    )


def _planned(instance: dg.DagsterInstance, run_id: str) -> list[tuple[str, str | None]]:
    records = instance.get_records_for_run(
        run_id, of_type=dg.DagsterEventType.ASSET_MATERIALIZATION_PLANNED
    ).records
    return [
        (
            r.event_log_entry.get_dagster_event().asset_key.to_user_string(),  # type: ignore[union-attr]
            r.event_log_entry.get_dagster_event().partition,
        )
        for r in records
    ]


def test_a_runs_planned_materializations_are_stored_as_one_by_one(
    pg_url: str, pg_server_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from varagity.stores.postgres import connect, ensure_database

    keys = [f"f{i:02d}.md" for i in range(30)]
    batches: list[int] = []
    store_planned = instance_storage._EventLogStorage._store_planned

    def counting(self: instance_storage._EventLogStorage, events: list) -> None:
        batches.append(len(events))
        store_planned(self, events)

    monkeypatch.setattr(instance_storage._EventLogStorage, "_store_planned", counting)
    with _instance(pg_url) as instance:
        run = _planned_run(instance, keys)
        batched = _planned(instance, run.run_id)
        batched_records = {
            r.asset_entry.asset_key.to_user_string(): r.asset_entry.last_run_id
            for r in instance.get_asset_records()
        }
    # the run's 60 planned events went in batches of at most EVENT_BATCH_SIZE
    assert sum(batches) == 60 and max(batches) <= instance_storage.EVENT_BATCH_SIZE

    # the same run planned by Dagster's one-by-one path, on a second database
    monkeypatch.setenv("DAGSTER_EVENT_BATCH_SIZE", "0")
    batches.clear()
    name = f"{pg_url.rsplit('/', 1)[1]}_seq"
    try:
        with _instance(ensure_database(pg_server_url, name)) as instance:
            run_seq = _planned_run(instance, keys)
            sequential = _planned(instance, run_seq.run_id)
            sequential_records = {
                r.asset_entry.asset_key.to_user_string(): r.asset_entry.last_run_id
                for r in instance.get_asset_records()
            }
    finally:
        with connect(pg_server_url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    assert batches == []
    assert sorted(batched) == sorted(sequential)
    assert sorted(batched) == sorted((a, k) for a in ("parsed", "indexed") for k in keys)
    # each asset's entry names the run that plans it, as store_event leaves it
    assert batched_records == {"parsed": run.run_id, "indexed": run.run_id}
    assert sequential_records == {"parsed": run_seq.run_id, "indexed": run_seq.run_id}


def test_a_multi_partition_steps_materializations_are_one_batch_each(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    keys = [f"g{i:02d}.md" for i in range(12)]
    batches: list[tuple[str, int]] = []
    stock = PostgresEventLogStorage.store_event_batch

    def recording(self: PostgresEventLogStorage, events: Sequence[dg.EventLogEntry]) -> None:
        batches.append((events[0].get_dagster_event().event_type_value, len(events)))
        stock(self, events)

    monkeypatch.setattr(PostgresEventLogStorage, "store_event_batch", recording)
    with _instance(pg_url) as instance:
        instance.add_dynamic_partitions("files", keys)
        result = DEFS.resolve_job_def("both").execute_in_process(
            instance=instance,
            tags={
                "dagster/asset_partition_range_start": keys[0],
                "dagster/asset_partition_range_end": keys[-1],
            },
        )
        assert result.success
        for asset in ("parsed", "indexed"):
            done = instance.get_materialized_partitions(dg.AssetKey(asset))
            assert done == set(keys), asset
    # each step's 12 materializations reached the stock batch path as one batch
    assert batches.count(("ASSET_MATERIALIZATION", 12)) == 2


def test_instances_of_one_process_share_the_storages_engines(pg_url: str) -> None:
    with _instance(pg_url) as first, _instance(pg_url) as second:
        assert first.event_log_storage is not second.event_log_storage
        # each storage answers to its own instance; the connections are the same
        assert first.run_storage._instance is first
        assert second.run_storage._instance is second
        for part in ("run_storage", "event_log_storage", "schedule_storage"):
            engine = getattr(first, part)._engine
            assert getattr(second, part)._engine is engine, part
        # what one instance writes the other reads, and disposing one leaves the other
        first.add_dynamic_partitions("files", ["shared.md"])
        first.dispose()
        assert "shared.md" in second.get_dynamic_partitions("files")

    # a forked process builds its own: it never writes on its parent's connections
    ctx = multiprocessing.get_context("fork")
    parent_engine = id(_engine_of(pg_url))
    with ctx.Pool(1) as pool:
        child_engine, child_sees = pool.apply(_child_engine, (pg_url,))
    assert child_engine != parent_engine and child_sees


def _engine_of(url: str) -> object:
    with _instance(url) as instance:
        return instance.event_log_storage._engine  # type: ignore[attr-defined]


def _child_engine(url: str) -> tuple[int, bool]:
    with _instance(url) as instance:
        engine = instance.event_log_storage._engine  # type: ignore[attr-defined]
        return id(engine), "shared.md" in instance.get_dynamic_partitions("files")


def test_the_instigators_table_is_looked_up_once(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    lookups: list[str] = []
    stock = PostgresScheduleStorage._has_instigators_table

    def counting(self: PostgresScheduleStorage, conn: object) -> bool:
        lookups.append("instigators")
        return stock(self, conn)  # type: ignore[arg-type]

    monkeypatch.setattr(PostgresScheduleStorage, "_has_instigators_table", counting)
    with _instance(pg_url) as instance, _instance(pg_url) as other:
        for _ in range(3):
            assert instance.schedule_storage.has_instigators_table()  # type: ignore[union-attr]
            assert other.schedule_storage.has_instigators_table()  # type: ignore[union-attr]
    assert len(lookups) <= 1


def test_held_connections_survive_a_postgres_restart(pg_url: str) -> None:
    """Each part's held connection is ended under it (as a Postgres restart ends it);
    the next call reconnects instead of failing. Unpinged, the first call after a
    restart raised, and the code server's thread that fails runs of dead workers
    stopped for good on it."""
    from varagity.stores.postgres import connect

    with _instance(pg_url) as instance:
        instance.add_dynamic_partitions("files", ["before.md"])
        backends = set()
        for part in ("run_storage", "event_log_storage", "schedule_storage"):
            with getattr(instance, part)._engine.connect() as conn:
                backends.add(conn.exec_driver_sql("SELECT pg_backend_pid()").scalar())
        with connect(pg_url) as admin:
            ended = [
                admin.execute("SELECT pg_terminate_backend(%s)", (pid,)).fetchone()[0]
                for pid in sorted(backends)
            ]
        assert ended and all(ended)

        assert "before.md" in instance.get_dynamic_partitions("files")  # event log
        assert isinstance(instance.get_runs(), list)  # run storage
        assert isinstance(instance.all_instigator_state(), list)  # schedule storage
        instance.add_dynamic_partitions("files", ["after.md"])
        assert {"before.md", "after.md"} <= set(instance.get_dynamic_partitions("files"))
