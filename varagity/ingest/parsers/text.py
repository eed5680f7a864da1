"""Plain text, Markdown, reStructuredText and source code: decoding only."""

from __future__ import annotations

import codecs
import re
import unicodedata
from pathlib import Path
from typing import TYPE_CHECKING

from varagity.config import Settings
from varagity.ingest.parsers.base import PageText, ParsedContent, ParseError

if TYPE_CHECKING:
    from charset_normalizer.models import CharsetMatch

PROSE_SUFFIXES = frozenset({".txt", ".md", ".markdown", ".rst", ".text"})
# Source code and config are plain text too: ingested as is (decoded, never executed).
CODE_SUFFIXES = frozenset(
    ".py .pyi .rs .c .h .cc .cpp .cxx .hpp .hh .java .kt .scala .go .rb .php .cs .swift "
    ".js .jsx .ts .tsx .sh .bash .sql .toml .yaml .yml .ini .cfg .json .proto .cmake".split()
)
MARKDOWN_SUFFIXES = frozenset({".md", ".markdown"})

# Byte-order marks settle the encoding; UTF-32 LE is tested before UTF-16 LE because
# its mark starts with the UTF-16 LE one.
_BOMS: tuple[tuple[bytes, str, str], ...] = (
    (codecs.BOM_UTF32_LE, "utf-32", "UTF-32"),
    (codecs.BOM_UTF32_BE, "utf-32", "UTF-32"),
    (codecs.BOM_UTF16_LE, "utf-16", "UTF-16"),
    (codecs.BOM_UTF16_BE, "utf-16", "UTF-16"),
)
# A well-formed UTF-8 multi-byte sequence (no overlongs, no surrogates).
_UTF8_SEQUENCE = re.compile(
    rb"[\xc2-\xdf][\x80-\xbf]|\xe0[\xa0-\xbf][\x80-\xbf]|[\xe1-\xec\xee\xef][\x80-\xbf]{2}"
    rb"|\xed[\x80-\x9f][\x80-\xbf]|\xf0[\x90-\xbf][\x80-\xbf]{2}|[\xf1-\xf3][\x80-\xbf]{3}"
    rb"|\xf4[\x80-\x8f][\x80-\xbf]{2}"
)
_HIGH_BYTES = bytes(range(0x80, 0x100))
# Above this share of well-formed UTF-8 among the non-ASCII bytes the file is damaged
# UTF-8 (an error to report), not a legacy encoding to guess.
UTF8_DAMAGE_SHARE = 0.5
# charset-normalizer's "chaos" (mess ratio) above which a guess is not trusted, and how
# close in chaos and language coherence a differing reading must come to make it a tie.
MAX_CHAOS = 0.1
CHAOS_MARGIN = 0.02
COHERENCE_MARGIN = 0.05
# Share of control characters (C0 but tab/newlines/form feed/escape, C1, U+FFFD) above
# which decoded bytes are binary content rather than text.
MAX_CONTROL_SHARE = 0.01
_TEXT_CONTROLS = frozenset("\t\n\r\x0b\x0c\x1b")
_BINARY_BYTES = bytes(b for b in range(0x20) if chr(b) not in _TEXT_CONTROLS) + b"\x7f"
_CONTROL_CHARS = re.compile("[\x00-\x08\x0e-\x1a\x1c-\x1f\x7f-\x9f\ufffd]")
# UTF-16 without a byte-order mark is recognised from this many leading bytes when at
# least this share of one byte column is NUL (and the other column has none).
UTF16_SAMPLE_BYTES = 4096
UTF16_ZERO_SHARE = 0.7
# Legacy encodings people actually write, most likely first (the tie-break): only these
# are guessed; charset-normalizer also proposes DOS, Mac and Vietnamese code pages for
# any short Latin text, which are far more often wrong than right.
COMMON_ENCODINGS = (
    "cp1250",
    "iso8859_2",
    "cp1251",
    "koi8_r",
    "cp1253",
    "cp1254",
    "cp1255",
    "cp1256",
    "cp1257",
    "cp932",
    "shift_jis",
    "euc_jp",
    "gb18030",
    "gbk",
    "gb2312",
    "big5",
    "cp949",
    "euc_kr",
)
# Multi-byte encodings trusted without a recognised language (no alphabet model exists).
_CJK = frozenset(
    {"cp932", "shift_jis", "euc_jp", "gb18030", "gbk", "gb2312", "big5", "cp949", "euc_kr"}
)
# cp1252 is tried first, before any statistics: charset-normalizer's language model is
# swamped by the ASCII of a mostly-English or mostly-French file and reads "forêt" as
# Baltic "forźt". A cp1252 reading is accepted when its non-ASCII characters are those of
# Western European languages, sit where they belong, and stay a minority of the letters.
_WESTERN_LETTERS = frozenset("àáâãäåæçèéêëìíîïñòóôõöøùúûüÿœßÀÁÂÃÄÅÆÇÈÉÊËÌÍÎÏÑÒÓÔÕÖØÙÚÛÜŸŒ")
_WESTERN_SYMBOLS = frozenset("«»“”‘’„‚–—…•·€£¥¢°§©®™¿¡ºª¹²³½¼¾±×\xa0")
_IN_WORD_SYMBOLS = frozenset("’·")  # l’église, col·lecció
_NON_ASCII = re.compile(r"[^\x00-\x7f]")
_WESTERN_SAMPLE = 262_144  # characters inspected; the strict decode covers the rest
_MAX_ACCENTED_SHARE = 0.3


