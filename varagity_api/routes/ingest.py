"""``/api/ingest``: launch and follow ingest jobs (Dagster backfills) over GraphQL.

No pipeline code runs here: ``POST`` validates the paths against ``DOCS_PATH``, asks
the Dagster webserver (:class:`~varagity.jobs.ingest.IngestJobs`) to add any missing
``documents`` partitions and to backfill the ingest assets over them, and answers
``202`` with the backfill id. ``GET /{job_id}`` reads the backfill's progress back;
``/events`` streams it as SSE (``progress`` whenever it changes, then ``done``, or an
in-band ``error``): both made by :func:`~varagity_api.job_routes.add_job_routes`.

When a route sees a reingest job that completed successfully after the corpus was
flagged stale, it clears the flag, exactly as the staleness sensor's run does;
whichever of the two sees it first does the work and the other finds nothing left to do.
"""

from __future__ import annotations

import logging

from fastapi import APIRouter, Query
from starlette.concurrency import run_in_threadpool

from varagity.config import Settings
from varagity.ingest.discovery import partition_key_for, resolve_in_corpus, scan
from varagity.jobs import CorpusBusy, DagsterError, DagsterUnavailable, Run
from varagity.jobs.ingest import BackfillProgress, IngestJobs
from varagity.observability.metrics import INGEST_REQUESTS
from varagity.records import normalize_relative_path
from varagity.services import Services
from varagity.stores.corpus_state import CorpusState
from varagity_api.deps import ServicesDep, SettingsDep, dagster_client
from varagity_api.errors import DAGSTER_DOWN, DAGSTER_FAILED, ApiError, dagster_error
from varagity_api.job_routes import Job, add_job_routes
from varagity_api.schemas.common import ErrorBody
from varagity_api.schemas.ingest import (
    IngestJobList,
    IngestLaunched,
    IngestProgress,
    IngestRequest,
    JobKind,
    job_from,
    progress_from,
)

router = APIRouter(tags=["ingest"])
log = logging.getLogger(__name__)


def _dagster_failure(exc: DagsterError) -> ApiError:
    """The HTTP error for a failed Dagster call about an ingest job."""
    return dagster_error(exc, not_found="job_not_found")


def _targets(settings: Settings, paths: list[str] | None, *, reingest: bool) -> list[str]:
    """The corpus files a request targets, relative to ``DOCS_PATH`` and sorted.

    Raises:
        ApiError: 422 naming every path that is not an ingestible file or folder of
            the corpus; 409 when nothing at all is left to ingest.
    """
    files, skipped = scan(settings.docs_path)
    ingestible = [f.relative_path for f in files]
    if paths is None:
        if not ingestible:
            what = "re-ingest" if reingest else "ingest"
            raise ApiError(
                409,
                "empty_corpus",
                f"Nothing to {what}: the corpus folder {settings.docs_path} has no ingestible "
                "files.",
            )
        return ingestible
    known = set(ingestible)
    skipped_reasons = {s.relative_path: s.reason for s in skipped}
    chosen: dict[str, None] = {}
    problems: list[str] = []
    for raw in paths:
        if "\x00" in raw:
            problems.append(f"{raw!r}: a path cannot contain a NUL character")
            continue
        try:
            rel = normalize_relative_path(raw)
            absolute = resolve_in_corpus(settings.docs_path, rel)
        except ValueError as exc:  # the message names the path
            problems.append(str(exc))
            continue
        if rel in known:
            chosen[rel] = None
        elif rel in skipped_reasons:
            problems.append(f"{raw!r}: not ingestible ({skipped_reasons[rel]})")
        else:
            try:
                is_dir, exists = absolute.is_dir(), absolute.exists()
            except OSError as exc:  # a name too long, a folder we may not enter...
                problems.append(f"{raw!r}: cannot be read ({exc.strerror})")
                continue
            below = [f for f in ingestible if f.startswith(f"{rel}/")] if is_dir else []
            if below:
                chosen.update(dict.fromkeys(below))
            elif is_dir:
                problems.append(f"{raw!r}: the folder holds no ingestible files")
            elif not exists:
                problems.append(f"{raw!r}: no such file or folder in {settings.docs_path}")
            else:
                problems.append(
                    f"{raw!r}: never ingested (hidden files and the varagity-exports folder "
                    "are not corpus)"
                )
    if problems:
        raise ApiError(
            422,
            "invalid_paths",
            f"{len(problems)} path(s) cannot be ingested: " + "; ".join(problems),
        )
    return sorted(chosen)


