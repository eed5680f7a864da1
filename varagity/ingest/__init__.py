"""Ingestion: discovery of corpus files, parsing, chunking, contextualization, storing."""
