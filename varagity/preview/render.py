"""Find a chunk's page in a PDF, box its text, and render the page with the boxes drawn.

Locating (no ingest-time provenance needed): every page is scored by the share of the
chunk's word trigrams it holds, starting at the page the chunk was recorded to start
on and moving outwards; a page holding :data:`STRONG_MATCH` of them ends the search
(a chunk's trigrams are split between the pages it spans, so a page holding half of
them holds more than any other), otherwise the best page holding at least
:data:`MIN_MATCH` wins. A page reads as the
ingest read it: its text layer when it has one, otherwise OCR (cached per page, since
OCR takes seconds).

Highlighting: on a text-layer page, PDFium's own text search finds each line of the
chunk (a miss is searched again in halves, so a line the page wraps or hyphenates
differently is still found in parts) and reports the rectangles of the characters it
matched; on an OCR page, the OCR words whose trigrams the chunk holds are boxed.

Every PDFium call holds the parsers' global lock (PDFium is not thread-safe); OCR runs
one page at a time, outside it.
"""

from __future__ import annotations

import io
import json
import os
import tempfile
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from PIL import Image, ImageDraw

from varagity.config import Settings
from varagity.ingest.ocr import OcrError, OcrUnavailableError, OcrWord, get_ocr_engine
from varagity.ingest.parsers.base import ParseError
from varagity.ingest.parsers.pdf import (
    PDFIUM_LOCK,
    has_text_layer,
    open_pdf,
    page_text,
    render_page,
)
from varagity.preview.normalize import find_runs, overlap, phrases, shingles, words
from varagity.preview.types import Box, PreviewUnavailable

STRONG_MATCH = 0.5
MIN_MATCH = 0.25
RENDER_DPI = 144
HIGHLIGHT_FILL = (255, 214, 0, 96)
HIGHLIGHT_EDGE = (230, 140, 0, 255)
# One OCR at a time: an engine object is shared by the process, and two pages read at
# once on the same cores take as long as one after the other.
_OCR_LOCK = threading.Lock()


@dataclass(frozen=True, slots=True)
class PageText:
    """One page as the preview reads it: its words, and OCR words when it was OCR'd."""

    extraction: Literal["text", "ocr"]
    text: str
    ocr_words: tuple[OcrWord, ...] = ()
    ocr_size: tuple[int, int] = (1, 1)


@dataclass(frozen=True, slots=True)
class RenderedPage:
    """A located, highlighted page written as PNG."""

    page: int
    page_count: int
    width: int
    height: int
    extraction: Literal["text", "ocr"]
    score: float
    highlights: tuple[Box, ...]


def _hint_order(count: int, hint: int | None) -> Iterator[int]:
    """0-based page indexes from the hinted page outwards (after, then before)."""
    start = min(max((hint or 1) - 1, 0), count - 1)
    yield start
    for step in range(1, count):
        for index in (start + step, start - step):
            if 0 <= index < count:
                yield index


def locate(
    count: int, hint: int | None, content: str, read: Callable[[int], PageText]
) -> tuple[int, float, PageText]:
    """The 0-based index of the page holding ``content``, its score and its text.

    Raises:
        PreviewUnavailable: ``page_not_found`` when no page holds enough of it.
    """
    chunk = shingles(words(content))
    best: tuple[int, float, PageText] | None = None
    for index in _hint_order(count, hint):
        page = read(index)
        score = overlap(chunk, shingles(words(page.text)))
        if best is None or score > best[1]:
            best = (index, score, page)
        if score >= STRONG_MATCH:
            break
    if best is None or best[1] < MIN_MATCH:
        raise PreviewUnavailable(
            "page_not_found",
            "no page of the file holds this passage's words any more (the text of the "
            "file differs from what was indexed)",
        )
    return best


