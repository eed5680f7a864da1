"""``/api/documents``: list the corpus, delete documents, upload files into ``DOCS_PATH``.

Uploads write files into the folder, then ask Dagster for their ingest runs right away
(the folder sensor would find them on its next tick, a few seconds later, and leaves a
file alone while such a run is in flight); when Dagster cannot be reached the sensor
ingests them as any other file that lands in the folder. The multipart body is read as
it streams: each file goes straight into a staging file that stops growing past
``MAX_FILE_BYTES``, so a huge upload never fills memory or disk.
"""

from __future__ import annotations

import logging
from collections import Counter
from functools import partial

from fastapi import APIRouter, Request
from starlette.concurrency import run_in_threadpool

from varagity.corpus import list_corpus
from varagity.forget import forget_documents
from varagity.ingest.uploads import store_uploads
from varagity.jobs.launcher import UPLOAD_SOURCE
from varagity.observability.metrics import DELETED_DOCUMENTS, UPLOADED_FILES
from varagity.services import Services
from varagity.uploads import UploadRefused
from varagity_api.corpus_gate import refuse_while_restoring
from varagity_api.deps import ServicesDep, SettingsDep
from varagity_api.errors import ApiError
from varagity_api.folder_watch import ingest_launcher
from varagity_api.multipart import receive_upload
from varagity_api.schemas.common import ErrorBody
from varagity_api.schemas.documents import (
    DeleteRequest,
    DeleteResponse,
    DocumentInfo,
    DocumentList,
    FileRemovalInfo,
    UploadFileResult,
    UploadResponse,
)
from varagity_api.schemas.forget import ForgetReceiptInfo

router = APIRouter(tags=["documents"])
log = logging.getLogger(__name__)

_RESTORING = {"model": ErrorBody, "description": "The corpus is being restored."}
_FORM_FIELDS = ("paths", "mtimes", "folder")


@router.get("/documents", response_model=DocumentList)
async def list_documents(services: ServicesDep) -> DocumentList:
    """Every indexed document and every file of ``DOCS_PATH`` waiting to be, by path,
    each with how many of its chunks have their LLM blurb so far."""
    settings = services.settings
    entries = await run_in_threadpool(
        partial(list_corpus, contextualize=settings.CONTEXTUALIZE),
        services.pg,
        settings.docs_path,
    )
    return DocumentList(
        documents=[DocumentInfo.model_validate(e, from_attributes=True) for e in entries],
        counts=dict(Counter(e.status for e in entries)),
    )


def _delete(services: Services, doc_ids: list[str], remove_file: bool) -> DeleteResponse:
    refuse_while_restoring(services.settings, "rag", status=409, pg=services.pg)
    report, receipt = forget_documents(
        services.pg, services.bm25, services.settings, doc_ids, remove_file=remove_file
    )
    DELETED_DOCUMENTS.inc(len(report.deleted))
    return DeleteResponse(
        deleted=report.deleted,
        not_found=report.not_found,
        files=[
            FileRemovalInfo(
                relative_path=f.relative_path, removed=f.removed, code=f.code, message=f.message
            )
            for f in report.files
        ],
        pruned_folders=report.pruned_folders,
        receipt=ForgetReceiptInfo.of(receipt),
    )


@router.delete(
    "/documents/{doc_id}",
    response_model=DeleteResponse,
    responses={
        404: {"model": ErrorBody, "description": "No such document."},
        409: _RESTORING,
    },
)
async def delete_document(
    doc_id: str, services: ServicesDep, remove_file: bool = False
) -> DeleteResponse:
    """Forget one document: its chunks, vectors and blurbs (Postgres) and BM25 entries
    (BM25 first, Postgres last), its cached page previews, its text in conversations'
    source snapshots (redacted); with ``remove_file=true`` also its file in ``DOCS_PATH``.
    The receipt lists, per store, what was removed and verified gone, and the backups
    that still hold it."""
    result = await run_in_threadpool(_delete, services, [doc_id], remove_file)
    if result.not_found:
        raise ApiError(404, "not_found", f"No document {doc_id!r} is indexed")
    return result


@router.post("/documents/delete", response_model=DeleteResponse, responses={409: _RESTORING})
async def delete_many(body: DeleteRequest, services: ServicesDep) -> DeleteResponse:
    """Forget a set of documents, as ``DELETE /documents/{doc_id}`` does one: one delete
    per store for the whole set (BM25 first, Postgres last) and one receipt; unknown ids
    are reported in ``not_found``, not as a failure."""
    return await run_in_threadpool(_delete, services, body.doc_ids, body.remove_file)


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
                        "description": "The files; a part's filename is used when no "
                        "path is sent for it.",
                    },
                    "paths": {
                        "type": "array",
                        "items": {"type": "string"},
                        "description": "One per file, in order: its relative path (a "
                        "folder upload's webkitRelativePath); an empty entry uses the "
                        "filename.",
                    },
                    "mtimes": {
                        "type": "array",
                        "items": {"type": "string"},
                        "description": "One per file, in order: its modification time in "
                        "milliseconds since the epoch (File.lastModified); an empty entry "
                        "keeps the upload time.",
                    },
                    "folder": {
                        "type": "string",
                        "description": "A folder under DOCS_PATH every file goes into.",
                    },
                },
            }
        }
    },
}


@router.post(
    "/documents/upload",
    response_model=UploadResponse,
    openapi_extra={"requestBody": _UPLOAD_BODY},
    responses={
        413: {"model": ErrorBody, "description": "Too many files, or a form field too large."},
        415: {"model": ErrorBody, "description": "Not multipart/form-data."},
        422: {"model": ErrorBody, "description": "The batch as a whole is malformed."},
    },
)
async def upload_documents(request: Request, settings: SettingsDep) -> UploadResponse:
    """Write files (or a folder) into ``DOCS_PATH`` and launch their ingest runs.

    Each file is stored atomically with its original modification time, reported
    ``unchanged`` when identical bytes are already there, or refused with a code and a
    reason (unsafe or reserved path, hidden name, unsupported type, over
    ``MAX_FILE_BYTES``); a partly refused batch stores the rest.

    With curl: ``curl -F files=@a.md -F paths=notes/a.md -F mtimes=1700000000000 ...``.
    """
    launcher = ingest_launcher(request.app)
    async with receive_upload(
        request, settings.home / "uploads", settings.MAX_FILE_BYTES, _FORM_FIELDS
    ) as form:
        with launcher.uploading():
            try:
                results = await run_in_threadpool(
                    store_uploads,
                    settings.docs_path,
                    form.files,
                    paths=form.fields.get("paths", []),
                    mtimes=form.fields.get("mtimes", []),
                    folder=form.one_field("folder"),
                )
            except UploadRefused as exc:
                raise ApiError(422, exc.code, exc.message) from exc
            except ValueError as exc:
                raise ApiError(422, "invalid_upload", str(exc)) from exc
            for r in results:
                UPLOADED_FILES.labels(outcome=r.status).inc()
            written = [
                r.relative_path
                for r in results
                if r.status in ("stored", "replaced") and r.relative_path
            ]
            if written:
                await run_in_threadpool(partial(launcher.launch, written, source=UPLOAD_SOURCE))
    return UploadResponse(
        results=[UploadFileResult.model_validate(r, from_attributes=True) for r in results],
        counts=dict(Counter(r.status for r in results)),
    )
