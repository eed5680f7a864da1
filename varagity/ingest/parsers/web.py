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
from varagity.ingest.parsers.text import MAX_CONTROL_SHARE, control_share, decode_text

WEB_SUFFIXES = frozenset({".html", ".htm", ".xhtml"})
_DECLARED = re.compile(
    rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9._:-]+)"""
    rb"""|<\?xml[^>]+encoding\s*=\s*["']([A-Za-z0-9._:-]+)""",
    re.IGNORECASE,
)
# Deeper element nesting than this is refused before docling sees it: its HTML backend
# walks the tree recursively, slowly (a 2,000-deep page takes half a minute to fail on
# Python's recursion limit). Real pages nest a few dozen levels.
HTML_MAX_DEPTH = 256
# Elements without an end tag, and those whose next sibling of the same name ends them.
_VOID = frozenset("area base br col embed hr img input link meta param source track wbr".split())
_SELF_CLOSING_SIBLINGS = frozenset("p li dt dd tr td th option".split())
_TAG = re.compile(rb"<(/?)([A-Za-z][A-Za-z0-9:-]*)[^>]*?(/?)>")
_SKIPPED_BLOCKS = re.compile(rb"<!--.*?-->|<(script|style)\b.*?</\1\s*>", re.IGNORECASE | re.DOTALL)
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
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        pass
    else:  # control characters are valid UTF-8 too: binary data is not a page
        if b"\x00" in data or control_share(text) > MAX_CONTROL_SHARE:
            return decode_text(data, name)  # raises with the binary reason
        return text
    declared = declared_encoding(data[:4096])
    if declared is not None and not declared.startswith("utf_16") and b"\x00" not in data:
        try:
            return data.decode(declared)
        except UnicodeDecodeError:
            pass  # the declaration is wrong: detect instead
    return decode_text(data, name)


def nesting_depth(data: bytes, stop_at: int = HTML_MAX_DEPTH + 1) -> int:
    """The deepest element nesting of an HTML page, as a forgiving parser builds it;
    counting stops at ``stop_at`` (so the scan stays linear on a page nested a million deep).

    End tags close up to their matching open element (an unmatched one is ignored), void
    elements and ``<x/>`` never nest, and a ``<p>``/``<li>``/``<td>``... closes an open
    sibling of its name, so pages that leave those unclosed do not look deep.
    """
    stack: list[bytes] = []
    deepest = 0
    for match in _TAG.finditer(_SKIPPED_BLOCKS.sub(b"", data)):
        closing, raw, self_closing = match.groups()
        tag = raw.lower()
        if closing:
            if tag in stack:
                del stack[len(stack) - 1 - stack[::-1].index(tag) :]
            continue
        if tag in _VOID or self_closing:
            continue
        if tag in _SELF_CLOSING_SIBLINGS and tag in stack[-3:]:
            del stack[len(stack) - 1 - stack[::-1].index(tag) :]
        stack.append(tag)
        deepest = max(deepest, len(stack))
        if deepest >= stop_at:
            break
    return deepest


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
            ParseError: The bytes are binary or undecodable, the elements nest deeper
                than :data:`HTML_MAX_DEPTH`, or docling cannot read them.
        """
        text = decode_html(path.read_bytes(), path.name)
        if not text.strip():
            return ParsedContent(pages=[PageText(page=None, text="")], markdown=True)
        encoded = text.encode("utf-8")
        if nesting_depth(encoded) > HTML_MAX_DEPTH:
            raise ParseError(
                f"{path.name}: HTML elements nested more than {HTML_MAX_DEPTH} deep;"
                " a generated or malicious page, not a document to index"
            )
        try:
            doc = convert(codecs.BOM_UTF8 + encoded, path.suffix.lower(), path.name)
        except ParseError as exc:
            raise ParseError(f"{path.name}: {exc}") from None
        return ParsedContent(pages=document_pages(doc), markdown=True)
