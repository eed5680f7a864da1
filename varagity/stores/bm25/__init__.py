"""Sparse (BM25) stores: embedded Tantivy by default, Elasticsearch when configured."""

from __future__ import annotations

from varagity.config import Settings
from varagity.stores.bm25.base import BM25Document, BM25Error, BM25Hit, BM25Store

__all__ = ["BM25Document", "BM25Error", "BM25Hit", "BM25Store", "open_bm25_store"]


def open_bm25_store(settings: Settings) -> BM25Store:
    """The configured backend: Elasticsearch when ``ELASTICSEARCH_URL`` is set, else Tantivy."""
    if settings.ELASTICSEARCH_URL:
        from varagity.stores.bm25.elasticsearch import ElasticsearchBM25Store

        return ElasticsearchBM25Store(
            settings.ELASTICSEARCH_URL,
            index_name=settings.ELASTICSEARCH_INDEX,
            api_key=settings.ELASTICSEARCH_API_KEY,
        )
    from varagity.stores.bm25.tantivy_store import TantivyBM25Store

    return TantivyBM25Store(settings.bm25_path)
