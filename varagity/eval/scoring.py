"""The chunker-independent scoring rule of the suites' README, as pure functions.

* Runs of whitespace collapse to one space in passages and chunks.
* A relevant passage is *found at rank r* when the retrieved chunks ranked ``1..r``
  that come from the passage's ``rel_source`` together cover at least 50% of its
  characters, counting only common blocks of at least 20 characters
  (:class:`difflib.SequenceMatcher` matching blocks; union of covered intervals).
* ``Pass@k`` is mean recall@k over queries; ``MRR@k`` is the mean of ``1 / first rank``
  at which any relevant passage is found (0 when none is found by rank ``k``).

``SequenceMatcher`` runs with ``autojunk=False``: its popularity heuristic would treat
every common letter of a chunk over 200 characters as junk and miss real overlaps.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

MIN_BLOCK = 20
MIN_COVERAGE = 0.5
_WS = re.compile(r"\s+")


@dataclass(frozen=True, slots=True)
class RetrievedText:
    """A retrieved chunk as the scorer sees it: its corpus-relative file and text."""

    rel_source: str
    text: str


@dataclass(frozen=True, slots=True)
class Passage:
    """A relevant passage as the scorer sees it."""

    rel_source: str
    text: str


@dataclass(frozen=True, slots=True)
class QueryScore:
    """Where each relevant passage of one query was found (``None``: not by max rank)."""

    query_id: str
    found_ranks: tuple[int | None, ...]

    @property
    def first_rank(self) -> int | None:
        """Smallest rank at which any relevant passage is found."""
        ranks = [r for r in self.found_ranks if r is not None]
        return min(ranks) if ranks else None

    def recall_at(self, k: int) -> float:
        """Share of the relevant passages found at rank ``<= k``."""
        if not self.found_ranks:
            return 0.0
        hits = sum(1 for r in self.found_ranks if r is not None and r <= k)
        return hits / len(self.found_ranks)

    def reciprocal_rank_at(self, k: int) -> float:
        """``1 / first_rank`` when that is ``<= k``, else 0."""
        first = self.first_rank
        return 1.0 / first if first is not None and first <= k else 0.0


def normalize(text: str) -> str:
    """Collapse every run of whitespace to one space and strip the ends."""
    return _WS.sub(" ", text).strip()


@lru_cache(maxsize=65536)
def _blocks(passage: str, chunk: str, min_block: int) -> tuple[tuple[int, int], ...]:
    matcher = difflib.SequenceMatcher(None, passage, chunk, autojunk=False)
    return tuple((b.a, b.a + b.size) for b in matcher.get_matching_blocks() if b.size >= min_block)


def covered_intervals(
    passage: str, chunk: str, *, min_block: int = MIN_BLOCK
) -> list[tuple[int, int]]:
    """Intervals of the (normalized) passage covered by blocks of ``chunk`` of ``min_block``+.

    Args:
        passage: Normalized passage text.
        chunk: Normalized chunk text.
        min_block: Shortest common block that counts.

    Returns:
        Half-open ``(start, end)`` intervals in passage coordinates.
    """
    if len(passage) < min_block or len(chunk) < min_block:
        return []
    return list(_blocks(passage, chunk, min_block))


def union_length(intervals: Sequence[tuple[int, int]]) -> int:
    """Total length covered by a set of half-open intervals."""
    total = 0
    end = -1
    for start, stop in sorted(intervals):
        if stop <= end:
            continue
        total += stop - max(start, end)
        end = stop
    return total


def coverage(passage: str, chunks: Sequence[str], *, min_block: int = MIN_BLOCK) -> float:
    """Share of ``passage`` covered by the union of the chunks' common blocks (normalized)."""
    p = normalize(passage)
    if not p:
        return 0.0
    intervals: list[tuple[int, int]] = []
    for chunk in chunks:
        intervals.extend(covered_intervals(p, normalize(chunk), min_block=min_block))
    return union_length(intervals) / len(p)


def found_rank(
    passage: Passage,
    retrieved: Sequence[RetrievedText],
    *,
    min_block: int = MIN_BLOCK,
    min_coverage: float = MIN_COVERAGE,
) -> int | None:
    """The smallest rank ``r`` at which chunks ``1..r`` of the same file cover the passage.

    Args:
        passage: The golden passage.
        retrieved: Retrieved chunks, best first (rank 1 is ``retrieved[0]``).
        min_block: Shortest common block that counts.
        min_coverage: Share of the passage's characters that must be covered.

    Returns:
        The rank, or ``None`` when the whole list does not cover enough.
    """
    p = normalize(passage.text)
    if not p:
        return None
    intervals: list[tuple[int, int]] = []
    for rank, chunk in enumerate(retrieved, start=1):
        if chunk.rel_source != passage.rel_source:
            continue
        intervals.extend(covered_intervals(p, normalize(chunk.text), min_block=min_block))
        if union_length(intervals) >= min_coverage * len(p):
            return rank
    return None


def score_query(
    query_id: str, relevant: Sequence[Passage], retrieved: Sequence[RetrievedText]
) -> QueryScore:
    """Where each relevant passage of one query is found in a ranked list."""
    return QueryScore(query_id, tuple(found_rank(p, retrieved) for p in relevant))


def pass_at_k(scores: Sequence[QueryScore], k: int) -> float:
    """Mean recall@k over queries (the cookbook's "Pass@k"); 0 for no queries."""
    return sum(s.recall_at(k) for s in scores) / len(scores) if scores else 0.0


def mrr_at_k(scores: Sequence[QueryScore], k: int) -> float:
    """Mean reciprocal rank of the first relevant passage found by rank ``k``."""
    return sum(s.reciprocal_rank_at(k) for s in scores) / len(scores) if scores else 0.0


def percentile(values: Sequence[float], pct: float) -> float:
    """Linear-interpolated percentile (``pct`` in 0..100); 0.0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    pos = (len(ordered) - 1) * pct / 100.0
    low = int(pos)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


def fixed_width(rows: Sequence[Sequence[str]]) -> str:
    """``rows`` (the first is the header) as a fixed-width table with a rule under the
    header; a shorter row (a failed configuration's message) leaves its cells out."""
    head = rows[0]
    widths = [max(len(row[i]) for row in rows if i < len(row)) for i in range(len(head))]
    out = []
    for n, row in enumerate(rows):
        out.append("  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip())
        if n == 0:
            out.append("  ".join("-" * w for w in widths))
    return "\n".join(out)
