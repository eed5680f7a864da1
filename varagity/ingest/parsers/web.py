"""HTML pages through docling's HTML backend: Markdown with the page's headings.

Scripts, styles and the ``<title>`` are not body text; ``<footer>`` content is
furniture and left out, while text before the first heading is kept. The bytes are
decoded here (byte-order mark, valid UTF-8, a declared ``<meta charset>`` or XML
encoding, then the text family's detection) and handed to docling as UTF-8 with a
byte-order mark, so BeautifulSoup never second-guesses the encoding.
"""

from __future__ import annotations

import codecs
import re
from pathlib import Path

from varagity.config import Settings
from varagity.ingest.parsers.base import PageText, ParsedContent, ParseError
from varagity.ingest.parsers.docling_base import convert, document_pages
from varagity.ingest.parsers.text import decode_text

WEB_SUFFIXES = frozenset({".html", ".htm", ".xhtml"})
_DECLARED = re.compile(
    rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9._:-]+)"""
    rb"""|<\?xml[^>]+encoding\s*=\s*["']([A-Za-z0-9._:-]+)""",
    re.IGNORECASE,
)
# What browsers do (WHATWG Encoding): these labels mean windows-1252.
_AS_CP1252 = frozenset({"cp1252", "latin_1", "iso8859_1", "ascii"})


def declared_encoding(head: bytes) -> str | None:
    """The Python codec a page declares in its first bytes (``<meta charset>``, XML)."""
    match = _DECLARED.search(head)
    if match is None:
        return None
    label = (match.group(1) or match.group(2)).decode("ascii").strip().lower()
    try:
        name = codecs.lookup(label).name.replace("-", "_")
    except LookupError:
        return None
    return "cp1252" if name in _AS_CP1252 else name


def decode_html(data: bytes, name: str) -> str:
    """Decode an HTML file: BOM, UTF-8, the declared charset if it fits, else detection.

    Args:
        data: The file's bytes.
        name: The file name, for error messages.

    Returns:
        The page's text.

    Raises:
        ParseError: The bytes are binary or no encoding fits.
    """
    if data.startswith((codecs.BOM_UTF8, codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return decode_text(data, name)
    try:  # valid UTF-8 is UTF-8 whatever the page declares (legacy text never is by chance)
        return data.decode("utf-8")
    except UnicodeDecodeError:
        pass
    declared = declared_encoding(data[:4096])
    if declared is not None and not declared.startswith("utf_16") and b"\x00" not in data:
        try:
            return data.decode(declared)
        except UnicodeDecodeError:
            pass  # the declaration is wrong: detect instead
    return decode_text(data, name)


class WebParser:
    """HTML, HTM and XHTML pages as one Markdown page."""

    family = "web"
    suffixes = WEB_SUFFIXES

    def parse(self, path: Path, settings: Settings) -> ParsedContent:
        """Decode the page and convert it with docling's HTML backend.

        Args:
            path: The file.
            settings: The run's settings (unused).

        Returns:
            One Markdown page without a page number (empty for an empty file).

        Raises:
            ParseError: The bytes are binary or undecodable, or docling cannot read them.
        """
        text = decode_html(path.read_bytes(), path.name)
        if not text.strip():
            return ParsedContent(pages=[PageText(page=None, text="")], markdown=True)
        try:
            doc = convert(codecs.BOM_UTF8 + text.encode("utf-8"), path.suffix.lower(), path.name)
        except ParseError as exc:
            raise ParseError(f"{path.name}: {exc}") from None
        return ParsedContent(pages=document_pages(doc), markdown=True)
