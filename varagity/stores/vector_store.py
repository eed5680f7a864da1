"""pgvector store: documents + chunks rows, the single source of chunk metadata.

Writers of one document (ingest, the deferred blurb stage, purges) serialize on a
per-document lock (:meth:`PgVectorStore.document_lock`) held across their BM25 write
and their Postgres transaction, so a blurb landing while its document is deleted or
replaced can never write the document back into either store. The same transaction
holds the corpus lock shared (:mod:`varagity.corpus_lock`): a restore, which
holds it exclusive, never interleaves with a store write.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np
import psycopg
from pgvector.psycopg import register_vector
from psycopg.types.json import Jsonb
from psycopg_pool import ConnectionPool

from varagity.corpus_lock import rag_shared_xact_lock
from varagity.records import ChunkRecord
from varagity.stores.migrate import apply_migrations
from varagity.stores.postgres import connect, redact

log = logging.getLogger(__name__)

# Namespace (first key) of the per-document advisory locks; the migration runner's
# single-bigint lock lives in a separate key space.
DOCUMENT_LOCK_SPACE = 0x76617267  # "varg"

#: HNSW graph degree and build-time candidate list of ``chunks_embedding_hnsw`` (the
#: index migration 001 creates; :func:`hnsw_index_ddl` rebuilds it with others).
HNSW_M = 16
HNSW_EF_CONSTRUCTION = 64
#: ``hnsw.ef_search`` of every pooled connection (set once per connection, not per
#: query); a search for more than this many rows raises it for that query only.
#: pgvector's 40 equals the hybrid arm's depth (``ARM_CANDIDATES``), which leaves no
#: slack: recall@40 was 0.78 at 3k chunks. 100 is the measured choice (docs/benchmarks.md,
#: "Scale").
HNSW_EF_SEARCH = 100


def hnsw_index_ddl(*, m: int = HNSW_M, ef_construction: int = HNSW_EF_CONSTRUCTION) -> str:
    """The ``CREATE INDEX`` of the chunks' cosine HNSW index with these parameters."""
    return (
        "CREATE INDEX IF NOT EXISTS chunks_embedding_hnsw ON chunks USING hnsw"
        " (embedding vector_cosine_ops)"
        f" WITH (m = {int(m)}, ef_construction = {int(ef_construction)})"
    )


@dataclass(frozen=True, slots=True)
class DocumentRow:
    """One ``documents`` row: the per-file idempotency marker."""

    doc_id: str
    source: str
    relative_path: str
    file_type: str
    content_hash: str
    n_chunks: int
    ingested_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class EmbeddedChunk:
    """A chunk record ready to store, with its vector."""

    record: ChunkRecord
    embedding: Sequence[float]


@dataclass(frozen=True, slots=True)
class AwaitingContext:
    """A stored document some of whose chunks still wait for their LLM blurb."""

    doc_id: str
    relative_path: str
    ingested_at: datetime
    n_chunks: int
    n_waiting: int


