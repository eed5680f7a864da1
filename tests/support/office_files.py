"""Generators of real office, OpenDocument and web files for the parser tests.

Every function writes one file into ``folder`` and returns its path; the content uses
the module-level sentences so tests can look for them. Nothing binary lives in git.
"""

from __future__ import annotations

from pathlib import Path

INTRO = "The harbour authority dredges the northern channel every spring."
SECTION = "Silt samples are tested for heavy metals before disposal at sea."
SLIDE_1 = "Quarterly tonnage rose by twelve percent in the eastern basin."
SLIDE_2 = "Pilot boarding moves to the outer anchorage from next March."
SPEAKER_NOTES = "Remind the board that the anchorage survey is still pending."
REVIEW_COMMENT = "Reviewer: check this figure before release."
SCRIPT_MARKER = "window.trackingBeaconShouldNeverBeIndexed"
STYLE_MARKER = "neverIndexedStyleRule"


def write_docx(folder: Path, name: str = "report.docx") -> Path:
    """A Word file: Heading 1 "Chapter", a paragraph (with a review comment), Heading 2
    "Section", a paragraph."""
    import docx

    document = docx.Document()
    document.add_heading("Chapter", level=1)
    intro = document.add_paragraph(INTRO)
    document.add_comment(intro.runs, text=REVIEW_COMMENT, author="Reviewer")
    document.add_heading("Section", level=2)
    document.add_paragraph(SECTION)
    path = folder / name
    document.save(str(path))
    return path


def write_pptx(folder: Path, name: str = "deck.pptx") -> Path:
    """A PowerPoint file: two title-and-content slides, speaker notes on the second."""
    import pptx

    deck = pptx.Presentation()
    layout = deck.slide_layouts[1]
    for title, body in (("Tonnage", SLIDE_1), ("Pilotage", SLIDE_2)):
        slide = deck.slides.add_slide(layout)
        slide.shapes.title.text = title
        slide.placeholders[1].text = body
    notes = deck.slides[1].notes_slide.notes_text_frame
    assert notes is not None
    notes.text = SPEAKER_NOTES
    path = folder / name
    deck.save(str(path))
    return path


def write_xlsx(folder: Path, name: str = "book.xlsx") -> Path:
    """An Excel workbook: sheets "Vessels" and "Berths" with a header row each."""
    import openpyxl

    book = openpyxl.Workbook()
    first = book.active
    assert first is not None
    first.title = "Vessels"
    vessels: list[tuple[str, str | int]] = [
        ("Vessel", "Tonnage"),
        ("Aurora Borealis", 5200),
        ("Sea Lark", 830),
    ]
    for row in vessels:
        first.append(row)
    second = book.create_sheet("Berths")
    berths: list[tuple[str, str | float]] = [
        ("Berth", "Depth"),
        ("Quay Seven", 14.5),
        ("Quay Nine", 11.0),
    ]
    for berth in berths:
        second.append(berth)
    path = folder / name
    book.save(str(path))
    return path


def write_empty_xlsx(folder: Path, name: str = "empty.xlsx") -> Path:
    """A valid workbook whose only sheet has no cells."""
    import openpyxl

    path = folder / name
    openpyxl.Workbook().save(str(path))
    return path


def write_csv(folder: Path, name: str = "ports.csv") -> Path:
    """A small CSV table."""
    path = folder / name
    path.write_text("Port,Country,Draught\nRotterdam,Netherlands,24\nAntwerp,Belgium,16\n")
    return path


def write_odt(folder: Path, name: str = "report.odt") -> Path:
    """An OpenDocument text: the same headings and sentences as :func:`write_docx`."""
    from odfdo import Document, Header, Paragraph

    document = Document("text")
    body = document.body
    body.clear()
    body.append(Header(1, "Chapter"))
    body.append(Paragraph(INTRO))
    body.append(Header(2, "Section"))
    body.append(Paragraph(SECTION))
    path = folder / name
    document.save(path)
    return path


def write_ods(folder: Path, name: str = "book.ods") -> Path:
    """An OpenDocument spreadsheet: sheets "Vessels" and "Berths"."""
    from odfdo import Document, Table

    document = Document("spreadsheet")
    body = document.body
    body.clear()
    vessels = Table("Vessels")
    vessels.set_values([["Vessel", "Tonnage"], ["Aurora Borealis", 5200], ["Sea Lark", 830]])
    berths = Table("Berths")
    berths.set_values([["Berth", "Depth"], ["Quay Seven", 14.5], ["Quay Nine", 11.0]])
    body.append(vessels)
    body.append(berths)
    path = folder / name
    document.save(path)
    return path


def write_odp(folder: Path, name: str = "deck.odp") -> Path:
    """An OpenDocument presentation: two slides, each with a text frame."""
    from odfdo import Document, DrawPage, Frame

    document = Document("presentation")
    body = document.body
    body.clear()
    for number, text in ((1, SLIDE_1), (2, SLIDE_2)):
        page = DrawPage(f"page{number}", name=f"Slide {number}")
        page.append(Frame.text_frame(text, size=("20cm", "5cm"), position=("2cm", "3cm")))
        body.append(page)
    path = folder / name
    document.save(path)
    return path


def write_html(folder: Path, name: str = "page.html") -> Path:
    """An HTML page with headings, paragraphs, a script and a style block."""
    path = folder / name
    path.write_text(
        "<!DOCTYPE html><html><head><title>Harbour</title>"
        f"<style>.{STYLE_MARKER} {{ color: red; }}</style>"
        f"<script>{SCRIPT_MARKER} = true;</script></head><body>"
        f"<h1>Chapter</h1><p>{INTRO}</p>"
        f"<h2>Section</h2><p>{SECTION}</p>"
        f"<script>console.log({SCRIPT_MARKER});</script>"
        "</body></html>",
        encoding="utf-8",
    )
    return path


def write_encrypted_odt(folder: Path, name: str = "secret.odt") -> Path:
    """An ODT as a password-protected one looks: scrambled content, encryption metadata."""
    import random
    import zipfile

    plain = write_odt(folder, "plain-" + name)
    path = folder / name
    with zipfile.ZipFile(plain) as src, zipfile.ZipFile(path, "w") as dst:
        for info in src.infolist():
            data = src.read(info)
            if info.filename == "content.xml":
                data = random.Random(7).randbytes(len(data))
            elif info.filename == "META-INF/manifest.xml":
                data = data.replace(
                    b"</manifest:manifest>",
                    b'<manifest:file-entry manifest:full-path="x" manifest:media-type="">'
                    b'<manifest:encryption-data manifest:checksum-type="SHA1/1K"/>'
                    b"</manifest:file-entry></manifest:manifest>",
                )
            dst.writestr(info, data)
    return path
