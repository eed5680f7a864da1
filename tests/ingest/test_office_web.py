"""The office, web and text families on real generated files: text, pages, headings, refusals."""

from __future__ import annotations

import random
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import varagity.ingest.parsers.office
import varagity.ingest.parsers.web  # registers the web family
from tests.support import office_files as fx
from varagity.chunking.headings import heading_index
from varagity.config import load_settings
from varagity.ingest.parsers import ParseError
from varagity.ingest.parsers import docling_base as db
from varagity.ingest.parsers.base import ParsedDocument
from varagity.ingest.parsers.registry import parser_for
from varagity.ingest.parsers.text import TextParser
from varagity.ingest.parsing import parse_file

SETTINGS = load_settings()


def parse(path: Path) -> ParsedDocument:
    return parse_file(path.parent, path.name, settings=SETTINGS)


def page_of(doc: ParsedDocument, needle: str) -> int | None:
    offset = doc.text.index(needle)
    span = doc.span_at(offset)
    assert span is not None
    return span.page


def breadcrumb(doc: ParsedDocument, needle: str) -> str | None:
    return heading_index(doc.text).path_at(doc.text.index(needle))


def test_families_own_their_suffixes() -> None:
    assert varagity.ingest.parsers.office.OfficeParser.family == "office"
    for suffix in (".docx", ".pptx", ".xlsx", ".csv", ".odt", ".ods", ".odp"):
        assert getattr(parser_for(suffix), "family", None) == "office"
    for suffix in (".html", ".htm", ".xhtml"):
        assert getattr(parser_for(suffix), "family", None) == "web"


@pytest.mark.parametrize("writer", [fx.write_docx, fx.write_odt], ids=["docx", "odt"])
def test_documents_become_markdown_with_heading_breadcrumbs(
    tmp_path: Path, writer: Callable[[Path], Path]
) -> None:
    doc = parse(writer(tmp_path))
    assert doc.markdown
    assert fx.INTRO in doc.text and fx.SECTION in doc.text
    assert [s.page for s in doc.page_spans] == [None]
    assert breadcrumb(doc, fx.INTRO) == "Chapter"
    assert breadcrumb(doc, fx.SECTION) == "Chapter > Section"


def test_review_comments_are_not_document_text(tmp_path: Path) -> None:
    assert fx.REVIEW_COMMENT not in parse(fx.write_docx(tmp_path)).text


@pytest.mark.parametrize("writer", [fx.write_pptx, fx.write_odp], ids=["pptx", "odp"])
def test_slides_are_pages(tmp_path: Path, writer: Callable[[Path], Path]) -> None:
    doc = parse(writer(tmp_path))
    assert doc.markdown
    assert [s.page for s in doc.page_spans] == [1, 2]
    assert page_of(doc, fx.SLIDE_1) == 1
    assert page_of(doc, fx.SLIDE_2) == 2


def test_speaker_notes_stay_with_their_slide(tmp_path: Path) -> None:
    doc = parse(fx.write_pptx(tmp_path))
    assert page_of(doc, fx.SPEAKER_NOTES) == 2
    assert breadcrumb(doc, fx.SLIDE_2) == "Pilotage"


@pytest.mark.parametrize("writer", [fx.write_xlsx, fx.write_ods], ids=["xlsx", "ods"])
def test_sheets_are_pages_headed_by_their_name(
    tmp_path: Path, writer: Callable[[Path], Path]
) -> None:
    doc = parse(writer(tmp_path))
    assert [s.page for s in doc.page_spans] == [1, 2]
    assert page_of(doc, "Aurora Borealis") == 1 and page_of(doc, "Quay Seven") == 2
    assert breadcrumb(doc, "Aurora Borealis") == "Vessels"
    assert breadcrumb(doc, "Quay Seven") == "Berths"
    assert "| Vessel | Tonnage |" in doc.text  # a Markdown table, header row first
    assert "| Sea Lark | 830 |" in doc.text