def _utf16_without_bom(data: bytes) -> str | None:
    """``utf-16-le``/``utf-16-be`` when ``data`` reads as mostly-ASCII UTF-16 without a mark.

    Text in a Latin script saved as UTF-16 has a NUL in every other byte (the high byte
    of each character), at odd offsets for little-endian and even for big-endian, and
    nowhere else; random binary data does not.
    """
    sample = data[:UTF16_SAMPLE_BYTES]
    if len(sample) < 4 or len(sample) % 2:
        return None
    even, odd = sample[0::2], sample[1::2]
    for zeros, other, codec in ((odd, even, "utf-16-le"), (even, odd, "utf-16-be")):
        if zeros.count(0) >= UTF16_ZERO_SHARE * len(zeros) and other.count(0) == 0:
            return codec
    return None


def control_share(text: str) -> float:
    """Share of ``text`` that is control characters (or U+FFFD): high for binary data."""
    return len(_CONTROL_CHARS.findall(text)) / len(text) if text else 0.0


def _utf8_share(data: bytes) -> float:
    """Share of the non-ASCII bytes that belong to well-formed UTF-8 sequences."""
    high = len(data) - len(data.translate(None, _HIGH_BYTES))
    if not high:
        return 1.0
    covered = sum(len(m) for m in _UTF8_SEQUENCE.findall(data))
    return covered / high


def _has_separators(text: str) -> bool:
    """Whether decoded text has word or sentence separators at all (random bytes do not)."""
    return any(ch.isspace() or unicodedata.category(ch).startswith("P") for ch in text[:4096])


def _plausible_western(text: str) -> bool:
    """Whether a cp1252 reading looks like Western European text rather than mojibake."""
    sample = text[:_WESTERN_SAMPLE]
    hits = [(m.start(), m.group()) for m in _NON_ASCII.finditer(sample)]
    if not hits:
        return True
    seen = {ch for _, ch in hits}
    if {"õ", "û"} <= seen:
        return False  # Hungarian ő and ű in cp1250; French has no õ, Portuguese no û
    accented = sum(1 for _, ch in hits if ch.isalpha())
    if accented > _MAX_ACCENTED_SHARE * sum(1 for ch in sample if ch.isalpha()):
        return False  # Cyrillic, Greek... read as Latin-1 letters: nearly all "accented"
    for index, ch in hits:
        before = sample[index - 1] if index else " "
        after = sample[index + 1] if index + 1 < len(sample) else " "
        if ch.isalpha():
            if ch not in _WESTERN_LETTERS or (ch.isupper() and before.islower()):
                return False  # "Za¿ó³æ", "jaŸñ": Polish, not French
        elif ch not in _WESTERN_SYMBOLS or (
            before.isalpha() and after.isalpha() and ch not in _IN_WORD_SYMBOLS
        ):
            return False
    return True


