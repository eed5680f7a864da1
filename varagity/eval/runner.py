"""Running a suite: ingest its corpus into an isolated store, then score each config.

The isolated stores (one per ingest configuration, reused while the corpus and the
ingest settings hold) are :mod:`varagity.eval.stores`. Questions are run through
:meth:`Services.retriever` and scored with :mod:`varagity.eval.scoring`; per-stage
latencies come from ``Retrieval.timings_ms``.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from varagity.config import Settings
from varagity.eval.answers import AnswerResult, evaluate_answers
from varagity.eval.configs import EvalConfig
from varagity.eval.scoring import (
    Passage,
    QueryScore,
    RetrievedText,
    fixed_width,
    mrr_at_k,
    pass_at_k,
    percentile,
    score_query,
)
from varagity.eval.stores import (
    IngestReport,
    derive_settings,
    ensure_ingested,
    isolated_settings,
    marker_path,
    store_name,
)
from varagity.eval.suite import Suite
from varagity.models.protocols import Embedder
from varagity.retrieval import RetrievalConfig, Retriever, build_retriever
from varagity.services import Services

log = logging.getLogger(__name__)

DEFAULT_KS: tuple[int, ...] = (5, 10, 20)
# Rough CPU throughputs on the reference machine (2 cores), for the up-front estimate.
CONTEXTUALIZE_CHUNKS_PER_S = 1.0
EMBED_CHUNKS_PER_S = 25.0
ANSWER_SECONDS = 10.0  # one grounded answer of the default chat model
QUERY_SECONDS = {"semantic": 0.2, "bm25": 0.02, "hybrid": 0.3, "reranked": 5.0, "hyde": 2.0}
Progress = Callable[[str], None]


@dataclass(slots=True)
class ConfigResult:
    """The scores and latencies of one configuration over a suite."""

    config: str
    method: str
    overrides: dict[str, Any]
    ks: tuple[int, ...]
    available: bool = True
    error: str | None = None
    scores: list[QueryScore] = field(default_factory=list)
    queries: dict[str, str] = field(default_factory=dict)
    latencies_ms: dict[str, list[float]] = field(default_factory=dict)
    ingest: IngestReport | None = None
    answers: AnswerResult | None = None

    @property
    def ok(self) -> bool:
        """Whether it ran and was scored."""
        return self.available and self.error is None

    def pass_at(self, k: int) -> float:
        """Pass@k (mean recall@k)."""
        return pass_at_k(self.scores, k)

    def mrr(self, k: int) -> float:
        """MRR@k."""
        return mrr_at_k(self.scores, k)

    def latency(self) -> dict[str, dict[str, float]]:
        """``{stage: {"p50": ms, "p95": ms}}``, ``total`` included."""
        return {
            stage: {
                "p50": round(percentile(values, 50), 2),
                "p95": round(percentile(values, 95), 2),
            }
            for stage, values in self.latencies_ms.items()
        }

    def missed(self, k: int) -> list[str]:
        """Ids of the questions with a relevant passage not found by rank ``k``."""
        return [s.query_id for s in self.scores if s.recall_at(k) < 1.0]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form with per-question ranks."""
        return {
            "config": self.config,
            "method": self.method,
            "overrides": {k: str(v) for k, v in self.overrides.items()},
            "available": self.available,
            "error": self.error,
            "n_queries": len(self.scores),
            "pass_at": {str(k): round(self.pass_at(k), 4) for k in self.ks},
            "mrr_at": {str(k): round(self.mrr(k), 4) for k in self.ks},
            "latency_ms": self.latency(),
            "ingest": self.ingest.to_dict() if self.ingest else None,
            "answers": self.answers.to_dict() if self.answers else None,
            "questions": [
                {
                    "id": s.query_id,
                    "query": self.queries.get(s.query_id, ""),
                    "found_ranks": list(s.found_ranks),
                    "first_rank": s.first_rank,
                }
                for s in self.scores
            ],
        }


