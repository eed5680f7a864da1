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


@dataclass(frozen=True, slots=True)
class Grid:
    """The retrieval settings :func:`grid_configs` crosses (``varagity eval-cv``).

    Chunk settings need an ingest per value (an isolated store each); the fusion
    settings are read at query time and share it.
    """

    chunks: tuple[tuple[int, int], ...] = ((1200, 200),)
    """``(CHUNK_SIZE, CHUNK_OVERLAP)`` pairs."""
    semantic_weights: tuple[float, ...] = (0.4,)
    """``SEMANTIC_WEIGHT`` values (``BM25_WEIGHT`` is one minus it)."""
    rrf_ks: tuple[int, ...] = (10,)
    arm_candidates: tuple[int, ...] = (40,)
    methods: tuple[str, ...] = ("semantic", "bm25", "hybrid")


def grid_name(
    method: str, chunk: tuple[int, int], w: float = 0.0, rrf: int = 0, arm: int = 0
) -> str:
    """A grid point's name: ``hybrid c1200/200 w0.4 k10 n40``, ``bm25 c1200/200``."""
    name = f"{method} c{chunk[0]}/{chunk[1]}"
    if method == "hybrid":
        name += f" w{w:g} k{rrf} n{arm}"
    return name


def grid_configs(grid: Grid) -> list[EvalConfig]:
    """Every point of ``grid`` as a configuration (contextualization off).

    ``semantic`` and ``bm25`` get one point per chunk setting (fusion does not touch
    them); ``hybrid`` one per chunk setting, weight, RRF constant and candidate depth.
    """
    out: list[EvalConfig] = []
    for chunk in grid.chunks:
        size, overlap = chunk
        ingest = {"CHUNK_SIZE": size, "CHUNK_OVERLAP": overlap}
        for method in grid.methods:
            if method != "hybrid":
                out.append(_cfg(grid_name(method, chunk), method, **ingest))
                continue
            for w in grid.semantic_weights:
                for rrf in grid.rrf_ks:
                    for arm in grid.arm_candidates:
                        out.append(
                            _cfg(
                                grid_name(method, chunk, w, rrf, arm),
                                method,
                                **ingest,
                                SEMANTIC_WEIGHT=w,
                                BM25_WEIGHT=round(1.0 - w, 10),
                                RRF_K=rrf,
                                ARM_CANDIDATES=arm,
                            )
                        )
    return out


def default_grid_name() -> str:
    """The grid name of the shipped defaults (the field defaults of ``Settings``)."""
    from varagity.config import Settings

    fields = Settings.model_fields

    def d(name: str) -> Any:
        return fields[name].default

    return grid_name(
        d("RETRIEVAL_METHOD"),
        (d("CHUNK_SIZE"), d("CHUNK_OVERLAP")),
        d("SEMANTIC_WEIGHT"),
        d("RRF_K"),
        d("ARM_CANDIDATES"),
    )
