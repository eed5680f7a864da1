"""Plain text and Markdown: decoding only - the text is the document."""

from __future__ import annotations

import codecs

from varagity.ingest.discovery import TEXT_SUFFIXES as SUFFIXES

__all__ = ["SUFFIXES", "decode_text"]


def decode_text(data: bytes, name: str) -> str:
    """Decode UTF-8 (BOM optional) or BOM-marked UTF-16; anything else is an error.

    Guessing a legacy code page would store mojibake silently, so undecodable bytes
    fail the file with the offset of the first bad byte.
    """
    from varagity.ingest.parsers.base import ParseError

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
