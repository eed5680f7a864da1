"""Retrievers: semantic (pgvector), bm25 (Tantivy/Elasticsearch), hybrid (fused).

``reranked`` (:mod:`varagity.retrieval.reranked`) and ``hyde``
(:mod:`varagity.retrieval.hyde`) compose these; :func:`build_retriever` builds all five.

Every retriever returns :class:`~varagity.records.RetrievedChunk` objects carrying a
:class:`~varagity.records.RetrievalTrace`, plus per-stage timings in milliseconds.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol, TypeVar

from varagity.records import ChunkRecord, RetrievalTrace, RetrievedChunk
from varagity.retrieval.fusion import weighted_rrf
from varagity.stores.bm25 import BM25Store
from varagity.stores.vector_store import PgVectorStore

if TYPE_CHECKING:
    from varagity.models.clients import Completer
    from varagity.models.rerank import RerankClient

T = TypeVar("T")


class QueryEmbedder(Protocol):
    """The slice of the embedding client retrieval needs."""

    def embed_query(self, text: str) -> list[float]:
        """Vector for a search query."""
        ...


@dataclass(slots=True)
class Retrieval:
    """A retriever's answer: ranked chunks and how long each stage took (ms).

    ``hypothetical`` is the passage HyDE generated and searched the dense arm with;
    None when the raw query was searched (every other method, or a degraded HyDE).
    """

    method: str
    query: str
    chunks: list[RetrievedChunk]
    timings_ms: dict[str, float] = field(default_factory=dict)
    hypothetical: str | None = None


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
            else _timed(timings, "embed", lambda: self.embedder.embed_query(query))
        )
        return _timed(timings, "semantic", lambda: self.pg.search(vector, k))

    def retrieve(self, query: str, k: int, *, query_vector: list[float] | None = None) -> Retrieval:
        """Top ``k`` by cosine similarity (to ``query_vector`` when one is given)."""
        _check_k(k)
        timings: dict[str, float] = {}
        ranked = self.ranked(query, k, timings, query_vector)
        return _single_arm(self.method, query, ranked, "semantic", timings)


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
        _check_k(k)
        timings: dict[str, float] = {}
        fetch = max(k, self.arm_candidates)
        sem_t: dict[str, float] = {}
        bm_t: dict[str, float] = {}
        sem_f = self._pool.submit(self.semantic.ranked, query, fetch, sem_t, query_vector)
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
                k=self.rrf_k,
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
    rrf_k: int,
    chat: Completer | None = None,
    reranker: RerankClient | None = None,
    rerank_enabled: bool = True,
    rerank_base_method: str = "hybrid",
    rerank_candidates: int = 40,
    rerank_top_n: int = 20,
    hyde_enabled: bool = True,
    hyde_base_method: str = "hybrid",
    hyde_max_tokens: int = 160,
) -> Retriever:
    """The retriever registered under ``method``.

    Args:
        method: ``semantic``, ``bm25``, ``hybrid``, ``reranked`` or ``hyde``.
        pg: The chunk/vector store.
        bm25: The sparse index.
        embedder: Query embedder (``hyde`` also needs ``embed_passages``).
        semantic_weight: Hybrid weight of the dense arm.
        bm25_weight: Hybrid weight of the BM25 arm.
        arm_candidates: Chunks each hybrid arm contributes to fusion.
        rrf_k: ``RRF_K``: the reciprocal-rank constant (``weight / (k + rank)``).
        chat: Chat client HyDE writes its passage with (``hyde``, or ``reranked`` over
            ``hyde``).
        reranker: The ``/rerank`` client (``reranked`` only).
        rerank_enabled: ``RERANK_ENABLED``: false returns the base ranking.
        rerank_base_method: ``RERANK_BASE_METHOD``: semantic, bm25, hybrid or hyde.
        rerank_candidates: ``RERANK_CANDIDATES``: the base over-fetch.
        rerank_top_n: ``RERANK_TOP_N``: most results kept.
        hyde_enabled: ``HYDE_ENABLED``: false searches with the raw query.
        hyde_base_method: ``HYDE_BASE_METHOD``: semantic or hybrid.
        hyde_max_tokens: ``HYDE_MAX_TOKENS``: cap on the hypothetical passage.

    Returns:
        The retriever.

    Raises:
        ValueError: Unknown method, a missing client, or a disallowed nesting.
    """
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
            rrf_k=rrf_k,
        )
    common = {
        "pg": pg,
        "bm25": bm25,
        "embedder": embedder,
        "semantic_weight": semantic_weight,
        "bm25_weight": bm25_weight,
        "arm_candidates": arm_candidates,
        "rrf_k": rrf_k,
        "chat": chat,
        "hyde_enabled": hyde_enabled,
        "hyde_base_method": hyde_base_method,
        "hyde_max_tokens": hyde_max_tokens,
    }
    if method == "hyde":
        from varagity.retrieval.hyde import HydeRetriever, PassageEmbedder

        if hyde_base_method not in ("semantic", "hybrid"):
            raise ValueError(
                f"HyDE's base must be semantic or hybrid, got {hyde_base_method!r} "
                "(bm25 ignores query vectors)"
            )
        if chat is None:
            raise ValueError("the hyde retriever needs a chat client")
        if not hasattr(embedder, "embed_passages"):
            raise ValueError("the hyde retriever needs an embedder with embed_passages()")
        base = build_retriever(hyde_base_method, **common)  # type: ignore[arg-type]
        assert isinstance(base, SemanticRetriever | HybridRetriever)
        passages: PassageEmbedder = embedder  # type: ignore[assignment]
        return HydeRetriever(base, chat, passages, enabled=hyde_enabled, max_tokens=hyde_max_tokens)
    if method == "reranked":
        from varagity.retrieval.reranked import RerankedRetriever

        if rerank_base_method not in ("semantic", "bm25", "hybrid", "hyde"):
            raise ValueError(
                f"the reranked base must be semantic, bm25, hybrid or hyde, got "
                f"{rerank_base_method!r}"
            )
        if reranker is None and rerank_enabled:
            raise ValueError("the reranked retriever needs a rerank client")
        return RerankedRetriever(
            build_retriever(rerank_base_method, **common),  # type: ignore[arg-type]
            reranker,
            candidates=rerank_candidates,
            top_n=rerank_top_n,
            enabled=rerank_enabled,
        )
    raise ValueError(
        f"unknown retrieval method {method!r}; choose semantic, bm25, hybrid, reranked or hyde"
    )
