"""The document corpus's bundle: export from one snapshot, restore in one transaction.

Export reads every row in one ``REPEATABLE READ, READ ONLY`` transaction through
server-side cursors (a store write committing meanwhile can neither tear the bundle nor
wait for it). Each vector is read in pgvector's binary format (big-endian float32) and
written little-endian by a byte swap, never through decimal text, so it comes back
bit-identical; row *i* of ``embeddings.f32`` belongs to line *i* of ``chunks.jsonl``
because both are written in one pass over the same cursor.

Restore refuses a bundle before touching anything when it is incompatible or unsound:
its directory and ``bundle.json`` (:func:`varagity.backup.bundle.check_directory`), then
every row, read once and hashed (:func:`varagity.backup.rows.check_rag_rows`: paths
inside the corpus, ids consistent across the members, chunk indexes contiguous, vectors
finite, text storable), all before it takes the corpus lock. Then, holding the lock
exclusive, it replaces both tables in one transaction with ``COPY`` from the same open
zip; each member's sha256 is checked again as it streams, so the rows written are the
rows checked, and nothing commits unless every digest matched. Every source is
re-rooted onto its file under this stack's ``DOCS_PATH``; the BM25 index is rebuilt
from the restored rows after the commit (a crash during that rebuild is finished by
:func:`heal_rag_index` when the next process opens the stores). No model is called.
"""

from __future__ import annotations

import contextlib
import json
import logging
import tempfile
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path, PurePosixPath
from typing import Any

import numpy as np
import psycopg
from pgvector.psycopg import register_vector
from psycopg import IsolationLevel
from psycopg.types.json import Jsonb

from varagity.backup.bundle import (
    BUNDLE_FORMAT,
    BUNDLE_VERSION,
    RAG_CHUNKS,
    RAG_DOCUMENTS,
    RAG_EMBEDDINGS,
    BundleError,
    BundleManifest,
    ExportResult,
    HashingReader,
    Progress,
    RestoreResult,
    check_directory,
    open_member,
    open_zip,
    read_manifest,
    writing_bundle,
)
from varagity.backup.locks import restore_holder
from varagity.backup.rows import check_rag_rows, corpus_path_problem
from varagity.config import Settings
from varagity.corpus_lock import NO_HOLDER, CorpusBusy, rag_lock
from varagity.records import ChunkRecord
from varagity.stores.bm25 import BM25Document, BM25Store
from varagity.stores.corpus_state import INGEST_SETTINGS_KEY, STALE_KEY, ingest_settings
from varagity.stores.vector_store import PgVectorStore

log = logging.getLogger(__name__)

#: ``app_settings`` key set in the restore's transaction and cleared once the BM25
#: index holds the restored rows: while it is there, the index must be rebuilt.
BM25_REBUILD_KEY = "_bm25_rebuild_pending"
_BATCH = 500
_PROGRESS_EVERY = 500
_HEAL_ATTEMPTS = 10


def _noop(phase: str, done: int, total: int) -> None:
    return None


