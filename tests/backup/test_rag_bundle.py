"""The document corpus's bundle: round trip, snapshot consistency, listing, naming."""

from __future__ import annotations

import json
import threading
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.backup.conftest import DIM, Stack
from varagity.backup.bundle import (
    RAG_CHUNKS,
    RAG_EMBEDDINGS,
    BundleError,
    bundle_name,
    exports_dir,
    inspect_bundle,
    list_bundles,
    resolve_bundle,
)
from varagity.backup.rag import export_rag, restore_rag
from varagity.backup.rows import verify_bundle
from varagity.stores.corpus_state import STALE_KEY, CorpusState
from varagity_bench.backup import generate_corpus

QUERIES = ("turbine lattice", "saffron granite beacon", "copper falcon glacier", "part 3")


def rows(stack: Stack, sql: str) -> list[tuple[Any, ...]]:
    with stack.pg.connection() as conn:
        return conn.execute(sql).fetchall()


def chunk_rows(stack: Stack) -> list[tuple[Any, ...]]:
    """Every chunks column (the vector in pgvector's binary form, the metadata without its
    source, which a restore re-roots)."""
    return rows(
        stack,
        "SELECT chunk_id, doc_id, original_index, chunk_index, content, context,"
        " contextualized_content, vector_send(embedding), metadata - 'source', created_at,"
        " contextualized_at FROM chunks ORDER BY chunk_id",
    )


def document_rows(stack: Stack) -> list[tuple[Any, ...]]:
    return rows(
        stack,
        "SELECT doc_id, relative_path, file_type, content_hash, n_chunks, ingested_at"
        " FROM documents ORDER BY doc_id",
    )


def hits(stack: Stack) -> list[list[tuple[str, float]]]:
    return [[(h.chunk_id, h.score) for h in stack.bm25.search(q, 10)] for q in QUERIES]


def test_round_trip_restores_ids_vectors_and_search(stack: Stack, other_stack: Stack) -> None:
    with stack.pg.connection() as conn:  # a blurbed chunk keeps its contextualized_at
        conn.execute("UPDATE chunks SET contextualized_at = now() WHERE context IS NOT NULL")
    progress: list[tuple[str, int, int]] = []
    exported = export_rag(stack.settings, stack.pg, progress=lambda *p: progress.append(p))
    assert exported.path.parent == exports_dir(stack.settings, "rag")
    assert exported.manifest.counts == {"documents": 12, "chunks": 84}
    assert ("chunks", 84, 84) in progress
    assert verify_bundle(exported.path, stack.settings, "rag").ok

    restored = restore_rag(exported.path, other_stack.settings, other_stack.pg, other_stack.bm25)
    assert restored.stale_reason is None
    assert chunk_rows(other_stack) == chunk_rows(stack)
    assert document_rows(other_stack) == document_rows(stack)
    assert other_stack.bm25.count() == 84
    assert hits(other_stack) == hits(stack)
    assert any(hits(stack))
    # sources re-rooted onto this stack's DOCS_PATH, the chunks' metadata following
    sources = rows(
        other_stack,
        "SELECT d.source, c.metadata->>'source', d.relative_path"
        " FROM documents d JOIN chunks c USING (doc_id)",
    )
    for doc_source, chunk_source, rel in sources:
        assert doc_source == chunk_source == str(other_stack.settings.docs_path / rel)
    # a new ingest after the restore allocates indexes past the restored ones
    top = rows(other_stack, "SELECT max(original_index) FROM chunks")[0][0]
    assert other_stack.pg.allocate_original_indexes(1)[0] > top


