"""Stores: embedded or external Postgres + pgvector, and the BM25 backends."""
