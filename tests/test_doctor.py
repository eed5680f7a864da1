"""The invariant checker (``varagity doctor``) on real Postgres and Tantivy: a clean
corpus passes, and each planted defect is found and named by its invariant."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.records import DIM, stored_chunks
from varagity.doctor import check_stores
from varagity.files import file_sha256
from varagity.records import doc_id_for
from varagity.stores.bm25 import BM25Document
from varagity.stores.bm25.tantivy_store import TantivyBM25Store
from varagity.stores.vector_store import DocumentRow, EmbeddedChunk, PgVectorStore

pytestmark = pytest.mark.integration


def _store(
    pg: PgVectorStore, bm25: TantivyBM25Store, doc_id: str, path: str, n: int, first: int
) -> list[EmbeddedChunk]:
    chunks = stored_chunks(doc_id, n, first, path=path)
    pg.write_document(DocumentRow(doc_id, f"/c/{path}", path, "md", "h", n), chunks)
    bm25.index(
        [
            BM25Document(
                chunk_id=c.record.chunk_id,
                doc_id=doc_id,
                original_index=c.record.original_index,
                content=c.record.content,
                contextualized_content=c.record.contextualized_content,
            )
            for c in chunks
        ]
    )
    return chunks


def test_doctor_finds_planted_duplicates_orphans_and_store_mismatches(
    pg_url: str, tmp_path: Path
) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    pg = PgVectorStore(pg_url, embedding_dim=DIM)
    bm25 = TantivyBM25Store(tmp_path / "bm25")
    try:
        ids = {}
        for i, name in enumerate(("a.md", "b.md", "c.md")):
            (docs / name).write_text(f"# {name}\n\nSome text of {name}.\n")
            ids[name] = doc_id_for(name, file_sha256(docs / name))
            _store(pg, bm25, ids[name], name, 3, i * 10)

        clean = check_stores(pg_url, bm25, docs, settle_s=0)
        assert clean.ok, clean.render()
        assert clean.counts == {
            "files": 3,
            "documents": 3,
            "postgres_chunks": 9,
            "bm25_chunks": 9,
        }

        # a duplicate: a second documents row (an old version) for a.md, in both stores
        _store(pg, bm25, "old-version-of-a", "a.md", 2, 100)
        # an orphan: b.md deleted from disk without a purge
        (docs / "b.md").unlink()
        # a mismatch: one chunk of c.md gone from BM25 only
        c_records = pg.chunks_of(ids["c.md"])
        c_chunk = sorted(r.chunk_id for r in c_records)[0]
        bm25.replace_documents(
            [ids["c.md"]],
            [
                BM25Document(
                    r.chunk_id, r.doc_id, r.original_index, r.content, r.contextualized_content
                )
                for r in c_records
                if r.chunk_id != c_chunk
            ],
        )
        # a BM25 orphan: chunks of a document Postgres never had
        bm25.index(
            [
                BM25Document(
                    chunk_id="ghost::0",
                    doc_id="ghost",
                    original_index=999,
                    content="x",
                    contextualized_content="x",
                )
            ]
        )
        # a file nobody indexed
        (docs / "d.md").write_text("# d\n\nNever ingested.\n")

        report = check_stores(pg_url, bm25, docs, settle_s=0)
        found = {(p.invariant, p.subject.split(" ")[0]) for p in report.problems}
        assert found == {
            ("no_duplicates", "a.md"),
            ("no_orphans", "b.md"),
            ("stores_agree", "c.md"),
            ("no_orphans", "ghost"),
            ("indexed_once", "d.md"),
        }, report.render()
        mismatch = next(p for p in report.problems if p.invariant == "stores_agree")
        assert c_chunk in mismatch.detail and "only in Postgres" in mismatch.detail
        assert report.broken()["no_stuck_runs"] == 0
        assert "FAIL no_duplicates" in report.render()

        # a file changed moments ago is in flight, not a broken invariant
        recent = check_stores(pg_url, bm25, docs, settle_s=3600)
        assert ("indexed_once", "d.md") not in {(p.invariant, p.subject) for p in recent.problems}
        assert any("in flight" in n for n in recent.notes)
    finally:
        bm25.close()
        pg.close()
