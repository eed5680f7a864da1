"""A generated corpus of malformed input next to a few good files (issue 12 #6).

:func:`write_corpus` writes every kind of :data:`KINDS` into a folder at test time (no
binary lives in git) and returns what each file should come to: indexed with text,
recorded as textless, failed by its parser with a reason, or skipped by discovery with
a reason. The bad kinds are the ones a real folder of documents meets: truncated,
encrypted and page-less PDFs, zip bombs named like office files, absurdly nested HTML,
broken encodings, a gigapixel image header, symlink loops, control characters in names,
garbage behind a text suffix, a corrupt chat export.
"""

from __future__ import annotations

import io
import os
import random
import struct
import zipfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tests.support import office_files, pdf_files

#: What a file should come to.
INDEXED = "indexed"  # searchable, with at least one chunk
TEXTLESS = "textless"  # recorded with zero chunks and a "no extractable text" warning
FAILED = "failed"  # its run step fails with ``reason`` in the message
SKIPPED = "skipped"  # discovery never makes it a partition; the sensor reports ``reason``


@dataclass(frozen=True)
class Kind:
    """One kind of file: its corpus-relative name, a writer, and the expected outcome."""

    name: str
    write: Callable[[Path], object]
    outcome: str
    reason: str = ""  # a substring of the reported reason (FAILED, SKIPPED)
    query: str = ""  # a phrase of its text that search must find (INDEXED)


def _bytes(data: bytes) -> Callable[[Path], object]:
    return lambda path: path.write_bytes(data)


def _text(text: str) -> Callable[[Path], object]:
    return lambda path: path.write_text(text, encoding="utf-8")


def _garbage(n: int, seed: int = 7) -> bytes:
    return random.Random(seed).randbytes(n)


def _zip(members: dict[str, bytes], *, level: int = 9) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=level) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return out.getvalue()


_CONTENT_TYPES = (
    b'<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/'
    b'package/2006/content-types"><Default Extension="xml" ContentType="application/xml"/>'
    b"</Types>"
)


def _bomb(main_part: str) -> Callable[[Path], object]:
    """An OOXML-shaped zip whose main part inflates to 64 MiB of spaces (64 kB on disk)."""

    def write(path: Path) -> None:
        # streamed: the bomb is never held in memory here either
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as zf:
            zf.writestr("[Content_Types].xml", _CONTENT_TYPES)
            with zf.open(main_part, "w", force_zip64=True) as member:
                block = b" " * (1 << 20)
                for _ in range(64):
                    member.write(block)

    return write


def _billion_laughs(path: Path) -> None:
    """A .docx whose document.xml defines the classic exponential entity expansion."""
    entities = ['<!ENTITY lol0 "lol">'] + [
        f'<!ENTITY lol{i} "{f"&lol{i - 1};" * 10}">' for i in range(1, 10)
    ]
    xml = (
        '<?xml version="1.0"?><!DOCTYPE w:document [' + "".join(entities) + "]>"
        '<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main">'
        "<w:body><w:p><w:r><w:t>&lol9;</w:t></w:r></w:p></w:body></w:document>"
    )
    path.write_bytes(
        _zip({"[Content_Types].xml": _CONTENT_TYPES, "word/document.xml": xml.encode()})
    )