def _guess_legacy(data: bytes) -> tuple[str, str] | list[str]:
    """A confident legacy reading of ``data`` as (encoding, text), else the contenders.

    cp1252 is judged first (:func:`_plausible_western`). Otherwise charset-normalizer's
    clean readings (low chaos) in a common code page count, single-byte ones only with a
    recognised language; the one with the most coherent language wins unless another,
    nearly as good, reads the bytes differently (Turkish cp1254 and Baltic cp1257 look
    alike to it on a short text): then there is no confident guess.

    Returns:
        ``(encoding, text)``, or the names of the rival encodings (empty when none fits).
    """
    try:
        western = data.decode("cp1252")
    except UnicodeDecodeError:
        pass
    else:
        if _plausible_western(western) and _has_separators(western):
            return "cp1252", western
    from charset_normalizer import from_bytes

    readings: list[tuple[CharsetMatch, str]] = []
    for match in from_bytes(data):
        names = match.could_be_from_charset
        encoding = next((n for n in COMMON_ENCODINGS if n in names), None)
        if match.chaos > MAX_CHAOS or encoding is None or "cp1252" in names:
            continue  # messy, exotic, or the Western reading judged above
        if match.coherence > 0 or encoding in _CJK:
            readings.append((match, encoding))
    if not readings:
        return []
    top, encoding = max(
        readings, key=lambda r: (r[0].coherence, -r[0].chaos, -COMMON_ENCODINGS.index(r[1]))
    )
    rivals = [
        (m, e)
        for m, e in readings
        if m.chaos <= top.chaos + CHAOS_MARGIN and m.coherence >= top.coherence - COHERENCE_MARGIN
    ]
    if len({str(m) for m, _ in rivals}) > 1:
        return [e for _, e in rivals]
    try:
        text = data.decode(encoding)
    except (UnicodeDecodeError, LookupError):
        return []
    return (encoding, text) if _has_separators(text) else []


def decode_text(data: bytes, name: str) -> str:
    """Decode text bytes: BOM-marked UTF-8/16/32, UTF-16 without a mark (mostly-Latin text),
    UTF-8, or a confidently detected code page.

    Legacy encodings (a cp1252 French note, a cp1251 Russian one) are detected with
    charset-normalizer, but only a confident guess is used: binary content, damaged
    UTF-8 and bytes no plausible encoding fits fail the file with a reason instead of
    being stored as mojibake. Empty input decodes to the empty string.

    Args:
        data: The file's bytes.
        name: The file name, for error messages.

    Returns:
        The decoded text.

    Raises:
        ParseError: The bytes are binary or undecodable.
    """
    if not data:
        return ""
    for bom, codec, label in _BOMS:
        if data.startswith(bom):
            try:
                return data.decode(codec)
            except UnicodeDecodeError as exc:
                raise ParseError(f"{name}: invalid {label} at byte {exc.start}") from None
    utf16 = _utf16_without_bom(data)
    if utf16 is not None:
        try:
            text = data.decode(utf16)
        except UnicodeDecodeError as exc:
            raise ParseError(
                f"{name}: looks like {utf16.upper()} without a byte-order mark but is invalid"
                f" at byte {exc.start}; re-save it as UTF-8"
            ) from None
        if control_share(text) > MAX_CONTROL_SHARE:
            raise ParseError(f"{name}: control characters - binary content, not text")
        return text
    if b"\x00" in data:
        raise ParseError(f"{name}: contains NUL bytes - binary content, not text")
    controls = len(data) - len(data.translate(None, _BINARY_BYTES))
    if controls > MAX_CONTROL_SHARE * len(data):
        raise ParseError(f"{name}: control characters - binary content, not text")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        bad = exc.start
    else:
        if control_share(text) > MAX_CONTROL_SHARE:
            raise ParseError(f"{name}: control characters - binary content, not text")
        return text
    if _utf8_share(data) > UTF8_DAMAGE_SHARE:
        raise ParseError(
            f"{name}: undecodable text: damaged UTF-8 (first bad byte at offset {bad});"
            " repair or re-save it as UTF-8"
        )
    guess = _guess_legacy(data)
    if isinstance(guess, list):
        rivals = f": {' or '.join(guess)} read it differently" if guess else ""
        raise ParseError(
            f"{name}: undecodable text: no encoding fits (first bad byte at offset {bad}"
            f" for UTF-8){rivals}; re-save it as UTF-8"
        )
    _, text = guess
    if control_share(text) > MAX_CONTROL_SHARE:
        raise ParseError(f"{name}: control characters - binary content, not text")
    return text


class TextParser:
    """The whole file is one page of text."""

    family = "text"
    suffixes = PROSE_SUFFIXES | CODE_SUFFIXES

    def parse(self, path: Path, settings: Settings) -> ParsedContent:
        """Decode the file (an empty file is one empty page: a textless document)."""
        text = decode_text(path.read_bytes(), path.name)
        return ParsedContent(
            pages=[PageText(page=None, text=text, extraction="text")],
            markdown=path.suffix.lower() in MARKDOWN_SUFFIXES,
        )