def _launch(jobs: IngestJobs, targets: list[str], *, reingest: bool) -> str:
    """Add the targets' missing partitions and launch the backfill; its id."""
    keys = [partition_key_for(rel) for rel in targets]
    return jobs.launch(keys, reingest=reingest, source="api")


@router.post(
    "/ingest",
    status_code=202,
    response_model=IngestLaunched,
    responses={
        409: {
            "model": ErrorBody,
            "description": "The corpus folder has nothing to ingest, or an export or restore of "
            "it is in flight (corpus_busy).",
        },
        422: {"model": ErrorBody, "description": "Some paths are not ingestible corpus files."},
        502: DAGSTER_FAILED,
        503: DAGSTER_DOWN,
    },
)
async def launch_ingest(body: IngestRequest, settings: SettingsDep) -> IngestLaunched:
    """Ingest files of ``DOCS_PATH`` (or all of it) as a Dagster backfill.

    A plain ingest skips files whose exact version is already indexed; ``reingest``
    re-processes them all. Follow the returned job at ``/api/ingest/{job_id}``.
    """
    kind: JobKind = "reingest" if body.reingest else "ingest"
    jobs = IngestJobs(dagster_client(settings))
    try:
        targets = await run_in_threadpool(_targets, settings, body.paths, reingest=body.reingest)
        job_id = await run_in_threadpool(_launch, jobs, targets, reingest=body.reingest)
    except (ApiError, CorpusBusy):
        INGEST_REQUESTS.labels(kind=kind, outcome="refused").inc()
        raise
    except DagsterError as exc:
        outcome = "unavailable" if isinstance(exc, DagsterUnavailable) else "error"
        INGEST_REQUESTS.labels(kind=kind, outcome=outcome).inc()
        raise _dagster_failure(exc) from exc
    INGEST_REQUESTS.labels(kind=kind, outcome="launched").inc()
    log.info("%s job %s launched over %d file(s)", kind, job_id, len(targets))
    return IngestLaunched(
        job_id=job_id,
        kind=kind,
        paths=targets,
        dagster_url=jobs.url(job_id),
    )


@router.get(
    "/ingest", response_model=IngestJobList, responses={502: DAGSTER_FAILED, 503: DAGSTER_DOWN}
)
async def list_ingest_jobs(
    settings: SettingsDep, limit: int = Query(default=20, ge=1, le=100)
) -> IngestJobList:
    """Recent ingest and reingest jobs launched through the API or the CLI, newest first."""
    try:
        jobs = await run_in_threadpool(IngestJobs(dagster_client(settings)).recent, limit)
    except DagsterError as exc:
        raise _dagster_failure(exc) from exc
    return IngestJobList(jobs=[job_from(j) for j in jobs])


def _observe(services: Services, job: Run[BackfillProgress]) -> None:
    """Clear the stale flag if this is a successful reingest launched after it was set."""
    if job.kind != "reingest" or not job.succeeded:
        return
    corpus = CorpusState(services.pg)
    flag = corpus.stale()
    if flag is not None and job.created_at > flag.since.timestamp():
        corpus.rebuilt_with(services.settings)
        log.info("reingest job %s completed: corpus no longer stale", job.id)


def _job(job_id: str, services: ServicesDep) -> Job:
    """The ingest job ``job_id``; reading it done clears the stale flag it lifts."""
    jobs = IngestJobs(dagster_client(services.settings))

    def read() -> Run[BackfillProgress]:
        job = jobs.read(job_id)
        if job.done:
            _observe(services, job)
        return job

    return Job(job_id, read)


add_job_routes(
    router,
    "/ingest/{job_id}",
    job_of=_job,
    view=progress_from,
    model=IngestProgress,
    failure=_dagster_failure,
    name="ingest_job",
    what="ingest",
    not_found="No job has this id.",
    read_doc="A job's status, file counts per stage, runs, and failed files with their errors.",
    events_doc="""Stream a job's progress: ``progress`` events as it changes, then ``done`` with the
    final state; an ``error`` event ends the stream if Dagster stops answering.""",
)
