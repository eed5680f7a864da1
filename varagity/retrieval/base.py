"""Retrievers: semantic (pgvector), bm25 (Tantivy/Elasticsearch), hybrid (fused).

Every retriever returns :class:`~varagity.records.RetrievedChunk` objects carrying a
:class:`~varagity.records.RetrievalTrace`, plus per-stage timings in milliseconds.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Protocol, TypeVar

from varagity.records import ChunkRecord, RetrievalTrace, RetrievedChunk
from varagity.retrieval.fusion import weighted_rrf
from varagity.stores.bm25 import BM25Store
from varagity.stores.vector_store import PgVectorStore

T = TypeVar("T")


class QueryEmbedder(Protocol):
    """The slice of the embedding client retrieval needs."""

    def embed_query(self, text: str) -> list[float]:
        """Vector for a search query."""
        ...


@dataclass(slots=True)
class Retrieval:
    """A retriever's answer: ranked chunks and how long each stage took (ms)."""

    method: str
    query: str
    chunks: list[RetrievedChunk]
    timings_ms: dict[str, float] = field(default_factory=dict)


class Retriever(Protocol):
    """Ranks stored chunks for a query."""

    method: str

    def retrieve(self, query: str, k: int) -> Retrieval:
        """The best ``k`` chunks for ``query``."""
        ...


def _timed(timings: dict[str, float], stage: str, fn: Callable[[], T]) -> T:
    start = time.perf_counter()
    try:
        return fn()
    finally:
        timings[stage] = round((time.perf_counter() - start) * 1000, 2)


def _check_k(k: int) -> None:
    if k <= 0:
        raise ValueError(f"k must be positive, got {k}")


def _single_arm(
    method: str,
    query: str,
    ranked: list[tuple[ChunkRecord, float]],
    arm: str,
    timings: dict[str, float],
) -> Retrieval:
    chunks = []
    for rank, (record, score) in enumerate(ranked, start=1):
        trace = RetrievalTrace(
            fused_score=score,
            fused_rank=rank,
            final_rank=rank,
            **{f"{arm}_rank": rank, f"{arm}_score": score},  # type: ignore[arg-type]
        )
        chunks.append(RetrievedChunk(record=record, score=score, trace=trace))
    return Retrieval(method, query, chunks, timings)


class SemanticRetriever:
    """Cosine similarity over the pgvector HNSW index."""

    method = "semantic"

    def __init__(self, pg: PgVectorStore, embedder: QueryEmbedder) -> None:
        """Wire the store and the query embedder."""
        self.pg = pg
        self.embedder = embedder

    def ranked(
        self, query: str, k: int, timings: dict[str, float]
    ) -> list[tuple[ChunkRecord, float]]:
        """Raw ``(record, cosine)`` list, timing the embed and search stages."""
        vector = _timed(timings, "embed", lambda: self.embedder.embed_query(query))
        return _timed(timings, "semantic", lambda: self.pg.search(vector, k))

    def retrieve(self, query: str, k: int) -> Retrieval:
        """Top ``k`` by cosine similarity."""
        _check_k(k)
        timings: dict[str, float] = {}
        return _single_arm(self.method, query, self.ranked(query, k, timings), "semantic", timings)


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
        hits = _timed(timings, "bm25", lambda: self.bm25.search(query, k))
        return [((h.doc_id, h.original_index), h.score) for h in hits]

    def retrieve(self, query: str, k: int) -> Retrieval:
        """Top ``k`` by BM25, hydrated (hits whose rows are gone are dropped)."""
        _check_k(k)
        timings: dict[str, float] = {}
        ranked = self.ranked_identities(query, k, timings)
        rows = _timed(timings, "hydrate", lambda: self.pg.fetch_by_identity([i for i, _ in ranked]))
        hydrated = [(rows[i], s) for i, s in ranked if i in rows]
        return _single_arm(self.method, query, hydrated, "bm25", timings)


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
    ) -> None:
        """Validate the weights eagerly: they must be non-negative and sum to one."""
        if semantic_weight < 0 or bm25_weight < 0 or abs(semantic_weight + bm25_weight - 1) > 1e-9:
            raise ValueError(
                "hybrid weights must be non-negative and sum to 1, got "
                f"{semantic_weight} + {bm25_weight}"
            )
        if arm_candidates <= 0:
            raise ValueError(f"arm_candidates must be positive, got {arm_candidates}")
        self.semantic = semantic
        self.bm25 = bm25
        self.weights = {"semantic": semantic_weight, "bm25": bm25_weight}
        self.arm_candidates = arm_candidates
        self._pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="hybrid-arm")

    def retrieve(self, query: str, k: int) -> Retrieval:
        """Fuse both arms, dedupe on ``(doc_id, original_index)``, hydrate the top ``k``."""
        _check_k(k)
        timings: dict[str, float] = {}
        fetch = max(k, self.arm_candidates)
        sem_t: dict[str, float] = {}
        bm_t: dict[str, float] = {}
        sem_f = self._pool.submit(self.semantic.ranked, query, fetch, sem_t)
        bm_f = self._pool.submit(self.bm25.ranked_identities, query, fetch, bm_t)
        sem = sem_f.result()
        bm = bm_f.result()
        timings.update(sem_t)
        timings.update(bm_t)
        known = {(r.doc_id, r.original_index): r for r, _ in sem}
        fused = _timed(
            timings,
            "fusion",
            lambda: weighted_rrf(
                {"semantic": [((r.doc_id, r.original_index), s) for r, s in sem], "bm25": bm},
                self.weights,
            ),
        )
        missing = [f.key for f in fused[: k * 2] if f.key not in known]
        rows = _timed(timings, "hydrate", lambda: self.pg_fetch(missing))
        known.update(rows)
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

    def pg_fetch(self, keys: Sequence[tuple[str, int]]) -> dict[tuple[str, int], ChunkRecord]:
        """Hydrate BM25-only identities from Postgres."""
        return self.bm25.pg.fetch_by_identity(keys)


def build_retriever(
    method: str,
    *,
    pg: PgVectorStore,
    bm25: BM25Store,
    embedder: QueryEmbedder,
    semantic_weight: float,
    bm25_weight: float,
    arm_candidates: int,
) -> Retriever:
    """The retriever registered under ``method``."""
    semantic = SemanticRetriever(pg, embedder)
    sparse = BM25Retriever(bm25, pg)
    if method == "semantic":
        return semantic
    if method == "bm25":
        return sparse
    if method == "hybrid":
        return HybridRetriever(
            semantic,
            sparse,
            semantic_weight=semantic_weight,
            bm25_weight=bm25_weight,
            arm_candidates=arm_candidates,
        )
    raise ValueError(f"unknown retrieval method {method!r}; choose semantic, bm25 or hybrid")