def test_matrix_rows_follow_chunk_lines_bit_exactly(stack: Stack) -> None:
    exported = export_rag(stack.settings, stack.pg)
    with zipfile.ZipFile(exported.path) as zf:
        lines = [json.loads(x) for x in zf.read(RAG_CHUNKS).splitlines()]
        matrix = np.frombuffer(zf.read(RAG_EMBEDDINGS), dtype="<f4").reshape(-1, DIM)
        assert zf.getinfo(RAG_EMBEDDINGS).compress_type == zipfile.ZIP_STORED
        assert zf.namelist()[-1] == "bundle.json"
    stored = dict(rows(stack, "SELECT chunk_id, vector_send(embedding) FROM chunks"))
    assert [line["original_index"] for line in lines] == sorted(
        line["original_index"] for line in lines
    )
    for line, vector in zip(lines, matrix, strict=True):
        assert "embedding" not in line
        big_endian = bytes(stored[line["chunk_id"]])[4:]
        assert vector.astype(">f4").tobytes() == big_endian


def test_an_ingest_committing_mid_export_cannot_tear_the_bundle(stack: Stack) -> None:
    """A writer stores documents the whole time the export streams; the bundle holds
    exactly the rows of one instant: every chunk's document, every document's chunks."""
    stop = threading.Event()
    written: list[int] = []

    def writer() -> None:
        seed = 100
        while not stop.is_set():
            generate_corpus(
                stack.settings, stack.pg, stack.bm25, documents=1, chunks_per_document=5, seed=seed
            )
            written.append(seed)
            seed += 1

    def progress(phase: str, done: int, total: int) -> None:
        if phase == "documents" and done == 0:
            while len(written) < 2:  # commits land after the snapshot was taken
                threading.Event().wait(0.05)

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        exported = export_rag(stack.settings, stack.pg, progress=progress)
    finally:
        stop.set()
        thread.join()
    with zipfile.ZipFile(exported.path) as zf:
        docs = [json.loads(x) for x in zf.read("documents.jsonl").splitlines()]
        chunks = [json.loads(x) for x in zf.read(RAG_CHUNKS).splitlines()]
    by_doc: dict[str, int] = {}
    for chunk in chunks:
        by_doc[chunk["doc_id"]] = by_doc.get(chunk["doc_id"], 0) + 1
    assert {d["doc_id"]: d["n_chunks"] for d in docs} == by_doc
    assert exported.manifest.counts == {"documents": len(docs), "chunks": len(chunks)}
    assert len(written) >= 2
    # the writers were never blocked, and what they committed is not in this snapshot
    assert rows(stack, "SELECT count(*) FROM documents")[0][0] > len(docs)


def test_names_never_repeat_and_listing_is_newest_first(stack: Stack) -> None:
    first = export_rag(stack.settings, stack.pg)
    second = export_rag(stack.settings, stack.pg)
    assert first.path != second.path
    assert first.path.exists() and second.path.exists()
    stamp = first.manifest.created_at
    assert first.path.name == bundle_name("rag", stamp)
    if bundle_name("rag", second.manifest.created_at) == first.path.name:
        assert second.path.name == bundle_name("rag", stamp, 2)
    listed = list_bundles(stack.settings, "rag")
    assert [v.name for v in listed] == [second.path.name, first.path.name]
    assert all(v.ok and v.manifest is not None for v in listed)
    assert resolve_bundle(stack.settings, "rag", first.path.name) == first.path
    for bad in ("../x.zip", "sub/x.zip", ".hidden.zip", "x.zip/..", "..", "", "a\\b.zip"):
        with pytest.raises(BundleError) as caught:
            resolve_bundle(stack.settings, "rag", bad)
        assert caught.value.code == "bundle_invalid"
    with pytest.raises(FileNotFoundError):
        resolve_bundle(stack.settings, "rag", "varagity-rag-19990101-0000.zip")


