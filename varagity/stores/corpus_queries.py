"""Read-only queries over the ``documents`` and ``chunks`` tables for the corpus view,
the chunk-quality checks and the benchmarks.

The SQL lives here, beside the store that writes those tables, so the modules above
(``varagity.corpus``, ``varagity.quality``) work on rows and never spell a query.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from varagity.stores.vector_store import PgVectorStore

_INDEXED_SQL = """
SELECT d.doc_id, d.relative_path, d.file_type, d.content_hash, d.n_chunks, d.ingested_at,
       c.extractions, c.file_created_at, c.file_modified_at, coalesce(c.n_contextualized, 0),
       EXISTS (SELECT 1 FROM bm25_pending p WHERE p.doc_id = d.doc_id)
FROM documents d
LEFT JOIN (
    SELECT doc_id,
           array_agg(DISTINCT metadata->>'extraction') AS extractions,
           count(*) FILTER (WHERE contextualized_at IS NOT NULL) AS n_contextualized,
           min((metadata->>'file_created_at')::timestamptz)
               FILTER (WHERE chunk_index = 0) AS file_created_at,
           min((metadata->>'file_modified_at')::timestamptz)
               FILTER (WHERE chunk_index = 0) AS file_modified_at
    FROM chunks GROUP BY doc_id
) c ON c.doc_id = d.doc_id
ORDER BY d.relative_path, d.ingested_at
"""

# Columns in the order of varagity.quality.CHUNK_COLUMNS.
_CHUNKS_SQL = """
SELECT c.chunk_id, c.doc_id, d.relative_path, c.original_index, c.chunk_index, c.content,
       (c.metadata->>'n_tokens')::int AS n_tokens,
       (c.metadata->>'page')::int AS page,
       c.metadata->>'extraction' AS extraction,
       vector_dims(c.embedding) AS embedding_dim,
       vector_norm(c.embedding) AS embedding_norm
FROM chunks c JOIN documents d ON d.doc_id = c.doc_id
{where}
ORDER BY d.relative_path, c.doc_id, c.chunk_index
"""


@dataclass(frozen=True, slots=True)
class IndexedDocument:
    """One stored document with what its chunks say about the file and its blurbs.

    ``file_created_at`` / ``file_modified_at`` are the file's clock as recorded on its
    first chunk (``None`` when it has no chunks); ``extractions`` are its chunks'
    extraction kinds (unsorted, may hold ``None``).
    """

    doc_id: str
    relative_path: str
    file_type: str
    content_hash: str
    n_chunks: int
    ingested_at: datetime
    extractions: tuple[str | None, ...]
    file_created_at: datetime | None
    file_modified_at: datetime | None
    n_contextualized: int
    awaiting_bm25: bool = False
    """Its rows are stored but its BM25 entries are not written yet (not searchable)."""


def _fetch(pg: PgVectorStore, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    with pg.connection() as conn:
        return list(conn.execute(sql, params).fetchall())


def indexed_documents(pg: PgVectorStore) -> list[IndexedDocument]:
    """Every stored document, by path then ingest time (one query)."""
    return [
        IndexedDocument(
            doc_id=doc_id,
            relative_path=rel,
            file_type=file_type,
            content_hash=digest,
            n_chunks=n_chunks,
            ingested_at=ingested,
            extractions=tuple(extractions or ()),
            file_created_at=created,
            file_modified_at=modified,
            n_contextualized=int(n_contextualized),
            awaiting_bm25=bool(awaiting_bm25),
        )
        for (
            doc_id,
            rel,
            file_type,
            digest,
            n_chunks,
            ingested,
            extractions,
            created,
            modified,
            n_contextualized,
            awaiting_bm25,
        ) in _fetch(pg, _INDEXED_SQL)
    ]


def relative_paths_of(pg: PgVectorStore, doc_ids: Sequence[str]) -> dict[str, str]:
    """The corpus path of each stored document among ``doc_ids`` (absent ones left out)."""
    if not doc_ids:
        return {}
    rows = _fetch(
        pg,
        "SELECT doc_id, relative_path FROM documents WHERE doc_id = ANY(%s)",
        (list(doc_ids),),
    )
    return {doc_id: rel for doc_id, rel in rows}


def doc_ids_at_paths(pg: PgVectorStore, relative_paths: Sequence[str]) -> dict[str, list[str]]:
    """The stored ``doc_id`` of each corpus file (every stored version; ``[]`` when none)."""
    found: dict[str, list[str]] = {p: [] for p in relative_paths}
    if not found:
        return found
    rows = _fetch(
        pg,
        "SELECT relative_path, doc_id FROM documents WHERE relative_path = ANY(%s)"
        " ORDER BY relative_path, ingested_at",
        (list(found),),
    )
    for rel, doc_id in rows:
        found[rel].append(doc_id)
    return found


def chunk_quality_rows(
    pg: PgVectorStore, doc_ids: Sequence[str] | None = None
) -> list[tuple[Any, ...]]:
    """One row per chunk of ``doc_ids`` (every chunk when ``None``; none for ``[]``):
    ids, path, indexes, content, token count, page, extraction, vector dims and norm,
    ordered by path and chunk index."""
    if doc_ids is None:
        return _fetch(pg, _CHUNKS_SQL.format(where=""))
    ids = list(dict.fromkeys(doc_ids))
    if not ids:
        return []
    return _fetch(pg, _CHUNKS_SQL.format(where="WHERE c.doc_id = ANY(%s)"), (ids,))


def contextualized_chunks_at_paths(pg: PgVectorStore, relative_paths: Sequence[str]) -> int:
    """How many chunks of the files at ``relative_paths`` have their LLM blurb."""
    rows = _fetch(
        pg,
        "SELECT count(*) FROM chunks c JOIN documents d ON d.doc_id = c.doc_id"
        " WHERE c.contextualized_at IS NOT NULL AND d.relative_path = ANY(%s)",
        (list(relative_paths),),
    )
    return int(rows[0][0]) if rows else 0


def corpus_counts(pg: PgVectorStore) -> dict[str, int]:
    """How many documents and chunks the corpus holds now (what a restore replaces),
    under the names a RAG bundle's counts use."""
    ((documents, chunks),) = _fetch(
        pg, "SELECT (SELECT count(*) FROM documents), (SELECT count(*) FROM chunks)"
    )
    return {"documents": int(documents), "chunks": int(chunks)}