def test_csv_is_one_markdown_table(tmp_path: Path) -> None:
    doc = parse(fx.write_csv(tmp_path))
    assert [s.page for s in doc.page_spans] == [None]
    assert doc.text.splitlines()[0] == "| Port | Country | Draught |"
    assert "| Antwerp | Belgium | 16 |" in doc.text


def test_csv_in_a_legacy_code_page_decodes(tmp_path: Path) -> None:
    (tmp_path / "villes.csv").write_bytes(
        "Ville,Région\nOrléans,Centre-Val de Loire\nBéziers,Occitanie\n".encode("cp1252")
    )
    doc = parse(tmp_path / "villes.csv")
    assert "| Orléans | Centre-Val de Loire |" in doc.text and "Région" in doc.text


def test_html_keeps_headings_and_drops_scripts_and_styles(tmp_path: Path) -> None:
    doc = parse(fx.write_html(tmp_path))
    assert doc.markdown and fx.INTRO in doc.text and fx.SECTION in doc.text
    assert fx.SCRIPT_MARKER not in doc.text and fx.STYLE_MARKER not in doc.text
    assert "console.log" not in doc.text
    assert breadcrumb(doc, fx.SECTION) == "Chapter > Section"


def test_html_keeps_text_before_the_first_heading(tmp_path: Path) -> None:
    (tmp_path / "p.htm").write_text(
        "<html><body><p>Opening remarks.</p><h1>Agenda</h1><p>Item one.</p></body></html>"
    )
    doc = parse(tmp_path / "p.htm")
    assert doc.text.startswith("Opening remarks.")
    assert breadcrumb(doc, "Item one.") == "Agenda"


def test_html_declared_legacy_charset_decodes(tmp_path: Path) -> None:
    html = '<html><head><meta charset="windows-1252"></head><body><p>Déjà vu à Noël</p></body>'
    (tmp_path / "legacy.html").write_bytes(html.encode("cp1252"))
    assert parse(tmp_path / "legacy.html").text == "Déjà vu à Noël"


def test_empty_files_are_textless_documents_not_errors(tmp_path: Path) -> None:
    fx.write_empty_xlsx(tmp_path)
    (tmp_path / "empty.csv").write_bytes(b"")
    (tmp_path / "empty.html").write_bytes(b"")
    for name in ("empty.xlsx", "empty.csv", "empty.html"):
        doc = parse(tmp_path / name)
        assert doc.text == "" and doc.page_spans == []


@pytest.mark.parametrize(
    ("name", "make", "reason"),
    [
        ("cut.docx", lambda p: fx.write_docx(p).read_bytes()[:1500], "(zip is corrupt)"),
        ("note.docx", lambda p: b"Just a note\nsaved with the wrong name\n", "(plain text, not"),
        ("zero.docx", lambda p: b"", "not a valid .docx (empty file)"),
        ("noise.xlsx", lambda p: random.Random(3).randbytes(3000), "unknown binary data"),
        ("old.xlsx", lambda p: b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(600), "legacy binary"),
        ("word.pptx", lambda p: fx.write_docx(p).read_bytes(), "content is a Word document"),
        ("sheet.odt", lambda p: fx.write_ods(p).read_bytes(), "an OpenDocument spreadsheet"),
        ("cut.odp", lambda p: fx.write_odp(p).read_bytes()[:400], "(zip is corrupt)"),
        ("locked.odt", lambda p: fx.write_encrypted_odt(p).read_bytes(), "password-protected"),
    ],
)
def test_broken_office_files_fail_with_a_reason(
    tmp_path: Path, name: str, make: Callable[[Path], bytes], reason: str
) -> None:
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    (tmp_path / name).write_bytes(make(scratch))
    with pytest.raises(ParseError) as err:
        parse(tmp_path / name)
    message = str(err.value)
    assert message.startswith(f"{name}: not a valid {Path(name).suffix}")
    assert reason in message


