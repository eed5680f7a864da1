"""Page-preview latency per format: the first preview of a chunk and the cached one.

:func:`bench_previews` generates, in a temporary corpus, a text-layer PDF, a scanned PDF
(page images only, read by ``OCR_ENGINE``) and a PowerPoint deck of ``n_pages`` pages
each, and times :func:`varagity.preview.preview_chunk` for a chunk on the last page:
cold (nothing cached: a deck's conversion by LibreOffice and a scanned page's OCR
included), again for another page of the same file (a deck's PDF and the file's hash
are known by then), and cached (the answer and image on disk). It prints nothing and
returns milliseconds.
"""

from __future__ import annotations

import random
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from varagity.config import Settings, get_settings
from varagity.preview import preview_chunk
from varagity.preview.convert import find_converter
from varagity.records import ChunkRecord, content_hash, utcnow
from varagity_bench.pdf import _lines, _scanned_pdf, _text_pdf

CACHED_REPEATS = 5


def _deck(path: Path, pages: list[list[str]]) -> None:
    import pptx
    from pptx.util import Pt

    deck = pptx.Presentation()
    for lines in pages:
        slide = deck.slides.add_slide(deck.slide_layouts[1])
        slide.shapes.title.text = lines[0]
        body = slide.placeholders[1].text_frame
        body.text = lines[1]
        for line in lines[2:8]:
            body.add_paragraph().text = line
        for paragraph in body.paragraphs:
            for run in paragraph.runs:
                run.font.size = Pt(14)
    deck.save(str(path))


def _record(path: Path, docs: Path, text: str, page: int) -> ChunkRecord:
    rel = path.relative_to(docs).as_posix()
    return ChunkRecord(
        doc_id="bench",
        chunk_id=f"bench-{rel}-{page}",
        original_index=page,
        chunk_index=page,
        source=str(path),
        relative_path=rel,
        file_name=path.name,
        file_type=path.suffix.lstrip("."),
        page=page,
        content=text,
        contextualized_content=text,
        chunk_size=1200,
        chunk_overlap=200,
        chunking_strategy="bench",
        embedding_model="bench",
        n_tokens=len(text.split()),
        content_hash=content_hash(path.read_bytes()),
        created_at=utcnow(),
    )


def _ms(seconds: float) -> float:
    return round(seconds * 1000, 1)


def _time(settings: Settings, record: ChunkRecord) -> float:
    start = time.perf_counter()
    preview_chunk(settings, record)
    return time.perf_counter() - start


def bench_previews(n_pages: int = 6, settings: Settings | None = None) -> dict[str, Any]:
    """Time page previews of a text PDF, a scanned PDF and a PowerPoint deck.

    Args:
        n_pages: Pages (slides) in each generated file (at least 2).
        settings: Base settings (default: :func:`get_settings`); ``OCR_ENGINE`` and
            ``OCR_DPI`` read the scanned pages; the corpus and cache are temporary.

    Returns:
        Per format (``text_pdf``, ``scanned_pdf``, ``pptx``): ``first_ms`` (nothing
        cached), ``next_page_ms`` (another page of the same file, first time) and
        ``cached_ms`` (median of :data:`CACHED_REPEATS`); ``unavailable`` names a
        format that could not be measured and why; plus ``n_pages`` and ``ocr_engine``.

    Raises:
        ValueError: ``n_pages`` is below 2.
    """
    if n_pages < 2:
        raise ValueError("n_pages must be at least 2")
    rng = random.Random(4321)
    pages = [_lines(rng, n + 1) for n in range(n_pages)]
    result: dict[str, Any] = {"n_pages": n_pages, "unavailable": {}}
    with tempfile.TemporaryDirectory(prefix="varagity-bench-previews-") as tmp:
        docs, home = Path(tmp) / "docs", Path(tmp) / "home"
        docs.mkdir()
        base = (settings or get_settings()).model_copy(
            update={"DOCS_PATH": docs, "VARAGITY_HOME": home, "DOCLING_ARTIFACTS_PATH": None}
        )
        result["ocr_engine"] = base.OCR_ENGINE
        files = {
            "text_pdf": docs / "text.pdf",
            "scanned_pdf": docs / "scanned.pdf",
            "pptx": docs / "deck.pptx",
        }
        _text_pdf(files["text_pdf"], pages)
        _scanned_pdf(files["scanned_pdf"], pages, base.OCR_DPI)
        _deck(files["pptx"], pages)
        if find_converter() is None:
            result["unavailable"]["pptx"] = "LibreOffice (soffice) is not installed"
            del files["pptx"]
        for name, path in files.items():
            shown = 8 if name == "pptx" else len(pages[0])  # a slide holds its first lines
            last = _record(path, docs, "\n".join(pages[-1][:shown]), n_pages)
            other = _record(path, docs, "\n".join(pages[0][:shown]), 1)
            first = _time(base, last)
            next_page = _time(base, other)
            cached = statistics.median(_time(base, last) for _ in range(CACHED_REPEATS))
            result[name] = {
                "first_ms": _ms(first),
                "next_page_ms": _ms(next_page),
                "cached_ms": _ms(cached),
            }
    return result
