"""Plain text, Markdown, reStructuredText and source code: decoding only."""

from __future__ import annotations

import codecs
from pathlib import Path

from varagity.config import Settings
from varagity.ingest.parsers.base import PageText, ParsedContent, ParseError, register

PROSE_SUFFIXES = frozenset({".txt", ".md", ".markdown", ".rst", ".text"})
# Source code and config are plain text too: ingested as is (decoded, never executed).
CODE_SUFFIXES = frozenset(
    ".py .pyi .rs .c .h .cc .cpp .cxx .hpp .hh .java .kt .scala .go .rb .php .cs .swift "
    ".js .jsx .ts .tsx .sh .bash .sql .toml .yaml .yml .ini .cfg .json .proto .cmake".split()
)
MARKDOWN_SUFFIXES = frozenset({".md", ".markdown"})


def decode_text(data: bytes, name: str) -> str:
    """Decode UTF-8 (BOM optional) or BOM-marked UTF-16; anything else is an error.

    Guessing a legacy code page would store mojibake silently, so undecodable bytes
    fail the file with the offset of the first bad byte.
    """
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        try:
            return data.decode("utf-16")
        except UnicodeDecodeError as exc:
            raise ParseError(f"{name}: invalid UTF-16 at byte {exc.start}") from None
    if b"\x00" in data[:8192]:
        raise ParseError(f"{name}: contains NUL bytes - binary content, not text")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ParseError(
            f"{name}: not valid UTF-8 (first bad byte at offset {exc.start}); re-save it as UTF-8"
        ) from None


class TextParser:
    """The whole file is one page of text."""

    family = "text"
    suffixes = PROSE_SUFFIXES | CODE_SUFFIXES

    def parse(self, path: Path, settings: Settings) -> ParsedContent:
        """Decode the file."""
        text = decode_text(path.read_bytes(), path.name)
        return ParsedContent(
            pages=[PageText(page=None, text=text, extraction="text")],
            markdown=path.suffix.lower() in MARKDOWN_SUFFIXES,
        )


register(TextParser())
