"""``hybrid``: weighted reciprocal-rank fusion of the semantic and BM25 arms."""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from varagity.records import ChunkRecord, RetrievalTrace, RetrievedChunk
from varagity.retrieval.base import Retrieval, check_k, timed
from varagity.retrieval.bm25 import BM25Retriever
from varagity.retrieval.fusion import weighted_rrf
from varagity.retrieval.semantic import SemanticRetriever


class HybridRetriever:
    """Weighted RRF of the semantic and BM25 arms, run concurrently."""

    method = "hybrid"

    def __init__(
        self,
        semantic: SemanticRetriever,
        bm25: BM25Retriever,
        *,
        semantic_weight: float,
        bm25_weight: float,
        arm_candidates: int,
        rrf_k: int,
    ) -> None:
        """Validate eagerly: weights non-negative summing to one, positive depth, k >= 0."""
        if semantic_weight < 0 or bm25_weight < 0 or abs(semantic_weight + bm25_weight - 1) > 1e-9:
            raise ValueError(
                "hybrid weights must be non-negative and sum to 1, got "
                f"{semantic_weight} + {bm25_weight}"
            )
        if arm_candidates <= 0:
            raise ValueError(f"arm_candidates must be positive, got {arm_candidates}")
        if rrf_k < 0:
            raise ValueError(f"rrf_k must be non-negative, got {rrf_k}")
        self.semantic = semantic
        self.bm25 = bm25
        self.weights = {"semantic": semantic_weight, "bm25": bm25_weight}
        self.arm_candidates = arm_candidates
        self.rrf_k = rrf_k
        self._pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="hybrid-arm")

    def retrieve(self, query: str, k: int, *, query_vector: list[float] | None = None) -> Retrieval:
        """Fuse both arms, dedupe on ``(doc_id, original_index)``, hydrate the top ``k``.

        ``query_vector`` (HyDE's seam) replaces the dense arm's query embedding only;
        the BM25 arm always searches the raw ``query`` text.
        """
        check_k(k)
        timings: dict[str, float] = {}
        fetch = max(k, self.arm_candidates)
        sem_t: dict[str, float] = {}
        bm_t: dict[str, float] = {}
        sem_f = self._pool.submit(
            self.semantic.ranked_identities, query, fetch, sem_t, query_vector
        )
        bm_f = self._pool.submit(self.bm25.ranked_identities, query, fetch, bm_t)
        sem = sem_f.result()
        bm = bm_f.result()
        timings.update(sem_t)
        timings.update(bm_t)
        fused = timed(
            timings,
            "fusion",
            lambda: weighted_rrf({"semantic": sem, "bm25": bm}, self.weights, k=self.rrf_k),
        )
        # only the rows kept are fetched (twice k: slack for rows deleted mid-query)
        known = timed(timings, "hydrate", lambda: self.pg_fetch([f.key for f in fused[: k * 2]]))
        chunks: list[RetrievedChunk] = []
        for item in fused:
            record = known.get(item.key)
            if record is None:
                continue  # indexed in BM25 but gone from Postgres (deleted mid-query)
            rank = len(chunks) + 1
            trace = RetrievalTrace(
                semantic_rank=item.arm_ranks.get("semantic"),
                semantic_score=item.arm_scores.get("semantic"),
                bm25_rank=item.arm_ranks.get("bm25"),
                bm25_score=item.arm_scores.get("bm25"),
                fused_score=round(item.fused_score, 6),
                fused_rank=rank,
                final_rank=rank,
            )
            chunks.append(RetrievedChunk(record=record, score=trace.fused_score, trace=trace))
            if len(chunks) == k:
                break
        return Retrieval(self.method, query, chunks, timings)

    def close(self) -> None:
        """Stop the arms' thread pool (a retriever built per request or per grid point)."""
        self._pool.shutdown(wait=False)

    def pg_fetch(self, keys: Sequence[tuple[str, int]]) -> dict[tuple[str, int], ChunkRecord]:
        """Hydrate fused identities from Postgres."""
        return self.bm25.pg.fetch_by_identity(keys)
