"""Parsers turn a corpus file into text (one module per format family)."""

from varagity.ingest.parsers.base import ParsedDocument, ParseError, locate, parse_file

__all__ = ["ParseError", "ParsedDocument", "locate", "parse_file"]
