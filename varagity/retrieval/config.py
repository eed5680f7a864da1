"""The retrieval options every method is built from, as one typed value."""

from __future__ import annotations

from dataclasses import dataclass

from varagity.config import Settings


@dataclass(frozen=True, slots=True)
class RetrievalConfig:
    """How the retrievers rank: fusion, reranking and HyDE options in one place.

    Attributes:
        semantic_weight: ``SEMANTIC_WEIGHT``: hybrid weight of the dense arm.
        bm25_weight: ``BM25_WEIGHT``: hybrid weight of the BM25 arm.
        arm_candidates: ``ARM_CANDIDATES``: chunks each hybrid arm contributes to fusion.
        rrf_k: ``RRF_K``: the reciprocal-rank constant (``weight / (k + rank)``).
        rerank_enabled: ``RERANK_ENABLED``: false returns the base ranking.
        rerank_base_method: ``RERANK_BASE_METHOD``: semantic, bm25, hybrid or hyde.
        rerank_candidates: ``RERANK_CANDIDATES``: the base over-fetch.
        rerank_top_n: ``RERANK_TOP_N``: most results kept.
        hyde_enabled: ``HYDE_ENABLED``: false searches with the raw query.
        hyde_base_method: ``HYDE_BASE_METHOD``: semantic or hybrid.
        hyde_max_tokens: ``HYDE_MAX_TOKENS``: cap on the hypothetical passage.
    """

    semantic_weight: float
    bm25_weight: float
    arm_candidates: int
    rrf_k: int
    rerank_enabled: bool = True
    rerank_base_method: str = "hybrid"
    rerank_candidates: int = 40
    rerank_top_n: int = 20
    hyde_enabled: bool = True
    hyde_base_method: str = "hybrid"
    hyde_max_tokens: int = 160

    @classmethod
    def from_settings(cls, settings: Settings) -> RetrievalConfig:
        """The options ``settings`` hold (the settings named in each attribute)."""
        return cls(
            semantic_weight=settings.SEMANTIC_WEIGHT,
            bm25_weight=settings.BM25_WEIGHT,
            arm_candidates=settings.ARM_CANDIDATES,
            rrf_k=settings.RRF_K,
            rerank_enabled=settings.RERANK_ENABLED,
            rerank_base_method=settings.RERANK_BASE_METHOD,
            rerank_candidates=settings.RERANK_CANDIDATES,
            rerank_top_n=settings.RERANK_TOP_N,
            hyde_enabled=settings.HYDE_ENABLED,
            hyde_base_method=settings.HYDE_BASE_METHOD,
            hyde_max_tokens=settings.HYDE_MAX_TOKENS,
        )
