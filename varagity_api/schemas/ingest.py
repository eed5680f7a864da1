"""Ingest jobs: the launch request and its answer, job listings, progress and SSE events.

A job is a Dagster backfill of the ingest assets; its id is the backfill id. Progress
counts files (``documents`` partitions): a file is ``materialized`` once its last asset,
the search index, is.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Literal

from pydantic import BaseModel, Field

from varagity.ingest.discovery import relative_path_for
from varagity.jobs import Run
from varagity.jobs.ingest import BackfillCounts, BackfillProgress
from varagity.jobs.model import PartitionCounts

JobKind = Literal["ingest", "reingest"]


class IngestRequest(BaseModel):
    """What to ingest: some files (or folders) of ``DOCS_PATH``, or all of it."""

    reingest: bool = Field(
        default=False,
        description="Re-process every targeted file even when its content is unchanged "
        "(after changing chunking, contextualization or OCR settings). A completed reingest "
        "clears the corpus stale flag.",
    )
    paths: list[str] | None = Field(
        default=None,
        min_length=1,
        max_length=10_000,
        description="Paths relative to DOCS_PATH; a folder stands for every ingestible file "
        "below it. Omit for the whole folder.",
    )


class IngestLaunched(BaseModel):
    """A job was launched (``202``): follow it at ``/api/ingest/{job_id}``."""

    job_id: str = Field(description="The Dagster backfill id.")
    kind: JobKind
    paths: list[str] = Field(description="The files targeted, relative to DOCS_PATH.")
    dagster_url: str = Field(description="The backfill's page in the Dagster UI.")


class FileCounts(BaseModel):
    """Files targeted by a job and where they stand."""

    targeted: int
    materialized: int
    failed: int
    in_progress: int


class IngestJob(BaseModel):
    """One job as a listing shows it; ``files`` counts the search-index asset."""

    job_id: str
    kind: JobKind
    source: str | None = Field(description="Who launched it: api, cli (null if untagged).")
    status: str = Field(
        description="Dagster backfill status: REQUESTED, CANCELING, FAILING, COMPLETED_SUCCESS, "
        "COMPLETED_FAILED, FAILED, CANCELED (COMPLETED for older backfills)."
    )
    done: bool = Field(description="The job has finished and will not change any more.")
    succeeded: bool = Field(description="Finished with every targeted file materialized.")
    title: str | None
    created_at: datetime
    ended_at: datetime | None
    files: FileCounts
    dagster_url: str


class IngestJobList(BaseModel):
    """Recent jobs launched by Varagity (API or CLI), newest first."""

    jobs: list[IngestJob]


class AssetCounts(FileCounts):
    """One ingest stage's counts within a job."""

    asset: str


class IngestRun(BaseModel):
    """A Dagster run of the job and the range of files it covers."""

    run_id: str
    status: str = Field(description="Dagster run status (QUEUED, STARTED, SUCCESS, FAILURE...).")
    first_path: str | None
    last_path: str | None
    started_at: datetime | None
    ended_at: datetime | None


class FailedFile(BaseModel):
    """A file whose run failed, with the run's error when its logs give one."""

    relative_path: str
    partition_key: str
    run_id: str
    error: str | None


class IngestProgress(IngestJob):
    """Everything known about one job; the payload of its ``progress`` and ``done`` events."""

    paths: list[str] = Field(description="The files targeted, relative to DOCS_PATH.")
    assets: list[AssetCounts] = Field(description="Counts per ingest stage, in pipeline order.")
    runs: list[IngestRun]
    failures: list[FailedFile]
    error: str | None = Field(description="Why Dagster could not run the backfill itself.")


def _when(timestamp: float | None) -> datetime | None:
    return datetime.fromtimestamp(timestamp, UTC) if timestamp is not None else None


def _counts(counts: PartitionCounts) -> FileCounts:
    return FileCounts(
        targeted=counts.targeted,
        materialized=counts.materialized,
        failed=counts.failed,
        in_progress=counts.in_progress,
    )


def job_from(job: Run[BackfillCounts]) -> IngestJob:
    """The wire form of a backfill as a listing shows it."""
    return IngestJob.model_validate(_job_fields(job))


def _job_fields(job: Run[BackfillCounts]) -> dict[str, object]:
    return {
        "job_id": job.id,
        "kind": "reingest" if job.kind == "reingest" else "ingest",
        "source": job.source,
        "status": job.status,
        "done": job.done,
        "succeeded": job.succeeded,
        "title": job.progress.title,
        "created_at": _when(job.created_at),
        "ended_at": _when(job.ended_at),
        "files": _counts(job.progress.files),
        "dagster_url": job.url,
    }


def progress_from(job: Run[BackfillProgress]) -> IngestProgress:
    """The wire form of a backfill's progress."""
    progress = job.progress
    runs = [
        IngestRun(
            run_id=r.run_id,
            status=r.status,
            first_path=relative_path_for(r.first_partition) if r.first_partition else None,
            last_path=relative_path_for(r.last_partition) if r.last_partition else None,
            started_at=_when(r.started_at),
            ended_at=_when(r.ended_at),
        )
        for r in progress.runs
    ]
    failures = [
        FailedFile(
            relative_path=f.relative_path,
            partition_key=f.partition_key,
            run_id=f.run_id,
            error=f.error,
        )
        for f in progress.failures
    ]
    return IngestProgress.model_validate(
        {
            **_job_fields(job),
            "paths": sorted(relative_path_for(k) for k in progress.partition_keys),
            "assets": [
                AssetCounts(asset=a.asset, **_counts(a.counts).model_dump())
                for a in progress.assets
            ],
            "runs": runs,
            "failures": failures,
            "error": job.error,
        }
    )
