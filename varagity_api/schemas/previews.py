"""Page previews of evidence chunks (ADR-010): the envelope the evidence panel reads."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from varagity.preview import UnavailableReason


class HighlightBox(BaseModel):
    """A highlighted rectangle as fractions of the page image (origin top left)."""

    x: float = Field(ge=0, le=1)
    y: float = Field(ge=0, le=1)
    width: float = Field(ge=0, le=1)
    height: float = Field(ge=0, le=1)


class ChunkPreview(BaseModel):
    """The page a chunk came from, or why none can be shown.

    ``available: false`` is an answer, not an error: the client shows the chunk's text
    with ``message`` instead (the file is gone, changed since indexing, has no pages,
    the deck converter is missing, or no page holds the text any more).
    """

    chunk_id: str
    available: bool
    reason: UnavailableReason | None = Field(
        default=None, description="Why no page is shown (only when available is false)."
    )
    message: str | None = Field(default=None, description="The reason, for people.")
    page: int | None = Field(default=None, description="1-based page (slide) number.")
    page_count: int | None = None
    image_url: str | None = Field(
        default=None,
        description="The highlighted page as PNG; immutable (its name hashes the file and "
        "the chunk), so it is cached for good.",
    )
    width: int | None = Field(default=None, description="The image's width in pixels.")
    height: int | None = Field(default=None, description="The image's height in pixels.")
    extraction: Literal["text", "ocr"] | None = Field(
        default=None,
        description="Where the highlight boxes come from: the PDF text layer, or OCR.",
    )
    highlights: list[HighlightBox] = Field(default_factory=list)