def evaluate(
    services: Services,
    suite: Suite,
    config: EvalConfig,
    ks: Sequence[int] = DEFAULT_KS,
    retriever: Retriever | None = None,
) -> ConfigResult:
    """Run every question of ``suite`` through ``config.method`` on ``services`` and score it.

    A method the retriever registry does not know (``ValueError("unknown retrieval
    method ...")``) yields an unavailable result instead of raising. ``retriever``
    replaces ``services.retriever(config.method)`` (:func:`run_grid` builds its own).
    """
    ks = tuple(sorted(set(ks)))
    result = ConfigResult(config.name, config.method, dict(config.overrides), ks)
    if retriever is None:
        try:
            retriever = services.retriever(config.method)
        except ValueError as exc:
            if "unknown retrieval method" not in str(exc):
                raise
            result.available = False
            result.error = "not available"
            return result
    depth = max(ks)
    for q in suite.answerable:
        started = time.perf_counter()
        retrieval = retriever.retrieve(q.query, depth)
        total = (time.perf_counter() - started) * 1000
        for stage, ms in retrieval.timings_ms.items():
            result.latencies_ms.setdefault(stage, []).append(float(ms))
        result.latencies_ms.setdefault("total", []).append(total)
        ranked = [RetrievedText(c.record.relative_path, c.record.content) for c in retrieval.chunks]
        passages = [Passage(p.rel_source, p.text) for p in q.relevant]
        result.scores.append(score_query(q.id, passages, ranked))
        result.queries[q.id] = q.query
    return result


@dataclass(slots=True)
class Estimate:
    """The up-front cost estimate of a run."""

    seconds: float
    lines: list[str]


def estimate(
    base: Settings,
    suite: Suite,
    configs: Iterable[EvalConfig],
    n_queries: int,
    answers: int = 0,
) -> Estimate:
    """Rough wall time: ingest of each not-yet-ingested store, the questions, the answers.

    Args:
        base: The app's settings.
        suite: The suite (its corpus size drives the ingest estimate).
        configs: The configurations to run.
        n_queries: Retrieval questions per configuration (after ``--limit``).
        answers: Questions answered per configuration (0: no answer scoring).
    """
    chars = sum(
        p.stat().st_size
        for p in suite.corpus.rglob("*")
        if p.is_file() and not any(s.startswith(".") for s in p.relative_to(suite.corpus).parts)
    )
    fingerprint = suite.corpus_fingerprint()
    seen: set[str] = set()
    total = 0.0
    lines = []
    for config in configs:
        derived = derive_settings(base, config.overrides)
        name = store_name(suite, derived)
        stride = max(1, derived.CHUNK_SIZE - derived.CHUNK_OVERLAP)
        in_chars = ("recursive_character", "markdown_aware", "structure_aware")
        unit = 1 if derived.CHUNKING_STRATEGY in in_chars else 4
        chunks = chars / unit / stride
        ingest_s = 0.0
        note = "shared store"
        if name not in seen:
            seen.add(name)
            marker = marker_path(base, name)
            reused = (
                marker.is_file()
                and json.loads(marker.read_text() or "{}").get("fingerprint") == fingerprint
            )
            if reused:
                note = "store reused"
            else:
                ingest_s = chunks / EMBED_CHUNKS_PER_S
                if derived.CONTEXTUALIZE:
                    ingest_s += chunks / CONTEXTUALIZE_CHUNKS_PER_S
                note = f"ingest ~{chunks:.0f} chunks"
        base_method = config.overrides.get("RERANK_BASE_METHOD", derived.RERANK_BASE_METHOD)
        per_query = QUERY_SECONDS.get(config.method, 0.1)
        if config.method == "reranked" and base_method == "hyde":
            per_query += QUERY_SECONDS["hyde"]
        query_s = per_query * n_queries
        answer_s = (per_query + ANSWER_SECONDS) * answers
        total += ingest_s + query_s + answer_s
        lines.append(
            f"  {config.name:<24} {note:<26} ingest ~{format_duration(ingest_s):>7}  "
            f"queries ~{format_duration(query_s):>7}"
            + (f"  answers ~{format_duration(answer_s):>7}" if answers else "")
        )
    return Estimate(total, lines)


def format_duration(seconds: float) -> str:
    """Seconds as a short human duration (``42s``, ``3.5m``, ``1.2h``)."""
    if seconds < 60:
        return f"{seconds:.0f}s"
    if seconds < 3600:
        return f"{seconds / 60:.1f}m"
    return f"{seconds / 3600:.1f}h"