def _locate_quote(
    count: int,
    hint: int | None,
    content: str,
    highlight: str | None,
    read: Callable[[int], PageText],
) -> tuple[int, float, PageText]:
    """The page of ``highlight`` (a quote of ``content``) if its words find one, else
    the page of ``content`` (:func:`locate`)."""
    if highlight:
        try:
            return locate(count, hint, highlight, read)
        except PreviewUnavailable:
            pass
    return locate(count, hint, content, read)


def _text_boxes(pdf: Any, index: int, content: str) -> tuple[Box, ...]:
    """PDFium's rectangles for the chunk's lines on a text-layer page."""
    with PDFIUM_LOCK:
        page = pdf[index]
        try:
            width, height = page.get_size()
            left0, bottom0, _, _ = page.get_bbox()
            textpage = page.get_textpage()
            try:
                found: list[tuple[int, int]] = []
                cursor = 0

                def search(phrase: str) -> tuple[int, int] | None:
                    nonlocal cursor
                    for start in (cursor, 0) if cursor else (0,):
                        searcher = textpage.search(phrase, index=start)
                        try:
                            hit = searcher.get_next()
                        finally:
                            searcher.close()
                        if hit is not None:
                            cursor = hit[0] + hit[1]
                            return (int(hit[0]), int(hit[1]))
                    return None

                for line in phrases(content):
                    found += find_runs(line, search, min_words=1 if len(line) == 1 else 2)
                boxes: list[Box] = []
                for start, length in found:
                    for i in range(textpage.count_rects(start, length)):
                        left, bottom, right, top = textpage.get_rect(i)
                        boxes.append(
                            Box(
                                x=(left - left0) / width,
                                y=(height - (top - bottom0)) / height,
                                width=(right - left) / width,
                                height=(top - bottom) / height,
                            )
                        )
            finally:
                textpage.close()
        finally:
            page.close()
    return tuple(boxes)


def _reading_order(items: tuple[OcrWord, ...]) -> list[OcrWord]:
    """OCR words line by line, top to bottom, left to right."""
    lines: list[list[OcrWord]] = []
    for word in sorted(items, key=lambda w: (w.top + w.bottom) / 2):
        center = (word.top + word.bottom) / 2
        if lines:
            first = lines[-1][0]
            if abs(center - (first.top + first.bottom) / 2) <= (first.bottom - first.top) / 2:
                lines[-1].append(word)
                continue
        lines.append([word])
    return [w for line in lines for w in sorted(line, key=lambda w: w.left)]


def _ocr_boxes(page: PageText, content: str) -> tuple[Box, ...]:
    """The OCR words that sit in a run of three words the chunk also has."""
    chunk_tokens = words(content)
    chunk = shingles(chunk_tokens)
    span = min(3, len(chunk_tokens))
    tokens: list[tuple[str, int]] = []
    ordered = _reading_order(page.ocr_words)
    for owner, word in enumerate(ordered):
        tokens += [(t, owner) for t in words(word.text)]
    marked: set[int] = set()
    for i in range(len(tokens) - span + 1):
        window = tokens[i : i + span]
        if tuple(t for t, _ in window) in chunk:
            marked.update(owner for _, owner in window)
    width, height = page.ocr_size
    return tuple(
        Box(
            x=w.left / width,
            y=w.top / height,
            width=(w.right - w.left) / width,
            height=(w.bottom - w.top) / height,
        )
        for i, w in enumerate(ordered)
        if i in marked
    )


def _ocr_page(
    pdf: Any, index: int, settings: Settings, cache: Path, name: str
) -> tuple[tuple[OcrWord, ...], tuple[int, int]]:
    """The page's OCR words (cached per engine and resolution) and the OCR image size."""
    key = cache / f"p{index + 1}-{settings.OCR_ENGINE}-{settings.OCR_DPI}.json"
    if key.is_file():
        stored = json.loads(key.read_text())
        size = (int(stored["size"][0]), int(stored["size"][1]))
        return tuple(OcrWord(*w) for w in stored["words"]), size
    try:
        engine = get_ocr_engine(settings)
        image = render_page(pdf, index, settings.OCR_DPI)
        with _OCR_LOCK:
            found = tuple(engine.words(image))
    except OcrUnavailableError as exc:
        raise PreviewUnavailable(
            "ocr_unavailable", f"page {index + 1} of {name} is a scan and needs OCR, but {exc}"
        ) from None
    except OcrError as exc:
        raise PreviewUnavailable(
            "unreadable", f"page {index + 1} of {name}: OCR failed: {exc}"
        ) from None
    payload = {
        "size": list(image.size),
        "words": [[w.text, w.left, w.top, w.right, w.bottom] for w in found],
    }
    write_atomic(key, json.dumps(payload).encode())
    return found, image.size


