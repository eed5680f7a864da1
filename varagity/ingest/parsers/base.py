"""The parser contract and the parsed-document record.

A parser family is one module holding a :class:`Parser` for its suffixes
(:mod:`~varagity.ingest.parsers.registry` lists them). It turns a file into
:class:`PageText` pages (a page is a PDF page, a slide, a sheet, an OCR'd image, or the
whole file for formats without pages). :func:`varagity.ingest.parsing.parse_file` adds
the identity and provenance every chunk inherits and joins the pages into one text
whose page spans let each chunk find its own page.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Literal, Protocol

from pydantic import BaseModel

from varagity.config import Settings

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
