"""Weighted reciprocal-rank fusion with traces.

Reciprocal-rank fusion (Cormack, Clarke and Buettcher, SIGIR 2009) scores an item by
summing ``1 / (k + rank)`` over the ranked lists it appears in (1-based ranks); the
weighted form multiplies each list's term by its arm's weight. ``k`` decides how much
the top ranks dominate: ``k = 0`` (Anthropic's contextual-retrieval cookbook,
``1 / (rank0 + 1)``) makes rank 1 worth twice rank 2, so one arm's first hit outvotes
an item both arms rank second; the classic ``k = 60`` flattens a 40-deep list until
rank 1 and rank 10 weigh almost alike. ``RRF_K`` (default 10) sits between: on the
code suite it matched ``k = 0`` and beat ``k = 60`` (see docs/architecture.md). With weights summing
to one the fused score lies in (0, 1/(k + 1)], the top meaning "first in every arm".
Raw arm scores never enter the math; they ride along on the trace.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)


@dataclass(slots=True)
class FusedItem(Generic[K]):
    """One fused identity with its per-arm ranks/scores (1-based ranks)."""

    key: K
    fused_score: float
    fused_rank: int
    arm_ranks: dict[str, int] = field(default_factory=dict)
    arm_scores: dict[str, float] = field(default_factory=dict)


def weighted_rrf(
    arms: Mapping[str, Sequence[tuple[K, float]]],
    weights: Mapping[str, float],
    *,
    k: int,
    limit: int | None = None,
) -> list[FusedItem[K]]:
    """Fuse ranked ``(key, score)`` lists; a key repeated within one arm counts once.

    An item at 1-based rank ``r`` of an arm gains ``weight / (k + r)``. Ties in fused
    score are broken by the best rank in any arm, then by the arm order given, so the
    result is deterministic.
    """
    missing = set(arms) - set(weights)
    if missing:
        raise ValueError(f"no weight for arm(s) {sorted(missing)}")
    if any(w < 0 for w in weights.values()):
        raise ValueError("fusion weights must be non-negative")
    if k < 0:
        raise ValueError(f"the RRF constant k must be non-negative, got {k}")
    if limit is not None and limit <= 0:
        raise ValueError(f"limit must be positive, got {limit}")
    items: dict[K, FusedItem[K]] = {}
    order: dict[K, int] = {}
    for arm, ranked in arms.items():
        rank = 0
        for key, score in ranked:
            if key in items and arm in items[key].arm_ranks:
                continue  # duplicate within the arm: keep its best rank
            item = items.get(key)
            if item is None:
                item = items[key] = FusedItem(key=key, fused_score=0.0, fused_rank=0)
                order[key] = len(order)
            item.fused_score += weights[arm] / (k + rank + 1)
            item.arm_ranks[arm] = rank + 1
            item.arm_scores[arm] = score
            rank += 1
    fused = sorted(
        items.values(),
        key=lambda it: (-it.fused_score, min(it.arm_ranks.values()), order[it.key]),
    )
    if limit is not None:
        fused = fused[:limit]
    for i, item in enumerate(fused, start=1):
        item.fused_rank = i
    return fused
