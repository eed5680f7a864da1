"""Parsers turn a corpus file into text (one module per format family)."""

from varagity.ingest.parsers.base import ParsedDocument, ParseError, parse_file

__all__ = ["ParseError", "ParsedDocument", "parse_file"]
