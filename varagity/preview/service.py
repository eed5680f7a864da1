"""A chunk's page preview, end to end, and the disk cache that makes the second one free.

The cache lives under ``VARAGITY_HOME/previews``:

* ``pages/<content hash>/p<page>-<chunk key>.png`` - the highlighted page, and
  ``<chunk key>.json`` beside it, the answer that names it. The chunk key hashes the
  chunk's text and recorded page, so an image never changes once written: it is served
  as immutable.
* ``pdf/<content hash>.pdf`` - a deck's PDF, converted once.
* ``ocr/<content hash>/`` - the OCR words of scanned pages.
* ``libreoffice/`` - the converter's private profile.

A cached answer is only given while the file still hashes to the stored content hash
(the hash is memoised per file stat, so this costs a ``stat`` when nothing moved).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import asdict
from pathlib import Path, PurePosixPath

from varagity.config import Settings
from varagity.preview.convert import converted_pdf
from varagity.preview.render import render_chunk_page, write_atomic
from varagity.preview.source import read_source, verify_source
from varagity.preview.types import Box, PagePreview, PreviewUnavailable
from varagity.records import ChunkRecord

PAGED_SUFFIXES = frozenset({".pdf", ".pptx"})
"""The formats whose chunks have a page to show (decks through LibreOffice)."""

_HASH = re.compile(r"^[0-9a-f]{64}$")
_IMAGE = re.compile(r"^p[1-9][0-9]{0,5}-[0-9a-f]{16}\.png$")


def cache_root(settings: Settings) -> Path:
    """The preview cache folder."""
    return settings.home / "previews"


def chunk_key(record: ChunkRecord, span: tuple[int, int] | None = None) -> str:
    """What one chunk's preview is cached under, beside its file's content hash (with
    the highlighted span of its text, when only a quote is highlighted)."""
    seed = f"{record.page}\0{record.content}".encode()
    if span is not None:
        seed += f"\0{span[0]}:{span[1]}".encode()
    return hashlib.sha256(seed).hexdigest()[:16]


def quote_span(record: ChunkRecord, start: int, end: int) -> tuple[int, int]:
    """``(start, end)`` checked against the chunk's text: a quote of it to highlight.

    Raises:
        ValueError: The span is empty, reversed or runs past the chunk's text.
    """
    if not 0 <= start < end <= len(record.content):
        raise ValueError(
            f"the quote {start}:{end} is not within this passage's text (0:"
            f"{len(record.content)}); quotes come from the answer's `quotes`"
        )
    return start, end


def _from_json(data: dict[str, object]) -> PagePreview:
    boxes = data.pop("highlights")
    assert isinstance(boxes, list)
    return PagePreview(**data, highlights=tuple(Box(**b) for b in boxes))  # type: ignore[arg-type]


def preview_chunk(
    settings: Settings, record: ChunkRecord, span: tuple[int, int] | None = None
) -> PagePreview:
    """The page holding ``record``'s text, rendered with it highlighted (cached): the
    whole chunk, or with ``span`` (:func:`quote_span`) only that quote of it, on the page
    the quote is on (a chunk may span pages; the chunk's page when the quote's words
    alone find none).

    Raises:
        PreviewUnavailable: Why no page can be shown: ``not_paged``,
            ``outside_corpus``, ``file_missing``, ``file_changed``,
            ``converter_missing``, ``conversion_failed``, ``unreadable``,
            ``ocr_unavailable`` or ``page_not_found``.
    """
    suffix = PurePosixPath(record.relative_path).suffix.lower()
    if suffix not in PAGED_SUFFIXES:
        raise PreviewUnavailable(
            "not_paged",
            f"{record.file_name} has no pages to show (page previews cover PDF and "
            "PowerPoint files)",
        )
    digest = record.content_hash
    if not _HASH.match(digest):
        raise PreviewUnavailable("file_changed", f"{record.file_name} has no content hash")
    root = cache_root(settings)
    folder = root / "pages" / digest
    key = chunk_key(record, span)
    answer = folder / f"{key}.json"
    if answer.is_file():
        verify_source(settings.docs_path, record.relative_path, digest)
        cached = _from_json(json.loads(answer.read_text()))
        if (folder / cached.image).is_file():
            return cached
    data = read_source(settings.docs_path, record.relative_path, digest)
    if suffix == ".pptx":
        data = converted_pdf(root, data, digest, suffix).read_bytes()
    page = render_chunk_page(
        data,
        record.file_name,
        content=record.content,
        highlight=record.content[span[0] : span[1]] if span else None,
        hint=record.page,
        settings=settings,
        ocr_cache=root / "ocr" / digest,
        png_for=lambda number: folder / f"p{number}-{key}.png",
    )
    preview = PagePreview(
        content_hash=digest,
        page=page.page,
        page_count=page.page_count,
        image=f"p{page.page}-{key}.png",
        width=page.width,
        height=page.height,
        extraction=page.extraction,
        score=page.score,
        highlights=page.highlights,
    )
    write_atomic(answer, json.dumps(asdict(preview)).encode())
    return preview


def preview_image(settings: Settings, digest: str, name: str) -> Path | None:
    """The cached PNG ``name`` of the file with content hash ``digest``, if it exists.

    Only names this module writes are looked up, so no request reaches another path.
    """
    if not _HASH.match(digest) or not _IMAGE.match(name):
        return None
    path = cache_root(settings) / "pages" / digest / name
    return path if path.is_file() else None
