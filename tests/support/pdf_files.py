"""Generators for the PDF and image parser tests: each writes a real file and returns its path.

Nothing binary is checked in; every fixture is built here from known text so the tests
can assert on what comes back. Text-layer PDFs come from fpdf2, scanned pages are text
drawn with Pillow (DejaVu Sans when installed, large enough for OCR) and saved without
a text layer.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont

# Distinct sentences per page so page attribution can be checked.
TEXT_PAGES: tuple[str, ...] = (
    "Aurora station logs the first sensor sweep at dawn.",
    "The kettle manual explains descaling with citric acid.",
    "Harbour pilots radio the tide tables every evening.",
)
# What the scanned pages say: short lines of plain words that OCR reads reliably.
SCAN_PAGES: tuple[tuple[str, ...], ...] = (
    ("Quarterly report", "Revenue grew in March", "Orders shipped from Lisbon"),
    ("Maintenance notes", "Replace the water filter", "Check the pressure valve"),
)
IMAGE_LINES: tuple[str, ...] = ("Invoice number 4711", "Payment due in thirty days")

SCAN_DPI = 150
_FONT_PATHS = (
    Path("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"),
    Path("/usr/share/fonts/dejavu/DejaVuSans.ttf"),
)


def words(lines: Sequence[str]) -> list[str]:
    """The lower-case words (four letters or more) of some fixture lines."""
    return [w.lower() for line in lines for w in line.split() if len(w) >= 4 and w.isalpha()]


def _font(size: int) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    for path in _FONT_PATHS:
        if path.is_file():
            return ImageFont.truetype(str(path), size)
    return ImageFont.load_default(size)


def text_image(lines: Sequence[str], *, width: int = 1200, font_size: int = 44) -> Image.Image:
    """Black text on white, one line per entry, sized for OCR."""
    line_height = int(font_size * 1.8)
    height = max(300, 2 * font_size + line_height * len(lines))
    image = Image.new("RGB", (width, height), "white")
    draw = ImageDraw.Draw(image)
    font = _font(font_size)
    for i, line in enumerate(lines):
        draw.text((font_size, font_size + i * line_height), line, font=font, fill="black")
    return image


def text_pdf(path: Path, pages: Sequence[str] = TEXT_PAGES) -> Path:
    """A PDF with a real text layer, one sentence per page."""
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_font("helvetica", size=14)
    for sentence in pages:
        pdf.add_page()
        pdf.multi_cell(0, 10, sentence)
    pdf.output(str(path))
    return path


def scanned_pdf(path: Path, pages: Sequence[Sequence[str]] = SCAN_PAGES) -> Path:
    """A PDF of page images only (no text layer), saved by Pillow."""
    images = [text_image(lines) for lines in pages]
    images[0].save(path, "PDF", resolution=SCAN_DPI, save_all=True, append_images=images[1:])
    return path


def mixed_pdf(path: Path) -> Path:
    """Page 1 has a text layer; page 2 is a scanned image of :data:`SCAN_PAGES` [0].

    Page 2 also carries a negligible text layer (a page number), as scanned pages
    stamped by a PDF tool often do: too little to count, so the page is OCR'd.
    """
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_font("helvetica", size=14)
    pdf.add_page()
    pdf.multi_cell(0, 10, TEXT_PAGES[0])
    pdf.add_page()
    image = text_image(SCAN_PAGES[0])
    pdf.image(image, x=10, y=10, w=190)
    pdf.set_auto_page_break(False)
    pdf.set_y(-20)
    pdf.cell(0, 10, "- 2 -", align="C")
    pdf.output(str(path))
    return path


def encrypted_pdf(path: Path, user_password: str = "secret") -> Path:
    """A text PDF that cannot be opened without ``user_password``."""
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_encryption(owner_password="owner-" + user_password, user_password=user_password)
    pdf.set_font("helvetica", size=14)
    pdf.add_page()
    pdf.multi_cell(0, 10, TEXT_PAGES[0])
    pdf.output(str(path))
    return path


def zero_page_pdf(path: Path) -> Path:
    """A well-formed PDF whose page tree is empty."""
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [] /Count 0 >>",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    for offset in offsets:
        out += b"%010d 00000 n \n" % offset
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    path.write_bytes(bytes(out))
    return path


def truncated_pdf(path: Path) -> Path:
    """The first half of a valid text PDF."""
    full = text_pdf(path.with_name(path.stem + "-full.pdf"))
    data = full.read_bytes()
    full.unlink()
    path.write_bytes(data[: len(data) // 2])
    return path


def empty_pdf(path: Path) -> Path:
    """A zero-byte file named ``.pdf``."""
    path.write_bytes(b"")
    return path


def text_png(path: Path, lines: Sequence[str] = IMAGE_LINES) -> Path:
    """A PNG showing ``lines``."""
    text_image(lines).save(path, "PNG")
    return path


def multipage_tiff(path: Path, pages: Sequence[Sequence[str]] = SCAN_PAGES) -> Path:
    """A multi-frame TIFF, one frame per entry of ``pages``."""
    images = [text_image(lines) for lines in pages]
    images[0].save(path, "TIFF", save_all=True, append_images=images[1:])
    return path


def fake_png(path: Path) -> Path:
    """A ``.png`` whose bytes are plain text, not an image."""
    path.write_text("this is not an image, just text with a .png name\n")
    return path
