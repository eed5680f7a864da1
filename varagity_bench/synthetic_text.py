"""Pseudo-random English-looking text for the benchmarks (deterministic per seed)."""

from __future__ import annotations

import random

WORDS = (
    "turbine lattice harbor ledger quantum saffron granite beacon meadow cipher orbit "
    "lantern vessel thicket copper falcon glacier ember tundra canopy marble prism "
    "quarry cobalt willow summit delta ripple anchor compass fathom kernel vector"
).split()


def sentence(rng: random.Random, min_words: int, max_words: int) -> str:
    """One capitalised sentence of ``min_words``..``max_words`` words."""
    return " ".join(rng.choices(WORDS, k=rng.randint(min_words, max_words))).capitalize() + "."