def write_atomic(path: Path, data: bytes) -> None:
    """Write ``path`` whole or not at all (a reader never sees half a file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def draw_highlights(image: Image.Image, boxes: tuple[Box, ...]) -> Image.Image:
    """The page with a translucent marker over each box."""
    overlay = Image.new("RGBA", image.size, (0, 0, 0, 0))
    draw = ImageDraw.Draw(overlay)
    w, h = image.size
    for box in boxes:
        rect = (
            box.x * w - 1,
            box.y * h - 1,
            (box.x + box.width) * w + 1,
            (box.y + box.height) * h + 1,
        )
        draw.rectangle(rect, fill=HIGHLIGHT_FILL)
        draw.line([(rect[0], rect[3]), (rect[2], rect[3])], fill=HIGHLIGHT_EDGE, width=2)
    return Image.alpha_composite(image.convert("RGBA"), overlay).convert("RGB")


def render_chunk_page(
    data: bytes,
    name: str,
    *,
    content: str,
    hint: int | None,
    settings: Settings,
    ocr_cache: Path,
    png_for: Callable[[int], Path],
    highlight: str | None = None,
) -> RenderedPage:
    """Locate ``content`` in the PDF ``data``, box it (or only ``highlight``, a quote of
    it, on the page the quote is on), and write the page as PNG.

    Args:
        data: The PDF's bytes (a deck's converted PDF).
        name: The file's name, for messages.
        content: The chunk's text.
        highlight: The part of ``content`` to box instead of all of it.
        hint: The page the chunk was recorded to start on (searched first), if any.
        settings: ``OCR_ENGINE`` and ``OCR_DPI`` read scanned pages as the ingest did.
        ocr_cache: Where this file's OCR words are kept.
        png_for: The PNG path for a 1-based page number.

    Raises:
        PreviewUnavailable: ``unreadable``, ``ocr_unavailable`` or ``page_not_found``.
    """
    try:
        pdf = open_pdf(data, name)
    except ParseError as exc:
        raise PreviewUnavailable("unreadable", str(exc)) from None
    try:
        count = len(pdf)

        def read(index: int) -> PageText:
            try:
                layer = page_text(pdf, index, name)
            except ParseError as exc:
                raise PreviewUnavailable("unreadable", str(exc)) from None
            if has_text_layer(layer):
                return PageText("text", layer)
            found, size = _ocr_page(pdf, index, settings, ocr_cache, name)
            return PageText("ocr", " ".join(w.text for w in found), found, size)

        # a quote lies on one page of a chunk that may span several: found by its own
        # words first (the chunk's, when they match no page well enough)
        index, score, page = _locate_quote(count, hint, content, highlight, read)
        marked = highlight or content
        if page.extraction == "text":
            boxes = _text_boxes(pdf, index, marked)
        else:
            boxes = _ocr_boxes(page, marked)
        image = draw_highlights(render_page(pdf, index, RENDER_DPI), boxes)
    finally:
        with PDFIUM_LOCK:
            pdf.close()
    buffer = io.BytesIO()
    image.save(buffer, "PNG", compress_level=6)
    write_atomic(png_for(index + 1), buffer.getvalue())
    return RenderedPage(
        page=index + 1,
        page_count=count,
        width=image.width,
        height=image.height,
        extraction=page.extraction,
        score=round(score, 3),
        highlights=boxes,
    )
