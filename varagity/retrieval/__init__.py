"""Retrievers, one method per module, and the factory that picks one by name.

``semantic`` (pgvector), ``bm25`` (Tantivy/Elasticsearch), ``hybrid`` (the two fused),
``reranked`` and ``hyde`` (which compose the first three). The contract is in
:mod:`~varagity.retrieval.base`, the options in :mod:`~varagity.retrieval.config`.
"""

from __future__ import annotations

from varagity.models.protocols import Completer, Embedder, RerankScorer
from varagity.retrieval.base import Retrieval, Retriever
from varagity.retrieval.bm25 import BM25Retriever
from varagity.retrieval.config import RetrievalConfig
from varagity.retrieval.hybrid import HybridRetriever
from varagity.retrieval.hyde import HydeRetriever
from varagity.retrieval.reranked import RerankedRetriever
from varagity.retrieval.semantic import SemanticRetriever
from varagity.stores.bm25 import BM25Store
from varagity.stores.vector_store import PgVectorStore

__all__ = ["Retrieval", "RetrievalConfig", "Retriever", "build_retriever"]


def build_retriever(
    method: str,
    config: RetrievalConfig,
    *,
    pg: PgVectorStore,
    bm25: BM25Store,
    embedder: Embedder,
    chat: Completer | None = None,
    reranker: RerankScorer | None = None,
) -> Retriever:
    """The retriever for ``method``, built with ``config``'s options.

    Args:
        method: ``semantic``, ``bm25``, ``hybrid``, ``reranked`` or ``hyde``.
        config: Fusion, reranking and HyDE options.
        pg: The chunk/vector store.
        bm25: The sparse index.
        embedder: Query embedder (``hyde`` also embeds its passage with it).
        chat: Chat client HyDE writes its passage with (``hyde``, or ``reranked`` over
            ``hyde``).
        reranker: The ``/rerank`` client (``reranked`` only).

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
            semantic_weight=config.semantic_weight,
            bm25_weight=config.bm25_weight,
            arm_candidates=config.arm_candidates,
            rrf_k=config.rrf_k,
        )
    stores = {"pg": pg, "bm25": bm25, "embedder": embedder, "chat": chat}
    if method == "hyde":
        if config.hyde_base_method not in ("semantic", "hybrid"):
            raise ValueError(
                f"HyDE's base must be semantic or hybrid, got {config.hyde_base_method!r} "
                "(bm25 ignores query vectors)"
            )
        if chat is None:
            raise ValueError("the hyde retriever needs a chat client")
        if not hasattr(embedder, "embed_passages"):
            raise ValueError("the hyde retriever needs an embedder with embed_passages()")
        base = build_retriever(config.hyde_base_method, config, **stores)  # type: ignore[arg-type]
        assert isinstance(base, SemanticRetriever | HybridRetriever)
        return HydeRetriever(
            base,
            chat,
            embedder,
            enabled=config.hyde_enabled,
            max_tokens=config.hyde_max_tokens,
        )
    if method == "reranked":
        if config.rerank_base_method not in ("semantic", "bm25", "hybrid", "hyde"):
            raise ValueError(
                f"the reranked base must be semantic, bm25, hybrid or hyde, got "
                f"{config.rerank_base_method!r}"
            )
        if reranker is None and config.rerank_enabled:
            raise ValueError("the reranked retriever needs a rerank client")
        return RerankedRetriever(
            build_retriever(config.rerank_base_method, config, **stores),  # type: ignore[arg-type]
            reranker,
            candidates=config.rerank_candidates,
            top_n=config.rerank_top_n,
            enabled=config.rerank_enabled,
        )
    raise ValueError(
        f"unknown retrieval method {method!r}; choose semantic, bm25, hybrid, reranked or hyde"
    )
