"""What the jobs package says of a job: one :class:`Run` for every kind.

A job is a Dagster run (a graph build, an export, a restore, a purge, any writer of a
corpus) or a Dagster backfill (an ingest or reingest of files). Whatever its kind, a
:class:`Run` carries its id, kind, corpus, Dagster status, whether it is done and
succeeded, its times, who launched it, its error and its page in the Dagster UI; what
only one kind knows (files per asset, days processed, a backup's phase) is its typed
``progress``. Times are Unix timestamps (seconds).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Generic, Literal, TypeVar

from varagity.pipeline import (
    ANSWER_EVAL_JOB,
    BACKUP_ASSET,
    BACKUP_JOB,
    CONTEXTUALIZE_JOB,
    GRAPH_BUILD_JOB,
    GRAPH_REBUILD_ASSET,
    GRAPH_REBUILD_JOB,
    GRAPH_REMOVE_JOB,
    GRAPH_RESET_ASSET,
    GRAPH_RESET_JOB,
    INGEST_JOB,
    PURGE_JOB,
    RESTORE_JOB,
)

#: BulkActionStatus values after which a backfill launches and changes nothing more.
FINISHED_STATUSES = frozenset(
    {"COMPLETED", "COMPLETED_SUCCESS", "COMPLETED_FAILED", "FAILED", "CANCELED"}
)
#: Run statuses of a run that is queued for, or doing, its work.
IN_FLIGHT_RUN_STATUSES = ("QUEUED", "NOT_STARTED", "STARTING", "STARTED")
#: Run statuses after which a run changes nothing more.
ENDED_RUN_STATUSES = frozenset({"SUCCESS", "FAILURE", "CANCELED"})
#: The status of a run whose termination was asked for and is under way.
CANCELING_RUN_STATUS = "CANCELING"

#: Where a run stands: Dagster's status, lower-cased into five families.
State = Literal["queued", "running", "succeeded", "failed", "canceled"]
_STATES: dict[str, State] = {
    "QUEUED": "queued",
    "NOT_STARTED": "queued",
    "STARTING": "queued",
    "STARTED": "running",
    CANCELING_RUN_STATUS: "running",
    "SUCCESS": "succeeded",
    "FAILURE": "failed",
    "CANCELED": "canceled",
}

#: What a job does, by its Dagster job (a run of ``backup_bundle`` however launched is
#: an export, one of ``graph_rebuilt_days`` a rebuild, one of ``graph_reset`` a reset;
#: ``reingest`` is an ingest backfill that re-processes every file).
Kind = Literal[
    "ingest",
    "reingest",
    "build",
    "remove",
    "reset",
    "rebuild",
    "export",
    "restore",
    "purge",
    "blurbs",
    "evaluation",
    "other",
]
_KINDS: dict[str, Kind] = {
    INGEST_JOB: "ingest",
    CONTEXTUALIZE_JOB: "blurbs",
    PURGE_JOB: "purge",
    GRAPH_BUILD_JOB: "build",
    GRAPH_REMOVE_JOB: "remove",
    GRAPH_RESET_JOB: "reset",
    GRAPH_REBUILD_JOB: "rebuild",
    BACKUP_JOB: "export",
    RESTORE_JOB: "restore",
    ANSWER_EVAL_JOB: "evaluation",
}

P = TypeVar("P", covariant=True)


def run_kind(job: str, assets: Sequence[str] = ()) -> Kind:
    """The kind of a run of ``job`` that materializes ``assets``."""
    if job in _KINDS:
        return _KINDS[job]
    if BACKUP_ASSET in assets:
        return "export"
    if GRAPH_REBUILD_ASSET in assets:  # a backfill of day partitions from the Dagster UI
        return "rebuild"
    return "reset" if GRAPH_RESET_ASSET in assets else "other"


def run_url(dagster_url: str, run_id: str) -> str:
    """A run's page in the Dagster UI."""
    return f"{dagster_url.rstrip('/')}/runs/{run_id}"


def backfill_url(dagster_url: str, backfill_id: str) -> str:
    """A backfill's page in the Dagster UI."""
    return f"{dagster_url.rstrip('/')}/runs/b/{backfill_id}"


@dataclass(frozen=True, slots=True)
class Run(Generic[P]):
    """One job of any kind, where it stands, and its kind's ``progress``."""

    id: str
    """The run id, or the backfill id of an ingest."""
    kind: Kind
    corpus: str | None
    """The corpus it writes, exports or restores (``rag``, ``graph``), if any."""
    job: str | None
    """The Dagster job it runs (None for a backfill)."""
    status: str
    """Dagster's status: a run's (QUEUED, STARTED, SUCCESS...) or a backfill's."""
    done: bool
    """It has ended and will not change any more."""
    succeeded: bool
    created_at: float
    started_at: float | None
    ended_at: float | None
    source: str | None
    """Who launched it (the ``varagity/source`` tag: api, cli, upload, sensor...)."""
    error: str | None
    """Why it failed, as its logs (or the backfill) say; None unless it did."""
    url: str
    """Its page in the Dagster UI."""
    progress: P
    tags: Mapping[str, str] = field(default_factory=dict)

    @property
    def state(self) -> State:
        """Where it stands; a status Dagster adds later reads as running."""
        return _STATES.get(self.status, "running")


@dataclass(frozen=True, slots=True)
class PartitionCounts:
    """How many partitions of one asset a backfill targets, and where they stand."""

    targeted: int
    materialized: int
    failed: int
    in_progress: int


@dataclass(frozen=True, slots=True)
class AssetProgress:
    """One ingest asset's partition counts within a backfill."""

    asset: str
    counts: PartitionCounts