class PgVectorStore:
    """Reads and writes the chunk-side tables through a small connection pool."""

    def __init__(
        self,
        url: str,
        *,
        embedding_dim: int,
        pool_size: int = 4,
        ef_search: int = HNSW_EF_SEARCH,
    ) -> None:
        """Apply pending migrations, then open the pool (pgvector types registered and
        ``hnsw.ef_search`` set once on every connection it opens)."""
        if ef_search < 1:
            raise ValueError(f"ef_search must be positive, got {ef_search}")
        self.url = url
        self.embedding_dim = embedding_dim
        self.ef_search = ef_search
        with connect(url, autocommit=True) as conn:
            apply_migrations(conn, embedding_dim=embedding_dim)
        self._pool = ConnectionPool(
            url,
            min_size=1,
            max_size=pool_size,
            configure=self._configure,
            open=True,
            name="varagity-pg",
        )

    def _configure(self, conn: psycopg.Connection) -> None:
        register_vector(conn)
        conn.execute(f"SET hnsw.ef_search = {int(self.ef_search)}")
        conn.commit()

    def close(self) -> None:
        """Close the pool."""
        self._pool.close()

    def connection(self) -> AbstractContextManager[psycopg.Connection]:
        """A pooled connection (pgvector types registered) for other tables' queries."""
        return self._pool.connection()

    def ping(self) -> str:
        """Raise when Postgres is unreachable; otherwise the server version."""
        with self._pool.connection() as conn:
            row = conn.execute("SHOW server_version").fetchone()
        return f"postgres {row[0] if row else '?'} at {redact(self.url)}"

    def database_bytes(self) -> int:
        """On-disk size of the database (tables, indexes, TOAST)."""
        with self._pool.connection() as conn:
            row = conn.execute("SELECT pg_database_size(current_database())").fetchone()
        return int(row[0]) if row else 0

    def _check_dim(self, chunk: EmbeddedChunk) -> None:
        if len(chunk.embedding) != self.embedding_dim:
            raise ValueError(
                f"chunk {chunk.record.chunk_id} has a {len(chunk.embedding)}-d embedding; "
                f"the store holds {self.embedding_dim}-d vectors"
            )

    # --- documents ---------------------------------------------------------------
    def get_document(self, doc_id: str) -> DocumentRow | None:
        """The marker row of ``doc_id``, if that exact file version is stored."""
        with self._pool.connection() as conn:
            row = conn.execute(
                "SELECT doc_id, source, relative_path, file_type, content_hash, n_chunks, "
                "ingested_at FROM documents WHERE doc_id = %s",
                (doc_id,),
            ).fetchone()
        return DocumentRow(*row) if row else None

    def documents_at_path(self, relative_path: str) -> list[DocumentRow]:
        """Every stored version of the file at ``relative_path``."""
        return self._documents("WHERE relative_path = %s", (relative_path,))

    def list_documents(self) -> list[DocumentRow]:
        """All documents, by relative path."""
        return self._documents("", ())

    def stored_versions(self) -> dict[str, set[str]]:
        """Relative path -> the ``doc_id`` of every version stored for it (one query of
        two columns: cheap enough for the folder sensor's every tick)."""
        out: dict[str, set[str]] = {}
        with self._pool.connection() as conn:
            for rel, doc_id in conn.execute("SELECT relative_path, doc_id FROM documents"):
                out.setdefault(rel, set()).add(doc_id)
        return out

    def index_as_of(self) -> datetime | None:
        """When the index last took in a document: the newest ``documents.ingested_at``
        (None on an empty corpus). One probe of ``documents_ingested_at_idx``.

        An ingest or reingest of any file moves it; a blurb pass (which re-embeds
        chunks of a stored document in place) and a deletion do not.
        """
        with self._pool.connection() as conn:
            row = conn.execute("SELECT max(ingested_at) FROM documents").fetchone()
        return row[0] if row else None

    def _documents(self, where: str, params: tuple[Any, ...]) -> list[DocumentRow]:
        with self._pool.connection() as conn:
            rows = conn.execute(
                "SELECT doc_id, source, relative_path, file_type, content_hash, n_chunks, "
                f"ingested_at FROM documents {where} ORDER BY relative_path, ingested_at",
                params,
            ).fetchall()
        return [DocumentRow(*r) for r in rows]

    def allocate_original_indexes(self, n: int) -> list[int]:
        """Reserve ``n`` corpus-wide monotonic chunk indexes."""
        if n <= 0:
            return []
        with self._pool.connection() as conn:
            rows = conn.execute(
                "SELECT nextval('chunk_original_index_seq') FROM generate_series(1, %s)", (n,)
            ).fetchall()
        return [int(r[0]) for r in rows]

    @contextmanager
    def document_lock(self, doc_ids: Iterable[str]) -> Iterator[psycopg.Connection]:
        """A transaction holding the write lock of each document until it ends.

        The locks are transaction-scoped advisory locks taken in ``doc_id`` order (no
        deadlock between two writers of overlapping sets), after the corpus lock shared.
        Writes passed the yielded connection commit with the block, the locks released
        in the same instant.

        Raises:
            CorpusBusy: A restore holds the corpus.
        """
        with self._pool.connection() as conn, conn.transaction():
            rag_shared_xact_lock(conn)
            for doc_id in sorted(set(doc_ids)):
                conn.execute(
                    "SELECT pg_advisory_xact_lock(%s, hashtext(%s))",
                    (DOCUMENT_LOCK_SPACE, doc_id),
                )
            yield conn

    def _transaction(
        self, conn: psycopg.Connection | None
    ) -> AbstractContextManager[psycopg.Connection]:
        """``conn`` as it is (its owner commits), or a pooled connection in a transaction."""
        if conn is not None:
            return nullcontext(conn)
        return _pooled_transaction(self._pool)

    def write_document(
        self,
        document: DocumentRow,
        chunks: Sequence[EmbeddedChunk],
        *,
        conn: psycopg.Connection | None = None,
        awaiting_bm25: bool = False,
    ) -> None:
        """Upsert the documents row and all its chunks in one transaction.

        Chunks of this ``doc_id`` not in ``chunks`` (left by an earlier attempt with other
        boundaries) are removed in the same transaction, and so is the path's recorded
        ingest failure. Every chunk written here waits for its blurb again
        (``contextualized_at`` is cleared). With ``awaiting_bm25`` the document is marked
        as waiting for its BM25 entries (:meth:`bm25_written` clears the mark). With
        ``conn`` (from :meth:`document_lock`) the writes join that transaction.
        """
        for chunk in chunks:
            self._check_dim(chunk)
        with self._transaction(conn) as tx:
            tx.execute(
                "INSERT INTO documents (doc_id, source, relative_path, file_type, content_hash,"
                " n_chunks, ingested_at) VALUES (%s, %s, %s, %s, %s, %s, now())"
                " ON CONFLICT (doc_id) DO UPDATE SET source = EXCLUDED.source,"
                " relative_path = EXCLUDED.relative_path, file_type = EXCLUDED.file_type,"
                " content_hash = EXCLUDED.content_hash, n_chunks = EXCLUDED.n_chunks,"
                " ingested_at = now()",
                (
                    document.doc_id,
                    document.source,
                    document.relative_path,
                    document.file_type,
                    document.content_hash,
                    document.n_chunks,
                ),
            )
            tx.execute(
                "DELETE FROM ingest_failures WHERE relative_path = %s", (document.relative_path,)
            )
            if awaiting_bm25:
                tx.execute(
                    "INSERT INTO bm25_pending (doc_id) VALUES (%s)"
                    " ON CONFLICT (doc_id) DO UPDATE SET since = now()",
                    (document.doc_id,),
                )
            tx.execute(
                "DELETE FROM chunks WHERE doc_id = %s AND NOT (chunk_id = ANY(%s))",
                (document.doc_id, [c.record.chunk_id for c in chunks]),
            )
            with tx.cursor() as cur:
                cur.executemany(
                    "INSERT INTO chunks (chunk_id, doc_id, original_index, chunk_index, content,"
                    " context, contextualized_content, embedding, metadata, created_at)"
                    " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"
                    " ON CONFLICT (chunk_id) DO UPDATE SET"
                    " original_index = EXCLUDED.original_index,"
                    " chunk_index = EXCLUDED.chunk_index, content = EXCLUDED.content,"
                    " context = EXCLUDED.context,"
                    " contextualized_content = EXCLUDED.contextualized_content,"
                    " embedding = EXCLUDED.embedding, metadata = EXCLUDED.metadata,"
                    " created_at = EXCLUDED.created_at, contextualized_at = NULL",
                    [
                        (
                            c.record.chunk_id,
                            c.record.doc_id,
                            c.record.original_index,
                            c.record.chunk_index,
                            c.record.content,
                            c.record.context,
                            c.record.contextualized_content,
                            np.asarray(c.embedding, dtype=np.float32),
                            Jsonb(c.record.model_dump(mode="json")),
                            c.record.created_at,
                        )
                        for c in chunks
                    ],
                )

    def delete_documents(
        self, doc_ids: Iterable[str], *, conn: psycopg.Connection | None = None
    ) -> list[str]:
        """Delete documents (their chunks cascade); returns the ids that existed.

        With ``conn`` (from :meth:`document_lock`) the delete joins that transaction.
        """
        ids = list(doc_ids)
        if not ids:
            return []
        with self._transaction(conn) as tx:
            rows = tx.execute(
                "DELETE FROM documents WHERE doc_id = ANY(%s) RETURNING doc_id", (ids,)
            ).fetchall()
        return [r[0] for r in rows]

    # --- the BM25 entries' marks -------------------------------------------------
    def bm25_written(
        self, doc_ids: Iterable[str], *, conn: psycopg.Connection | None = None
    ) -> None:
        """Clear the documents' waiting-for-BM25 marks (their entries are written). With
        ``conn`` (from :meth:`document_lock`) it joins that transaction."""
        ids = list(doc_ids)
        if ids:
            with self._transaction(conn) as tx:
                tx.execute("DELETE FROM bm25_pending WHERE doc_id = ANY(%s)", (ids,))

    def awaiting_bm25(self) -> set[str]:
        """The stored documents whose BM25 entries are not written yet."""
        with self._pool.connection() as conn:
            return {r[0] for r in conn.execute("SELECT doc_id FROM bm25_pending")}

    # --- chunks ------------------------------------------------------------------
    def count_chunks(self) -> int:
        """Number of stored chunks."""
        with self._pool.connection() as conn:
            row = conn.execute("SELECT count(*) FROM chunks").fetchone()
        return int(row[0]) if row else 0

    def chunk_ids_of(self, doc_id: str, *, conn: psycopg.Connection | None = None) -> set[str]:
        """The ids of a document's stored chunks."""
        with self._transaction(conn) as tx:
            rows = tx.execute("SELECT chunk_id FROM chunks WHERE doc_id = %s", (doc_id,))
            return {r[0] for r in rows.fetchall()}

    def get_chunk(self, chunk_id: str) -> ChunkRecord | None:
        """The stored record of one chunk, if it exists."""
        with self._pool.connection() as conn:
            row = conn.execute(
                "SELECT metadata FROM chunks WHERE chunk_id = %s", (chunk_id,)
            ).fetchone()
        return ChunkRecord.model_validate(row[0]) if row else None

    def chunks_of(self, doc_id: str) -> list[ChunkRecord]:
        """A document's chunks in order."""
        with self._pool.connection() as conn:
            rows = conn.execute(
                "SELECT metadata FROM chunks WHERE doc_id = %s ORDER BY chunk_index", (doc_id,)
            ).fetchall()
        return [ChunkRecord.model_validate(r[0]) for r in rows]

    def chunks_of_documents(
        self, doc_ids: Sequence[str], *, conn: psycopg.Connection | None = None
    ) -> dict[str, list[ChunkRecord]]:
        """Each document's chunks in order (``[]`` for one with none or not stored), in
        one query; with ``conn`` (from :meth:`document_lock`), read in that transaction."""
        out: dict[str, list[ChunkRecord]] = {d: [] for d in doc_ids}
        if not out:
            return out
        with self._transaction(conn) as tx:
            rows = tx.execute(
                "SELECT doc_id, metadata FROM chunks WHERE doc_id = ANY(%s)"
                " ORDER BY doc_id, chunk_index",
                (list(out),),
            ).fetchall()
        for doc_id, metadata in rows:
            out[doc_id].append(ChunkRecord.model_validate(metadata))
        return out

    # --- the deferred blurb stage -------------------------------------------------
    def documents_awaiting_context(self) -> list[AwaitingContext]:
        """Documents with chunks still waiting for their blurb, by relative path."""
        with self._pool.connection() as conn:
            rows = conn.execute(
                "SELECT d.doc_id, d.relative_path, d.ingested_at, d.n_chunks, w.n_waiting"
                " FROM (SELECT doc_id, count(*) AS n_waiting FROM chunks"
                "       WHERE contextualized_at IS NULL GROUP BY doc_id) w"
                " JOIN documents d ON d.doc_id = w.doc_id"
                " ORDER BY d.relative_path, d.ingested_at"
            ).fetchall()
        return [AwaitingContext(*r) for r in rows]

    def chunks_awaiting_context(self, doc_id: str) -> list[ChunkRecord]:
        """The chunks of ``doc_id`` that have no blurb yet, in order."""
        with self._pool.connection() as conn:
            rows = conn.execute(
                "SELECT metadata FROM chunks WHERE doc_id = %s AND contextualized_at IS NULL"
                " ORDER BY chunk_index",
                (doc_id,),
            ).fetchall()
        return [ChunkRecord.model_validate(r[0]) for r in rows]

    def context_progress(self, doc_id: str) -> tuple[int, int]:
        """``(contextualized, chunks)`` of a stored document (``(0, 0)`` when it is gone)."""
        with self._pool.connection() as conn:
            row = conn.execute(
                "SELECT count(*) FILTER (WHERE contextualized_at IS NOT NULL), count(*)"
                " FROM chunks WHERE doc_id = %s",
                (doc_id,),
            ).fetchone()
        return (int(row[0]), int(row[1])) if row else (0, 0)

    def lock_chunks(
        self, conn: psycopg.Connection, doc_id: str, chunk_ids: Sequence[str]
    ) -> dict[str, ChunkRecord]:
        """The stored records of those chunks of ``doc_id`` that still exist, row-locked.

        Call it inside :meth:`document_lock`; chunks deleted (with their document) or
        never stored are simply absent.
        """
        rows = conn.execute(
            "SELECT metadata FROM chunks WHERE doc_id = %s AND chunk_id = ANY(%s)"
            " ORDER BY chunk_index FOR UPDATE",
            (doc_id, list(chunk_ids)),
        ).fetchall()
        records = [ChunkRecord.model_validate(r[0]) for r in rows]
        return {r.chunk_id: r for r in records}

    def update_contexts(self, conn: psycopg.Connection, chunks: Sequence[EmbeddedChunk]) -> None:
        """Replace existing chunks' blurb, indexed text and vector; mark them contextualized.

        Only rows that exist are touched (an ``UPDATE``, never an insert). Call it inside
        :meth:`document_lock` after :meth:`lock_chunks`.
        """
        for chunk in chunks:
            self._check_dim(chunk)
        with conn.cursor() as cur:
            cur.executemany(
                "UPDATE chunks SET context = %s, contextualized_content = %s, embedding = %s,"
                " metadata = %s, contextualized_at = now() WHERE chunk_id = %s",
                [
                    (
                        c.record.context,
                        c.record.contextualized_content,
                        np.asarray(c.embedding, dtype=np.float32),
                        Jsonb(c.record.model_dump(mode="json")),
                        c.record.chunk_id,
                    )
                    for c in chunks
                ],
            )

    def search(self, query_vector: Sequence[float], k: int) -> list[tuple[ChunkRecord, float]]:
        """Top ``k`` chunks by cosine similarity (``1 - cosine distance``)."""
        rows = self._nearest("metadata", query_vector, k)
        return [(ChunkRecord.model_validate(r[0]), float(r[1])) for r in rows]

    def search_identities(
        self, query_vector: Sequence[float], k: int
    ) -> list[tuple[tuple[str, int], float]]:
        """Top ``k`` ``((doc_id, original_index), cosine)``, without the rows: for callers
        (hybrid fusion) that hydrate only the few they keep."""
        rows = self._nearest("doc_id, original_index", query_vector, k)
        return [((r[0], int(r[1])), float(r[2])) for r in rows]

    def _nearest(self, columns: str, query_vector: Sequence[float], k: int) -> list[Any]:
        """One HNSW query; ``ef_search`` raised for this query only when ``k`` exceeds it
        (the index returns at most ``ef_search`` rows)."""
        if len(query_vector) != self.embedding_dim:
            raise ValueError(
                f"query vector has {len(query_vector)} dimensions, expected {self.embedding_dim}"
            )
        vec = np.asarray(query_vector, dtype=np.float32)
        sql = (
            f"SELECT {columns}, 1 - (embedding <=> %s) AS score FROM chunks"
            " ORDER BY embedding <=> %s LIMIT %s"
        )
        with self._pool.connection() as conn:
            if k > self.ef_search:
                with conn.transaction():
                    conn.execute(f"SET LOCAL hnsw.ef_search = {int(k)}")
                    return conn.execute(sql, (vec, vec, k)).fetchall()
            return conn.execute(sql, (vec, vec, k)).fetchall()

    def fetch_by_identity(
        self, identities: Sequence[tuple[str, int]]
    ) -> dict[tuple[str, int], ChunkRecord]:
        """Hydrate full records for ``(doc_id, original_index)`` keys (missing ones omitted)."""
        if not identities:
            return {}
        doc_ids = [d for d, _ in identities]
        indexes = [i for _, i in identities]
        with self._pool.connection() as conn:
            rows = conn.execute(
                "SELECT c.metadata FROM chunks c"
                " JOIN unnest(%s::text[], %s::int[]) AS k(doc_id, original_index)"
                " ON c.doc_id = k.doc_id AND c.original_index = k.original_index",
                (doc_ids, indexes),
            ).fetchall()
        records = [ChunkRecord.model_validate(r[0]) for r in rows]
        return {(r.doc_id, r.original_index): r for r in records}


@contextmanager
def _pooled_transaction(pool: ConnectionPool) -> Iterator[psycopg.Connection]:
    with pool.connection() as conn, conn.transaction():
        yield conn
