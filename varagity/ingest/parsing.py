"""Reading one corpus file: find it, pick its format family's parser, and record the
identity and provenance every chunk of it inherits."""

from __future__ import annotations

import ctypes
import functools
import os
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from varagity.config import Settings
from varagity.files import file_sha256
from varagity.ingest.discovery import resolve_in_corpus
from varagity.ingest.parsers.base import (
    PAGE_SEPARATOR,
    PageSpan,
    PageText,
    ParsedDocument,
    ParseError,
)
from varagity.ingest.parsers.registry import parser_for
from varagity.records import doc_id_for


def join_pages(pages: list[PageText]) -> tuple[str, list[PageSpan]]:
    """Concatenate non-empty pages with blank lines, recording each page's span."""
    parts: list[str] = []
    spans: list[PageSpan] = []
    pos = 0
    for page in pages:
        body = page.text.strip()
        if not body:
            continue
        if parts:
            parts.append(PAGE_SEPARATOR)
            pos += len(PAGE_SEPARATOR)
        spans.append(
            PageSpan(
                page=page.page, char_start=pos, char_end=pos + len(body), extraction=page.extraction
            )
        )
        parts.append(body)
        pos += len(body)
    return "".join(parts), spans


def birth_time(path: Path) -> datetime | None:
    """When the file was created, if the filesystem records it (best effort).

    ``os.stat`` exposes it on macOS and Windows; on Linux the ``statx`` system call
    reads it (through the C library; no birth time where it has no ``statx``, or the
    filesystem keeps none).
    """
    birth = getattr(path.stat(), "st_birthtime", None)
    if birth:
        return datetime.fromtimestamp(birth, UTC)
    seconds = _statx_birth_seconds(path) if sys.platform.startswith("linux") else None
    return datetime.fromtimestamp(seconds, UTC) if seconds else None


_AT_FDCWD = -100
_STATX_BTIME = 0x800
_STATX_SIZE = 256  # struct statx
_STX_BTIME_OFFSET = 80  # stx_btime.tv_sec (after mask .. attributes_mask and stx_atime)


@functools.cache
def _statx() -> Callable[..., int] | None:
    statx = getattr(ctypes.CDLL(None, use_errno=True), "statx", None)
    if statx is not None:
        statx.argtypes = [
            ctypes.c_int,
            ctypes.c_char_p,
            ctypes.c_int,
            ctypes.c_uint,
            ctypes.c_void_p,
        ]
        statx.restype = ctypes.c_int
    return statx


def _statx_birth_seconds(path: Path) -> int | None:
    """``stx_btime.tv_sec`` of ``path``, or None when the kernel or filesystem has none.

    A system call, not a ``stat -c %W`` child process: spawning one per file was most of
    a text file's parse time in a run worker.
    """
    statx = _statx()
    if statx is None:
        return None
    buf = ctypes.create_string_buffer(_STATX_SIZE)
    if statx(_AT_FDCWD, os.fsencode(path), 0, _STATX_BTIME, buf) != 0:
        return None
    mask = int.from_bytes(buf.raw[0:4], sys.byteorder)
    if not mask & _STATX_BTIME:
        return None
    seconds = int.from_bytes(
        buf.raw[_STX_BTIME_OFFSET : _STX_BTIME_OFFSET + 8], sys.byteorder, signed=True
    )
    return seconds if seconds > 0 else None


def _timestamps(path: Path) -> tuple[datetime | None, datetime]:
    return birth_time(path), datetime.fromtimestamp(path.stat().st_mtime, UTC)


def locate(docs_path: Path, relative_path: str) -> Path:
    """The corpus file's absolute path; a clear error when it is gone or escapes."""
    path = resolve_in_corpus(docs_path, relative_path)
    if not path.is_file():
        raise FileNotFoundError(f"{relative_path}: no such file under {docs_path}")
    return path


def parse_file(docs_path: Path, relative_path: str, *, settings: Settings) -> ParsedDocument:
    """Read and parse one corpus file with its family's parser."""
    path = locate(docs_path, relative_path)
    size = path.stat().st_size
    if size > settings.MAX_FILE_BYTES:
        raise ParseError(
            f"{relative_path}: {size} bytes is over MAX_FILE_BYTES ({settings.MAX_FILE_BYTES});"
            " raise the limit or split the file"
        )
    suffix = path.suffix.lower()
    parser = parser_for(suffix)
    if parser is None:
        raise ParseError(f"{relative_path}: no parser for {suffix or 'files without a suffix'}")
    file_hash = file_sha256(path)
    try:
        content = parser.parse(path, settings)
    except ParseError as exc:
        message = str(exc).removeprefix(f"{path.name}: ")
        raise ParseError(f"{relative_path}: {message}") from None
    text, spans = join_pages(content.pages)
    created, modified = _timestamps(path)
    return ParsedDocument(
        doc_id=doc_id_for(relative_path, file_hash),
        relative_path=relative_path,
        source=str(path),
        file_name=os.path.basename(relative_path),
        file_type=suffix.lstrip("."),
        content_hash=file_hash,
        size_bytes=size,
        text=text,
        markdown=content.markdown,
        page_spans=spans,
        file_created_at=created,
        file_modified_at=modified,
    )