def _jsonable(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    return value


def _line(row: dict[str, Any]) -> bytes:
    payload = {k: _jsonable(v) for k, v in row.items()}
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"


def _columns(conn: psycopg.Connection, table: str) -> list[tuple[str, str]]:
    """``(column, type name)`` of ``table`` in column order."""
    rows = conn.execute(
        "SELECT a.attname, t.typname FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid"
        " WHERE a.attrelid = %s::regclass AND a.attnum > 0 AND NOT a.attisdropped"
        " ORDER BY a.attnum",
        (table,),
    ).fetchall()
    return [(str(r[0]), str(r[1])) for r in rows]


def _le_float32(raw: bytes, dim: int) -> bytes:
    """pgvector's binary ``vector`` (uint16 dim, uint16 0, big-endian float32 x dim) as
    little-endian float32 bytes: a byte swap, bit-exact."""
    got = int.from_bytes(raw[:2], "big")
    if got != dim or len(raw) != 4 + 4 * dim:
        raise ValueError(f"a stored vector has {got} dimensions; the bundle records {dim}")
    return np.frombuffer(raw, dtype=">u4", offset=4).astype("<u4").tobytes()


def export_rag(
    settings: Settings, pg: PgVectorStore, *, progress: Progress | None = None
) -> ExportResult:
    """Write a bundle of the document corpus into ``DOCS_PATH/varagity-exports/``.

    Takes no lock: every row comes from one read-only snapshot, so writers go on.
    """
    report = progress or _noop
    started = time.monotonic()
    dim = settings.EMBEDDING_DIM
    with psycopg.connect(pg.url, connect_timeout=10) as conn:
        conn.isolation_level = IsolationLevel.REPEATABLE_READ
        conn.read_only = True
        with conn.transaction():
            row = conn.execute(
                "SELECT now(), (SELECT count(*) FROM documents), (SELECT count(*) FROM chunks)"
            ).fetchone()
            assert row is not None
            created_at, n_docs, n_chunks = row[0], int(row[1]), int(row[2])
            settings_rows: dict[str, str] = dict(
                conn.execute(
                    "SELECT key, value FROM app_settings WHERE key = ANY(%s)",
                    ([INGEST_SETTINGS_KEY, STALE_KEY],),
                ).fetchall()
            )
            recorded = settings_rows.get(INGEST_SETTINGS_KEY)
            built_with = json.loads(recorded) if recorded else ingest_settings(settings)
            stale = STALE_KEY in settings_rows
            chunk_cols = [c for c, _ in _columns(conn, "chunks") if c != "embedding"]
            models = {
                r[0]
                for r in conn.execute(
                    "SELECT DISTINCT metadata->>'embedding_model' FROM chunks"
                ).fetchall()
            }
            if models - {settings.EMBEDDING_MODEL}:
                log.warning(
                    "chunks record embedding model(s) %s, the bundle says %s (EMBEDDING_MODEL)",
                    sorted(m for m in models if m),
                    settings.EMBEDDING_MODEL,
                )
            with writing_bundle(settings, "rag", created_at) as writer:
                report("documents", 0, n_docs)
                with writer.member(RAG_DOCUMENTS) as out, conn.cursor(name="bk_documents") as cur:
                    cur.itersize = 2000
                    cur.execute("SELECT * FROM documents ORDER BY doc_id")
                    names = [d.name for d in cur.description or ()]
                    for values in cur:
                        out.write(_line(dict(zip(names, values, strict=True))))
                report("documents", n_docs, n_docs)
                select = ", ".join(f'"{c}"' for c in chunk_cols)
                with tempfile.TemporaryFile(dir=writer.folder) as matrix:
                    with writer.member(RAG_CHUNKS) as out, conn.cursor(name="bk_chunks") as cur:
                        cur.itersize = 1000
                        cur.execute(
                            f"SELECT {select}, vector_send(embedding) FROM chunks"
                            " ORDER BY original_index, chunk_id"
                        )
                        done = 0
                        for values in cur:
                            out.write(_line(dict(zip(chunk_cols, values[:-1], strict=True))))
                            matrix.write(_le_float32(bytes(values[-1]), dim))
                            done += 1
                            if done % _PROGRESS_EVERY == 0:
                                report("chunks", done, n_chunks)
                    report("chunks", done, n_chunks)
                    matrix.seek(0)
                    with writer.member(RAG_EMBEDDINGS, compress=False) as vectors:
                        while block := matrix.read(1 << 20):
                            vectors.write(block)
                manifest = BundleManifest(
                    format=BUNDLE_FORMAT,
                    version=BUNDLE_VERSION,
                    corpus="rag",
                    created_at=created_at,
                    embedding_model=settings.EMBEDDING_MODEL,
                    embedding_dim=dim,
                    stale=stale,
                    counts={"documents": n_docs, "chunks": done},
                    ingest_settings=built_with,
                    engine=None,
                    members=tuple(writer.members),
                )
                path = writer.finish(manifest)
    seconds = time.monotonic() - started
    log.info("exported %d chunks of %d documents to %s in %.1f s", n_chunks, n_docs, path, seconds)
    return ExportResult(path=path, manifest=manifest, seconds=seconds)


# --- restore ----------------------------------------------------------------------------
def reroot(relative_path: str, docs_path: Path) -> str:
    """The source of a restored document: its file under this stack's ``DOCS_PATH``.

    Every stored document was read from ``DOCS_PATH/relative_path`` (ingest reads
    nothing else), so the exported source is never kept: it names the exporting
    machine's folder, and a bundle could name any file there.

    Raises:
        ValueError: ``relative_path`` is not a canonical path inside the corpus (the row
            checks refuse such a bundle before anything is written).
    """
    problem = corpus_path_problem(relative_path, None)
    if problem:
        raise ValueError(f"relative_path {relative_path!r} {problem}")
    return str(docs_path.joinpath(*PurePosixPath(relative_path).parts))


def _lines(reader: Any) -> Iterator[dict[str, Any]]:
    while line := reader.readline():
        try:
            row = json.loads(line)
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise BundleError(
                "bundle_invalid", f"{reader.member.name} has a line that is not JSON ({exc})"
            ) from None
        if not isinstance(row, dict):
            raise BundleError(
                "bundle_invalid", f"{reader.member.name} has a line that is not a JSON object"
            )
        yield row


def _value(value: Any, typname: str) -> Any:
    """A JSON value as the binary COPY dumper of ``typname`` takes it."""
    if value is None:
        return None
    if typname == "jsonb":
        return Jsonb(value)
    if typname in ("timestamptz", "timestamp"):
        return datetime.fromisoformat(value)
    return value


def _check_columns(row: dict[str, Any], table: dict[str, str], member: str) -> list[str]:
    columns = list(row)
    unknown = [c for c in columns if c not in table]
    if unknown:
        raise BundleError(
            "bundle_incompatible",
            f"{member} has column(s) {', '.join(unknown)} this stack's tables lack; restore it "
            "with the release that wrote it",
        )
    return columns


def _copy_documents(
    conn: psycopg.Connection, reader: Any, docs_path: Path
) -> tuple[dict[str, str], int]:
    """COPY ``documents.jsonl`` in, re-rooted; returns doc_id -> new source, rows."""
    table = dict(_columns(conn, "documents"))
    sources: dict[str, str] = {}
    rows = iter(_lines(reader))
    first = next(rows, None)
    if first is None:
        return sources, 0
    columns = _check_columns(first, table, RAG_DOCUMENTS)
    n = 0
    quoted = ", ".join(f'"{c}"' for c in columns)
    with conn.cursor().copy(f"COPY documents ({quoted}) FROM STDIN (FORMAT BINARY)") as copy:
        copy.set_types([table[c] for c in columns])
        for row in _chain(first, rows):
            if list(row) != columns:
                raise BundleError(
                    "bundle_invalid", f"{RAG_DOCUMENTS} line {n + 1} has other columns"
                )
            source = reroot(str(row["relative_path"]), docs_path)
            row["source"] = source
            sources[str(row["doc_id"])] = source
            copy.write_row([_value(row[c], table[c]) for c in columns])
            n += 1
    return sources, n


def _chain(first: dict[str, Any], rest: Iterator[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    yield first
    yield from rest


def _copy_chunks(
    conn: psycopg.Connection,
    chunks: Any,
    vectors: Any,
    sources: dict[str, str],
    dim: int,
    total: int,
    report: Progress,
) -> int:
    """COPY ``chunks.jsonl`` with its vectors in; returns the rows."""
    table = dict(_columns(conn, "chunks"))
    rows = iter(_lines(chunks))
    first = next(rows, None)
    if first is None:
        return 0
    columns = _check_columns(first, table, RAG_CHUNKS)
    if "embedding" in columns:
        raise BundleError("bundle_invalid", f"{RAG_CHUNKS} carries embeddings as a column")
    quoted = ", ".join(f'"{c}"' for c in columns)
    width = 4 * dim
    n = 0
    with conn.cursor().copy(
        f'COPY chunks ({quoted}, "embedding") FROM STDIN (FORMAT BINARY)'
    ) as copy:
        copy.set_types([table[c] for c in columns] + ["vector"])
        for row in _chain(first, rows):
            if list(row) != columns:
                raise BundleError("bundle_invalid", f"{RAG_CHUNKS} line {n + 1} has other columns")
            raw = vectors.read(width)
            if len(raw) != width:
                raise BundleError(
                    "bundle_invalid",
                    f"{RAG_EMBEDDINGS} ends at row {n}, before {RAG_CHUNKS} does",
                )
            doc_source = sources.get(str(row.get("doc_id")))
            metadata = row.get("metadata")
            if doc_source is not None and isinstance(metadata, dict):
                metadata["source"] = doc_source
            vector = np.frombuffer(raw, dtype="<f4")
            copy.write_row([_value(row[c], table[c]) for c in columns] + [vector])
            n += 1
            if n % _PROGRESS_EVERY == 0:
                report("chunks", n, total)
    report("chunks", n, total)
    return n


def _drop_vector_indexes(conn: psycopg.Connection) -> list[str]:
    """Drop the chunks' vector indexes (HNSW, IVFFlat) in this transaction; returns the
    statements that create them again exactly as they were."""
    rows = conn.execute(
        "SELECT i.indexrelid::regclass::text, pg_get_indexdef(i.indexrelid) FROM pg_index i"
        " JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am am ON am.oid = c.relam"
        " WHERE i.indrelid = 'chunks'::regclass AND am.amname IN ('hnsw', 'ivfflat')"
    ).fetchall()
    for name, _ in rows:
        conn.execute(f"DROP INDEX {name}")
    return [str(ddl) for _, ddl in rows]


@contextlib.contextmanager
def _faults(*readers: HashingReader) -> Iterator[None]:
    """Report what went wrong while rows streamed in: a damaged member (its digest) before
    whatever its damage made fail (an unknown column). The rows were checked before the
    transaction opened, so Postgres refusing one is a gap in those checks: it is named
    as such, with the constraint, and everything rolls back."""
    try:
        yield
    except (BundleError, psycopg.Error, ValueError, KeyError, TypeError) as exc:
        for reader in readers:
            reader.check()  # raises the digest mismatch when the member was damaged
        if isinstance(exc, BundleError):
            raise
        if isinstance(exc, psycopg.Error):
            diag = exc.diag
            what = diag.message_primary or type(exc).__name__
            if diag.constraint_name:
                what = f"{what} (constraint {diag.constraint_name})"
            detail = (
                f"Postgres refused a row the row checks passed: {what}; nothing was "
                "changed (please report this bundle)"
            )
        else:
            detail = f"a row could not be restored ({type(exc).__name__}: {exc})"
        raise BundleError("bundle_row_invalid", detail) from exc


def _set(conn: psycopg.Connection, key: str, value: str) -> None:
    conn.execute(
        "INSERT INTO app_settings (key, value, updated_at) VALUES (%s, %s, now())"
        " ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, updated_at = now()",
        (key, value),
    )


def _stale_reason(manifest: BundleManifest, settings: Settings) -> str | None:
    if manifest.stale:
        return "the corpus was already stale when this bundle was exported"
    recorded = manifest.ingest_settings or {}
    current = ingest_settings(settings)
    changes = [f"{k} {recorded.get(k)!s}->{v}" for k, v in current.items() if recorded.get(k) != v]
    if changes:
        return "the restored corpus was built with other ingest settings: " + ", ".join(changes)
    return None


def restore_rag(
    path: Path,
    settings: Settings,
    pg: PgVectorStore,
    bm25: BM25Store,
    *,
    progress: Progress | None = None,
) -> RestoreResult:
    """Replace the document corpus with the bundle at ``path``.

    Raises:
        BundleError: The bundle is incompatible or unsound (nothing was touched).
        CorpusBusy: A store write or another restore holds the corpus.
    """
    report = progress or _noop
    started = time.monotonic()
    with open_zip(path) as zf:
        # refuse before taking anything; the rows written are read from this same open
        # zip against this manifest's digests, so they are the rows checked here
        manifest = read_manifest(zf)
        check_directory(zf, manifest, settings, "rag")
        check_rag_rows(zf, manifest, settings.docs_path, progress=report)
        with rag_lock(pg.url, exclusive=True, holder=restore_holder(path.name)):
            members = {m.name: m for m in manifest.members}
            total = manifest.counts["chunks"]
            stale = _stale_reason(manifest, settings)
            with psycopg.connect(pg.url, connect_timeout=10) as conn:
                register_vector(conn)
                with conn.transaction():
                    # the vector index is built once over the restored rows (much faster
                    # than growing it row by row); readers wait for the commit meanwhile,
                    # as the API answers corpus_restoring to them anyway
                    indexes = _drop_vector_indexes(conn)
                    conn.execute("DELETE FROM chunks")
                    conn.execute("DELETE FROM documents")
                    report("documents", 0, manifest.counts["documents"])
                    with open_member(zf, members[RAG_DOCUMENTS]) as docs, _faults(docs):
                        sources, n_docs = _copy_documents(conn, docs, settings.docs_path)
                        docs.check()
                    report("documents", n_docs, manifest.counts["documents"])
                    with (
                        open_member(zf, members[RAG_CHUNKS]) as chunks,
                        open_member(zf, members[RAG_EMBEDDINGS]) as vectors,
                        _faults(chunks, vectors),
                    ):
                        n_chunks = _copy_chunks(
                            conn,
                            chunks,
                            vectors,
                            sources,
                            manifest.embedding_dim,
                            total,
                            report,
                        )
                        chunks.check()
                        vectors.check()
                    if (n_docs, n_chunks) != (manifest.counts["documents"], total):
                        raise BundleError(
                            "bundle_invalid",
                            f"the bundle holds {n_docs} documents and {n_chunks} chunks but "
                            f"{manifest.counts} are recorded",
                        )
                    report("vector index", 0, len(indexes))
                    for ddl in indexes:
                        conn.execute(ddl)
                    report("vector index", len(indexes), len(indexes))
                    conn.execute(
                        "SELECT setval('chunk_original_index_seq',"
                        " GREATEST((SELECT max(original_index) + 1 FROM chunks), 0), false)"
                    )
                    built_with = manifest.ingest_settings or ingest_settings(settings)
                    _set(conn, INGEST_SETTINGS_KEY, json.dumps(built_with, sort_keys=True))
                    if stale is None:
                        conn.execute("DELETE FROM app_settings WHERE key = %s", (STALE_KEY,))
                    else:
                        _set(conn, STALE_KEY, stale)
                    _set(conn, BM25_REBUILD_KEY, path.name)
            rebuild_bm25(pg, bm25, progress=report)
    seconds = time.monotonic() - started
    log.info("restored %d chunks from %s in %.1f s", total, path.name, seconds)
    return RestoreResult(manifest=manifest, seconds=seconds, stale_reason=stale)


def rebuild_bm25(pg: PgVectorStore, bm25: BM25Store, *, progress: Progress | None = None) -> int:
    """Make the BM25 index hold exactly the stored chunks (rebuilt from the rows), then
    clear the pending-rebuild mark; returns the chunks indexed. Call it holding the
    corpus lock exclusive."""
    report = progress or _noop
    indexed = bm25.chunk_ids()
    stale_docs = sorted(set(indexed.values()))
    for start in range(0, len(stale_docs), _BATCH):
        bm25.delete_documents(stale_docs[start : start + _BATCH])
    total = pg.count_chunks()
    done = 0
    with psycopg.connect(pg.url, connect_timeout=10) as conn, conn.transaction():
        with conn.cursor(name="bk_bm25") as cur:
            cur.itersize = _BATCH
            cur.execute("SELECT metadata FROM chunks ORDER BY original_index, chunk_id")
            batch: list[BM25Document] = []
            for (metadata,) in cur:
                batch.append(BM25Document.of(ChunkRecord.model_validate(metadata)))
                if len(batch) >= _BATCH:
                    bm25.index(batch)
                    done += len(batch)
                    batch = []
                    report("bm25", done, total)
            if batch:
                bm25.index(batch)
                done += len(batch)
        conn.execute("DELETE FROM app_settings WHERE key = %s", (BM25_REBUILD_KEY,))
    report("bm25", done, total)
    return done


def heal_rag_index(pg: PgVectorStore, bm25: BM25Store) -> bool:
    """Finish the BM25 rebuild of a restore that was killed after its commit; True when
    one was done. Cheap when there is nothing to heal (one query); skipped while a live
    process holds the corpus (a restore in flight finishes its own rebuild). A killed
    holder's session ends a moment after its process, so a lock held by nobody the
    catalog can name is tried again a few times first."""
    with pg.connection() as conn:
        row = conn.execute(
            "SELECT value FROM app_settings WHERE key = %s", (BM25_REBUILD_KEY,)
        ).fetchone()
    if row is None:
        return False
    for attempt in range(_HEAL_ATTEMPTS):
        try:
            with rag_lock(pg.url, exclusive=True, holder=restore_holder(f"{row[0]} (healing)")):
                n = rebuild_bm25(pg, bm25)
            break
        except CorpusBusy as busy:
            if busy.holder != NO_HOLDER or attempt == _HEAL_ATTEMPTS - 1:
                log.warning("the BM25 index needs a rebuild but %s holds the corpus", busy.holder)
                return False
            time.sleep(0.2)
    log.warning("rebuilt the BM25 index (%d chunks) left unfinished by a killed restore", n)
    return True
