"""``/api/backups/{corpus}``: list a corpus's bundles, export it, restore it, follow the
runs (Dagster runs of ``export_bundle`` and ``restore_bundle``, launched over GraphQL).

``corpus`` is ``rag`` (the documents: bundles in ``DOCS_PATH/varagity-exports``) or
``graph`` (the message graph: ``GRAPH_DOCS_PATH/varagity-exports``; ``403
graph_disabled`` while ``GRAPH_ENABLED=false``). The listing reads each zip's directory
and ``bundle.json`` only. Export and restore answer ``202`` with the run, ``409
corpus_busy`` naming the holder when another writer of the corpus is in flight;
``/events`` streams a run as SSE: ``progress`` whenever it changes, then ``done``, or an
in-band ``error``. The runs go through :class:`~varagity.jobs.backup.BackupJobs`;
reading and following one are routes of :func:`~varagity_api.job_routes.add_job_routes`.
"""

from __future__ import annotations

import logging

from fastapi import APIRouter, Depends, Query
from starlette.concurrency import run_in_threadpool

from varagity.backup.bundle import (
    BundleError,
    BundleVerdict,
    exports_dir,
    inspect_bundle,
    list_bundles,
    resolve_bundle,
)
from varagity.config import Settings
from varagity.graph.registry import workdir_for
from varagity.graph.status import read_graph
from varagity.jobs import DagsterError
from varagity.jobs.backup import BackupJobs
from varagity.services import Services
from varagity.stores.corpus_queries import corpus_counts
from varagity_api.deps import ServicesDep, SettingsDep, dagster_client, require_graph_enabled
from varagity_api.errors import DAGSTER_DOWN, DAGSTER_FAILED, ApiError, dagster_error
from varagity_api.job_routes import Job, add_job_routes
from varagity_api.schemas.backups import (
    BackupList,
    BackupRunInfo,
    BackupRunList,
    BundleInfo,
    RestoreRequest,
    SettingDrift,
    run_info,
)
from varagity_api.schemas.common import CorpusName, ErrorBody

log = logging.getLogger(__name__)

BACKUP_SOURCE = "api"
"""The ``varagity/source`` tag of the runs this API launches."""


def require_corpus_enabled(corpus: CorpusName, settings: SettingsDep) -> None:
    """``403 graph_disabled`` for the graph's backups while ``GRAPH_ENABLED=false``."""
    if corpus == "graph":
        require_graph_enabled(settings)


router = APIRouter(
    prefix="/backups/{corpus}",
    tags=["backups"],
    dependencies=[Depends(require_corpus_enabled)],
    responses={403: {"model": ErrorBody, "description": "graph: GRAPH_ENABLED is false."}},
)

_BUSY = {"model": ErrorBody, "description": "Another writer of the corpus is in flight."}


def dagster_failure(exc: DagsterError) -> ApiError:
    """The HTTP error for a failed Dagster call about an export or restore run."""
    return dagster_error(exc, not_found="run_not_found")


def bundle_info(verdict: BundleVerdict) -> BundleInfo:
    """The wire form of a bundle's verdict."""
    manifest = verdict.manifest
    return BundleInfo(
        name=verdict.name,
        size_bytes=verdict.size_bytes,
        ok=verdict.ok,
        code=verdict.code,
        detail=verdict.detail,
        created_at=manifest.created_at if manifest else None,
        counts=dict(manifest.counts) if manifest else {},
        stale=manifest.stale if manifest else None,
        embedding_model=manifest.embedding_model if manifest else None,
        embedding_dim=manifest.embedding_dim if manifest else None,
        engine=dict(manifest.engine) if manifest and manifest.engine else None,
        drift=[
            SettingDrift(setting=name, bundle=ours, current=theirs)
            for name, (ours, theirs) in sorted(verdict.drift.items())
        ],
    )


def current_counts(services: Services, corpus: str) -> dict[str, int]:
    """What the corpus holds now, in the bundles' count names. Blocking."""
    if corpus == "rag":
        return corpus_counts(services.pg)
    reading = read_graph(workdir_for(services.settings))
    return {
        "thread_days": reading.days,
        "messages": reading.messages,
        "entities": reading.entities,
        "relations": reading.relations,
    }


@router.get("", response_model=BackupList)
async def list_backups(corpus: CorpusName, services: ServicesDep) -> BackupList:
    """The corpus's bundles, newest first, each with its cheap verdict (refused ones say
    why), its counts and its settings drift; and what the corpus holds now."""
    settings = services.settings

    def read() -> BackupList:
        return BackupList(
            corpus=corpus,
            folder=str(exports_dir(settings, corpus)),
            current=current_counts(services, corpus),
            bundles=[bundle_info(v) for v in list_bundles(settings, corpus)],
        )

    return await run_in_threadpool(read)


