"""Kill -9 during a RAG export and a RAG restore, and the corpus locks across processes."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.backup.conftest import DIM, Stack
from tests.backup.worker import kill9, start_worker
from varagity.backup.bundle import exports_dir, list_bundles
from varagity.backup.locks import CorpusBusy, corpus_restoring, corpus_write_lock
from varagity.backup.rag import BM25_REBUILD_KEY, export_rag, heal_rag_index, restore_rag
from varagity.config import Settings
from varagity.stores.bm25.tantivy_store import TantivyBM25Store
from varagity.stores.vector_store import PgVectorStore
from varagity_bench.backup import generate_corpus


@pytest.fixture
def big_stack(backup_settings: Settings) -> Iterator[Stack]:
    """1,200 chunks: enough for the progress points a worker pauses at."""
    pg = PgVectorStore(backup_settings.DATABASE_URL or "", embedding_dim=DIM)
    bm25 = TantivyBM25Store(backup_settings.bm25_path)
    generate_corpus(backup_settings, pg, bm25, documents=60, chunks_per_document=20)
    yield Stack(backup_settings, pg, bm25)
    pg.close()
    bm25.close()


def pg_ids(stack: Stack) -> set[str]:
    with stack.pg.connection() as conn:
        return {r[0] for r in conn.execute("SELECT chunk_id FROM chunks").fetchall()}


def test_a_killed_export_leaves_no_bundle_and_the_next_one_sweeps(big_stack: Stack) -> None:
    proc, _ = start_worker(big_stack.settings, "export-rag", pause="export")
    folder = exports_dir(big_stack.settings, "rag")
    partials = [p.name for p in folder.iterdir() if p.name.endswith(".partial")]
    assert len(partials) == 1 and partials[0].startswith(".varagity-rag-")
    kill9(proc, big_stack.settings)
    assert list_bundles(big_stack.settings, "rag") == []  # nothing a listing can see
    assert (folder / partials[0]).exists()
    exported = export_rag(big_stack.settings, big_stack.pg)
    assert sorted(p.name for p in folder.iterdir()) == [exported.path.name]
    assert [v.name for v in list_bundles(big_stack.settings, "rag")] == [exported.path.name]


def test_an_export_in_flight_is_not_swept(big_stack: Stack) -> None:
    proc, _ = start_worker(big_stack.settings, "export-rag", pause="export")
    try:
        folder = exports_dir(big_stack.settings, "rag")
        partial = next(p for p in folder.iterdir() if p.name.endswith(".partial"))
        export_rag(big_stack.settings, big_stack.pg)
        assert partial.exists()
    finally:
        kill9(proc, big_stack.settings)


def replace_corpus(stack: Stack) -> tuple[Path, set[str], set[str]]:
    """A bundle of the corpus as it is now (the "new" corpus), then a different live
    corpus (the "old" one): returns the bundle and both id sets."""
    bundle = export_rag(stack.settings, stack.pg).path
    new = pg_ids(stack)
    with stack.pg.connection() as conn:
        doc_ids = [r[0] for r in conn.execute("SELECT doc_id FROM documents").fetchall()]
    from varagity.ingest.stages import purge_documents

    purge_documents(doc_ids[:30], pg=stack.pg, bm25=stack.bm25)
    generate_corpus(
        stack.settings, stack.pg, stack.bm25, documents=5, chunks_per_document=9, seed=7
    )
    old = pg_ids(stack)
    assert old != new and set(stack.bm25.chunk_ids()) == old
    return bundle, old, new


@pytest.mark.parametrize(("point", "expect"), [("chunks", "old"), ("bm25", "new")])
def test_a_killed_restore_leaves_the_old_corpus_or_the_new_one(
    big_stack: Stack, point: str, expect: str
) -> None:
    bundle, old, new = replace_corpus(big_stack)
    proc, _ = start_worker(big_stack.settings, "restore-rag", bundle=bundle, pause=point)
    assert corpus_restoring(big_stack.settings, "rag") is not None
    kill9(proc, big_stack.settings)
    assert corpus_restoring(big_stack.settings, "rag") is None
    ids = pg_ids(big_stack)
    assert ids == (old if expect == "old" else new)  # never a mix
    # the next process to open the stores finishes an interrupted index rebuild
    healed = heal_rag_index(big_stack.pg, big_stack.bm25)
    assert healed is (expect == "new")
    assert set(big_stack.bm25.chunk_ids()) == ids
    with big_stack.pg.connection() as conn:
        assert (
            conn.execute(
                "SELECT 1 FROM app_settings WHERE key = %s", (BM25_REBUILD_KEY,)
            ).fetchone()
            is None
        )


# --- the locks across processes ---------------------------------------------------------
def test_store_writers_share_the_rag_lock_and_a_restore_excludes_them(stack: Stack) -> None:
    proc, _ = start_worker(stack.settings, "hold-rag-shared", pause="")
    try:
        generate_corpus(
            stack.settings, stack.pg, stack.bm25, documents=1, chunks_per_document=2, seed=3
        )  # shared beside shared
        with corpus_write_lock(stack.settings, "rag", exclusive=False, holder="me"):
            pass
        bundle = export_rag(stack.settings, stack.pg).path  # an export takes no lock
        with pytest.raises(CorpusBusy) as caught:
            restore_rag(bundle, stack.settings, stack.pg, stack.bm25)
        assert caught.value.holder == "worker"
        assert corpus_restoring(stack.settings, "rag") is None
    finally:
        kill9(proc, stack.settings)
    restore_rag(bundle, stack.settings, stack.pg, stack.bm25)  # released by the kill


def test_a_restore_holder_refuses_store_writes_and_is_reported(stack: Stack) -> None:
    before = pg_ids(stack)
    proc, _ = start_worker(stack.settings, "hold-rag-restore")
    try:
        assert corpus_restoring(stack.settings, "rag") == "restore of worker"
        assert corpus_restoring(stack.settings, "rag", pg=stack.pg) == "restore of worker"
        with pytest.raises(CorpusBusy) as caught:
            generate_corpus(
                stack.settings, stack.pg, stack.bm25, documents=1, chunks_per_document=2, seed=4
            )
        assert caught.value.holder == "restore of worker"
        with (
            pytest.raises(CorpusBusy),
            corpus_write_lock(stack.settings, "rag", exclusive=False, holder="ingest"),
        ):
            pass
        from varagity.ingest.stages import purge_documents

        with pytest.raises(CorpusBusy):
            purge_documents([next(iter(before)).split("::")[0]], pg=stack.pg, bm25=stack.bm25)
        assert pg_ids(stack) == before
        assert stack.pg.search([1.0] * DIM, 3)  # reads go on
    finally:
        kill9(proc, stack.settings)
    assert corpus_restoring(stack.settings, "rag") is None
    generate_corpus(
        stack.settings, stack.pg, stack.bm25, documents=1, chunks_per_document=2, seed=5
    )


def test_the_graph_lock_is_exclusive_and_dies_with_its_holder(
    backup_settings: Settings, make_settings: Callable[..., Settings]
) -> None:
    proc, _ = start_worker(backup_settings, "hold-graph")
    try:
        with (
            pytest.raises(CorpusBusy) as caught,
            corpus_write_lock(backup_settings, "graph", exclusive=True, holder="build"),
        ):
            pass
        assert "worker" in caught.value.holder
        assert corpus_restoring(backup_settings, "graph") is None  # held, not restoring
    finally:
        kill9(proc)
    with corpus_write_lock(backup_settings, "graph", exclusive=True, holder="restore of x"):
        assert corpus_restoring(backup_settings, "graph") is not None
        # the two corpora's operations run side by side
        with corpus_write_lock(backup_settings, "rag", exclusive=True, holder="restore of y"):
            assert corpus_restoring(backup_settings, "rag") == "restore of y"
    assert corpus_restoring(backup_settings, "graph") is None


def test_a_graph_service_is_one_writer_across_processes(backup_settings: Settings) -> None:
    from varagity.graph.service import GraphService
    from varagity.models.chat import ChatClient
    from varagity.models.embeddings import EmbeddingClient

    chat = ChatClient.from_settings(backup_settings)
    embedder = EmbeddingClient.from_settings(backup_settings)
    service = GraphService(backup_settings, chat, embedder)
    try:
        with service.writing("a graph build of chat.db"), service.writing():  # re-entrant
            with (
                pytest.raises(CorpusBusy) as caught,
                corpus_write_lock(backup_settings, "graph", exclusive=True, holder="export"),
            ):
                pass
            assert "a graph build of chat.db" in caught.value.holder
        proc, _ = start_worker(backup_settings, "hold-graph")
        try:
            with pytest.raises(CorpusBusy), service.writing():
                pass
        finally:
            kill9(proc)
        with service.writing():
            pass
    finally:
        service.close()
        chat.close()
        embedder.close()
