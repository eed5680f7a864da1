"""``bm25``: the sparse index (Tantivy or Elasticsearch), rows hydrated from Postgres."""

from __future__ import annotations

from varagity.retrieval.base import Retrieval, check_k, single_arm, timed
from varagity.stores.bm25 import BM25Store
from varagity.stores.vector_store import PgVectorStore


class BM25Retriever:
    """BM25 over the sparse index; rows hydrated from Postgres."""

    method = "bm25"

    def __init__(self, bm25: BM25Store, pg: PgVectorStore) -> None:
        """Wire the sparse index and the metadata store."""
        self.bm25 = bm25
        self.pg = pg

    def ranked_identities(
        self, query: str, k: int, timings: dict[str, float]
    ) -> list[tuple[tuple[str, int], float]]:
        """``((doc_id, original_index), bm25 score)`` best first."""
        hits = timed(timings, "bm25", lambda: self.bm25.search(query, k))
        return [((h.doc_id, h.original_index), h.score) for h in hits]

    def retrieve(self, query: str, k: int) -> Retrieval:
        """Top ``k`` by BM25, hydrated (hits whose rows are gone are dropped)."""
        check_k(k)
        timings: dict[str, float] = {}
        ranked = self.ranked_identities(query, k, timings)
        rows = timed(timings, "hydrate", lambda: self.pg.fetch_by_identity([i for i, _ in ranked]))
        hydrated = [(rows[i], s) for i, s in ranked if i in rows]
        return single_arm(self.method, query, hydrated, "bm25", timings)
