"""Parser throughput: PDF text-layer pages/s and OCR pages/s per installed engine.

:func:`bench_pdf` generates two PDFs of ``n_pages`` pages in a temporary folder (one
with a text layer, made with fpdf2; one of page images only, drawn with Pillow at
``OCR_DPI``) and times the pdf parser on each. It prints nothing and returns numbers.
"""

from __future__ import annotations

import random
import tempfile
import time
from pathlib import Path
from typing import Any

from PIL import Image, ImageDraw, ImageFont

from varagity.config import Settings, get_settings
from varagity.ingest.ocr import OcrUnavailableError, get_ocr_engine
from varagity_bench.synthetic_text import sentence

BENCH_ENGINES = ("rapidocr", "tesseract")
LINES_PER_PAGE = 36
_FONT = Path("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf")


def _lines(rng: random.Random, page: int) -> list[str]:
    lines = [f"Page {page} of the benchmark report"]
    for _ in range(LINES_PER_PAGE - 1):
        lines.append(sentence(rng, 7, 10))
    return lines


def _text_pdf(path: Path, pages: list[list[str]]) -> None:
    try:
        from fpdf import FPDF
    except ImportError as exc:
        raise RuntimeError(
            "bench_pdf generates its PDFs with fpdf2, which is not installed "
            "(pip install 'varagity[dev]' or pip install fpdf2)"
        ) from exc
    pdf = FPDF(format="A4")
    pdf.set_font("helvetica", size=11)
    for lines in pages:
        pdf.add_page()
        for line in lines:
            pdf.cell(0, 6.5, line, new_x="LMARGIN", new_y="NEXT")
    pdf.output(str(path))


def _scanned_pdf(path: Path, pages: list[list[str]], dpi: int) -> None:
    width, height = round(8.27 * dpi), round(11.69 * dpi)  # A4
    size = round(11 / 72 * dpi)  # 11 pt type
    font = ImageFont.truetype(str(_FONT), size) if _FONT.is_file() else ImageFont.load_default(size)
    margin, step = round(0.8 * dpi), round(size * 1.6)
    images = []
    for lines in pages:
        image = Image.new("L", (width, height), 255)
        draw = ImageDraw.Draw(image)
        for i, line in enumerate(lines):
            draw.text((margin, margin + i * step), line, font=font, fill=0)
        images.append(image)
    images[0].save(path, "PDF", resolution=dpi, save_all=True, append_images=images[1:])


def _recall(expected: list[list[str]], got: list[str]) -> float:
    """The share of expected words (case-insensitive, per page) that OCR produced."""
    found = total = 0
    for lines, text in zip(expected, got, strict=True):
        seen = set(text.lower().replace(".", " ").split())
        words = " ".join(lines).lower().replace(".", " ").split()
        total += len(words)
        found += sum(1 for w in words if w in seen)
    return round(found / total, 3) if total else 0.0


def _rate(pages: int, seconds: float) -> float:
    return round(pages / seconds, 3) if seconds > 0 else float("inf")


def bench_pdf(n_pages: int = 10, settings: Settings | None = None) -> dict[str, Any]:
    """Measure the pdf parser on generated PDFs of ``n_pages`` pages.

    Args:
        n_pages: Pages in each generated PDF (at least 1).
        settings: Base settings (default: :func:`get_settings`); ``OCR_DPI`` is used,
            ``OCR_ENGINE`` is set to each engine in turn and docling is turned off.

    Returns:
        ``text_layer_pages_per_s``; ``ocr_pages_per_s`` and ``ocr_engine_load_s`` per
        installed engine (rapidocr, tesseract), with ``ocr_word_recall`` (share of the
        page's words found); ``unavailable`` with the reason for each
        engine that could not run; plus ``n_pages``, ``ocr_dpi`` and ``words_per_page``.

    Raises:
        RuntimeError: fpdf2 is not installed.
        ValueError: ``n_pages`` is below 1.
    """
    from varagity.ingest.parsers.pdf import PdfParser

    if n_pages < 1:
        raise ValueError("n_pages must be at least 1")
    base = (settings or get_settings()).model_copy(update={"DOCLING_ARTIFACTS_PATH": None})
    rng = random.Random(1234)
    pages = [_lines(rng, n + 1) for n in range(n_pages)]
    parser = PdfParser()
    result: dict[str, Any] = {
        "n_pages": n_pages,
        "ocr_dpi": base.OCR_DPI,
        "words_per_page": round(sum(len(" ".join(p).split()) for p in pages) / n_pages),
        "ocr_pages_per_s": {},
        "ocr_engine_load_s": {},
        "ocr_word_recall": {},
        "unavailable": {},
    }
    with tempfile.TemporaryDirectory(prefix="varagity-bench-pdf-") as tmp:
        text_pdf, scanned_pdf = Path(tmp) / "text.pdf", Path(tmp) / "scanned.pdf"
        _text_pdf(text_pdf, pages)
        _scanned_pdf(scanned_pdf, pages, base.OCR_DPI)

        # the text layer is fast: repeat for at least a second for a steady number
        done, start = 0, time.perf_counter()
        while True:
            parser.parse(text_pdf, base)
            done += n_pages
            elapsed = time.perf_counter() - start
            if elapsed >= 1.0:
                break
        result["text_layer_pages_per_s"] = _rate(done, elapsed)

        for name in BENCH_ENGINES:
            settings_for = base.model_copy(update={"OCR_ENGINE": name})
            start = time.perf_counter()
            try:
                engine = get_ocr_engine(settings_for)
            except OcrUnavailableError as exc:
                result["unavailable"][name] = str(exc)
                continue
            engine.recognize(Image.new("RGB", (64, 32), "white"))  # warm up
            result["ocr_engine_load_s"][name] = round(time.perf_counter() - start, 3)
            start = time.perf_counter()
            parsed = parser.parse(scanned_pdf, settings_for)
            elapsed = time.perf_counter() - start
            if any(p.extraction != "ocr_fallback" for p in parsed.pages):
                raise RuntimeError("the generated scanned PDF unexpectedly has a text layer")
            result["ocr_pages_per_s"][name] = _rate(n_pages, elapsed)
            result["ocr_word_recall"][name] = _recall(pages, [p.text for p in parsed.pages])
    return result
