"""Page previews (ADR-010) on real generated files: a text-layer PDF, a scanned PDF and
a PowerPoint deck (real LibreOffice), and every way a preview degrades to a reason."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from PIL import Image

from tests.conftest import SettingsFactory
from tests.support import office_files, pdf_files
from tests.support.previews import REPORT_PAGES, chunk_records, passage, wide_pdf
from varagity.config import Settings
from varagity.preview import PagePreview, PreviewUnavailable, preview_chunk, preview_image
from varagity.preview.convert import find_converter
from varagity.preview.normalize import find_runs, phrases
from varagity.preview.service import cache_root
from varagity.records import ChunkRecord


@pytest.fixture
def settings(make_settings: SettingsFactory) -> Settings:
    return make_settings(OCR_ENGINE="rapidocr", DATABASE_URL=None)


def _unavailable(settings: Settings, record: ChunkRecord) -> PreviewUnavailable:
    with pytest.raises(PreviewUnavailable) as info:
        preview_chunk(settings, record)
    return info.value


def _marked_share(settings: Settings, preview: PagePreview) -> float:
    """The share of the first highlight box's pixels the marker turned yellow."""
    path = preview_image(settings, preview.content_hash, preview.image)
    assert path is not None
    with Image.open(path) as image:
        assert image.size == (preview.width, preview.height)
        box = preview.highlights[0]
        left, top = int(box.x * image.width), int(box.y * image.height)
        right = int((box.x + box.width) * image.width)
        bottom = int((box.y + box.height) * image.height)
        region = image.convert("RGB").crop((left, top, right, bottom))
        pixels = list(region.getdata())
    yellow = [p for p in pixels if p[0] - p[2] > 60]  # the marker takes blue out
    return len(yellow) / max(len(pixels), 1)


# --- text-layer PDF ----------------------------------------------------------------


def test_a_text_pdf_chunk_is_found_on_its_page_and_boxed(settings: Settings) -> None:
    wide_pdf(settings.docs_path / "report.pdf")
    [record] = chunk_records(settings, "report.pdf")  # the three pages fit one chunk
    for number, text in enumerate(REPORT_PAGES, start=1):
        # no recorded page, or a wrong one: the words decide
        for hint in (None, 1, 3):
            preview = preview_chunk(settings, passage(record, text, page=hint))
            assert preview.page == number
            assert preview.page_count == 3
            assert preview.extraction == "text"
            assert preview.score == 1.0
            # the paragraph wraps over several lines: one box per line, top to bottom
            assert len(preview.highlights) >= 2
            tops = [b.y for b in preview.highlights]
            assert tops == sorted(tops)
            assert all(0 <= b.x < 0.2 for b in preview.highlights)
            assert max(b.width for b in preview.highlights) > 0.6
    assert _marked_share(settings, preview) > 0.5


def test_the_chunker_s_own_chunk_lands_on_the_page_with_most_of_it(settings: Settings) -> None:
    wide_pdf(settings.docs_path / "report.pdf")
    [record] = chunk_records(settings, "report.pdf")
    preview = preview_chunk(settings, record)
    assert 1 <= preview.page <= 3
    assert 0.25 <= preview.score < 1.0  # a third of the chunk on each page
    assert preview.highlights


def test_a_second_preview_comes_from_the_cache(settings: Settings) -> None:
    wide_pdf(settings.docs_path / "report.pdf")
    [record] = chunk_records(settings, "report.pdf")
    chunk = passage(record, REPORT_PAGES[1])
    first = preview_chunk(settings, chunk)
    image = preview_image(settings, first.content_hash, first.image)
    assert image is not None
    written = image.stat().st_mtime_ns
    again = preview_chunk(settings, chunk)
    assert again == first
    assert image.stat().st_mtime_ns == written  # not rendered again
    answer = next(image.parent.glob("*.json"))
    assert json.loads(answer.read_text())["page"] == 2


def test_text_the_file_does_not_hold_is_page_not_found(settings: Settings) -> None:
    wide_pdf(settings.docs_path / "report.pdf")
    [record] = chunk_records(settings, "report.pdf")
    stranger = passage(record, "Volcanic soil suits the late harvest of Riesling grapes well.")
    assert _unavailable(settings, stranger).reason == "page_not_found"


# --- scanned PDF (OCR) -------------------------------------------------------------


def test_a_scanned_page_is_boxed_with_the_ocr_words(settings: Settings) -> None:
    pdf_files.scanned_pdf(settings.docs_path / "scan.pdf")
    records = chunk_records(settings, "scan.pdf")
    assert {r.extraction for r in records} == {"ocr_fallback"}
    text = "\n".join(pdf_files.SCAN_PAGES[1])
    preview = preview_chunk(settings, passage(records[0], text))
    assert preview.page == 2
    assert preview.extraction == "ocr"
    expected = sum(len(line.split()) for line in pdf_files.SCAN_PAGES[1])
    assert expected - 2 <= len(preview.highlights) <= expected
    assert _marked_share(settings, preview) > 0.3
    ocr_cache = cache_root(settings) / "ocr" / records[0].content_hash
    assert any(ocr_cache.glob("p2-rapidocr-*.json"))  # read once, kept


# --- PowerPoint (LibreOffice) ------------------------------------------------------


def _no_converter_path(tmp_path: Path) -> str:
    empty = tmp_path / "empty-bin"
    empty.mkdir(exist_ok=True)
    return str(empty)