def run_eval(
    base: Settings,
    suite: Suite,
    configs: Sequence[EvalConfig],
    ks: Sequence[int] = DEFAULT_KS,
    progress: Progress | None = None,
    answer_k: int | None = None,
) -> list[ConfigResult]:
    """Ingest (or reuse) each configuration's isolated store and evaluate it.

    With ``answer_k``, each configuration also answers every question of the suite
    from its ``answer_k`` best passages and scores the answers
    (:func:`varagity.eval.answers.evaluate_answers`). A configuration that fails (a
    model server down, an unknown method) is recorded with its error; the others
    still run.
    """
    say = progress or (lambda _line: None)
    ingested: dict[str, IngestReport] = {}
    results: list[ConfigResult] = []
    for config in configs:
        say(f"[{config.name}] method={config.method} overrides={dict(config.overrides)}")
        try:
            settings = isolated_settings(base, suite, config.overrides)
        except Exception as exc:
            results.append(_failed(config, ks, exc))
            continue
        name = store_name(suite, settings)
        try:
            services = Services.open(settings)
        except Exception as exc:
            results.append(_failed(config, ks, exc))
            continue
        try:
            if name not in ingested:
                ingested[name] = ensure_ingested(services, suite, say)
                rep = ingested[name]
                say(
                    f"  store {name}: {rep.ingested} file(s) ingested, {rep.reused} reused, "
                    f"{rep.chunks} chunks ({rep.seconds:.1f}s)"
                )
            result = evaluate(services, suite, config, ks)
            result.ingest = ingested[name]
            if answer_k is not None and result.ok:
                say(f"  answering {len(suite.queries)} question(s) from {answer_k} passages")
                try:
                    result.answers = evaluate_answers(
                        services, suite, config.method, answer_k, config=config.name, progress=say
                    )
                except Exception as exc:  # keep the retrieval scores of this config
                    log.debug("answer eval of %s failed", config.name, exc_info=True)
                    result.answers = AnswerResult(
                        config.name,
                        config.method,
                        answer_k,
                        settings.LLM_MODEL,
                        error=f"{type(exc).__name__}: {exc}",
                    )
        except Exception as exc:
            log.debug("eval config %s failed", config.name, exc_info=True)
            result = _failed(config, ks, exc)
        finally:
            services.close()
        results.append(result)
    return results


class CachedQueryEmbedder:
    """Memoizes query vectors (a grid asks each question once per configuration).

    Only queries are cached: the vector of a text depends on the embedding model alone,
    not on the store, so one cache serves every store of a run.
    """

    def __init__(self, inner: Embedder, cache: dict[str, list[float]] | None = None) -> None:
        """Wrap ``inner``; ``cache`` may be shared between wrappers of the same model."""
        self.inner = inner
        self.cache: dict[str, list[float]] = {} if cache is None else cache

    def embed_query(self, text: str) -> list[float]:
        """The cached vector, embedding it on the first call."""
        vector = self.cache.get(text)
        if vector is None:
            vector = self.cache[text] = self.inner.embed_query(text)
        return vector

    def embed_passages(self, texts: Sequence[str]) -> list[list[float]]:
        """Passed through uncached."""
        return self.inner.embed_passages(texts)


GRID_METHODS = ("semantic", "bm25", "hybrid")


def run_grid(
    base: Settings,
    suite: Suite,
    configs: Sequence[EvalConfig],
    ks: Sequence[int] = DEFAULT_KS,
    progress: Progress | None = None,
    query_vectors: dict[str, list[float]] | None = None,
) -> list[ConfigResult]:
    """Score a grid of ``semantic`` / ``bm25`` / ``hybrid`` configurations cheaply.

    Unlike :func:`run_eval`, the stores are opened once per ingest configuration and
    each configuration's retriever is built from its own settings on those handles
    (:func:`varagity.retrieval.build_retriever`, the code the app runs), with the query
    vectors cached across configurations (``query_vectors``, shared between suites
    when given). Retrieval is the same as :func:`run_eval`'s; only the repeated
    embedding of each question is saved.

    Raises:
        ValueError: A configuration's method is not one of :data:`GRID_METHODS`.
    """
    say = progress or (lambda _line: None)
    bad = sorted({c.method for c in configs} - set(GRID_METHODS))
    if bad:
        raise ValueError(f"run_grid handles {', '.join(GRID_METHODS)}, not {', '.join(bad)}")
    cache: dict[str, list[float]] = {} if query_vectors is None else query_vectors
    groups: dict[str, list[EvalConfig]] = {}
    for config in configs:
        derived = derive_settings(base, config.overrides)
        groups.setdefault(store_name(suite, derived), []).append(config)
    results: dict[str, ConfigResult] = {}
    for name, members in groups.items():
        try:
            settings = isolated_settings(base, suite, members[0].overrides)
            services = Services.open(settings)
        except Exception as exc:
            for config in members:
                results[config.name] = _failed(config, ks, exc)
            continue
        try:
            report = ensure_ingested(services, suite, say)
            say(
                f"  store {name}: {report.ingested} file(s) ingested, {report.reused} reused, "
                f"{report.chunks} chunks ({report.seconds:.1f}s); {len(members)} config(s)"
            )
            embedder = CachedQueryEmbedder(services.embedder, cache)
            for config in members:
                derived = derive_settings(services.settings, config.overrides)
                retriever = build_retriever(
                    config.method,
                    RetrievalConfig.from_settings(derived),
                    pg=services.pg,
                    bm25=services.bm25,
                    embedder=embedder,
                )
                try:
                    result = evaluate(services, suite, config, ks, retriever=retriever)
                except Exception as exc:
                    log.debug("grid config %s failed", config.name, exc_info=True)
                    result = _failed(config, ks, exc)
                finally:
                    close = getattr(retriever, "close", None)
                    if close is not None:
                        close()
                result.ingest = report
                results[config.name] = result
        except Exception as exc:
            log.debug("grid store %s failed", name, exc_info=True)
            for config in members:
                results.setdefault(config.name, _failed(config, ks, exc))
        finally:
            services.close()
    return [results[c.name] for c in configs]