def test_drift_and_stale_flag_are_derived(
    stack: Stack, other_stack: Stack, make_settings: Any
) -> None:
    CorpusState(stack.pg).rebuilt_with(stack.settings)
    exported = export_rag(stack.settings, stack.pg)
    assert exported.manifest.stale is False
    changed = other_stack.settings.model_copy(update={"CHUNK_SIZE": 555})
    verdict = inspect_bundle(exported.path, changed, "rag")
    assert verdict.ok
    assert verdict.drift == {"CHUNK_SIZE": (str(stack.settings.CHUNK_SIZE), "555")}
    restored = restore_rag(exported.path, changed, other_stack.pg, other_stack.bm25)
    assert restored.stale_reason is not None and "CHUNK_SIZE" in restored.stale_reason
    flag = CorpusState(other_stack.pg).stale()
    assert flag is not None and "CHUNK_SIZE" in flag.reason
    # a stale corpus exports a stale bundle, and restores stale even with equal settings
    with stack.pg.connection() as conn:
        conn.execute("INSERT INTO app_settings (key, value) VALUES (%s, 'x')", (STALE_KEY,))
    stale = export_rag(stack.settings, stack.pg)
    assert stale.manifest.stale is True
    again = restore_rag(stale.path, other_stack.settings, other_stack.pg, other_stack.bm25)
    assert again.stale_reason is not None


def test_an_empty_corpus_round_trips(other_stack: Stack, backup_settings: Any) -> None:
    exported = export_rag(other_stack.settings, other_stack.pg)
    assert exported.manifest.counts == {"documents": 0, "chunks": 0}
    assert verify_bundle(exported.path, other_stack.settings, "rag").ok
    restore_rag(exported.path, other_stack.settings, other_stack.pg, other_stack.bm25)
    assert other_stack.pg.count_chunks() == 0
    assert isinstance(exported.path, Path)


def test_the_benchmark_measures_both_ways(stack: Stack, other_stack: Stack) -> None:
    from varagity_bench.backup import measure_backup

    figures = measure_backup(stack.settings, stack.pg, stack.bm25, other_stack.pg, other_stack.bm25)
    assert figures.chunks == 84 and figures.bundle_bytes > 84 * DIM * 4
    assert set(figures.restore_phases) == {"check", "rows", "vector index", "bm25"}
    text = "\n".join(figures.lines())
    assert "chunks/s" in text and "per 1,000 chunks" in text
    assert other_stack.pg.count_chunks() == 84


def test_restore_rebuilds_an_elasticsearch_index_from_the_rows(
    stack: Stack, other_stack: Stack
) -> None:
    """The Elasticsearch backend through the official client against the protocol
    recorder (a named stand-in: no Elasticsearch server can run here): what was indexed
    before goes, every restored chunk is indexed with its row's text."""
    import elasticsearch

    from tests.support.es_protocol import ESProtocolRecorder
    from varagity.stores.bm25 import BM25Document
    from varagity.stores.bm25.elasticsearch import ElasticsearchBM25Store

    recorder = ESProtocolRecorder().start()
    client = elasticsearch.Elasticsearch(recorder.url, max_retries=0)
    try:
        es = ElasticsearchBM25Store(recorder.url, index_name="chunks-bk", client=client)
        es.index([BM25Document("gone::0", "gone", 0, "old text", "old text")])
        exported = export_rag(stack.settings, stack.pg)
        restore_rag(exported.path, other_stack.settings, other_stack.pg, es)
        indexed = recorder.indices["chunks-bk"]
        assert set(indexed) == set(dict(rows(stack, "SELECT chunk_id, 1 FROM chunks")))
        text = dict(rows(stack, "SELECT chunk_id, contextualized_content FROM chunks"))
        assert all(source["contextualized_content"] == text[_id] for _id, source in indexed.items())
    finally:
        client.close()
        recorder.stop()


def test_sources_are_re_rooted_onto_the_corpus_file(tmp_path: Path) -> None:
    """Every stored document was read from ``DOCS_PATH/relative_path``: the restored
    source is that file here, whatever the bundle says the exporting machine had."""
    from varagity.backup.rag import reroot

    docs = tmp_path / "docs"
    assert reroot("a/b.md", docs) == str(docs / "a" / "b.md")
    for outside in ("../x.md", "/etc/passwd", "a/../../x.md", "..\\x.md", "a//b.md", ""):
        with pytest.raises(ValueError):
            reroot(outside, docs)