def test_a_deck_converts_once_and_each_slide_is_found(
    settings: Settings, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    if find_converter() is None:
        pytest.fail("LibreOffice (soffice) is not installed: run make install")
    office_files.write_pptx(settings.docs_path)
    [record] = chunk_records(settings, "deck.pptx")  # both slides fit one chunk
    slide_2 = passage(record, f"## Pilotage\n\n- {office_files.SLIDE_2}")
    preview = preview_chunk(settings, slide_2)
    assert preview.page == 2
    assert preview.page_count == 2
    assert preview.extraction == "text"
    assert (preview.width, preview.height) == (1440, 1080)  # a 4:3 slide at 144 dpi
    assert preview.highlights
    pdf = cache_root(settings) / "pdf" / f"{slide_2.content_hash}.pdf"
    assert pdf.is_file()
    # converted once: without LibreOffice on PATH, the other slide still renders
    monkeypatch.setenv("PATH", _no_converter_path(tmp_path))
    other = preview_chunk(settings, passage(slide_2, office_files.SLIDE_1))
    assert other.page == 1
    assert _marked_share(settings, other) > 0.3


def test_a_deck_without_libreoffice_says_the_converter_is_missing(
    settings: Settings, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    office_files.write_pptx(settings.docs_path)
    [record, *_] = chunk_records(settings, "deck.pptx")
    monkeypatch.setenv("PATH", _no_converter_path(tmp_path))
    problem = _unavailable(settings, record)
    assert problem.reason == "converter_missing"
    assert "libreoffice-impress" in problem.message


# --- what degrades -----------------------------------------------------------------


def test_a_deleted_file_is_file_missing(settings: Settings) -> None:
    path = wide_pdf(settings.docs_path / "gone.pdf")
    [record] = chunk_records(settings, "gone.pdf")
    preview_chunk(settings, record)  # cached, and still refused once the file is gone
    path.unlink()
    problem = _unavailable(settings, record)
    assert problem.reason == "file_missing"
    assert "gone.pdf" in problem.message


def test_a_file_changed_since_indexing_is_refused_even_when_cached(settings: Settings) -> None:
    path = wide_pdf(settings.docs_path / "report.pdf")
    [record] = chunk_records(settings, "report.pdf")
    fresh = passage(record, REPORT_PAGES[0])
    preview_chunk(settings, fresh)
    wide_pdf(path, (*REPORT_PAGES[:2], "A new last page replaces the pilotage notice."))
    assert _unavailable(settings, fresh).reason == "file_changed"
    never_cached = passage(record, REPORT_PAGES[2])
    assert _unavailable(settings, never_cached).reason == "file_changed"


def test_formats_without_pages_are_not_paged(settings: Settings) -> None:
    (settings.docs_path / "notes.md").write_text("# Notes\n\nThe pump moves water.\n")
    office_files.write_docx(settings.docs_path)
    for rel in ("notes.md", "report.docx"):
        [record, *_] = chunk_records(settings, rel)
        assert _unavailable(settings, record).reason == "not_paged"


def test_paths_that_leave_the_corpus_are_refused(settings: Settings, tmp_path: Path) -> None:
    wide_pdf(settings.docs_path / "report.pdf")
    [record] = chunk_records(settings, "report.pdf")
    outside = tmp_path / "outside"
    outside.mkdir()
    shutil.copy(settings.docs_path / "report.pdf", outside / "report.pdf")
    os.symlink(outside, settings.docs_path / "linkout", target_is_directory=True)
    os.symlink(outside / "report.pdf", settings.docs_path / "alias.pdf")
    for rel in ("../outside/report.pdf", "linkout/report.pdf", "alias.pdf", "/etc/passwd.pdf"):
        moved = record.model_copy(update={"relative_path": rel})
        problem = _unavailable(settings, moved)
        assert problem.reason == "outside_corpus", rel
    # a symlink that stays inside the corpus is fine
    os.symlink(settings.docs_path / "report.pdf", settings.docs_path / "inside.pdf")
    inside = passage(record, REPORT_PAGES[0]).model_copy(update={"relative_path": "inside.pdf"})
    assert preview_chunk(settings, inside).page == 1


def test_only_names_the_cache_writes_are_served(settings: Settings) -> None:
    wide_pdf(settings.docs_path / "report.pdf")
    [record] = chunk_records(settings, "report.pdf")
    preview = preview_chunk(settings, record)
    assert preview_image(settings, preview.content_hash, preview.image) is not None
    for digest, name in (
        (preview.content_hash, "../../pdf/x.png"),
        (preview.content_hash, preview.image.replace(".png", ".json")),
        ("..", preview.image),
        (preview.content_hash.upper(), preview.image),
        (preview.content_hash, "p0-" + "0" * 16 + ".png"),
    ):
        assert preview_image(settings, digest, name) is None


# --- text matching -----------------------------------------------------------------


def test_phrases_drop_markdown_marks_but_keep_inner_punctuation() -> None:
    text = "# Tonnage\n\n- Quarterly tonnage rose by **twelve** percent.\n| a | b |\n---"
    assert phrases(text) == [
        ["Tonnage"],
        ["Quarterly", "tonnage", "rose", "by", "twelve", "percent."],
        ["a", "b"],
    ]


def test_a_missed_phrase_is_searched_again_in_halves() -> None:
    page = "alpha beta gamma\ndelta epsilon zeta"
    asked: list[str] = []

    def search(phrase: str) -> str | None:
        asked.append(phrase)
        return phrase if phrase in page else None

    tokens = "alpha beta gamma delta epsilon zeta".split()
    assert find_runs(tokens, search, min_words=2) == ["alpha beta gamma", "delta epsilon zeta"]
    assert asked[0] == "alpha beta gamma delta epsilon zeta"
    assert find_runs(["zeta"], search, min_words=2) == []
