"""Migrations and the pgvector store on a real embedded PostgreSQL."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.support.records import DIM, document_row, stored_chunks, unit_vector
from varagity.stores.migrate import MigrationError, apply_migrations, migration_files
from varagity.stores.postgres import connect
from varagity.stores.vector_store import HNSW_EF_SEARCH, EmbeddedChunk, PgVectorStore

pytestmark = pytest.mark.integration


def test_migrations_apply_once_and_record_themselves(pg_url: str) -> None:
    with connect(pg_url, autocommit=True) as conn:
        every = [p.name for p in migration_files()]
        assert every[0] == "001_chunks.sql"
        assert apply_migrations(conn, embedding_dim=DIM) == every
        assert apply_migrations(conn, embedding_dim=DIM) == []
        names = [r[0] for r in conn.execute("SELECT name FROM schema_migrations ORDER BY name")]
        assert names == every
        idx = {
            r[0] for r in conn.execute("SELECT indexname FROM pg_indexes WHERE tablename='chunks'")
        }
        assert {"chunks_embedding_hnsw", "chunks_doc_orig_uidx"} <= idx


def test_badly_named_migration_fails_loudly(tmp_path: Path) -> None:
    (tmp_path / "001_ok.sql").write_text("SELECT 1;")
    (tmp_path / "2_Bad-Name.sql").write_text("SELECT 1;")
    with pytest.raises(MigrationError, match=r"2_Bad-Name\.sql"):
        migration_files(tmp_path)


def test_failing_migration_rolls_back_and_is_retried(pg_url: str, tmp_path: Path) -> None:
    (tmp_path / "001_ok.sql").write_text("CREATE TABLE t_ok (x int);")
    (tmp_path / "002_bad.sql").write_text(
        "CREATE TABLE t_half (x int); SELECT nonsense FROM nowhere;"
    )
    with connect(pg_url, autocommit=True) as conn:
        with pytest.raises(MigrationError, match=r"002_bad\.sql"):
            apply_migrations(conn, embedding_dim=DIM, directory=tmp_path)
        applied = [r[0] for r in conn.execute("SELECT name FROM schema_migrations")]
        assert applied == ["001_ok.sql"]
        assert conn.execute("SELECT to_regclass('t_half')").fetchone() == (None,)
        (tmp_path / "002_bad.sql").write_text("CREATE TABLE t_half (x int);")
        assert apply_migrations(conn, embedding_dim=DIM, directory=tmp_path) == ["002_bad.sql"]


def test_dimension_mismatch_is_refused(pg_url: str) -> None:
    PgVectorStore(pg_url, embedding_dim=DIM).close()
    with pytest.raises(MigrationError, match=r"8-dimensional vectors but EMBEDDING_DIM is 16"):
        PgVectorStore(pg_url, embedding_dim=16)


def test_write_search_hydrate_delete(pg_url: str) -> None:
    store = PgVectorStore(pg_url, embedding_dim=DIM)
    try:
        first = store.allocate_original_indexes(3)
        assert first == sorted(first) and len(set(first)) == 3
        store.write_document(document_row("d1", 3), stored_chunks("d1", 3, first[0]))
        second = store.allocate_original_indexes(2)
        assert min(second) > max(first)  # monotonic across the corpus
        store.write_document(
            document_row("d2", 2, "b.md"), stored_chunks("d2", 2, second[0], "b.md")
        )
        assert store.count_chunks() == 5
        # the nearest neighbour of a stored vector is itself, with cosine ~1
        hits = store.search(unit_vector(first[1]), 2)
        assert hits[0][0].chunk_id == "d1::1" and hits[0][1] == pytest.approx(1.0, abs=1e-5)
        rows = store.fetch_by_identity([("d2", second[1]), ("d1", first[0]), ("zz", 9)])
        assert set(rows) == {("d2", second[1]), ("d1", first[0])}
        # a rewrite with fewer chunks leaves no orphans and no duplicates
        again = store.allocate_original_indexes(2)
        store.write_document(document_row("d1", 2), stored_chunks("d1", 2, again[0]))
        assert [c.chunk_index for c in store.chunks_of("d1")] == [0, 1]
        assert store.get_document("d1").n_chunks == 2  # type: ignore[union-attr]
        assert store.delete_documents(["d1", "nope"]) == ["d1"]
        assert store.chunks_of("d1") == [] and store.count_chunks() == 2
    finally:
        store.close()


def test_failed_write_leaves_no_marker(pg_url: str) -> None:
    store = PgVectorStore(pg_url, embedding_dim=DIM)
    try:
        bad = stored_chunks("d3", 2, 100)
        bad[1] = EmbeddedChunk(
            bad[1].record.model_copy(update={"original_index": 100}), bad[1].embedding
        )
        with pytest.raises(Exception, match="chunks_doc_orig_uidx"):
            store.write_document(document_row("d3", 2), bad)  # duplicate (doc_id, original_index)
        assert store.get_document("d3") is None
        assert store.count_chunks() == 0
        with pytest.raises(ValueError, match=r"dimension|-d embedding"):
            store.write_document(document_row("d4", 1), [EmbeddedChunk(bad[0].record, [0.0] * 3)])
    finally:
        store.close()


def test_blurb_stage_reads_and_replaces_only_existing_chunks(pg_url: str) -> None:
    store = PgVectorStore(pg_url, embedding_dim=DIM)
    try:
        first = store.allocate_original_indexes(3)
        store.write_document(document_row("d1", 3), stored_chunks("d1", 3, first[0]))
        [waiting] = store.documents_awaiting_context()
        assert (waiting.doc_id, waiting.n_chunks, waiting.n_waiting) == ("d1", 3, 3)
        assert store.context_progress("d1") == (0, 3)

        with store.document_lock(["d1"]) as conn:
            current = store.lock_chunks(conn, "d1", ["d1::0", "d1::2", "d1::9", "d2::0"])
            assert sorted(current) == ["d1::0", "d1::2"]  # only rows that exist
            blurbed = [
                EmbeddedChunk(
                    r.model_copy(update={"context": "ctx", "contextualized_content": "ctx x"}),
                    unit_vector(50 + i),
                )
                for i, r in enumerate(current.values())
            ]
            store.update_contexts(conn, blurbed)
        assert store.count_chunks() == 3  # replaced, never inserted
        assert store.context_progress("d1") == (2, 3)
        assert [r.chunk_id for r in store.chunks_awaiting_context("d1")] == ["d1::1"]
        by_id = {r.chunk_id: r for r in store.chunks_of("d1")}
        assert by_id["d1::0"].context == "ctx" and by_id["d1::1"].context is None
        assert store.search(unit_vector(50), 1)[0][0].chunk_id == "d1::0"  # the new vector

        # rewriting the document (a reingest) makes every chunk wait again
        again = store.allocate_original_indexes(3)
        store.write_document(document_row("d1", 3), stored_chunks("d1", 3, again[0]))
        assert store.context_progress("d1") == (0, 3)
        # a deleted document waits for nothing and locks no rows
        store.delete_documents(["d1"])
        assert store.documents_awaiting_context() == []
        with store.document_lock(["d1"]) as conn:
            assert store.lock_chunks(conn, "d1", ["d1::0"]) == {}
    finally:
        store.close()


def test_ef_search_is_set_per_connection_and_raised_for_deep_searches(pg_url: str) -> None:
    store = PgVectorStore(pg_url, embedding_dim=DIM, ef_search=4)
    try:
        first = store.allocate_original_indexes(30)
        store.write_document(document_row("d1", 30), stored_chunks("d1", 30, first[0]))
        with store.connection() as conn:
            assert conn.execute("SHOW hnsw.ef_search").fetchone() == ("4",)
            # the HNSW index answers the nearest-neighbour query (not a sequential scan)
            conn.execute("SET LOCAL enable_seqscan = off")
            plan = "\n".join(
                r[0]
                for r in conn.execute(
                    "EXPLAIN SELECT chunk_id FROM chunks ORDER BY embedding <=> %s LIMIT 5",
                    (np.asarray(unit_vector(1), dtype=np.float32),),
                )
            )
            assert "chunks_embedding_hnsw" in plan
        # more rows than ef_search: raised for that query only, then back to 4
        deep = store.search(unit_vector(first[3]), 20)
        assert len(deep) == 20 and deep[0][0].chunk_id == "d1::3"
        with store.connection() as conn:
            assert conn.execute("SHOW hnsw.ef_search").fetchone() == ("4",)
        # identities only: the same ranking as the full rows
        ids = store.search_identities(unit_vector(first[3]), 20)
        assert [i for i, _ in ids] == [(r.doc_id, r.original_index) for r, _ in deep]
        assert [s for _, s in ids] == pytest.approx([s for _, s in deep])
    finally:
        store.close()
    default = PgVectorStore(pg_url, embedding_dim=DIM)
    try:
        with default.connection() as conn:
            assert conn.execute("SHOW hnsw.ef_search").fetchone() == (str(HNSW_EF_SEARCH),)
    finally:
        default.close()


def test_pgserver_loads_without_a_warning_where_xdg_runtime_dir_is_unset() -> None:
    """Containers and CI have no XDG_RUNTIME_DIR: every command that touches the embedded
    Postgres printed platformdirs' RuntimeDirWarning (from pgserver's import) until it was
    silenced there; with warnings as errors, loading pgserver the product's way passes."""
    env = {k: v for k, v in os.environ.items() if k != "XDG_RUNTIME_DIR"}
    code = (
        "from varagity.stores import postgres\n"
        "postgres._pgserver()\n"
        "from pgserver.utils import PostmasterInfo\n"
    )
    done = subprocess.run(
        [sys.executable, "-W", "error", "-c", code],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    # and the warning is really there to be silenced: pgserver imported bare fails
    bare = subprocess.run(
        [sys.executable, "-W", "error", "-c", "import pgserver"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert bare.returncode != 0 and "XDG_RUNTIME_DIR" in bare.stderr, bare.stderr[-2000:]
