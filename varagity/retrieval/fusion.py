"""Weighted reciprocal-rank fusion with traces.

Reciprocal-rank fusion (Cormack, Clarke and Buettcher, SIGIR 2009) scores an item by
summing ``1 / (c + rank)`` over the ranked lists it appears in. We use the weighted
form of Anthropic's contextual-retrieval cookbook: ``weight_arm * 1 / (rank0 + 1)``
with 0-based ranks, i.e. ``c = 1`` on 1-based ranks. With weights summing to one the
fused score lies in (0, 1], 1.0 meaning "first in every arm". The small constant keeps
the top ranks decisive, which suits short candidate lists; the classic ``c = 60``
flattens them. Raw arm scores never enter the math; they ride along on the trace.
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
    limit: int | None = None,
) -> list[FusedItem[K]]:
    """Fuse ranked ``(key, score)`` lists; a key repeated within one arm counts once.

    Ties in fused score are broken by the best rank in any arm, then by the arm order
    given, so the result is deterministic.
    """
    missing = set(arms) - set(weights)
    if missing:
        raise ValueError(f"no weight for arm(s) {sorted(missing)}")
    if any(w < 0 for w in weights.values()):
        raise ValueError("fusion weights must be non-negative")
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
            item.fused_score += weights[arm] * (1.0 / (rank + 1))
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
