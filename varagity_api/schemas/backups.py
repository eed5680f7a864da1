"""Backup bundles as ``/api/backups/{corpus}`` shows them, and the export and restore
runs (Dagster runs of ``export_bundle`` / ``restore_bundle``) that write and read them."""

from __future__ import annotations

from datetime import UTC, datetime

from pydantic import BaseModel, Field

from varagity.jobs import Run
from varagity.jobs.backup import BackupProgress
from varagity_api.schemas.common import CorpusName
from varagity_api.schemas.graph import BuildState


class SettingDrift(BaseModel):
    """A reingest-affecting setting whose value differs between a bundle and this stack
    (restoring it flags the corpus stale)."""

    setting: str
    bundle: str = Field(description="The value when the bundle was exported.")
    current: str = Field(description="This stack's value now.")


class BundleInfo(BaseModel):
    """One zip in the corpus's ``varagity-exports/`` folder and its cheap verdict (read
    from the zip's directory and ``bundle.json`` only, nothing unpacked)."""

    name: str = Field(description="The file name: what a restore asks for.")
    size_bytes: int
    ok: bool = Field(description="Whether this stack would restore it.")
    code: str | None = Field(
        description="Why not: bundle_invalid (unsound or damaged) or bundle_incompatible "
        "(another embedding model, dimension, engine, format version or corpus). A restore "
        "(or `varagity backup verify`) also reads every row first and may refuse one with "
        "bundle_path_outside_corpus, bundle_duplicate_id, bundle_unknown_document, "
        "bundle_chunk_gap, bundle_ids_inconsistent, bundle_vector_invalid, "
        "bundle_text_invalid or bundle_row_invalid (docs/operations.md)."
    )
    detail: str | None = Field(description="The refusal, as a sentence saying what to do.")
    created_at: datetime | None = Field(description="The export's snapshot instant (UTC).")
    counts: dict[str, int] = Field(
        description="What it holds: documents and chunks (rag); thread_days and messages, "
        "and entities and relations when known (graph)."
    )
    stale: bool | None = Field(description="The corpus's stale flag when it was exported.")
    embedding_model: str | None
    embedding_dim: int | None
    engine: dict[str, str] | None = Field(description="The graph engine that wrote it.")
    drift: list[SettingDrift] = Field(
        description="Settings that differ from this stack's (rag): the restored corpus "
        "would be flagged stale."
    )


class BackupList(BaseModel):
    """A corpus's bundles, newest first, and what a restore would replace."""

    corpus: CorpusName
    folder: str = Field(description="The varagity-exports folder the bundles live in.")
    current: dict[str, int] = Field(
        description="What the corpus holds now (what a restore replaces), in the bundles' "
        "count names."
    )
    bundles: list[BundleInfo]


class ReconcileCounts(BaseModel):
    """How a restored corpus differs from its folder: the runs the folder sensor launches
    once the restore has ended (ingest or build, purge or remove)."""

    to_ingest: int = Field(description="Files whose current version the restored corpus lacks.")
    to_purge: int = Field(description="Files the restored corpus holds that are gone.")
    failed: int = Field(description="Files left as they are: their last ingest failed.")


class BackupRunInfo(BaseModel):
    """An export or a restore run, where it stands and what it reported."""

    run_id: str
    corpus: CorpusName
    kind: str = Field(description="export or restore.")
    state: BuildState
    status: str = Field(description="Dagster's run status.")
    done: bool
    source: str | None = Field(description="Who launched it: api, cli, schedule.")
    bundle: str | None = Field(
        description="The bundle a restore reads, or the one an export wrote (once written)."
    )
    phase: str | None = Field(description="What the run is doing: its latest progress report.")
    processed: int = Field(description="Items of the phase done so far.")
    total: int = Field(description="Items of the phase (0 when not known).")
    message: str | None = Field(description="The run's latest log line.")
    error: str | None = Field(description="Why the run failed.")
    reconcile: ReconcileCounts | None = Field(
        default=None,
        description="A committed restore: what the folder holds that the restored corpus "
        "does not, which the folder sensor then ingests and purges.",
    )
    created_at: datetime
    started_at: datetime | None
    ended_at: datetime | None
    dagster_url: str = Field(description="The run's page in the Dagster UI.")


class BackupRunList(BaseModel):
    """Recent export and restore runs of a corpus, newest first."""

    runs: list[BackupRunInfo]


class RestoreRequest(BaseModel):
    """Which bundle of the corpus's ``varagity-exports/`` folder replaces the corpus."""

    name: str = Field(min_length=1, max_length=255, description="The bundle's file name.")


def _when(timestamp: float | None) -> datetime | None:
    return None if timestamp is None else datetime.fromtimestamp(timestamp, UTC)


def run_info(run: Run[BackupProgress]) -> BackupRunInfo:
    """The wire form of an export or restore run: its state, progress, last log line
    and error."""
    progress = run.progress
    return BackupRunInfo(
        run_id=run.id,
        corpus="graph" if run.corpus == "graph" else "rag",
        kind=run.kind,
        state=run.state,
        status=run.status,
        done=run.done,
        source=run.source,
        bundle=progress.bundle,
        phase=progress.phase,
        processed=progress.done,
        total=progress.total,
        message=progress.message,
        error=run.error,
        reconcile=ReconcileCounts(**progress.reconcile) if progress.reconcile else None,
        created_at=datetime.fromtimestamp(run.created_at, UTC),
        started_at=_when(run.started_at),
        ended_at=_when(run.ended_at),
        dagster_url=run.url,
    )
