"""The naive baseline every configuration must beat, re-runnable beside the matrix.

About a hundred lines anyone would write in an afternoon, kept apart from the
project's retrieval stack on purpose (no Postgres, no Tantivy, no project chunker):

* fixed windows of ``CHUNK_CHARS`` characters, no overlap, no structure;
* dense: the configured embedding model (MiniLM by default), exact cosine in numpy;
* sparse: ``bm25s`` (BM25 with Lucene's IDF) over lower-cased words whose
  camelCase / snake_case identifiers are also split into their parts, with the
  Snowball English stemmer;
* fusion: reciprocal-rank fusion, ``0.5 / (60 + rank)`` per arm, over each arm's
  top ``CANDIDATES``.

``varagity eval --naive`` prints its row under the configurations' table, scored by the
same rule (:mod:`varagity.eval.scoring`), so "beats the naive script" is a claim the
command re-checks, not a number copied from a note.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from varagity.eval.runner import ConfigResult
from varagity.eval.scoring import Passage, RetrievedText, score_query
from varagity.models.protocols import Embedder

if TYPE_CHECKING:
    from varagity.eval.suite import Suite


NAME = "naive"
CHUNK_CHARS = 800
CANDIDATES = 40
RRF_K = 60
WEIGHTS = (0.5, 0.5)
_WORD = re.compile(r"[A-Za-z0-9_]+")
_HUMP = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")


def tokenize(text: str) -> list[str]:
    """Words plus the camelCase / snake_case parts of identifiers, lower-cased."""
    out: list[str] = []
    for word in _WORD.findall(text):
        out.append(word.lower())
        parts = [p.lower() for piece in word.split("_") for p in _HUMP.findall(piece)]
        if len(parts) > 1:
            out.extend(parts)
    return out


def _stem(tokens: list[list[str]]) -> list[list[str]]:
    import Stemmer

    stemmer = Stemmer.Stemmer("english")
    return [stemmer.stemWords(t) for t in tokens]


def _chunks(suite: Suite) -> list[tuple[str, str]]:
    rows: list[tuple[str, str]] = []
    for path in sorted(p for p in suite.corpus.rglob("*") if p.is_file()):
        rel = path.relative_to(suite.corpus).as_posix()
        if any(part.startswith(".") for part in rel.split("/")):
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        for start in range(0, len(text), CHUNK_CHARS):
            piece = text[start : start + CHUNK_CHARS]
            if piece.strip():
                rows.append((rel, piece))
    return rows


def _rrf(arms: Sequence[Sequence[int]]) -> list[int]:
    scores: dict[int, float] = {}
    for weight, ranked in zip(WEIGHTS, arms, strict=True):
        for rank, key in enumerate(ranked, start=1):
            scores[key] = scores.get(key, 0.0) + weight / (RRF_K + rank)
    return sorted(scores, key=lambda key: -scores[key])


def run_naive(suite: Suite, embedder: Embedder, ks: Sequence[int]) -> ConfigResult:
    """Chunk, embed and index the suite's corpus the naive way, then score its questions.

    Args:
        suite: The suite (its corpus is read straight from disk).
        embedder: The embedding client (``embed_passages`` / ``embed_query``).
        ks: Cut-offs to report.

    Returns:
        A result shaped like a configuration's, named ``naive``.
    """
    import bm25s

    ks = tuple(sorted(set(ks)))
    result = ConfigResult(NAME, NAME, {"CHUNK_CHARS": CHUNK_CHARS}, ks)
    rows = _chunks(suite)
    matrix = np.asarray(embedder.embed_passages([t for _, t in rows]), dtype=np.float32)
    index = bm25s.BM25()
    index.index(_stem([tokenize(t) for _, t in rows]), show_progress=False)
    depth = min(max(max(ks), CANDIDATES), len(rows))
    for q in suite.queries:
        started = time.perf_counter()
        vector = np.asarray(embedder.embed_query(q.query), dtype=np.float32)
        dense = list(np.argsort(-(matrix @ vector))[:depth])
        terms = _stem([tokenize(q.query)])
        sparse: list[int] = []
        if terms[0]:
            found, _scores = index.retrieve(terms, k=depth, show_progress=False)
            sparse = [int(i) for i in found[0]]
        fused = _rrf([[int(i) for i in dense], sparse])[: max(ks)]
        result.latencies_ms.setdefault("total", []).append((time.perf_counter() - started) * 1000)
        ranked = [RetrievedText(rows[i][0], rows[i][1]) for i in fused]
        passages = [Passage(p.rel_source, p.text) for p in q.relevant]
        result.scores.append(score_query(q.id, passages, ranked))
        result.queries[q.id] = q.query
    return result
