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
import shutil
import tempfile
from collections import Counter
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from fastapi import APIRouter, Request
from python_multipart.exceptions import FormParserError
from python_multipart.multipart import MultipartParser, parse_options_header
from starlette.concurrency import run_in_threadpool

from varagity.config import Settings
from varagity.corpus import delete_documents, list_corpus
from varagity.dagster_client import DagsterClient, DagsterError
from varagity.ingest.discovery import partition_key_for
from varagity.ingest.uploads import StagedFile, UploadRefused, store_uploads
from varagity.observability.metrics import DELETED_DOCUMENTS, UPLOADED_FILES
from varagity.services import Services
from varagity_api.deps import ServicesDep, SettingsDep
from varagity_api.errors import ApiError
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

if TYPE_CHECKING:
    from python_multipart.multipart import MultipartCallbacks

router = APIRouter(tags=["documents"])
log = logging.getLogger(__name__)

UPLOAD_SOURCE = "upload"
"""The ``varagity/source`` tag of the ingest runs an upload launches."""
DAGSTER_TIMEOUT_S = 10.0
"""Longest wait for one GraphQL answer when launching an upload's ingest runs."""

MAX_UPLOAD_FILES = 10_000
"""Most files one upload request may carry."""
_MAX_FIELD_BYTES = 64 * 1024
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
    report = delete_documents(
        services.pg, services.bm25, services.settings.docs_path, doc_ids, remove_file=remove_file
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
    )


@router.delete(
    "/documents/{doc_id}",
    response_model=DeleteResponse,
    responses={404: {"model": ErrorBody, "description": "No such document."}},
)
async def delete_document(
    doc_id: str, services: ServicesDep, remove_file: bool = False
) -> DeleteResponse:
    """Delete one document from both indexes (BM25 first, Postgres last); with
    ``remove_file=true`` also remove its file from ``DOCS_PATH``."""
    result = await run_in_threadpool(_delete, services, [doc_id], remove_file)
    if result.not_found:
        raise ApiError(404, "not_found", f"No document {doc_id!r} is indexed")
    return result


@router.post("/documents/delete", response_model=DeleteResponse)
async def delete_many(body: DeleteRequest, services: ServicesDep) -> DeleteResponse:
    """Delete a set of documents: one delete per store for the whole set (BM25 first,
    Postgres last); unknown ids are reported in ``not_found``, not as a failure."""
    return await run_in_threadpool(_delete, services, body.doc_ids, body.remove_file)


class _UploadForm:
    """A multipart body read part by part: form fields into memory, each file part
    straight into a :class:`StagedFile`.

    The parser's callbacks run on the event loop and only queue file data; ``flush``
    writes it (in a worker thread) after each network chunk.
    """

    def __init__(self, staging: Path, max_file_bytes: int) -> None:
        self.staging = staging
        self.max_file_bytes = max_file_bytes
        self.fields: dict[str, list[str]] = {}
        self.files: list[StagedFile] = []
        self._pending: list[tuple[StagedFile, bytes]] = []
        self._ended: list[StagedFile] = []
        self._header_name = b""
        self._header_value = b""
        self._disposition = b""
        self._data = bytearray()
        self._file: StagedFile | None = None
        self._field = ""
        self.complete = False
        """The closing boundary arrived: the body was not cut short."""

    def callbacks(self) -> MultipartCallbacks:
        return {
            "on_part_begin": self._part_begin,
            "on_header_field": self._header_field,
            "on_header_value": self._header_value_data,
            "on_header_end": self._header_end,
            "on_headers_finished": self._headers_finished,
            "on_part_data": self._part_data,
            "on_part_end": self._part_end,
            "on_end": self._end,
        }

    def _part_begin(self) -> None:
        self._disposition = b""
        self._data = bytearray()
        self._file = None

    def _header_field(self, data: bytes, start: int, end: int) -> None:
        self._header_name += data[start:end]

    def _header_value_data(self, data: bytes, start: int, end: int) -> None:
        self._header_value += data[start:end]

    def _header_end(self) -> None:
        if self._header_name.lower() == b"content-disposition":
            self._disposition = self._header_value
        self._header_name = self._header_value = b""

    def _headers_finished(self) -> None:
        _, options = parse_options_header(self._disposition)
        if b"name" not in options:
            raise ApiError(400, "invalid_multipart", "a part has no Content-Disposition name")
        self._field = _decode(options[b"name"])
        if b"filename" not in options:
            if self._field not in _FORM_FIELDS:
                raise ApiError(
                    422,
                    "invalid_upload",
                    f"unexpected form field {self._field!r}; send files as 'files' parts "
                    f"and optionally {', '.join(_FORM_FIELDS)}",
                )
            return
        if self._field != "files":
            raise ApiError(
                422, "invalid_upload", f"file parts must be named 'files', not {self._field!r}"
            )
        if len(self.files) >= MAX_UPLOAD_FILES:
            raise ApiError(
                413, "too_many_files", f"one upload carries at most {MAX_UPLOAD_FILES} files"
            )
        self._file = StagedFile(self.staging, _decode(options[b"filename"]), self.max_file_bytes)
        self.files.append(self._file)

    def _part_data(self, data: bytes, start: int, end: int) -> None:
        if self._file is not None:
            self._pending.append((self._file, data[start:end]))
            return
        self._data += data[start:end]
        if len(self._data) > _MAX_FIELD_BYTES:
            raise ApiError(
                413,
                "field_too_large",
                f"form field {self._field!r} is over {_MAX_FIELD_BYTES} bytes",
            )

    def _part_end(self) -> None:
        if self._file is not None:
            self._ended.append(self._file)
        else:
            self.fields.setdefault(self._field, []).append(_decode(bytes(self._data)))

    def _end(self) -> None:
        self.complete = True

    def flush(self) -> None:
        """Write the file data received so far; close the files that ended."""
        for staged, data in self._pending:
            staged.write(data)
        for staged in self._ended:
            staged.finish()
        self._pending.clear()
        self._ended.clear()

    def discard(self) -> None:
        """Close and drop every staged file."""
        for staged in self.files:
            staged.discard()


