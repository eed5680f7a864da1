"""One file of each format through the sensor and real runs: every chunk carries the
right extraction, its own page, and (for Markdown and Word) its heading breadcrumb."""

from __future__ import annotations

from collections import defaultdict

import pytest

from tests.support import office_files as office
from tests.support import pdf_files as pdfs
from tests.support.pipeline import Harness, write_file
from varagity.records import ChunkRecord
from varagity.services import Services

pytestmark = pytest.mark.integration


def test_every_format_through_the_sensor(make_settings, pg_url: str, model_urls) -> None:
    settings = make_settings(DATABASE_URL=pg_url, CHUNK_SIZE=60, CHUNK_OVERLAP=0, **model_urls)
    docs = settings.docs_path
    write_file(
        docs / "guide.md",
        "# Operations\n\nIntro line, long enough to fill a 60-character chunk.\n\n"
        "## Dredging\n\nDredgers clear silt.\n",
    )
    pdfs.text_pdf(docs / "text.pdf")
    pdfs.scanned_pdf(docs / "scan.pdf")
    pdfs.mixed_pdf(docs / "mixed.pdf")
    pdfs.text_png(docs / "invoice.png")
    for write_fixture in (
        office.write_docx,
        office.write_pptx,
        office.write_xlsx,
        office.write_csv,
        office.write_odt,
        office.write_html,
    ):
        write_fixture(docs)

    h = Harness()
    runs = h.run_requests(h.tick())
    assert runs and all(r.success for r in runs)
    services = Services.open(settings)
    try:
        chunks: dict[str, list[ChunkRecord]] = defaultdict(list)
        for doc in services.pg.list_documents():
            chunks[doc.relative_path] = services.pg.chunks_of(doc.doc_id)
    finally:
        services.close()
    expected_files = {
        "guide.md",
        "text.pdf",
        "scan.pdf",
        "mixed.pdf",
        "invoice.png",
        "report.docx",
        "deck.pptx",
        "book.xlsx",
        "ports.csv",
        "report.odt",
        "page.html",
    }
    assert set(chunks) == expected_files
    assert all(chunks[f] for f in expected_files), {f: len(c) for f, c in chunks.items()}

    def pages(name: str) -> list[tuple[int | None, str]]:
        return [(c.page, c.extraction) for c in chunks[name]]

    # a text PDF: one chunk per page here (60-character chunks), each on its own page
    assert sorted({p for p, _ in pages("text.pdf")}) == [1, 2, 3]
    assert {e for _, e in pages("text.pdf")} == {"text"}
    for chunk in chunks["text.pdf"]:
        assert pdfs.TEXT_PAGES[chunk.page - 1].startswith(chunk.content[:20])  # type: ignore[operator]
    # scanned pages are OCR'd as a fallback; the mixed PDF has both kinds
    assert {e for _, e in pages("scan.pdf")} == {"ocr_fallback"}
    assert sorted({p for p, _ in pages("scan.pdf")}) == [1, 2]
    assert set(pages("mixed.pdf")) >= {(1, "text"), (2, "ocr_fallback")}
    # an image is one OCR'd page
    assert set(pages("invoice.png")) == {(1, "ocr")}
    assert "4711" in " ".join(c.content for c in chunks["invoice.png"])
    # slides and sheets are pages
    assert {p for p, _ in pages("deck.pptx")} == {1, 2}
    assert {p for p, _ in pages("book.xlsx")} == {1, 2}
    # heading breadcrumbs for Markdown and Word, from the text each chunk starts in
    dredging = next(c for c in chunks["guide.md"] if "Dredgers clear silt." in c.content)
    assert dredging.heading_path == "Operations > Dredging"
    intro = next(c for c in chunks["guide.md"] if "Intro line" in c.content)
    assert intro.heading_path == "Operations"
    docx_paths = {c.heading_path for c in chunks["report.docx"]}
    assert "Chapter > Section" in docx_paths
    # offsets and provenance on every chunk
    for name, records in chunks.items():
        assert all(r.char_start is not None and r.char_end > r.char_start for r in records), name
        assert all(r.file_type == name.rsplit(".", 1)[1] for r in records)
