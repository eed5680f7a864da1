"""Parsers turn a corpus file into text: the contract in ``base``, one module per format
family, the suffix lookup in ``registry``. :mod:`varagity.ingest.parsing` reads a corpus
file with them."""

from varagity.ingest.parsers.base import ParsedDocument, ParseError

__all__ = ["ParseError", "ParsedDocument"]
