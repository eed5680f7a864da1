"""Throughput of the office and web parser families on generated documents.

``bench_office(n)`` writes ``n`` small but realistic files per format into a temporary
folder (a few headed sections of prose, five slides, two sheets of fifty rows...),
parses each with its family's parser and returns files per second per format. File
generation and the one-off docling import and pipeline set-up are not timed.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from pathlib import Path

_WORDS = (
    "harbour channel dredging silt berth quay vessel tonnage pilot anchorage tide draught "
    "survey buoy cargo crane container customs manifest ballast hull keel"
).split()


def _sentence(seed: int, words: int = 14) -> str:
    picked = [_WORDS[(seed * 7 + i * 3) % len(_WORDS)] for i in range(words)]
    return " ".join(picked).capitalize() + "."


def _paragraph(seed: int) -> str:
    return " ".join(_sentence(seed + i) for i in range(5))


def _docx(path: Path, seed: int) -> None:
    import docx

    document = docx.Document()
    for section in range(3):
        document.add_heading(f"Chapter {section + 1}", level=1)
        for part in range(2):
            document.add_heading(f"Section {section + 1}.{part + 1}", level=2)
            for para in range(3):
                document.add_paragraph(_paragraph(seed + section * 10 + part * 3 + para))
    document.save(str(path))


def _pptx(path: Path, seed: int) -> None:
    import pptx

    deck = pptx.Presentation()
    for slide_no in range(5):
        slide = deck.slides.add_slide(deck.slide_layouts[1])
        slide.shapes.title.text = f"Slide {slide_no + 1}"
        slide.placeholders[1].text = _paragraph(seed + slide_no)
    deck.save(str(path))


def _rows(seed: int, count: int = 50) -> list[list[str | int]]:
    header: list[str | int] = ["Vessel", "Berth", "Tonnage"]
    body: list[list[str | int]] = [
        [_WORDS[(seed + i) % len(_WORDS)].title(), f"Q{i % 12}", 100 + (seed * 31 + i) % 9000]
        for i in range(count)
    ]
    return [header, *body]


def _xlsx(path: Path, seed: int) -> None:
    import openpyxl

    book = openpyxl.Workbook()
    sheets = [book.active, book.create_sheet("Berths")]
    for offset, sheet in enumerate(sheets):
        assert sheet is not None
        for row in _rows(seed + offset):
            sheet.append(row)
    book.save(str(path))


def _csv(path: Path, seed: int) -> None:
    lines = [",".join(str(v) for v in row) for row in _rows(seed, 200)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _odt(path: Path, seed: int) -> None:
    from odfdo import Document, Header, Paragraph

    document = Document("text")
    body = document.body
    body.clear()
    for section in range(3):
        body.append(Header(1, f"Chapter {section + 1}"))
        for part in range(2):
            body.append(Header(2, f"Section {section + 1}.{part + 1}"))
            for para in range(3):
                body.append(Paragraph(_paragraph(seed + section * 10 + part * 3 + para)))
    document.save(path)


def _ods(path: Path, seed: int) -> None:
    from odfdo import Document, Table

    document = Document("spreadsheet")
    body = document.body
    body.clear()
    for offset, name in enumerate(("Vessels", "Berths")):
        table = Table(name)
        table.set_values(_rows(seed + offset))
        body.append(table)
    document.save(path)


def _odp(path: Path, seed: int) -> None:
    from odfdo import Document, DrawPage, Frame

    document = Document("presentation")
    body = document.body
    body.clear()
    for slide_no in range(5):
        page = DrawPage(f"page{slide_no + 1}", name=f"Slide {slide_no + 1}")
        frame = Frame.text_frame(
            _paragraph(seed + slide_no), size=("20cm", "10cm"), position=("2cm", "3cm")
        )
        page.append(frame)
        body.append(page)
    document.save(path)


def _html(path: Path, seed: int) -> None:
    parts = ["<!DOCTYPE html><html><head><title>Bench</title><script>var x = 1;</script>"]
    parts.append("<style>p { margin: 0 }</style></head><body>")
    for section in range(3):
        parts.append(f"<h1>Chapter {section + 1}</h1>")
        for part in range(2):
            parts.append(f"<h2>Section {section + 1}.{part + 1}</h2>")
            for para in range(3):
                parts.append(f"<p>{_paragraph(seed + section * 10 + part * 3 + para)}</p>")
    parts.append("</body></html>")
    path.write_text("".join(parts), encoding="utf-8")


GENERATORS: dict[str, Callable[[Path, int], None]] = {
    "docx": _docx,
    "pptx": _pptx,
    "xlsx": _xlsx,
    "csv": _csv,
    "odt": _odt,
    "ods": _ods,
    "odp": _odp,
    "html": _html,
}


def bench_office(n: int = 20) -> dict[str, float]:
    """Parse ``n`` generated files per format and measure throughput.

    Args:
        n: Files per format (each one distinct).

    Returns:
        Files per second for each format (``docx``, ``pptx``, ``xlsx``, ``csv``,
        ``odt``, ``ods``, ``odp``, ``html``), parsing only.
    """
    from varagity.config import load_settings
    from varagity.ingest.parsers.base import Parser
    from varagity.ingest.parsers.office import OfficeParser
    from varagity.ingest.parsers.web import WebParser

    settings = load_settings()
    office: Parser = OfficeParser()
    web: Parser = WebParser()
    rates: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="varagity-bench-office-") as tmp:
        folder = Path(tmp)
        for fmt, generate in GENERATORS.items():
            parser = web if fmt == "html" else office
            warmup = folder / f"warmup.{fmt}"
            generate(warmup, 0)
            parser.parse(warmup, settings)  # docling import and pipeline set-up
            paths = []
            for i in range(n):
                path = folder / f"{fmt}-{i}.{fmt}"
                generate(path, i + 1)
                paths.append(path)
            start = time.perf_counter()
            for path in paths:
                parser.parse(path, settings)
            elapsed = time.perf_counter() - start
            rates[fmt] = n / elapsed if elapsed > 0 else float("inf")
    return rates