def test_binary_html_fails(tmp_path: Path) -> None:
    (tmp_path / "blob.html").write_bytes(random.Random(4).randbytes(2000))
    with pytest.raises(ParseError, match="binary content, not text"):
        parse(tmp_path / "blob.html")


def test_conversion_is_offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A fresh converter reads every format with the network unreachable."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")

    def no_network(*args: Any, **kwargs: Any) -> None:
        raise AssertionError(f"network access attempted: {args}")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    monkeypatch.setattr(socket, "create_connection", no_network)
    monkeypatch.setattr(db, "_converter", [])
    writers = [fx.write_docx, fx.write_pptx, fx.write_xlsx, fx.write_csv, fx.write_odt]
    writers += [fx.write_ods, fx.write_odp, fx.write_html]
    for writer in writers:
        assert parse(writer(tmp_path)).text


# The text family's decoding.

FRENCH = (
    "Le château de la forêt est très ancien. Élève, où êtes-vous ? Les œufs coûtent cher.\n"
    "Nous avons visité l'église près du marché ; c'était déjà célèbre à l'époque.\n"
)


@pytest.mark.parametrize("encoding", ["cp1252", "latin-1"])
def test_legacy_french_text_decodes(tmp_path: Path, encoding: str) -> None:
    text = FRENCH if encoding == "cp1252" else FRENCH.replace("œ", "oe")  # no œ in latin-1
    (tmp_path / "fr.txt").write_bytes(text.encode(encoding))
    assert parse(tmp_path / "fr.txt").text == text.strip()


def test_short_western_text_in_english_decodes_as_cp1252(tmp_path: Path) -> None:
    (tmp_path / "n.py").write_bytes(b"# na\xefve approach\nprint('d\xe9j\xe0 vu')\n")
    assert parse(tmp_path / "n.py").text == "# naïve approach\nprint('déjà vu')"


def test_cyrillic_code_page_decodes(tmp_path: Path) -> None:
    text = "Привет, как дела? Это тестовый текст на русском языке."
    (tmp_path / "ru.txt").write_bytes(text.encode("cp1251"))
    assert parse(tmp_path / "ru.txt").text == text


@pytest.mark.parametrize(
    ("data", "fragment"),
    [
        (random.Random(0).randbytes(4096), "binary content, not text"),
        (bytes(b for b in random.Random(1).randbytes(4096) if b), "binary content, not text"),
        (b"hello \x80\x81\x8d\x8f\x90\x9d\x9e \x81\x81 world \x8d\x8f", "no encoding fits"),
        (
            bytes(random.Random(2).randrange(0x80, 0x100) for _ in range(600)),
            "no encoding fits (first bad byte at offset 0 for UTF-8)",
        ),
        ("Résumé – naïve café".encode() + b"\xc3\x28 tail", "damaged UTF-8"),
    ],
    ids=["random", "random-without-nul", "c1-junk", "high-bytes", "damaged-utf8"],
)
def test_undecodable_or_binary_text_fails(tmp_path: Path, data: bytes, fragment: str) -> None:
    (tmp_path / "bad.txt").write_bytes(data)
    with pytest.raises(ParseError) as err:
        parse(tmp_path / "bad.txt")
    assert str(err.value).startswith("bad.txt: ") and fragment in str(err.value)


def test_zero_byte_text_is_one_empty_page(tmp_path: Path) -> None:
    (tmp_path / "empty.md").write_bytes(b"")
    content = TextParser().parse(tmp_path / "empty.md", SETTINGS)
    assert [(p.page, p.text) for p in content.pages] == [(None, "")]
    assert parse(tmp_path / "empty.md").text == ""


def test_bench_office_reports_files_per_second() -> None:
    from varagity_bench.office import bench_office

    rates = bench_office(1)
    assert set(rates) == {"docx", "pptx", "xlsx", "csv", "odt", "ods", "odp", "html"}
    assert all(rate > 0 for rate in rates.values())
