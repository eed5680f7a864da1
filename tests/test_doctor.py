"""The invariant checker (``varagity doctor``) on real Postgres and Tantivy: a clean
corpus passes, and each planted defect is found and named by its invariant."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support.records import DIM, stored_chunks
from varagity.doctor import check_stores, launch_repairs
from varagity.files import file_sha256
from varagity.folder_diff import FolderDiff
from varagity.ingest.discovery import partition_key_for
from varagity.ingest.stages import index_stored_paths
from varagity.jobs import DagsterClient, RunNode
from varagity.pipeline import BM25_JOB, PARTITION_TAG
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


class _Launches(DagsterClient):
    """No run in flight, the ``documents`` partitions given; the runs launched recorded."""

    def __init__(self, partitions: list[str]) -> None:
        super().__init__("http://dagster.test/")
        self.keys = partitions
        self.launched: list[tuple[str, dict[str, str]]] = []

    def query(self, document: str, variables: dict[str, Any] | None = None) -> dict[str, Any]:
        raise AssertionError("the fake answers typed calls only")

    def runs(self, run_filter: dict[str, Any], limit: int | None = None) -> list[RunNode]:
        return []

    def partition_keys(self, asset: str) -> list[str]:
        return list(self.keys)

    def launch_run(
        self, job: str, tags: dict[str, str], run_config: dict[str, Any] | None = None
    ) -> str:
        self.launched.append((job, tags))
        return f"run{len(self.launched)}"


def test_a_document_between_its_two_ingest_steps_is_in_flight_until_the_settle_time(
    pg_url: str, tmp_path: Path
) -> None:
    """Stored in Postgres with its BM25 mark set and no BM25 entries yet: in flight while
    the mark is younger than the settle time (not "only in Postgres"); older, reported as
    never made searchable, with the fix named, and repaired by a BM25 rebuild of its file."""
    docs = tmp_path / "docs"
    docs.mkdir()
    pg = PgVectorStore(pg_url, embedding_dim=DIM)
    bm25 = TantivyBM25Store(tmp_path / "bm25")
    try:
        (docs / "a.md").write_text("# a\n\nIndexed in both stores.\n")
        (docs / "b.md").write_text("# b\n\nStored, waiting for its BM25 entries.\n")
        _store(pg, bm25, doc_id_for("a.md", file_sha256(docs / "a.md")), "a.md", 2, 0)
        waiting = doc_id_for("b.md", file_sha256(docs / "b.md"))
        pg.write_document(
            DocumentRow(waiting, "/c/b.md", "b.md", "md", "h", 3),
            stored_chunks(waiting, 3, 10, path="b.md"),
            awaiting_bm25=True,
        )

        fresh = check_stores(pg_url, bm25, docs, settle_s=60)
        assert fresh.ok, fresh.render()
        assert any("wait for their BM25 entries" in n for n in fresh.notes), fresh.notes
        assert fresh.unsearchable == []

        with pg.connection() as conn, conn.transaction():
            conn.execute("UPDATE bm25_pending SET since = now() - interval '2 hours'")
        old = check_stores(pg_url, bm25, docs, settle_s=60)
        assert [(p.invariant, p.subject.split(" ")[0]) for p in old.problems] == [
            ("searchable", "b.md")
        ], old.render()
        detail = old.problems[0].detail
        assert "stored 2.0 h ago but never made searchable" in detail
        assert "varagity doctor --repair" in detail and "rebuild_bm25_index" in detail
        assert "FAIL searchable" in old.render()
        assert old.unsearchable == ["b.md"]

        # --repair launches the BM25 rebuild of that file alone
        keys = [partition_key_for("a.md"), partition_key_for("b.md")]
        client = _Launches(keys)
        repairs = launch_repairs(old, FolderDiff, client, batch_size=10)
        assert client.launched == [
            (BM25_JOB, {"varagity/source": "doctor", PARTITION_TAG: partition_key_for("b.md")})
        ]
        assert repairs.launched == ["run1"]
        assert any("BM25 entries of 1 stored file(s)" in line for line in repairs.lines)
        assert not any("not repaired here" in line for line in repairs.lines)

        # what that run does (bm25_index): the entries written from Postgres, mark cleared
        index_stored_paths(["b.md"], pg=pg, bm25=bm25)
        again = check_stores(pg_url, bm25, docs, settle_s=60)
        assert again.ok, again.render()
        assert again.counts["bm25_chunks"] == 5
    finally:
        bm25.close()
        pg.close()
