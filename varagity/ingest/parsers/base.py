"""The parsed-document record and parser dispatch by file suffix."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel

from varagity.ingest.discovery import file_sha256, resolve_in_corpus
from varagity.records import doc_id_for


class ParseError(ValueError):
    """The file cannot be turned into text; the message says why, naming the file."""


class ParsedDocument(BaseModel):
    """A file's extracted text plus the provenance every chunk inherits."""

    doc_id: str
    relative_path: str
    source: str
    file_name: str
    file_type: str
    content_hash: str
    size_bytes: int
    text: str
    extraction: str = "text"
    page: int | None = None
    file_created_at: datetime | None = None
    file_modified_at: datetime | None = None


def _timestamps(path: Path) -> tuple[datetime | None, datetime]:
    stat = path.stat()
    birth = getattr(stat, "st_birthtime", None)
    created = datetime.fromtimestamp(birth, UTC) if birth else None
    return created, datetime.fromtimestamp(stat.st_mtime, UTC)


def parse_file(docs_path: Path, relative_path: str, *, max_bytes: int) -> ParsedDocument:
    """Read and parse one corpus file."""
    from varagity.ingest.parsers import text

    path = resolve_in_corpus(docs_path, relative_path)
    if not path.is_file():
        raise FileNotFoundError(f"{relative_path}: no such file under {docs_path}")
    size = path.stat().st_size
    if size > max_bytes:
        raise ParseError(
            f"{relative_path}: {size} bytes is over MAX_FILE_BYTES ({max_bytes}); raise the "
            "limit or split the file"
        )
    suffix = path.suffix.lower()
    if suffix not in text.SUFFIXES:
        raise ParseError(f"{relative_path}: no parser for {suffix or 'files without a suffix'}")
    data = path.read_bytes()
    file_hash = file_sha256(path)
    body = text.decode_text(data, relative_path)
    created, modified = _timestamps(path)
    return ParsedDocument(
        doc_id=doc_id_for(relative_path, file_hash),
        relative_path=relative_path,
        source=str(path),
        file_name=os.path.basename(relative_path),
        file_type=suffix.lstrip("."),
        content_hash=file_hash,
        size_bytes=size,
        text=body,
        file_created_at=created,
        file_modified_at=modified,
    )
