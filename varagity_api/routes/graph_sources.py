"""``/api/graph/sources``: the message archives in ``GRAPH_DOCS_PATH``: list, upload,
delete.

An upload stores each file atomically after checking that it is (or belongs to) a
supported archive, then asks Dagster for its build right away; the graph-sources sensor
leaves an archive alone while such a build is in flight, and finds it on its next tick
when Dagster could not be reached. A delete forgets the archive
(:func:`varagity.forget.forget_archive`): the database and its companions are removed,
its days are taken out of the graph at once, as the graph's writer, and the answer is
the receipt of what each store gave up.
"""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import asdict
from functools import partial

from fastapi import APIRouter, Depends, Request
from starlette.concurrency import run_in_threadpool

from varagity.config import Settings
from varagity.forget import forget_archive
from varagity.graph.folder import (
    SourceNotFound,
    list_sources,
    store_archive_uploads,
    written_archives,
)
from varagity.graph.manifest import read_manifest
from varagity.graph.registry import workdir_for
from varagity.jobs import CorpusBusy, DagsterError
from varagity.jobs.graph import GraphJobs
from varagity.observability.metrics import GRAPH_UPLOADED_FILES
from varagity.uploads import UploadRefused
from varagity_api.corpus_gate import refuse_while_restoring
from varagity_api.deps import ServicesDep, SettingsDep, dagster_client, require_graph_enabled
from varagity_api.errors import ApiError
from varagity_api.multipart import receive_upload
from varagity_api.schemas.common import ErrorBody
from varagity_api.schemas.forget import ForgetReceiptInfo
from varagity_api.schemas.graph import (
    GraphBuild,
    GraphSourceInfo,
    GraphSourceList,
    GraphSourceRemoved,
    GraphUploadResponse,
    GraphUploadResult,
    launched_from,
)

log = logging.getLogger(__name__)

UPLOAD_SOURCE = "upload"
"""The ``varagity/source`` tag of the builds an upload launches."""
_FORM_FIELDS = ("folder",)

router = APIRouter(
    prefix="/graph/sources",
    tags=["graph"],
    dependencies=[Depends(require_graph_enabled)],
    responses={403: {"model": ErrorBody, "description": "GRAPH_ENABLED is false."}},
)

_UPLOAD_BODY = {
    "required": True,
    "content": {
        "multipart/form-data": {
            "schema": {
                "type": "object",
                "required": ["files"],
                "properties": {
                    "files": {
                        "type": "array",
                        "items": {"type": "string", "format": "binary"},
                        "description": "An archive's database (chat.db) and, sent with it, "
                        "its -wal and -shm files.",
                    },
                    "folder": {
                        "type": "string",
                        "description": "A folder under GRAPH_DOCS_PATH the files go into.",
                    },
                },
            }
        }
    },
}


@router.get("", response_model=GraphSourceList)
async def list_graph_sources(services: ServicesDep) -> GraphSourceList:
    """Every archive (and every file that is not one, with the reason) in
    ``GRAPH_DOCS_PATH``, with what the graph holds of it."""
    settings = services.settings
    manifest = await run_in_threadpool(read_manifest, workdir_for(settings))
    listed = await run_in_threadpool(list_sources, settings.graph_docs_path, manifest)
    return GraphSourceList(
        root=str(settings.graph_docs_path),
        sources=[GraphSourceInfo.model_validate(s, from_attributes=True) for s in listed],
    )


def _launch_builds(settings: Settings, paths: list[str]) -> list[GraphBuild]:
    """Ask Dagster to build freshly stored archives now instead of at the graph-sources
    sensor's next tick; when it cannot be reached the sensor builds them, so the upload
    stands."""
    try:
        launched = launched_from(
            GraphJobs(dagster_client(settings)).launch(
                settings.graph_docs_path, paths, source=UPLOAD_SOURCE
            )
        )
    except (DagsterError, CorpusBusy) as exc:  # CorpusBusy: an export, restore or reset
        log.warning("uploaded archives wait for the graph-sources sensor: %s", exc)
        return []
    return [*launched.launched, *launched.in_flight]


@router.post(
    "",
    response_model=GraphUploadResponse,
    openapi_extra={"requestBody": _UPLOAD_BODY},
    responses={
        413: {"model": ErrorBody, "description": "Too many files, or a form field too large."},
        415: {"model": ErrorBody, "description": "Not multipart/form-data."},
        422: {"model": ErrorBody, "description": "The batch as a whole is malformed."},
    },
)
async def upload_graph_sources(request: Request, settings: SettingsDep) -> GraphUploadResponse:
    """Store message archives in ``GRAPH_DOCS_PATH`` and launch their builds; a file that
    is not a supported archive (or a -wal/-shm without its database) is refused with
    its reason, and the rest of the batch is stored.

    A database is recognised by its content, with its companions from the same upload
    beside it; an archive's files are put in place together (companions first, the
    database last), each file up to ``GRAPH_MAX_ARCHIVE_BYTES``.

    With curl: ``curl -F files=@chat.db -F files=@chat.db-wal -F files=@chat.db-shm ...``.
    """
    async with receive_upload(
        request, settings.home / "uploads", settings.GRAPH_MAX_ARCHIVE_BYTES, _FORM_FIELDS
    ) as form:
        try:
            results = await run_in_threadpool(
                partial(
                    store_archive_uploads,
                    settings.graph_docs_path,
                    form.files,
                    folder=form.one_field("folder"),
                    sniff_dir=form.staging / "sniff",
                )
            )
        except UploadRefused as exc:
            raise ApiError(422, exc.code, exc.message) from exc
    for r in results:
        GRAPH_UPLOADED_FILES.labels(outcome=r.status).inc()
    archives = written_archives(results)
    builds = await run_in_threadpool(_launch_builds, settings, archives) if archives else []
    return GraphUploadResponse(
        results=[
            GraphUploadResult.model_validate({**asdict(r), "path": r.relative_path})
            for r in results
        ],
        counts=dict(Counter(r.status for r in results)),
        builds=builds,
    )


@router.delete(
    "/{path:path}",
    response_model=GraphSourceRemoved,
    responses={
        404: {"model": ErrorBody, "description": "No such archive."},
        409: {"model": ErrorBody, "description": "The graph is being written or restored."},
        422: {
            "model": ErrorBody,
            "description": "The path is absolute, climbs out of GRAPH_DOCS_PATH, is hidden "
            "or reserved.",
        },
    },
)
async def delete_graph_source(path: str, services: ServicesDep) -> GraphSourceRemoved:
    """Forget an archive: its database and companions leave ``GRAPH_DOCS_PATH``, its
    days leave the graph now (entities and relations only its days supported go, shared
    ones lose what its days said; its cached extraction replies go), conversations'
    snapshots of its days are redacted. The receipt lists, per store, what was removed
    and verified gone, and the backups still holding its days."""
    settings = services.settings
    await run_in_threadpool(refuse_while_restoring, settings, "graph", status=409)
    try:
        removed, receipt = await run_in_threadpool(
            forget_archive, settings, services.pg, services.graph, path
        )
    except UploadRefused as exc:
        raise ApiError(422, exc.code, exc.message) from exc
    except SourceNotFound as exc:
        raise ApiError(404, "not_found", str(exc)) from exc
    return GraphSourceRemoved(
        path=removed.path,
        removed_files=removed.removed_files,
        days=removed.days,
        receipt=ForgetReceiptInfo.of(receipt),
    )
