"""What a preview answers: a rendered page with highlight boxes, or why there is none."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

UnavailableReason = Literal[
    "not_indexed",
    "not_paged",
    "outside_corpus",
    "file_missing",
    "file_changed",
    "converter_missing",
    "conversion_failed",
    "unreadable",
    "ocr_unavailable",
    "page_not_found",
]
"""Why a chunk has no page preview (the web client falls back to the chunk's text)."""


class PreviewUnavailable(Exception):
    """No page can be shown for a chunk; ``reason`` names why, the message says it."""

    def __init__(self, reason: UnavailableReason, message: str) -> None:
        super().__init__(message)
        self.reason: UnavailableReason = reason
        self.message = message


@dataclass(frozen=True, slots=True)
class Box:
    """A highlight rectangle as fractions of the page image (top-left origin)."""

    x: float
    y: float
    width: float
    height: float


@dataclass(frozen=True, slots=True)
class PagePreview:
    """One chunk's page: the cached image's name, its size and the highlight boxes.

    ``image`` is the file name under the content hash's cache folder
    (``p<page>-<chunk key>.png``); ``extraction`` says where the boxes came from (the
    PDF's text layer, or OCR of a scanned page); ``score`` is the share of the chunk's
    word trigrams found on the page.
    """

    content_hash: str
    page: int
    page_count: int
    image: str
    width: int
    height: int
    extraction: Literal["text", "ocr"]
    score: float
    highlights: tuple[Box, ...] = field(default=())