def _failed(config: EvalConfig, ks: Sequence[int], exc: Exception) -> ConfigResult:
    return ConfigResult(
        config.name,
        config.method,
        dict(config.overrides),
        tuple(sorted(set(ks))),
        error=f"{type(exc).__name__}: {exc}",
    )


def format_table(results: Sequence[ConfigResult], ks: Sequence[int]) -> str:
    """A fixed-width table: Pass@k per k, MRR@max k, total latency p50/p95."""
    ks = tuple(sorted(set(ks)))
    head = (
        ["config", "method", "n"]
        + [f"Pass@{k}" for k in ks]
        + [f"MRR@{ks[-1]}", "p50 ms", "p95 ms"]
    )
    rows = [head]
    for r in results:
        if not r.ok:
            rows.append([r.config, r.method, "-", (r.error or "failed")[:60]])
            continue
        lat = r.latency().get("total", {"p50": 0.0, "p95": 0.0})
        rows.append(
            [r.config, r.method, str(len(r.scores))]
            + [f"{r.pass_at(k):.3f}" for k in ks]
            + [f"{r.mrr(ks[-1]):.3f}", f"{lat['p50']:.1f}", f"{lat['p95']:.1f}"]
        )
    return fixed_width(rows)


def markdown_table(results: Sequence[ConfigResult], ks: Sequence[int]) -> str:
    """The same table in Markdown (Dagster metadata)."""
    ks = tuple(sorted(set(ks)))
    lines = [
        "| config | method | n | "
        + " | ".join(f"Pass@{k}" for k in ks)
        + f" | MRR@{ks[-1]} | p50 ms | p95 ms |",
        "|---|---|---|" + "---|" * (len(ks) + 3),
    ]
    for r in results:
        if not r.ok:
            lines.append(f"| {r.config} | {r.method} | - | {r.error} |")
            continue
        lat = r.latency().get("total", {"p50": 0.0, "p95": 0.0})
        lines.append(
            f"| {r.config} | {r.method} | {len(r.scores)} | "
            + " | ".join(f"{r.pass_at(k):.3f}" for k in ks)
            + f" | {r.mrr(ks[-1]):.3f} | {lat['p50']:.1f} | {lat['p95']:.1f} |"
        )
    return "\n".join(lines)


def write_report(
    path: Path, suite: Suite, results: Sequence[ConfigResult], ks: Sequence[int], limit: int | None
) -> Path:
    """Write the JSON report (parents created) and return its path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {
        "suite": suite.name,
        "suite_path": str(suite.root),
        "corpus": str(suite.corpus),
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "ks": list(sorted(set(ks))),
        "limit": limit,
        "n_queries": len(suite.queries),
        "results": [r.to_dict() for r in results],
    }
    path.write_text(json.dumps(payload, indent=2), encoding="utf-8")
    return path


def default_report_path(settings: Settings, suite: Suite) -> Path:
    """``VARAGITY_HOME/eval/results/<suite>-<UTC timestamp>.json``."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
    return settings.home / "eval" / "results" / f"{suite.name}-{stamp}.json"