def _truncated_office(writer: Callable[[Path, str], Path]) -> Callable[[Path], object]:
    def write(path: Path) -> None:
        full = writer(path.parent, path.stem + "-full" + path.suffix)
        data = full.read_bytes()
        full.unlink()
        path.write_bytes(data[: len(data) // 2])

    return write


def _docx_with_pptx_inside(path: Path) -> None:
    full = office_files.write_pptx(path.parent, path.stem + "-deck.pptx")
    data = full.read_bytes()
    full.unlink()
    path.write_bytes(data)


def _nested_html(depth: int) -> Callable[[Path], object]:
    return _text(
        "<html><body>" + "<div>" * depth + "deep inside" + "</div>" * depth + "</body></html>"
    )


def _png_header(width: int, height: int) -> bytes:
    """A PNG that declares ``width`` x ``height`` and carries one tiny IDAT (a bomb header)."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        return (
            struct.pack(">I", len(body))
            + kind
            + body
            + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)
        )

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)  # 8-bit greyscale
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", ihdr)
        + chunk(b"IDAT", zlib.compress(b"\x00" * 1024))
        + chunk(b"IEND", b"")
    )


def _blank_png(path: Path) -> None:
    from PIL import Image

    Image.new("L", (800, 600), 255).save(path, "PNG")


def _truncated_png(path: Path) -> None:
    pdf_files.text_png(path)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 3])


def _giant_line(path: Path) -> None:
    words = "tidal turbine blades spin slowly beneath the harbour bridge".split()
    rng = random.Random(3)
    path.write_text(" ".join(rng.choice(words) for _ in range(10_000)), encoding="utf-8")


def _utf16_no_bom(path: Path) -> None:
    path.write_bytes("Glacier meltwater feeds the Rhône valley reservoirs.\n".encode("utf-16-le"))


def _symlink_loop(path: Path) -> None:
    partner = path.with_name(path.stem + "-partner" + path.suffix)
    os.symlink(partner.name, path)
    os.symlink(path.name, partner)


def _dangling(path: Path) -> None:
    os.symlink("no-such-target.md", path)


def _fifo(path: Path) -> None:
    os.mkfifo(path)


def _sparse(size: int) -> Callable[[Path], object]:
    def write(path: Path) -> None:
        with path.open("wb") as handle:
            handle.truncate(size)

    return write


def _chat_export_zip(path: Path) -> None:
    data = _zip({"WhatsApp Chat with Ana.txt": b"[01/02/2024, 10:00] Ana: hi\n" * 200})
    path.write_bytes(data[: len(data) // 2])


def _corrupt_chat_json(path: Path) -> None:
    good = b'{"messages": [' + b'{"from": "Ana", "text": "see you at the pier"},' * 50
    path.write_bytes(good + b"\xff\xfe\x00\x01" * 64)


def _pdf_garbage_body(path: Path) -> None:
    path.write_bytes(b"%PDF-1.7\n" + _garbage(20_000, seed=11))


def _office(writer: Callable[[Path, str], Path]) -> Callable[[Path], object]:
    return lambda path: writer(path.parent, path.name)


KINDS: tuple[Kind, ...] = (
    # --- good files: every one must become searchable
    Kind(
        "good/notes.md",
        _text("# Lighthouses\n\nFresnel lenses focus the beam far out to sea.\n"),
        INDEXED,
        query="Fresnel lenses",
    ),
    Kind(
        "good/report.docx",
        _office(office_files.write_docx),
        INDEXED,
        query="dredges the northern channel",
    ),
    Kind(
        "good/manual.pdf",
        pdf_files.text_pdf,
        INDEXED,
        query=pdf_files.words(pdf_files.TEXT_PAGES[:1])[0],
    ),
    Kind("good/page.html", _office(office_files.write_html), INDEXED, query="harbour authority"),
    Kind("good/utf16-no-bom.txt", _utf16_no_bom, INDEXED, query="glacier meltwater"),
    Kind("good/one-64k-line.txt", _giant_line, INDEXED, query="tidal turbine blades"),
    Kind(
        "good/chat.json",
        _text('{"messages": [{"from": "Ana", "text": "the ferry leaves at dawn"}]}\n'),
        INDEXED,
        query="ferry leaves at dawn",
    ),
    # --- textless: recorded, zero chunks
    Kind("textless/empty.txt", _bytes(b""), TEXTLESS),
    Kind("textless/blank.md", _text("  \n\n\t \n"), TEXTLESS),
    Kind("textless/blank.png", _blank_png, TEXTLESS),
    # --- PDFs
    Kind(
        "pdf/truncated.pdf",
        pdf_files.truncated_pdf,
        FAILED,
        "not a readable PDF (truncated or corrupt)",
    ),
    Kind("pdf/encrypted.pdf", pdf_files.encrypted_pdf, FAILED, "encrypted: a password is required"),
    Kind(
        "pdf/zero-pages.pdf",
        pdf_files.zero_page_pdf,
        FAILED,
        "the PDF has no pages",
    ),
    Kind("pdf/empty.pdf", _bytes(b""), FAILED, "empty file (0 bytes), not a PDF"),
    Kind(
        "pdf/text-named.pdf", _text("just a note, not a PDF\n"), FAILED, "not a PDF (no %PDF header"
    ),
    Kind("pdf/garbage-body.pdf", _pdf_garbage_body, FAILED, "not a readable PDF"),
    # --- office containers
    Kind(
        "office/bomb.docx", _bomb("word/document.xml"), FAILED, "zip bomb: member word/document.xml"
    ),
    Kind("office/bomb.xlsx", _bomb("xl/workbook.xml"), FAILED, "zip bomb"),
    Kind("office/bomb.pptx", _bomb("ppt/presentation.xml"), FAILED, "zip bomb"),
    Kind("office/billion-laughs.docx", _billion_laughs, FAILED, "declares XML entities"),
    Kind(
        "office/truncated.docx",
        _truncated_office(office_files.write_docx),
        FAILED,
        "not a valid .docx (zip is corrupt",
    ),
    Kind(
        "office/truncated.xlsx",
        _truncated_office(office_files.write_xlsx),
        FAILED,
        "not a valid .xlsx (zip is corrupt",
    ),
    Kind(
        "office/garbage.pptx",
        _bytes(_garbage(30_000)),
        FAILED,
        "not a valid .pptx (unknown binary data, not a zip archive)",
    ),
    Kind(
        "office/legacy.docx",
        _bytes(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(4000)),
        FAILED,
        "legacy binary or password-protected Office file",
    ),
    Kind(
        "office/deck-named.docx",
        _docx_with_pptx_inside,
        FAILED,
        "the content is a PowerPoint presentation",
    ),
    Kind("office/empty.xlsx", _bytes(b""), FAILED, "empty file"),
    Kind("office/binary.csv", _bytes(bytes(range(256)) * 40), FAILED, "binary content, not text"),
    # --- HTML
    Kind("web/nested-100k.html", _nested_html(100_000), FAILED, "nested more than 256 deep"),
    Kind("web/garbage.html", _bytes(b"\x00\x01\x02" * 5000), FAILED, "binary content, not text"),
    # --- text encodings and content
    Kind(
        "text/invalid-utf8.txt",
        _bytes("Café crème brûlée ".encode() * 40 + b"\xc3\x28\xa0\xa1" * 5),
        FAILED,
        "damaged UTF-8",
    ),
    Kind("text/garbage.txt", _bytes(_garbage(50_000)), FAILED, "binary content, not text"),
    Kind("text/garbage.md", _bytes(bytes(range(1, 32)) * 500), FAILED, "control characters"),
    Kind("text/over-limit.txt", _sparse(60 * 1024 * 1024), FAILED, "is over MAX_FILE_BYTES"),
    Kind("text/corrupt-chat.json", _corrupt_chat_json, FAILED, "binary content, not text"),
    # --- images
    Kind("image/gigapixel.png", _bytes(_png_header(100_000, 100_000)), FAILED, "image too large"),
    Kind(
        "image/truncated.png", _truncated_png, FAILED, "not a readable image (truncated or corrupt)"
    ),
    Kind(
        "image/text-named.png",
        pdf_files.fake_png,
        FAILED,
        "not a readable image",
    ),
    Kind("image/empty.jpg", _bytes(b""), FAILED, "empty file (0 bytes), not an image"),
    # --- what discovery meets before any parser
    Kind("fs/loop.md", _symlink_loop, SKIPPED, "symlink loop"),
    Kind("fs/dangling.md", _dangling, SKIPPED, "broken symlink"),
    Kind("fs/pipe.txt", _fifo, SKIPPED, "not a regular file"),
    Kind("fs/chat-export.zip", _chat_export_zip, SKIPPED, "unsupported file type .zip"),
    Kind(
        "fs/bell\x07name.txt",
        _text("A name with a bell character in it: auroras.\n"),
        INDEXED,
        query="bell character auroras",
    ),
)


def write_corpus(docs: Path) -> dict[str, Kind]:
    """Write every kind under ``docs``; returns them by relative path."""
    for kind in KINDS:
        path = docs / kind.name
        path.parent.mkdir(parents=True, exist_ok=True)
        kind.write(path)
    return {k.name: k for k in KINDS}
