"""The parser families this build has, and the lookup by file suffix.

The families are imported on the first lookup, not at import (the PDF and office
families pull in pypdfium2, the OCR engines and docling).
"""

from __future__ import annotations

from functools import cache

from varagity.ingest.parsers.base import Parser


@cache
def parsers() -> tuple[Parser, ...]:
    """Every parser family; each suffix belongs to exactly one.

    Raises:
        ValueError: Two families claim the same suffix.
    """
    from varagity.ingest.parsers.image import ImageParser
    from varagity.ingest.parsers.office import OfficeParser
    from varagity.ingest.parsers.pdf import PdfParser
    from varagity.ingest.parsers.text import TextParser
    from varagity.ingest.parsers.web import WebParser

    families: tuple[Parser, ...] = (
        TextParser(),
        PdfParser(),
        OfficeParser(),
        WebParser(),
        ImageParser(),
    )
    for i, parser in enumerate(families):
        for other in families[:i]:
            clash = other.suffixes & parser.suffixes
            if clash:
                raise ValueError(f"{sorted(clash)} already parsed by the {other.family} family")
    return families


def parser_for(suffix: str) -> Parser | None:
    """The family for a lower-case suffix (``.pdf``), if any."""
    for parser in parsers():
        if suffix in parser.suffixes:
            return parser
    return None


def supported_suffixes() -> frozenset[str]:
    """Every suffix some family parses."""
    return frozenset().union(*(p.suffixes for p in parsers()))
