"""The retriever contract: what every retrieval method returns, and the helpers all of
them share (``k`` validation, per-stage timings, single-arm traces).

The methods live one per module (:mod:`~varagity.retrieval.semantic`,
:mod:`~varagity.retrieval.bm25`, :mod:`~varagity.retrieval.hybrid`,
:mod:`~varagity.retrieval.reranked`, :mod:`~varagity.retrieval.hyde`);
:func:`varagity.retrieval.build_retriever` picks one by name. Every retriever returns
:class:`~varagity.records.RetrievedChunk` objects carrying a
:class:`~varagity.records.RetrievalTrace`, plus per-stage timings in milliseconds.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol, TypeVar

from varagity.records import ChunkRecord, RetrievalTrace, RetrievedChunk

T = TypeVar("T")


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


def timed(timings: dict[str, float], stage: str, fn: Callable[[], T]) -> T:
    """Run ``fn``, recording its wall time under ``stage`` (ms, even when it raises)."""
    start = time.perf_counter()
    try:
        return fn()
    finally:
        timings[stage] = round((time.perf_counter() - start) * 1000, 2)


def check_k(k: int) -> None:
    """Refuse a non-positive result count."""
    if k <= 0:
        raise ValueError(f"k must be positive, got {k}")


def single_arm(
    method: str,
    query: str,
    ranked: list[tuple[ChunkRecord, float]],
    arm: str,
    timings: dict[str, float],
) -> Retrieval:
    """A one-arm ranking as a :class:`Retrieval` whose traces carry ``arm``'s rank/score."""
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
