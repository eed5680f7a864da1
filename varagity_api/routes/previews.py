"""Page previews of evidence chunks (ADR-010): the envelope, and the page images.

``GET /api/chunks/{chunk_id}/preview`` locates and renders the chunk's page on first
call (cached on disk after that) and answers ``available: false`` with a reason for
anything a document can do wrong - never a 5xx - including a chunk no longer indexed
(a saved conversation's evidence outlives a removed or reindexed file).
``GET /api/previews/{hash}/{name}`` serves the rendered PNG; its name hashes the file's
bytes and the chunk, so the image is immutable and cached by the browser for a year.
"""

from __future__ import annotations

import logging
from typing import Annotated

from fastapi import APIRouter, Query, Request, Response
from starlette.concurrency import run_in_threadpool

from varagity.observability.metrics import PAGE_PREVIEWS
from varagity.preview import (
    PagePreview,
    PreviewUnavailable,
    preview_chunk,
    preview_image,
    quote_span,
)
from varagity.records import ChunkRecord
from varagity.services import Services
from varagity_api.deps import ServicesDep, SettingsDep
from varagity_api.errors import ApiError
from varagity_api.schemas.common import ErrorBody
from varagity_api.schemas.previews import ChunkPreview, HighlightBox

router = APIRouter(tags=["previews"])
log = logging.getLogger(__name__)

MAX_CHUNK_ID = 256
IMMUTABLE = "private, max-age=31536000, immutable"
"""Private: with API_KEY set the images are not for shared caches."""


def _envelope(record: ChunkRecord, page: PagePreview) -> ChunkPreview:
    return ChunkPreview(
        chunk_id=record.chunk_id,
        available=True,
        page=page.page,
        page_count=page.page_count,
        image_url=f"/api/previews/{page.content_hash}/{page.image}",
        width=page.width,
        height=page.height,
        extraction=page.extraction,
        highlights=[
            HighlightBox(
                x=min(max(b.x, 0.0), 1.0),
                y=min(max(b.y, 0.0), 1.0),
                width=min(max(b.width, 0.0), 1.0),
                height=min(max(b.height, 0.0), 1.0),
            )
            for b in page.highlights
        ],
    )


def _preview(
    services: Services, chunk_id: str, quote: tuple[int, int] | None = None
) -> ChunkPreview:
    # no stored id holds a NUL (Postgres refuses one in a query) or runs this long
    plausible = "\x00" not in chunk_id and len(chunk_id) <= MAX_CHUNK_ID
    record = services.pg.get_chunk(chunk_id) if plausible else None
    if record is None:
        # an answer kept in a conversation outlives its chunks (the file was removed or
        # changed and reindexed since): the card keeps its saved text
        PAGE_PREVIEWS.labels(outcome="not_indexed").inc()
        return ChunkPreview(
            chunk_id=chunk_id,
            available=False,
            reason="not_indexed",
            message="this passage is no longer indexed: its file was removed or has "
            "changed since this answer",
        )
    try:
        span = quote_span(record, *quote) if quote is not None else None
    except ValueError as exc:
        raise ApiError(422, "quote_out_of_range", str(exc)) from None
    try:
        page = preview_chunk(services.settings, record, span)
    except PreviewUnavailable as exc:
        PAGE_PREVIEWS.labels(outcome=exc.reason).inc()
        return ChunkPreview(
            chunk_id=chunk_id, available=False, reason=exc.reason, message=exc.message
        )
    except Exception as exc:  # a document must never turn into a 5xx
        log.exception("page preview of %s failed", chunk_id)
        PAGE_PREVIEWS.labels(outcome="unreadable").inc()
        return ChunkPreview(
            chunk_id=chunk_id,
            available=False,
            reason="unreadable",
            message=f"{record.file_name}: the page could not be rendered ({exc})",
        )
    PAGE_PREVIEWS.labels(outcome="shown").inc()
    return _envelope(record, page)


@router.get(
    "/chunks/{chunk_id}/preview",
    response_model=ChunkPreview,
    responses={422: {"model": ErrorBody, "description": "A quote span outside the passage."}},
)
async def chunk_preview(
    chunk_id: str,
    services: ServicesDep,
    start: Annotated[
        int | None,
        Query(ge=0, description="Highlight only the quote content[start:end] (with end)."),
    ] = None,
    end: Annotated[int | None, Query(ge=1, description="End of the quote (with start).")] = None,
) -> ChunkPreview:
    """The page the chunk came from, rendered with its text highlighted (or, with
    ``start`` and ``end`` from an answer's quote, only the quoted sentences), or
    ``available: false`` with the reason the evidence panel shows instead."""
    if (start is None) != (end is None):
        raise ApiError(
            422, "quote_out_of_range", "give both start and end of the quote, or neither"
        )
    quote = (start, end) if start is not None and end is not None else None
    return await run_in_threadpool(_preview, services, chunk_id, quote)


@router.get(
    "/previews/{content_hash}/{name}",
    response_class=Response,
    responses={
        200: {"content": {"image/png": {}}, "description": "The highlighted page."},
        304: {"description": "The client's copy is current (If-None-Match)."},
        404: {"model": ErrorBody, "description": "No such rendered page."},
    },
)
async def preview_page_image(
    content_hash: str, name: str, request: Request, settings: SettingsDep
) -> Response:
    """A rendered page (PNG) named by a preview envelope; immutable and cacheable."""
    path = preview_image(settings, content_hash, name)
    if path is None:
        raise ApiError(
            404,
            "not_found",
            "No such page image; ask GET /api/chunks/{chunk_id}/preview for its URL",
        )
    etag = f'"{content_hash[:16]}-{name.removesuffix(".png")}"'
    headers = {"Cache-Control": IMMUTABLE, "ETag": etag}
    if etag in request.headers.get("if-none-match", ""):
        return Response(status_code=304, headers=headers)
    data = await run_in_threadpool(path.read_bytes)
    return Response(content=data, media_type="image/png", headers=headers)
