"""Dagster's Postgres instance storage, holding its connections open.

``dagster_postgres`` opens a new connection for every storage call outside the
webserver (its engines use ``NullPool``). A run worker makes several such calls per
file of its batch: each ``add_asset_metadata`` for a partition checks the run's
partition range against the dynamic partitions table, and each event is one write.
Measured on the 2-core machine, connection setup (TCP or socket, auth, an SSL context
even on a Unix socket) was a tenth of a 25-file ingest run's CPU. This class is the
stock storage with the webserver's pooling switched on in every process that loads
the instance (daemon, code server, run workers): one connection held per storage,
overflow for concurrent threads, recycled hourly. The event log also remembers which
tables it has seen: before every dynamic-partitions query it asks the catalog whether
``dynamic_partitions`` exists (a further 15% of the run's CPU), and a table Dagster
created does not go away under a running process; the schedule storage does the same
for its instigators table, which every sensor tick asks about. Dagster builds an
instance for every sensor tick, orphan check and run launch; within a process they all
share the first storage's pooled engines (:meth:`PooledPostgresStorage.from_config_value`)
instead of opening connections of their own. ``dagster_home/dagster.yaml``
selects it as ``storage: custom``; its config is the stock ``postgres`` storage's.

Every process that loads this storage also writes events in batches: a multi-partition
step's materializations (one per file per asset) go to Postgres as one multi-row
insert per asset instead of one insert, ``NOTIFY`` and index transaction each.
Dagster's switch for that is the ``DAGSTER_EVENT_BATCH_SIZE`` environment variable,
read on every event; importing this module sets it to :data:`EVENT_BATCH_SIZE` unless
the environment already sets it, so ``varagity up`` and ``compose.yaml`` need nothing.

Batches of planned materializations (written when a run is created) are stored with
one insert, too (:meth:`_EventLogStorage.store_event_batch`).

Pooling builds the engine the storages' ``optimize_for_webserver`` would, plus a ping
of each connection as it is checked out (a held connection must survive a Postgres
restart); the constructor does what ``DagsterPostgresStorage.__init__`` does with our
event log in place of the stock one, setting its private attributes (no setting offers
either), so a Dagster upgrade can break this module, and with it every stack test.
"""

from __future__ import annotations

import itertools
import os
import threading
from collections.abc import Sequence
from typing import Any, TypeVar

from dagster import AssetKey, DagsterEventType, EventLogEntry
from dagster._core.storage.base_storage import DagsterStorage
from dagster._core.storage.event_log.schema import SqlEventLogStorageTable
from dagster._serdes import ConfigurableClassData
from dagster_postgres import (
    DagsterPostgresStorage,
    PostgresEventLogStorage,
    PostgresRunStorage,
    PostgresScheduleStorage,
)
from dagster_postgres.auth import PgTokenProvider
from dagster_postgres.utils import (
    create_pg_engine,
    get_token_provider_from_config,
    pg_url_from_config,
)
from sqlalchemy.engine import Connection, Engine

# a daemon runs a thread per daemon kind and sensor evaluations in a small pool: beyond
# the held connection, up to this many more open on demand and close when returned
_MAX_OVERFLOW = 8
_RECYCLE_SECONDS = 3600

_PLANNED = DagsterEventType.ASSET_MATERIALIZATION_PLANNED
_T = TypeVar("_T")

EVENT_BATCH_SIZE = 100
"""Events per batched write (a batch ends sooner with its step's last partition)."""
os.environ.setdefault("DAGSTER_EVENT_BATCH_SIZE", str(EVENT_BATCH_SIZE))


class _EventLogStorage(PostgresEventLogStorage):
    """The stock event log, asking the catalog about a table only until it exists, and
    writing a batch of planned materializations at once."""

    def __init__(self, postgres_url: str, **kwargs: Any) -> None:
        super().__init__(postgres_url, **kwargs)
        self._tables_seen: set[str] = set()

    def has_table(self, table_name: str) -> bool:
        """Whether ``table_name`` exists; once it has, without a query."""
        if table_name in self._tables_seen:
            return True
        found = super().has_table(table_name)
        if found:
            self._tables_seen.add(table_name)
        return found

    def store_event_batch(self, events: Sequence[EventLogEntry]) -> None:
        """Store ``events`` in order; each run of consecutive planned materializations
        in one insert and one index transaction, the rest as the stock batch path does
        (a step's materializations in one insert).

        Creating a run plans one materialization per file and asset (200 events for a
        50-file ingest run), and Dagster's batch path stores those one by one: an insert
        with its ``NOTIFY`` and an index transaction each. What the sequential path
        would leave is left: the rows in order, their asset tags, and for each asset key
        its entry updated from its last planned event (as ``store_event`` does for each).
        """
        for planned, group in itertools.groupby(
            events, key=lambda e: e.dagster_event_type == _PLANNED
        ):
            batch = list(group)
            if planned and len(batch) > 1:
                self._store_planned(batch)
            else:
                super().store_event_batch(batch)

    def _store_planned(self, events: Sequence[EventLogEntry]) -> None:
        with self._connect() as conn:
            result = conn.execute(
                self.prepare_insert_event_batch(events).returning(SqlEventLogStorageTable.c.id)
            )
            ids = [int(row[0]) for row in result.fetchall()]
        last: dict[AssetKey | None, tuple[EventLogEntry, int]] = {}
        for event, event_id in zip(events, ids, strict=True):
            last[event.get_dagster_event().asset_key] = (event, event_id)
        with self.index_transaction() as conn:
            self._store_asset_event_tags(conn, events, ids)
            for event, event_id in last.values():
                self._store_asset_event(conn, event, event_id)


