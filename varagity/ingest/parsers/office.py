"""Office and OpenDocument files (and CSV) through docling's declarative backends.

Docling 2.143 reads every format here natively: Word, PowerPoint and Excel through
python-docx, python-pptx and openpyxl, and ODT/ODS/ODP through odfdo (its
``format-opendocument`` extra). Slides and sheets become pages numbered from 1; each
sheet's Markdown table is headed by the sheet's name. CSV bytes are decoded by the text
family's decoder first, so a legacy code page is detected the same way everywhere.
"""

from __future__ import annotations

from pathlib import Path

from varagity.config import Settings
from varagity.ingest.parsers.base import PageText, ParsedContent, ParseError
from varagity.ingest.parsers.docling_base import convert, document_pages
from varagity.ingest.parsers.text import decode_text

OFFICE_SUFFIXES = frozenset({".docx", ".pptx", ".xlsx", ".csv", ".odt", ".ods", ".odp"})


class OfficeParser:
    """Word, PowerPoint, Excel, CSV and OpenDocument files as Markdown pages."""

    family = "office"
    suffixes = OFFICE_SUFFIXES

    def parse(self, path: Path, settings: Settings) -> ParsedContent:
        """Convert the file with docling into Markdown pages (one per slide or sheet).

        Args:
            path: The file.
            settings: The run's settings (unused: the conversion has no knobs).

        Returns:
            Markdown pages; a document without pages is one page with ``page=None``.

        Raises:
            ParseError: The file is damaged, empty where a container is needed, or its
                content is another format than its suffix says.
        """
        suffix = path.suffix.lower()
        try:
            if suffix == ".csv":
                text = decode_text(path.read_bytes(), path.name)
                if not text.strip():
                    return ParsedContent(pages=[PageText(page=None, text="")], markdown=True)
                doc = convert(text.encode("utf-8"), suffix, path.name)
            else:
                doc = convert(path, suffix, path.name)
        except ParseError as exc:
            message = str(exc)
            if message.startswith(path.name):
                raise
            raise ParseError(f"{path.name}: {message}") from None
        return ParsedContent(pages=document_pages(doc), markdown=True)
