"""BM25 store on Elasticsearch (used when ``ELASTICSEARCH_URL`` is set).

Mirrors the Anthropic cookbook's ``ElasticsearchBM25`` and the data-model spec's
"Elasticsearch index" section: analyzed text fields under the built-in ``english`` analyzer
with BM25 similarity, identity fields kept as doc values but not indexed, documents addressed
by ``_id = chunk_id`` so re-indexing overwrites, and search as a ``multi_match`` over
``content`` and ``contextualized_content``.

One departure from the spec's search: the query is a ``match`` on a derived
``search_text`` field (same analyzer, left out of search hits) holding the contextualized
text and the sub-words of its compound identifiers (``DiffExecutor`` -> ``Diff Executor``),
exactly what the Tantivy backend searches (see
:func:`varagity.stores.bm25.analysis.search_text`). A ``multi_match`` over ``content`` and
``contextualized_content`` would count the chunk's words twice. Queries get the same
identifier expansion.

Delete by ``doc_id``: the spec maps ``doc_id`` as ``keyword`` with ``"index": false``.  Since
Elasticsearch 8.1, keyword (and numeric/date/ip/boolean) fields that are not indexed but keep
``doc_values`` (the default) are still queryable by term-level queries -- as a doc-values scan,
slower than an inverted-index lookup but fine for the rare purge/re-ingest deletes (the spec's
own note says as much).  So the mapping stays exactly as specified and deletes use a ``terms``
``delete_by_query`` on ``doc_id``; no indexed sub-field is added.  (Servers older than 8.1 would
reject that query; the client this project pins, ``elasticsearch>=8.12``, targets 8.x/9.x.)
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

import elasticsearch
from elasticsearch import helpers

from varagity.stores.bm25.analysis import sanitize_query, search_text
from varagity.stores.bm25.base import BM25Document, BM25Error, BM25Hit

__all__ = ["INDEX_BODY", "ElasticsearchBM25Store"]

_T = TypeVar("_T")

SEARCH_FIELD = "search_text"
_LIST_PAGE = 5000  # chunks per page when listing every chunk id
_SOURCE_FIELDS = ["chunk_id", "doc_id", "original_index", "content", "contextualized_content"]
_BULK_CHUNK = 500
_DELETE_BATCH = 1000

INDEX_BODY: dict[str, Any] = {
    "settings": {
        "analysis": {"analyzer": {"default": {"type": "english"}}},
        "similarity": {"default": {"type": "BM25"}},
    },
    "mappings": {
        "properties": {
            "content": {"type": "text", "analyzer": "english"},
            "contextualized_content": {"type": "text", "analyzer": "english"},
            "doc_id": {"type": "keyword", "index": False},
            "chunk_id": {"type": "keyword", "index": False},
            "original_index": {"type": "integer", "index": False},
            # Derived (not in the spec's mapping): the one searched field, never returned.
            SEARCH_FIELD: {"type": "text", "analyzer": "english"},
        }
    },
}
"""The index creation body: the spec's settings and mapping plus the ``search_text`` field."""