def _launch(settings: Settings, corpus: str, name: str | None) -> BackupRunInfo:
    """Launch the run, refused beside another writer of the corpus. Blocking."""
    jobs = BackupJobs(dagster_client(settings))
    run_id = jobs.launch(corpus, name, source=BACKUP_SOURCE)
    log.info(
        "%s of the %s corpus launched: run %s", "restore" if name else "export", corpus, run_id
    )
    return run_info(jobs.read(run_id, corpus))


@router.post(
    "/export",
    status_code=202,
    response_model=BackupRunInfo,
    responses={409: _BUSY, 502: DAGSTER_FAILED, 503: DAGSTER_DOWN},
)
async def export_backup(corpus: CorpusName, settings: SettingsDep) -> BackupRunInfo:
    """Write the corpus into a new bundle (an ``export_bundle`` run, verified before it
    counts); follow the run at ``/api/backups/{corpus}/runs/{run_id}/events``."""
    try:
        return await run_in_threadpool(_launch, settings, corpus, None)
    except DagsterError as exc:
        raise dagster_failure(exc) from exc


def _checked_bundle(settings: Settings, corpus: str, name: str) -> None:
    """Refuse a restore the library would refuse, before launching it. Blocking."""
    try:
        path = resolve_bundle(settings, corpus, name)  # type: ignore[arg-type]
    except BundleError as exc:
        raise ApiError(422, exc.code, exc.detail) from exc
    except FileNotFoundError as exc:
        raise ApiError(
            404,
            "bundle_not_found",
            f"no bundle {name!r} in {exports_dir(settings, corpus)}",  # type: ignore[arg-type]
        ) from exc
    verdict = inspect_bundle(path, settings, corpus)  # type: ignore[arg-type]
    if not verdict.ok:
        raise ApiError(422, verdict.code or "bundle_invalid", verdict.detail or "refused")


@router.post(
    "/restore",
    status_code=202,
    response_model=BackupRunInfo,
    responses={
        404: {"model": ErrorBody, "description": "No bundle has this name."},
        409: _BUSY,
        422: {"model": ErrorBody, "description": "The bundle is invalid or incompatible."},
        502: DAGSTER_FAILED,
        503: DAGSTER_DOWN,
    },
)
async def restore_backup(
    corpus: CorpusName, body: RestoreRequest, settings: SettingsDep
) -> BackupRunInfo:
    """Replace the corpus with one of its bundles (a ``restore_bundle`` run; no model
    call). A bundle whose cheap verdict refuses it is refused here, with its reason;
    the run checks every member's sha256 before anything takes effect."""
    await run_in_threadpool(_checked_bundle, settings, corpus, body.name)
    try:
        return await run_in_threadpool(_launch, settings, corpus, body.name)
    except DagsterError as exc:
        raise dagster_failure(exc) from exc


@router.get(
    "/runs", response_model=BackupRunList, responses={502: DAGSTER_FAILED, 503: DAGSTER_DOWN}
)
async def list_backup_runs(
    corpus: CorpusName, settings: SettingsDep, limit: int = Query(default=10, ge=1, le=100)
) -> BackupRunList:
    """Recent export and restore runs of the corpus, newest first."""

    def read() -> BackupRunList:
        runs = BackupJobs(dagster_client(settings)).recent(corpus, limit)
        return BackupRunList(runs=[run_info(run) for run in runs])

    try:
        return await run_in_threadpool(read)
    except DagsterError as exc:
        raise dagster_failure(exc) from exc


def _run(corpus: CorpusName, run_id: str, settings: SettingsDep) -> Job:
    jobs = BackupJobs(dagster_client(settings))
    return Job(run_id, lambda: jobs.read(run_id, corpus))


add_job_routes(
    router,
    "/runs/{run_id}",
    job_of=_run,
    view=run_info,
    model=BackupRunInfo,
    failure=dagster_failure,
    name="backup_run",
    what="backup run",
    not_found="No export or restore run has this id.",
    read_doc="An export or restore run: its state, progress, the bundle, its error if it failed.",
    events_doc="""Stream an export or restore: ``progress`` (a BackupRunInfo) whenever it changes,
    then ``done`` with the final state; ``error`` ends the stream if Dagster stops
    answering.""",
)
