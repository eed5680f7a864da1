"""``/api/backups/{corpus}``: list a corpus's bundles, export it, restore it, follow the
runs (Dagster runs of ``export_bundle`` and ``restore_bundle``, launched over GraphQL).

``corpus`` is ``rag`` (the documents: bundles in ``DOCS_PATH/varagity-exports``) or
``graph`` (the message graph: ``GRAPH_DOCS_PATH/varagity-exports``; ``403
graph_disabled`` while ``GRAPH_ENABLED=false``). The listing reads each zip's directory
and ``bundle.json`` only. Export and restore answer ``202`` with the run, ``409
corpus_busy`` naming the holder when another writer of the corpus is in flight;
``/events`` streams a run as SSE: ``progress`` whenever it changes, then ``done``, or an
in-band ``error``.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime

from fastapi import APIRouter, Depends, Query, Request
from sse_starlette.sse import EventSourceResponse
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
from varagity.dagster_client import (
    CorpusRun,
    DagsterClient,
    DagsterError,
    RunNotFound,
)
from varagity.graph.registry import workdir_for
from varagity.graph.status import read_graph
from varagity.services import Services
from varagity.stores.corpus_queries import corpus_counts
from varagity_api.corpus_gate import refuse_beside
from varagity_api.deps import ServicesDep, SettingsDep, dagster_client, require_graph_enabled
from varagity_api.errors import DAGSTER_DOWN, DAGSTER_FAILED, ApiError, dagster_error
from varagity_api.graph_runs import run_state, run_url
from varagity_api.schemas.backups import (
    BackupList,
    BackupRunInfo,
    BackupRunList,
    BundleInfo,
    ReconcileCounts,
    RestoreRequest,
    SettingDrift,
)
from varagity_api.schemas.common import CorpusName, ErrorBody
from varagity_api.sse import PING_SECONDS, follow_job

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
_NOT_FOUND = {"model": ErrorBody, "description": "No export or restore run has this id."}


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


def _when(timestamp: float | None) -> datetime | None:
    return None if timestamp is None else datetime.fromtimestamp(timestamp, UTC)


def run_info(client: DagsterClient, run: CorpusRun, dagster_url: str) -> BackupRunInfo:
    """The wire form of an export or restore run: its state, progress, last log line
    and error. Blocking (it reads the run's log)."""
    run_log = client.backup_run_log(run.run_id)
    return BackupRunInfo(
        run_id=run.run_id,
        corpus="graph" if run.corpus == "graph" else "rag",
        kind=run.kind,
        state=run_state(run.status),
        status=run.status,
        done=run.done,
        source=run.source,
        bundle=run.bundle or run_log.bundle,
        phase=run_log.phase,
        processed=run_log.done,
        total=run_log.total,
        message=run_log.message,
        error=client.run_error(run.run_id) if run.status == "FAILURE" else None,
        reconcile=ReconcileCounts(**run_log.reconcile) if run_log.reconcile else None,
        created_at=datetime.fromtimestamp(run.created_at, UTC),
        started_at=_when(run.started_at),
        ended_at=_when(run.ended_at),
        dagster_url=run_url(dagster_url, run.run_id),
    )


def _read_run(client: DagsterClient, corpus: str, run_id: str, url: str) -> BackupRunInfo:
    run = client.backup_run(run_id)
    if run.corpus != corpus:
        raise RunNotFound(f"run {run_id!r} is a backup run of the {run.corpus} corpus")
    return run_info(client, run, url)


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
    """Refuse beside another writer of the corpus, then launch the run. Blocking."""
    refuse_beside(settings, corpus)
    client = dagster_client(settings)
    if name is None:
        run_id = client.launch_export(corpus, source=BACKUP_SOURCE)
    else:
        run_id = client.launch_restore(corpus, name, source=BACKUP_SOURCE)
    log.info(
        "%s of the %s corpus launched: run %s", "restore" if name else "export", corpus, run_id
    )
    return _read_run(client, corpus, run_id, settings.dagster_url)


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
        client = dagster_client(settings)
        runs = client.backup_runs(corpus, limit)
        return BackupRunList(runs=[run_info(client, run, settings.dagster_url) for run in runs])

    try:
        return await run_in_threadpool(read)
    except DagsterError as exc:
        raise dagster_failure(exc) from exc


@router.get(
    "/runs/{run_id}",
    response_model=BackupRunInfo,
    responses={404: _NOT_FOUND, 502: DAGSTER_FAILED, 503: DAGSTER_DOWN},
)
async def backup_run(corpus: CorpusName, run_id: str, settings: SettingsDep) -> BackupRunInfo:
    """An export or restore run: its state, progress, the bundle, its error if it failed."""
    try:
        return await run_in_threadpool(
            _read_run, dagster_client(settings), corpus, run_id, settings.dagster_url
        )
    except DagsterError as exc:
        raise dagster_failure(exc) from exc


@router.get(
    "/runs/{run_id}/events",
    response_class=EventSourceResponse,
    responses={
        200: {"content": {"text/event-stream": {}}, "description": "SSE stream"},
        404: _NOT_FOUND,
        502: DAGSTER_FAILED,
        503: DAGSTER_DOWN,
    },
)
async def backup_run_events(
    corpus: CorpusName, run_id: str, request: Request, settings: SettingsDep
) -> EventSourceResponse:
    """Stream an export or restore: ``progress`` (a BackupRunInfo) whenever it changes,
    then ``done`` with the final state; ``error`` ends the stream if Dagster stops
    answering."""
    client = dagster_client(settings)
    url = settings.dagster_url
    try:
        first = await run_in_threadpool(_read_run, client, corpus, run_id, url)
    except DagsterError as exc:
        raise dagster_failure(exc) from exc

    async def read(run: BackupRunInfo) -> BackupRunInfo:
        return await run_in_threadpool(_read_run, client, corpus, run.run_id, url)

    events = follow_job(
        request,
        first,
        read,
        view=lambda run: run,
        done=lambda run: run.done,
        failure=dagster_failure,
        what=f"backup run events for {run_id}",
    )
    return EventSourceResponse(events, ping=PING_SECONDS)