def _redact(url: str) -> str:
    """``url`` without user:password, for error messages."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "<invalid url>"
    if parts.username is None and parts.password is None:
        return url
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment))


def _batches(items: Sequence[str], size: int) -> Iterator[list[str]]:
    for start in range(0, len(items), size):
        yield list(items[start : start + size])


class ElasticsearchBM25Store:
    """BM25 over an Elasticsearch index, through the official client.

    The index is created on first use (not in the constructor, so an unreachable cluster does
    not stop the application from starting; :meth:`ping` reports it).

    Args:
        url: The cluster URL (``http://host:9200``).
        index_name: The index to use (created with :data:`INDEX_BODY` when missing).
        api_key: Optional API key (``id:key`` base64 form, as Elasticsearch issues it).
        client: A ready client to use instead of building one from ``url``/``api_key``; it
            is not closed by :meth:`close`.
    """

    backend = "elasticsearch"

    def __init__(
        self,
        url: str,
        *,
        index_name: str,
        api_key: str | None = None,
        client: elasticsearch.Elasticsearch | None = None,
    ) -> None:
        self.url = url
        self.index_name = index_name
        self._owns_client = client is None
        if client is None:
            try:
                client = elasticsearch.Elasticsearch(
                    url,
                    api_key=api_key,
                    request_timeout=30,
                    retry_on_timeout=True,
                    max_retries=3,
                )
            except Exception as exc:
                raise BM25Error(
                    f"cannot configure an Elasticsearch client for {_redact(url)}: {exc}"
                ) from exc
        self._client = client
        self._index_ready = False

    # ------------------------------------------------------------------ protocol

    def ensure_index(self) -> None:
        """Create the index with :data:`INDEX_BODY` if it does not exist (idempotent).

        Raises:
            BM25Error: The cluster is unreachable or refuses the creation.
        """
        if self._index_ready:
            return

        def create() -> None:
            if not self._client.indices.exists(index=self.index_name):
                try:
                    self._client.indices.create(
                        index=self.index_name,
                        settings=INDEX_BODY["settings"],
                        mappings=INDEX_BODY["mappings"],
                    )
                except elasticsearch.BadRequestError as exc:
                    # Another process created it between our check and our create.
                    if exc.error != "resource_already_exists_exception":
                        raise

        self._call("index creation", create)
        self._index_ready = True

    def index(self, documents: Sequence[BM25Document]) -> None:
        """Bulk-upsert ``documents`` (``_id = chunk_id``); searchable once this returns.

        Raises:
            BM25Error: Connection failure or any rejected document.
        """
        if not documents:
            return
        self.ensure_index()
        actions = [
            {
                "_op_type": "index",
                "_index": self.index_name,
                "_id": doc.chunk_id,
                "_source": self._source(doc),
            }
            for doc in documents
        ]

        def bulk() -> None:
            # refresh="wait_for" on every bulk request: results are visible when we return
            # without forcing a segment per call the way refresh=true would.
            helpers.bulk(
                self._client,
                actions,
                chunk_size=_BULK_CHUNK,
                refresh="wait_for",
                max_retries=3,
            )

        self._call("bulk index", bulk)

    def delete_documents(self, doc_ids: Sequence[str]) -> None:
        """Remove every chunk of ``doc_ids`` with a ``terms`` delete_by_query on ``doc_id``.

        ``doc_id`` is a doc-values-only keyword field (see the module docstring for why the
        terms query works on it).

        Raises:
            BM25Error: Connection failure or a failed delete.
        """
        unique = list(dict.fromkeys(doc_ids))
        if not unique:
            return
        self.ensure_index()
        for batch in _batches(unique, _DELETE_BATCH):
            self._delete_by_query({"terms": {"doc_id": batch}})

    def replace_documents(self, doc_ids: Sequence[str], documents: Sequence[BM25Document]) -> None:
        """Upsert ``documents``, then remove every other entry of ``doc_ids`` with a
        delete_by_query (``doc_id`` in the batch, ``_id`` not one of its new chunks): the
        documents stay searchable between the two requests.

        Raises:
            ValueError: A document's ``doc_id`` is not one of ``doc_ids``.
            BM25Error: Connection failure, a rejected document or a failed delete.
        """
        unique = list(dict.fromkeys(doc_ids))
        stray = sorted({d.doc_id for d in documents} - set(unique))
        if stray:
            raise ValueError(f"documents of {stray} are not among the replaced doc_ids")
        if not unique:
            return
        self.index(documents)
        self.ensure_index()
        kept: dict[str, list[str]] = {}
        for doc in documents:
            kept.setdefault(doc.doc_id, []).append(doc.chunk_id)
        for batch in _batches(unique, _DELETE_BATCH):
            self._delete_by_query(
                {
                    "bool": {
                        "filter": [{"terms": {"doc_id": batch}}],
                        "must_not": [
                            {"ids": {"values": [c for d in batch for c in kept.get(d, [])]}}
                        ],
                    }
                }
            )

    def _delete_by_query(self, query: dict[str, Any]) -> None:
        def delete() -> None:
            response = self._client.delete_by_query(
                index=self.index_name,
                query=query,
                conflicts="proceed",
                refresh=True,
                wait_for_completion=True,
            )
            failures = response.get("failures") or []
            if failures:
                raise BM25Error(
                    f"delete_by_query on {self.index_name} reported {len(failures)} "
                    f"failure(s), first: {failures[0]}"
                )

        self._call("delete_by_query", delete)

    def search(self, query: str, k: int) -> list[BM25Hit]:
        """Best ``k`` chunks: a ``match`` (OR of the words) on ``search_text``.

        The query is sanitized and identifier-expanded first; an empty one returns ``[]``.

        Raises:
            BM25Error: Connection failure or a rejected search.
        """
        if k <= 0:
            return []
        text = sanitize_query(query)
        if not text:
            return []
        self.ensure_index()

        def run() -> Any:
            return self._client.search(
                index=self.index_name,
                query={"match": {SEARCH_FIELD: {"query": text, "operator": "or"}}},
                size=k,
                source_includes=_SOURCE_FIELDS,
            )

        response = self._call("search", run)
        hits: list[BM25Hit] = []
        for hit in response["hits"]["hits"]:
            source = hit.get("_source") or {}
            hits.append(
                BM25Hit(
                    chunk_id=str(source.get("chunk_id") or hit.get("_id") or ""),
                    doc_id=str(source.get("doc_id", "")),
                    original_index=int(source.get("original_index", 0)),
                    score=float(hit.get("_score") or 0.0),
                    content=str(source.get("content", "")),
                    contextualized_content=str(source.get("contextualized_content", "")),
                )
            )
        return hits

    def count(self) -> int:
        """Number of indexed chunks.

        Raises:
            BM25Error: Connection failure.
        """
        self.ensure_index()
        response = self._call("count", lambda: self._client.count(index=self.index_name))
        return int(response["count"])

    def chunk_ids(self, doc_ids: Sequence[str] | None = None) -> dict[str, str]:
        """``chunk_id -> doc_id`` of every indexed chunk, or of ``doc_ids``' chunks
        (pages of ``search_after`` sorted on the ``chunk_id`` doc values).

        Raises:
            BM25Error: Connection failure or a rejected search.
        """
        if doc_ids is not None and not doc_ids:
            return {}
        self.ensure_index()
        query: dict[str, Any] = (
            {"match_all": {}} if doc_ids is None else {"terms": {"doc_id": sorted(set(doc_ids))}}
        )
        out: dict[str, str] = {}
        after: list[Any] | None = None
        while True:

            def page(after: list[Any] | None = after) -> Any:
                return self._client.search(
                    index=self.index_name,
                    query=query,
                    size=_LIST_PAGE,
                    sort=[{"chunk_id": "asc"}],
                    search_after=after,
                    source_includes=["chunk_id", "doc_id"],
                )

            hits = self._call("chunk listing", page)["hits"]["hits"]
            for hit in hits:
                source = hit.get("_source") or {}
                out[str(source.get("chunk_id") or hit.get("_id"))] = str(source.get("doc_id", ""))
            if len(hits) < _LIST_PAGE:
                return out
            after = hits[-1]["sort"]

    def ping(self) -> str:
        """Check cluster health.

        Returns:
            A short status line (cluster name, status, index name).

        Raises:
            BM25Error: The cluster is unreachable or its health is ``red``.
        """
        health = self._call("cluster health", lambda: self._client.cluster.health(timeout="5s"))
        status = str(health.get("status", "unknown"))
        cluster = str(health.get("cluster_name", "?"))
        if status == "red":
            raise BM25Error(f"Elasticsearch cluster {cluster!r} at {_redact(self.url)} is red")
        return (
            f"elasticsearch {_redact(self.url)} cluster {cluster!r} {status}, "
            f"index {self.index_name}"
        )

    def close(self) -> None:
        """Close the client's connections if this store created the client."""
        if self._owns_client:
            with contextlib.suppress(Exception):
                self._client.close()

    def __repr__(self) -> str:
        return f"ElasticsearchBM25Store(url={_redact(self.url)!r}, index_name={self.index_name!r})"

    # ------------------------------------------------------------------ internals

    @staticmethod
    def _source(doc: BM25Document) -> dict[str, Any]:
        return {
            "chunk_id": doc.chunk_id,
            "doc_id": doc.doc_id,
            "original_index": int(doc.original_index),
            "content": doc.content,
            "contextualized_content": doc.contextualized_content,
            SEARCH_FIELD: search_text(doc.content, doc.contextualized_content),
        }

    def _call(self, what: str, fn: Callable[[], _T]) -> _T:
        """Run ``fn()``, turning client/transport errors into BM25Error naming url + index."""
        try:
            return fn()
        except BM25Error:
            raise
        except helpers.BulkIndexError as exc:
            first = exc.errors[0] if exc.errors else {}
            raise BM25Error(
                f"Elasticsearch {what} on index {self.index_name} at {_redact(self.url)}: "
                f"{len(exc.errors)} document(s) rejected, first: {first}"
            ) from exc
        except Exception as exc:  # ApiError, TransportError (connection refused, timeout)...
            raise BM25Error(
                f"Elasticsearch {what} failed on index {self.index_name} at "
                f"{_redact(self.url)}: {exc}"
            ) from exc
