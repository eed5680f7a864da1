"""The reranked retriever: over-fetch from a base retriever, rescore, keep the best.

1. the base (``RERANK_BASE_METHOD``) returns ``max(RERANK_CANDIDATES, k)`` candidates;
2. each candidate's *original* content (not the contextualized text the base searched)
   is scored against the query over the ``/rerank`` protocol;
3. the ``min(k, RERANK_TOP_N)`` best are kept, each trace gaining ``rerank_score``,
   ``rerank_delta = pre_rank - post_rank`` (positive: moved up) and ``final_rank``.

``RERANK_ENABLED=false`` is a kill switch: the base ranking (top ``k``) comes back
unchanged and the degradation is logged at INFO. Reranker failures are not swallowed:
they raise :class:`~varagity.models.base.ModelError` like any model call.
"""

from __future__ import annotations

import logging

from varagity.models.protocols import RerankScorer
from varagity.records import RetrievalTrace, RetrievedChunk
from varagity.retrieval.base import Retrieval, Retriever, check_k, timed

log = logging.getLogger(__name__)


class RerankedRetriever:
    """A base retriever's candidates re-ordered by a reranker."""

    method = "reranked"

    def __init__(
        self,
        base: Retriever,
        client: RerankScorer | None,
        *,
        candidates: int = 40,
        top_n: int = 20,
        enabled: bool = True,
    ) -> None:
        """Wire the base and the scorer.

        Args:
            base: The retriever whose ranking is refined.
            client: The reranker (may be None only when ``enabled`` is False).
            candidates: ``RERANK_CANDIDATES``: how many the base over-fetches.
            top_n: ``RERANK_TOP_N``: most results kept.
            enabled: ``RERANK_ENABLED``: False returns the base ranking.

        Raises:
            ValueError: Non-positive sizes, or enabled without a client.
        """
        if candidates <= 0 or top_n <= 0:
            raise ValueError(f"candidates and top_n must be positive, got {candidates}, {top_n}")
        if enabled and client is None:
            raise ValueError("an enabled reranked retriever needs a rerank client")
        self.base = base
        self.client = client
        self.candidates = candidates
        self.top_n = top_n
        self.enabled = enabled

    def retrieve(self, query: str, k: int) -> Retrieval:
        """The best ``min(k, top_n)`` of the base's ``max(candidates, k)`` candidates.

        Args:
            query: The user's query (what the reranker judges against).
            k: Results wanted.

        Returns:
            The reranked retrieval, or the base's top ``k`` when disabled.

        Raises:
            ModelError: The reranker call failed.
        """
        check_k(k)
        if not self.enabled or self.client is None:
            log.info(
                "RERANK_ENABLED=false: %r returns its base %r ranking without reranking",
                self.method,
                self.base.method,
            )
            base = self.base.retrieve(query, k)
            return Retrieval(
                self.method, query, base.chunks[:k], dict(base.timings_ms), base.hypothetical
            )
        client = self.client
        base = self.base.retrieve(query, max(self.candidates, k))
        timings = dict(base.timings_ms)
        pool = base.chunks
        if not pool:
            timings["rerank"] = 0.0
            return Retrieval(self.method, query, [], timings, base.hypothetical)
        results = timed(
            timings, "rerank", lambda: client.rerank(query, [c.record.content for c in pool])
        )
        scored = {r.index: r.score for r in results}
        # best score first; a tie keeps the base order; anything unscored sinks
        order = sorted(
            range(len(pool)),
            key=lambda i: (i not in scored, -scored.get(i, 0.0), i),
        )
        keep = min(k, self.top_n)
        chunks: list[RetrievedChunk] = []
        for post, i in enumerate(order[:keep], start=1):
            if i not in scored:
                break
            candidate = pool[i]
            pre = i + 1
            trace = candidate.trace or RetrievalTrace(
                fused_score=candidate.score, fused_rank=pre, final_rank=pre
            )
            trace = trace.model_copy(
                update={
                    "rerank_score": round(scored[i], 6),
                    "rerank_delta": pre - post,
                    "final_rank": post,
                }
            )
            chunks.append(
                RetrievedChunk(record=candidate.record, score=round(scored[i], 6), trace=trace)
            )
        return Retrieval(self.method, query, chunks, timings, base.hypothetical)
