"""Backup throughput: export and restore of a generated document corpus.

``varagity bench-backup`` starts a private embedded Postgres and Tantivy index, stores a
generated corpus through the product's own writers (random unit vectors: no model is
involved in a backup either way), exports it, restores it into a fresh database and
prints chunks/s both ways and the bundle's size per 1,000 chunks.
"""

from __future__ import annotations

import random
import shutil
import time
from dataclasses import dataclass

import numpy as np

from varagity.backup.rag import export_rag, restore_rag
from varagity.config import Settings
from varagity.records import ChunkRecord, chunk_id_for, doc_id_for
from varagity.stores.bm25 import BM25Document, BM25Store
from varagity.stores.vector_store import DocumentRow, EmbeddedChunk, PgVectorStore
from varagity_bench.synthetic_text import sentence


def generate_corpus(
    settings: Settings,
    pg: PgVectorStore,
    bm25: BM25Store,
    *,
    documents: int,
    chunks_per_document: int,
    seed: int = 0,
) -> int:
    """Store ``documents`` generated documents of ``chunks_per_document`` chunks each in
    both stores (files are written under ``DOCS_PATH`` too); returns the chunks stored."""
    rng = random.Random(seed)
    vectors = np.random.default_rng(seed)
    stored = 0
    for d in range(documents):
        rel = f"generated/doc-{seed}-{d:05d}.md"
        path = settings.docs_path / rel
        texts = [
            " ".join(sentence(rng, 8, 20) for _ in range(rng.randint(3, 8)))
            for _ in range(chunks_per_document)
        ]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n\n".join(texts))
        content_hash = f"{seed:04d}{d:060d}"
        doc_id = doc_id_for(rel, content_hash)
        indexes = pg.allocate_original_indexes(len(texts))
        records = []
        for i, (text, index) in enumerate(zip(texts, indexes, strict=True)):
            records.append(
                ChunkRecord(
                    doc_id=doc_id,
                    chunk_id=chunk_id_for(doc_id, i),
                    original_index=index,
                    chunk_index=i,
                    source=str(path),
                    relative_path=rel,
                    file_name=path.name,
                    file_type="md",
                    content=text,
                    context=f"Part {i} of document {d}." if i % 2 == 0 else None,
                    contextualized_content=f"{path.name}\n\n{text}",
                    chunk_size=settings.CHUNK_SIZE,
                    chunk_overlap=settings.CHUNK_OVERLAP,
                    chunking_strategy=settings.CHUNKING_STRATEGY,
                    embedding_model=settings.EMBEDDING_MODEL,
                    n_tokens=len(text.split()),
                    content_hash=content_hash,
                )
            )
        matrix = vectors.normal(size=(len(records), settings.EMBEDDING_DIM)).astype(np.float32)
        matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
        with pg.document_lock([doc_id]) as conn:
            bm25.index([BM25Document.of(r) for r in records])
            pg.write_document(
                DocumentRow(doc_id, str(path), rel, "md", content_hash, len(records)),
                [EmbeddedChunk(r, v) for r, v in zip(records, matrix, strict=True)],
                conn=conn,
            )
        stored += len(records)
    return stored


@dataclass(frozen=True)
class BackupFigures:
    """One export + restore measured."""

    chunks: int
    export_s: float
    restore_s: float
    bundle_bytes: int
    restore_phases: dict[str, float]
    """Seconds of each restore phase (rows, vector index, bm25), from its progress."""

    @property
    def export_rate(self) -> float:
        return self.chunks / self.export_s if self.export_s else 0.0

    @property
    def restore_rate(self) -> float:
        return self.chunks / self.restore_s if self.restore_s else 0.0

    @property
    def bytes_per_1000(self) -> float:
        return self.bundle_bytes * 1000 / self.chunks if self.chunks else 0.0

    def lines(self) -> list[str]:
        return [
            f"chunks            {self.chunks}",
            f"export            {self.export_s:.2f} s = {self.export_rate:,.0f} chunks/s",
            f"restore           {self.restore_s:.2f} s = {self.restore_rate:,.0f} chunks/s "
            "(" + ", ".join(f"{k} {v:.2f} s" for k, v in self.restore_phases.items()) + ")",
            f"bundle            {self.bundle_bytes / 1e6:.2f} MB = "
            f"{self.bytes_per_1000 / 1e6:.2f} MB per 1,000 chunks",
        ]


def measure_backup(
    settings: Settings,
    pg: PgVectorStore,
    bm25: BM25Store,
    restore_into: PgVectorStore,
    restore_bm25: BM25Store,
) -> BackupFigures:
    """Export ``pg``'s corpus and restore it into ``restore_into`` (another database)."""
    exported = export_rag(settings, pg)
    phases: dict[str, float] = {}
    last = [time.monotonic()]

    def progress(phase: str, done: int, total: int) -> None:
        now = time.monotonic()
        name = "rows" if phase in ("documents", "chunks") else phase
        phases[name] = phases.get(name, 0.0) + now - last[0]
        last[0] = now

    restored = restore_rag(exported.path, settings, restore_into, restore_bm25, progress=progress)
    return BackupFigures(
        chunks=exported.manifest.counts["chunks"],
        export_s=exported.seconds,
        restore_s=restored.seconds,
        bundle_bytes=exported.path.stat().st_size,
        restore_phases=phases,
    )


def run_backup_benchmark(*, documents: int, chunks_per_document: int) -> int:
    """Generate a corpus in a private embedded Postgres, export it, restore it into a
    second database, print the figures."""
    from varagity.stores.bm25.tantivy_store import TantivyBM25Store
    from varagity.stores.postgres import (
        ensure_database,
        ensure_embedded_postgres,
        stop_embedded_postgres,
    )
    from varagity_bench.private_stack import private_stack_settings

    root, settings = private_stack_settings("varagity-bench-backup-", CONTEXTUALIZE=False)
    settings.docs_path.mkdir(parents=True, exist_ok=True)
    try:
        server = ensure_embedded_postgres(settings)
        source = PgVectorStore(
            ensure_database(server, "bench_source"), embedding_dim=settings.EMBEDDING_DIM
        )
        target = PgVectorStore(
            ensure_database(server, "bench_target"), embedding_dim=settings.EMBEDDING_DIM
        )
        bm25 = TantivyBM25Store(root / "bm25-source")
        target_bm25 = TantivyBM25Store(root / "bm25-target")
        try:
            started = time.monotonic()
            n = generate_corpus(
                settings, source, bm25, documents=documents, chunks_per_document=chunks_per_document
            )
            print(f"generated {n} chunks in {time.monotonic() - started:.1f} s")
            figures = measure_backup(settings, source, bm25, target, target_bm25)
        finally:
            for store in (source, target):
                store.close()
            bm25.close()
            target_bm25.close()
        for line in figures.lines():
            print(line)
    finally:
        stop_embedded_postgres(settings)
        shutil.rmtree(root, ignore_errors=True)
    return 0
