"""Multipart uploads read as they stream: each file part goes straight into a
:class:`~varagity.uploads.StagedFile` (hashed while it arrives, dropped past its
size limit), so a huge upload never fills memory, and form fields are kept in memory
up to 64 KiB each. The documents upload and the message-archive upload both read their
bodies through :func:`receive_upload`.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from fastapi import Request
from python_multipart.exceptions import FormParserError
from python_multipart.multipart import MultipartParser, parse_options_header
from starlette.concurrency import run_in_threadpool

from varagity.uploads import StagedFile
from varagity_api.errors import ApiError

if TYPE_CHECKING:
    from python_multipart.multipart import MultipartCallbacks

MAX_UPLOAD_FILES = 10_000
"""Most files one upload request may carry."""
_MAX_FIELD_BYTES = 64 * 1024


class UploadForm:
    """A multipart body read part by part: form fields into memory, each file part
    straight into a :class:`StagedFile`.

    The parser's callbacks run on the event loop and only queue file data; ``flush``
    writes it (in a worker thread) after each network chunk.
    """

    def __init__(self, staging: Path, max_file_bytes: int, fields: tuple[str, ...]) -> None:
        """Stage files in ``staging`` (each up to ``max_file_bytes``); ``fields`` are the
        form fields allowed beside the ``files`` parts."""
        self.staging = staging
        self.max_file_bytes = max_file_bytes
        self.allowed_fields = fields
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
        self._field = decode(options[b"name"])
        if b"filename" not in options:
            if self._field not in self.allowed_fields:
                also = f" and optionally {', '.join(self.allowed_fields)}"
                raise ApiError(
                    422,
                    "invalid_upload",
                    f"unexpected form field {self._field!r}; send files as 'files' parts"
                    + (also if self.allowed_fields else ""),
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
        self._file = StagedFile(self.staging, decode(options[b"filename"]), self.max_file_bytes)
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
            self.fields.setdefault(self._field, []).append(decode(bytes(self._data)))

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

    def one_field(self, name: str) -> str:
        """The value of a form field sent at most once ('' when absent).

        Raises:
            ApiError: 422 when it was sent more than once.
        """
        values = self.fields.get(name, [])
        if len(values) > 1:
            raise ApiError(422, "invalid_upload", f"send at most one {name!r}")
        return values[0] if values else ""


def decode(raw: bytes) -> str:
    """A header or field value as text: UTF-8, else Latin-1 (never an error)."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("latin-1")


async def _receive(request: Request, form: UploadForm) -> None:
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
    if not form.files:
        raise ApiError(422, "no_files", "the upload holds no files; send each as a 'files' part")


@asynccontextmanager
async def receive_upload(
    request: Request, staging_root: Path, max_file_bytes: int, fields: tuple[str, ...]
) -> AsyncIterator[UploadForm]:
    """The request's multipart body, every file staged in a new folder under
    ``staging_root``; the staged files and their folder are removed on exit.

    Raises:
        ApiError: 415 not multipart, 400 malformed or cut short, 413 too many files or a
            field too large, 422 an unexpected part or no file at all.
    """
    staging_root.mkdir(parents=True, exist_ok=True)
    form = UploadForm(Path(tempfile.mkdtemp(dir=staging_root)), max_file_bytes, fields)
    try:
        await _receive(request, form)
        yield form
    finally:
        form.discard()
        await run_in_threadpool(shutil.rmtree, form.staging, True)
