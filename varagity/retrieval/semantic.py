"""``semantic``: cosine similarity over the pgvector HNSW index."""

from __future__ import annotations

from varagity.models.protocols import QueryEmbedder
from varagity.records import ChunkRecord
from varagity.retrieval.base import Retrieval, check_k, single_arm, timed
from varagity.stores.vector_store import PgVectorStore


class SemanticRetriever:
    """Cosine similarity over the pgvector HNSW index."""

    method = "semantic"

    def __init__(self, pg: PgVectorStore, embedder: QueryEmbedder) -> None:
        """Wire the store and the query embedder."""
        self.pg = pg
        self.embedder = embedder

    def ranked(
        self,
        query: str,
        k: int,
        timings: dict[str, float],
        query_vector: list[float] | None = None,
    ) -> list[tuple[ChunkRecord, float]]:
        """Raw ``(record, cosine)`` list, timing the embed and search stages.

        ``query_vector`` (HyDE's seam) is searched instead of embedding ``query``.
        """
        vector = (
            query_vector
            if query_vector is not None
            else timed(timings, "embed", lambda: self.embedder.embed_query(query))
        )
        return timed(timings, "semantic", lambda: self.pg.search(vector, k))

    def ranked_identities(
        self,
        query: str,
        k: int,
        timings: dict[str, float],
        query_vector: list[float] | None = None,
    ) -> list[tuple[tuple[str, int], float]]:
        """``((doc_id, original_index), cosine)`` best first, rows not fetched (fusion
        hydrates only what it keeps); times the same stages as :meth:`ranked`."""
        vector = (
            query_vector
            if query_vector is not None
            else timed(timings, "embed", lambda: self.embedder.embed_query(query))
        )
        return timed(timings, "semantic", lambda: self.pg.search_identities(vector, k))

    def retrieve(self, query: str, k: int, *, query_vector: list[float] | None = None) -> Retrieval:
        """Top ``k`` by cosine similarity (to ``query_vector`` when one is given)."""
        check_k(k)
        timings: dict[str, float] = {}
        ranked = self.ranked(query, k, timings, query_vector)
        return single_arm(self.method, query, ranked, "semantic", timings)