def _launch_ingest(settings: Settings, relative_paths: list[str]) -> None:
    """Ask Dagster to ingest freshly written files now instead of at the sensor's next
    tick; on failure the sensor still finds them, so the upload stands."""
    client = DagsterClient(settings.dagster_url, timeout=DAGSTER_TIMEOUT_S)
    try:
        client.launch_ingest_runs(
            [partition_key_for(p) for p in relative_paths],
            batch_size=settings.INGEST_BATCH_SIZE,
            source=UPLOAD_SOURCE,
        )
    except DagsterError as exc:
        log.warning("uploaded files wait for the folder sensor: %s", exc)


def _decode(raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("latin-1")


async def _receive(request: Request, form: _UploadForm) -> None:
    content_type, params = parse_options_header(request.headers.get("content-type", ""))
    if content_type != b"multipart/form-data" or b"boundary" not in params:
        raise ApiError(415, "unsupported_media_type", "send the files as multipart/form-data")
    parser = MultipartParser(params[b"boundary"], form.callbacks())
    try:
        async for chunk in request.stream():
            parser.write(chunk)
            await run_in_threadpool(form.flush)
        parser.finalize()
    except FormParserError as exc:
        raise ApiError(400, "invalid_multipart", f"the multipart body is malformed: {exc}") from exc
    if not form.complete:
        raise ApiError(
            400,
            "truncated_multipart",
            "the multipart body ended before its closing boundary (the upload was cut "
            "short); nothing was stored, send it again",
        )
    await run_in_threadpool(form.flush)


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
    uploads = settings.home / "uploads"
    uploads.mkdir(parents=True, exist_ok=True)
    form = _UploadForm(Path(tempfile.mkdtemp(dir=uploads)), settings.MAX_FILE_BYTES)
    try:
        await _receive(request, form)
        if not form.files:
            raise ApiError(
                422, "no_files", "the upload holds no files; send each as a 'files' part"
            )
        folders = form.fields.get("folder", [])
        if len(folders) > 1:
            raise ApiError(422, "invalid_upload", "send at most one 'folder'")
        try:
            results = await run_in_threadpool(
                store_uploads,
                settings.docs_path,
                form.files,
                paths=form.fields.get("paths", []),
                mtimes=form.fields.get("mtimes", []),
                folder=folders[0] if folders else "",
            )
        except UploadRefused as exc:
            raise ApiError(422, exc.code, exc.message) from exc
        except ValueError as exc:
            raise ApiError(422, "invalid_upload", str(exc)) from exc
    finally:
        form.discard()
        await run_in_threadpool(shutil.rmtree, form.staging, True)
    for r in results:
        UPLOADED_FILES.labels(outcome=r.status).inc()
    written = [r.relative_path for r in results if r.status in ("stored", "replaced")]
    if written:
        await run_in_threadpool(_launch_ingest, settings, [p for p in written if p])
    return UploadResponse(
        results=[UploadFileResult.model_validate(r, from_attributes=True) for r in results],
        counts=dict(Counter(r.status for r in results)),
    )