class _ScheduleStorage(PostgresScheduleStorage):
    """The stock schedule storage, asking the catalog for the instigators table only
    until it exists: stock, every sensor tick's state reads and writes ask again (a
    catalog query each, a fifth of the daemon's busy time while ingesting)."""

    def __init__(self, postgres_url: str, *args: Any, **kwargs: Any) -> None:
        self._tables_seen: set[str] = set()  # shared with the storage's siblings
        super().__init__(postgres_url, *args, **kwargs)  # (which asks already)

    def _has_instigators_table(self, conn: Connection) -> bool:
        if "instigators" not in self._tables_seen and super()._has_instigators_table(conn):
            self._tables_seen.add("instigators")
        return "instigators" in self._tables_seen


class PooledPostgresStorage(DagsterPostgresStorage):
    """:class:`DagsterPostgresStorage` whose run, event-log and schedule storages pool."""

    def __init__(
        self,
        postgres_url: str,
        should_autocreate_tables: bool = True,
        inst_data: ConfigurableClassData | None = None,
        token_provider: PgTokenProvider | None = None,
    ) -> None:
        """Open the stock run and schedule storages and our event log (what
        ``DagsterPostgresStorage.__init__`` does, less the stock event log it would open
        and we would throw away: every sensor tick builds an instance), then give each a
        pooled engine."""
        self.postgres_url = postgres_url
        self.should_autocreate_tables = should_autocreate_tables
        self._inst_data = inst_data
        self._run_storage = PostgresRunStorage(
            postgres_url, should_autocreate_tables, token_provider=token_provider
        )
        self._event_log_storage = _EventLogStorage(
            postgres_url,
            should_autocreate_tables=should_autocreate_tables,
            token_provider=token_provider,
        )
        self._schedule_storage = _ScheduleStorage(
            postgres_url, should_autocreate_tables, token_provider=token_provider
        )
        DagsterStorage.__init__(self)  # type: ignore[arg-type]  # (what super() would call)
        for storage in (self._run_storage, self._event_log_storage, self._schedule_storage):
            storage._engine = _pooled_engine(storage)

    @classmethod
    def from_config_value(
        cls, inst_data: ConfigurableClassData | None, config_value: Any
    ) -> PooledPostgresStorage:
        """Build from ``dagster.yaml``'s ``storage: custom: config:`` block; within a
        process, once per configuration, and as a copy sharing the first one's engines.

        Dagster builds an instance, and so this storage, for every sensor tick and every
        orphan check in the code server and for every run the daemon launches: a
        connection and a catalog query per part, then a connection for each pooled
        engine (measured: 2% of a core on the code server and the daemon alone while
        ingesting, and a Postgres backend started per connection). Later builds in the
        process get a shallow copy of the first: its pooled engines and process-wide
        caches, with no instance registered (an instance registers itself with its
        storages once) and no event watcher of its own yet. Keyed by process id, so a
        forked process never uses its parent's connections. With a token provider
        (rotating credentials) every build is fresh, as stock.
        """
        url = pg_url_from_config(config_value)
        autocreate = config_value.get("should_autocreate_tables", True)
        token_provider = get_token_provider_from_config(config_value)
        if token_provider is not None:
            return cls(url, autocreate, inst_data, token_provider)
        key = (os.getpid(), url, autocreate, inst_data)
        with _BUILT_LOCK:
            if (first := _BUILT.get(key)) is None:
                first = _BUILT[key] = cls(url, autocreate, inst_data)
        return first._sibling()

    def _sibling(self) -> PooledPostgresStorage:
        """A storage sharing this one's engines and caches, for another instance."""
        sibling = _unregistered_copy(self)
        sibling._run_storage = _unregistered_copy(self._run_storage)
        sibling._event_log_storage = _unregistered_copy(self._event_log_storage)
        sibling._event_log_storage._event_watcher = None
        sibling._schedule_storage = _unregistered_copy(self._schedule_storage)
        return sibling


def _pooled_engine(storage: Any) -> Engine:
    """The engine ``optimize_for_webserver`` gives ``storage`` (one held connection,
    overflow, hourly recycling; no statement timeout, as stock outside the webserver),
    with each connection pinged as it is checked out.

    A held connection outlives a Postgres restart: used after one, it fails with
    "server closed the connection unexpectedly". The code server's thread that fails
    runs whose worker died stops for good on that first error (Dagster does not catch
    it), so every later dead worker's run stayed STARTED and its pool slot held (found
    by ``varagity chaos``: a purge run killed after a Postgres restart left its file's
    document an orphan). The ping costs a round trip per checkout on a connection
    already open; the stock ``NullPool`` paid a whole connection instead.
    """
    kwargs: dict[str, Any] = {
        "isolation_level": "AUTOCOMMIT",
        "pool_size": 1,
        "pool_recycle": _RECYCLE_SECONDS,
        "max_overflow": _MAX_OVERFLOW,
        "pool_pre_ping": True,
    }
    if options := storage._engine.url.query.get("options"):
        kwargs["connect_args"] = {"options": options}
    return create_pg_engine(storage.postgres_url, storage._token_provider, **kwargs)


def _unregistered_copy(storage: _T) -> _T:
    """A shallow copy of ``storage`` that no instance has registered with yet."""
    copy = object.__new__(type(storage))
    copy.__dict__.update(storage.__dict__)
    copy._instance_weakref = None  # type: ignore[attr-defined]
    return copy


#: The first storage each process built per configuration (never handed out itself).
_BUILT: dict[tuple[int, str, bool, ConfigurableClassData | None], PooledPostgresStorage] = {}
_BUILT_LOCK = threading.Lock()
