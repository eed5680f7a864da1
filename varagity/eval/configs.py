"""Named evaluation configurations: a retrieval method plus settings overrides.

Configurations that differ only in retrieval settings share one ingest; those that
change an ingest setting (``CONTEXTUALIZE``, ``CHUNKING_STRATEGY``...) get their own
isolated store. The ``_ctx`` variants contextualize every chunk with the chat model,
which is slow on CPU (SmolLM2: about one chunk per second).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, get_args

from varagity.config import ChunkingStrategy


@dataclass(frozen=True, slots=True)
class EvalConfig:
    """One configuration: a name, the retrieval method and the settings it overrides."""

    name: str
    method: str
    overrides: Mapping[str, Any] = field(default_factory=dict)

    @property
    def contextualized(self) -> bool:
        """Whether its ingest writes contextual blurbs."""
        return bool(self.overrides.get("CONTEXTUALIZE", False))


def _cfg(name: str, method: str, **overrides: Any) -> EvalConfig:
    return EvalConfig(name, method, {"CONTEXTUALIZE": False, **overrides})


CONFIGS: dict[str, EvalConfig] = {
    c.name: c
    for c in (
        _cfg("semantic", "semantic"),
        _cfg("semantic_ctx", "semantic", CONTEXTUALIZE=True),
        _cfg("bm25", "bm25"),
        _cfg("bm25_ctx", "bm25", CONTEXTUALIZE=True),
        _cfg("hybrid", "hybrid"),
        _cfg("hybrid_ctx", "hybrid", CONTEXTUALIZE=True),
        # retrieval levers, each one setting away from the defaults
        _cfg("hybrid_structure", "hybrid", CHUNKING_STRATEGY="structure_aware"),
        _cfg("hybrid_no_headers", "hybrid", CHUNK_HEADERS=False),
        _cfg("hybrid_800", "hybrid", CHUNK_SIZE=800, CHUNK_OVERLAP=100),
        _cfg("hybrid_rrf0", "hybrid", RRF_K=0),
        _cfg("hybrid_rrf60", "hybrid", RRF_K=60),
        _cfg("hybrid_0.8", "hybrid", SEMANTIC_WEIGHT=0.8, BM25_WEIGHT=0.2),
        # the defaults before issue 10 (on today's BM25 analysis)
        _cfg(
            "hybrid_legacy",
            "hybrid",
            CHUNK_SIZE=800,
            CHUNK_OVERLAP=100,
            CHUNK_HEADERS=False,
            SEMANTIC_WEIGHT=0.8,
            BM25_WEIGHT=0.2,
            RRF_K=0,
        ),
        _cfg("reranked", "reranked"),
        _cfg("hyde", "hyde"),
        _cfg("hyde_rerank", "reranked", RERANK_BASE_METHOD="hyde"),
    )
}

MATRIX: tuple[str, ...] = tuple(CONFIGS)

CHUNKING_STRATEGIES: tuple[str, ...] = tuple(get_args(ChunkingStrategy))


def get_config(name: str) -> EvalConfig:
    """The named configuration.

    Raises:
        KeyError: Unknown name (the message lists the known ones).
    """
    try:
        return CONFIGS[name]
    except KeyError:
        raise KeyError(
            f"unknown eval config {name!r}; choose one of {', '.join(CONFIGS)}"
        ) from None


def chunker_sweep(method: str = "hybrid") -> list[EvalConfig]:
    """``method`` (contextualization off) over every chunking strategy."""
    return [
        _cfg(f"{method}@{strategy}", method, CHUNKING_STRATEGY=strategy)
        for strategy in CHUNKING_STRATEGIES
    ]
