"""The parser contract, the registry, and the parsed-document record.

A parser family is one module that registers a :class:`Parser` for its suffixes. It
turns a file into :class:`PageText` pages (a page is a PDF page, a slide, a sheet, an
OCR'd image, or the whole file for formats without pages). :func:`parse_file` adds the
identity and provenance every chunk inherits and joins the pages into one text whose
page spans let each chunk find its own page.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal, Protocol

from pydantic import BaseModel

from varagity.config import Settings
from varagity.ingest.discovery import file_sha256, resolve_in_corpus
from varagity.records import doc_id_for

Extraction = Literal["text", "ocr", "ocr_fallback"]
EXTRACTIONS: tuple[str, ...] = ("text", "ocr", "ocr_fallback")
PAGE_SEPARATOR = "\n\n"


class ParseError(ValueError):
    """The file cannot be turned into text; the message says why, naming the file."""


class PageText(BaseModel):
    """Text of one page and how it was obtained."""

    page: int | None = None
    text: str
    extraction: Extraction = "text"


class ParsedContent(BaseModel):
    """What a parser returns: pages, and whether the text is Markdown (headings matter)."""

    pages: list[PageText]
    markdown: bool = False


class Parser(Protocol):
    """One format family."""

    family: str
    suffixes: frozenset[str]

    def parse(self, path: Path, settings: Settings) -> ParsedContent:
        """Extract the file's pages; raise :class:`ParseError` with a reason on failure."""
        ...


PARSERS: dict[str, Parser] = {}


def register(parser: Parser) -> Parser:
    """Add a parser family; each suffix belongs to exactly one family."""
    for other in PARSERS.values():
        clash = other.suffixes & parser.suffixes
        if clash and other.family != parser.family:
            raise ValueError(f"{sorted(clash)} already parsed by the {other.family} family")
    PARSERS[parser.family] = parser
    return parser


def parser_for(suffix: str) -> Parser | None:
    """The registered family for a lower-case suffix (``.pdf``), if any."""
    _load_families()
    for parser in PARSERS.values():
        if suffix in parser.suffixes:
            return parser
    return None


def supported_suffixes() -> frozenset[str]:
    """Every suffix some family parses."""
    _load_families()
    return frozenset().union(*(p.suffixes for p in PARSERS.values()))


_FAMILY_MODULES = ("text", "pdf", "office", "web", "image")
_loaded: list[Callable[[], None]] = []


def _load_families() -> None:
    if _loaded:
        return
    import importlib

    for name in _FAMILY_MODULES:
        importlib.import_module(f"varagity.ingest.parsers.{name}")
    _loaded.append(lambda: None)


class PageSpan(BaseModel):
    """Where a page's text sits in the joined document text."""

    page: int | None
    char_start: int
    char_end: int
    extraction: Extraction


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
    markdown: bool = False
    page_spans: list[PageSpan] = []
    file_created_at: datetime | None = None
    file_modified_at: datetime | None = None

    @property
    def extraction(self) -> Extraction:
        """The document's dominant extraction (``ocr`` or ``ocr_fallback`` if any page)."""
        kinds = {s.extraction for s in self.page_spans}
        for kind in ("ocr_fallback", "ocr"):
            if kind in kinds:
                return kind
        return "text"

    def span_at(self, offset: int) -> PageSpan | None:
        """The page holding character ``offset`` (the next page when it falls between)."""
        for span in self.page_spans:
            if offset < span.char_end:
                return span
        return self.page_spans[-1] if self.page_spans else None


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

    ``os.stat`` exposes it on macOS and Windows; on Linux GNU coreutils' ``stat -c %W``
    reads it through statx (0 or ``-`` means the filesystem keeps none).
    """
    birth = getattr(path.stat(), "st_birthtime", None)
    if birth:
        return datetime.fromtimestamp(birth, UTC)
    if sys.platform.startswith("linux") and shutil.which("stat"):
        try:
            out = subprocess.run(
                ["stat", "-c", "%W", str(path)], capture_output=True, text=True, timeout=5
            ).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return None
        if out.isdigit() and int(out) > 0:
            return datetime.fromtimestamp(int(out), UTC)
    return None


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
