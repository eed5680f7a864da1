"""``varagity bench``: ingest throughput and latency on the real embedded stack.

It starts a private stack (temporary home, free ports), generates three sets of N
text files of the same shape (llama.cpp caches prompts, so each measurement gets
documents the server has not seen), and measures:

1. the raw embedder (chunks/s straight to the embedding server) and, with
   ``--contextualize``, the raw LLM: every chunk's blurb request in-process, no stores;
2. the pipeline without Dagster: every ingest stage in-process, in the runs the folder
   sensor would make (:func:`~varagity.pipeline.ingest_batches`), each run's chunks
   embedded together as ``chunk_embeddings`` does, then (with ``--contextualize``) the
   blurb stage over the stored documents;
3. the pipeline through Dagster: files dropped into the watched folder, picked up by
   the sensors and processed by daemon-launched runs, until all are searchable and
   (with ``--contextualize``) until every chunk has its blurb;
4. file-to-searchable latency: one-page text files uploaded through the API one at a
   time (and a few dropped straight into the folder), polled through the API search,
   while the blurb runs of step 3 still hold the LLM.

Dagster overhead per file = (3 - 2 scaled to 3's chunk count) / N, over the time to
searchable; Dagster's share of wall time is that overhead over 3's wall time. Blurb
throughput is chunks per second of the stage; the prompt-cache hit share is measured
from the llama.cpp server itself (see :func:`prompt_cache_share`).
Numbers depend on the machine; this prints them, it asserts nothing.
"""

from __future__ import annotations

import hashlib
import random
import re
import shutil
import statistics
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

from varagity.config import Settings
from varagity.context.contextual import DocumentContextualizer
from varagity.ingest.parsers import ParsedDocument
from varagity.ingest.parsing import parse_file
from varagity.ingest.stages import (
    ChunkDraft,
    StoreInput,
    chunk_document,
    contextualize_document,
    embed_files,
    purge_path,
    store_documents,
)
from varagity.pipeline import ingest_batches
from varagity.records import doc_id_for
from varagity.services import Services
from varagity.stores.corpus_queries import contextualized_chunks_at_paths, relative_paths_of
from varagity_bench.private_stack import private_stack_settings
from varagity_bench.synthetic_text import sentence
from varagity_stack.supervisor import Stack

_PREFIX_HIT = re.compile(r"Llama\.generate: (\d+) prefix-match hit, remaining (\d+) prompt tokens")
_PROMPT_EVAL = re.compile(r"prompt eval time =\s*[\d.]+ ms /\s*(\d+) tokens")
_PROBES = 5


@dataclass(frozen=True, slots=True)
class CacheShare:
    """Prompt tokens the server was sent and how many it served from its cache."""

    requests: int
    prompt_tokens: int
    cached_tokens: int

    @property
    def share(self) -> float:
        """Cached / prompt tokens (0 when nothing was measured)."""
        return self.cached_tokens / self.prompt_tokens if self.prompt_tokens else 0.0

    def __str__(self) -> str:
        if not self.requests:
            return "not measured (no llama.cpp server log lines in the window)"
        return (
            f"{self.share:.0%} of {self.prompt_tokens} prompt tokens over "
            f"{self.requests} requests ({self.cached_tokens} from cache)"
        )


def _phase(what: str) -> None:
    """Say which measurement starts (a 1,000-file run takes many minutes)."""
    print(f"{time.strftime('%H:%M:%S')} measuring {what} ...", flush=True)


def prompt_cache_share(log_text: str) -> CacheShare:
    """How much of the prompts a ``llama_cpp.server`` (verbose, its default) did not
    evaluate, from its log.

    Per request the server logs ``Llama.generate: N prefix-match hit, remaining M
    prompt tokens to eval`` when it reuses the KV state of a common prefix (its live
    context, or a state restored from ``--cache``), and llama.cpp's
    ``prompt eval time = ... / M tokens`` for what it did evaluate. A request's prompt
    is N + M tokens, N of them served from the cache; a request without the first line
    evaluated its whole prompt.
    """
    requests = prompt = cached = 0
    pending = 0
    for line in log_text.splitlines():
        hit = _PREFIX_HIT.search(line)
        if hit:
            pending = int(hit.group(1))
            continue
        evaluated = _PROMPT_EVAL.search(line)
        if evaluated:
            requests += 1
            prompt += pending + int(evaluated.group(1))
            cached += pending
            pending = 0
    return CacheShare(requests, prompt, cached)


class _LogWindow:
    """The part of a log file written between :meth:`start` and :meth:`read`."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.offset = 0

    def start(self) -> None:
        self.offset = self.path.stat().st_size if self.path and self.path.exists() else 0

    def read(self) -> str:
        if self.path is None or not self.path.exists():
            return ""
        with self.path.open("rb") as fh:
            fh.seek(self.offset)
            return fh.read().decode("utf-8", errors="replace")


def generate_file(rng: random.Random, index: int, paragraphs: int) -> str:
    """A Markdown file of pseudo-random prose with one unique, searchable marker."""
    parts = [f"# Report {index}\n", f"Marker token bench{index:05d}zq identifies this file.\n"]
    for p in range(paragraphs):
        sentences = [sentence(rng, 8, 16) for _ in range(rng.randint(4, 7))]
        parts.append(f"## Section {p + 1}\n\n" + " ".join(sentences) + "\n")
    return "\n".join(parts)


def _corpus(seed: int, files: int, paragraphs: int) -> dict[str, str]:
    rng = random.Random(seed)
    return {
        f"batch/report-{seed}-{i:04d}.md": generate_file(rng, seed * 100_000 + i, paragraphs)
        for i in range(files)
    }


def _write_corpus(root: Path, texts: dict[str, str]) -> None:
    for rel, text in texts.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")


def _grouped(
    root: Path, texts: dict[str, str], settings: Settings
) -> list[tuple[ParsedDocument, list[ChunkDraft]]]:
    out = []
    for rel in texts:
        parsed = parse_file(root, rel, settings=settings)
        out.append((parsed, chunk_document(parsed, settings)))
    return out


def _chunks_of(
    root: Path, texts: dict[str, str], settings: Settings
) -> list[tuple[str, ChunkDraft]]:
    return [(p.relative_path, d) for p, drafts in _grouped(root, texts, settings) for d in drafts]


def run_ingest_benchmark(
    *,
    files: int,
    paragraphs: int,
    contextualize: bool,
    llm_log: Path | None = None,
    llm_baselines: bool = True,
    probes: int = 20,
    wait_for_blurbs: bool = True,
) -> int:
    """Run the benchmark and print the figures; returns a process exit code.

    Args:
        files: Files per generated set.
        paragraphs: Paragraphs per generated file.
        contextualize: Also measure the blurb stage (``CONTEXTUALIZE=true``).
        llm_log: The chat server's log, for the prompt-cache share when ``LLM_BASE_URL``
            points at a server the stack does not start (its own log otherwise).
        llm_baselines: With ``contextualize``, also time the blurbs without Dagster (the
            raw LLM, the blurb stage in-process); off, only the Dagster path's blurbs
            run (a third of the LLM time, for slow machines).
        probes: One-page files timed from landing to searchable through the upload
            route (and a quarter as many dropped straight into the folder).
        wait_for_blurbs: With ``contextualize``, wait for every blurb of the Dagster
            set and report the blurb stage's throughput; off, the blurb runs only load
            the machine while ingest and the probes are timed.
    """
    if files < 1:
        raise ValueError("--files must be at least 1")
    if probes < 1:
        raise ValueError("--probes must be at least 1")
    root, settings = private_stack_settings("varagity-bench-", CONTEXTUALIZE=contextualize)
    # three corpora of the same shape: llama.cpp caches prompts, so each measurement
    # gets documents the model server has not seen yet
    sets = {
        name: _corpus(seed, files, paragraphs)
        for name, seed in (("raw", 1), ("direct", 2), ("dagster", 3))
    }
    for name in ("raw", "direct"):
        _write_corpus(root / name, sets[name])
    log = _LogWindow(llm_log if settings.LLM_BASE_URL else settings.home / "logs" / "llm.log")

    stack = Stack(settings)
    print(f"starting a private stack under {root} ...", flush=True)
    try:
        stack.start()  # inside: a start cut short stops what came up
        _phase("the raw embedder")
        raw = _chunks_of(root / "raw", sets["raw"], settings)
        services = Services.open(settings.model_copy(update={"DOCS_PATH": root / "raw"}))
        try:
            t0 = time.perf_counter()
            services.embedder.embed_passages([d.content for _, d in raw])
            raw_embed_s = time.perf_counter() - t0
            raw_llm_s, raw_cache = None, CacheShare(0, 0, 0)
            if contextualize and llm_baselines:  # the LLM alone, chunk after chunk
                log.start()
                t0 = time.perf_counter()
                for parsed, drafts in _grouped(root / "raw", sets["raw"], settings):
                    situate = DocumentContextualizer(
                        services.chat,
                        parsed.text,
                        longest_chunk=max((d.content for d in drafts), key=len),
                        context_tokens=settings.LLM_CONTEXT_TOKENS,
                        max_tokens=settings.CONTEXT_MAX_TOKENS,
                    ).situate
                    for d in drafts:
                        situate(d.content)
                raw_llm_s = time.perf_counter() - t0
                raw_cache = prompt_cache_share(log.read())
        finally:
            services.close()

        _phase("the pipeline without Dagster")
        services = Services.open(settings.model_copy(update={"DOCS_PATH": root / "direct"}))
        try:
            t0 = time.perf_counter()
            doc_ids = []
            rels = list(sets["direct"])
            for batch in ingest_batches(
                rels,
                services.settings.INGEST_BATCH_SIZE,
                weight=lambda rel: (root / "direct" / rel).stat().st_size,
                max_weight=services.settings.INGEST_BATCH_BYTES,
            ):
                run = []
                for rel in batch:
                    parsed = parse_file(root / "direct", rel, settings=services.settings)
                    run.append(
                        (parsed, chunk_document(parsed, services.settings, services.embedder))
                    )
                # like chunk_embeddings: a run's chunks go to the server together
                vectors = embed_files([drafts for _, drafts in run], services.embedder)
                stored = store_documents(
                    [
                        StoreInput(parsed, drafts, v)
                        for (parsed, drafts), v in zip(run, vectors, strict=True)
                    ],
                    pg=services.pg,
                    bm25=services.bm25,
                    settings=services.settings,
                    embedding_model=services.embedder.model,
                )
                doc_ids += [r.doc_id for r in stored]
            direct_s = time.perf_counter() - t0
            t0 = time.perf_counter()
            for doc_id in doc_ids if contextualize and llm_baselines else []:
                contextualize_document(
                    doc_id,
                    pg=services.pg,
                    bm25=services.bm25,
                    chat=services.chat,
                    embedder=services.embedder,
                    settings=services.settings,
                )
            direct_ctx_s = time.perf_counter() - t0
            for rel in sets["direct"]:
                purge_path(rel, pg=services.pg, bm25=services.bm25)
        finally:
            services.close()

        _phase("the pipeline through the sensor and the daemon")
        log.start()
        t0 = time.perf_counter()
        _write_corpus(settings.docs_path, sets["dagster"])
        first_indexed = None
        services = Services.open(settings)
        try:
            # the set's doc ids, known up front: polling asks which of the ones still
            # missing are stored, not for a folder scan that hashes every file or for
            # every stored row (CPU the pipeline being timed would lose)
            left = {
                doc_id_for(rel, hashlib.sha256(text.encode("utf-8")).hexdigest())
                for rel, text in sets["dagster"].items()
            }
            while left := left - set(relative_paths_of(services.pg, list(left))):
                if first_indexed is None and len(left) < files:
                    first_indexed = time.perf_counter() - t0
                if stack.dead_child() is not None:
                    raise RuntimeError(f"{stack.dead_child()} died during the benchmark")
                time.sleep(0.5)
            dagster_s = time.perf_counter() - t0
            first_indexed = first_indexed or dagster_s

            _phase("file-to-searchable latency")
            uploaded = _probe_latencies(settings, probes, upload=True)
            dropped = _probe_latencies(settings, max(1, probes // 4), upload=False)

            blurbed_s = None
            # the set's blurbs (the probes' come after, unmeasured)
            if contextualize and wait_for_blurbs:
                while any(
                    d.relative_path in sets["dagster"]
                    for d in services.pg.documents_awaiting_context()
                ):
                    if stack.dead_child() is not None:
                        raise RuntimeError(f"{stack.dead_child()} died during the benchmark")
                    time.sleep(1.0)
                blurbed_s = time.perf_counter() - t0
            dagster_cache = prompt_cache_share(log.read())
            blurbed_chunks = _contextualized_chunks(services, sets["dagster"])
        finally:
            services.close()
        chunks = {
            name: len(
                _chunks_of(
                    settings.docs_path if name == "dagster" else root / name, sets[name], settings
                )
            )
            for name in sets
        }
    finally:
        stack.stop()
        shutil.rmtree(root, ignore_errors=True)

    n_chunks = chunks["dagster"]
    # per-file cost of going through Dagster, normalised for the sets' chunk counts
    overhead = (dagster_s - direct_s * chunks["dagster"] / chunks["direct"]) / files
    rows = [
        ("files", f"{files}"),
        ("chunks (raw / direct / dagster sets)", "{raw} / {direct} / {dagster}".format(**chunks)),
        ("contextualize", str(contextualize)),
        ("raw embedder", f"{chunks['raw'] / raw_embed_s:.1f} chunks/s"),
        (
            "pipeline to searchable, no Dagster",
            f"{files / direct_s:.2f} files/s, {chunks['direct'] / direct_s:.1f} chunks/s",
        ),
        (
            "pipeline to searchable via sensor + daemon",
            f"{files / dagster_s:.2f} files/s, {n_chunks / dagster_s:.1f} chunks/s "
            f"(first file after {first_indexed:.1f} s)",
        ),
        (
            "through Dagster / raw embedder",
            f"{(n_chunks / dagster_s) / (chunks['raw'] / raw_embed_s):.2f}x",
        ),
        ("Dagster overhead", f"{overhead:.2f} s/file ({dagster_s:.1f} s vs {direct_s:.1f} s)"),
        ("Dagster's share of wall time", f"{overhead * files / dagster_s:.0%}"),
        (
            "one-page file -> searchable, upload route",
            _percentiles(uploaded) + (", blurb runs busy meanwhile" if contextualize else ""),
        ),
        ("one-page file -> searchable, dropped in folder", _percentiles(dropped)),
    ]
    if contextualize and raw_llm_s is not None:
        rows += [
            ("blurbs, raw LLM", f"{chunks['raw'] / raw_llm_s:.2f} chunks/s"),
            ("prompt cache, raw LLM", str(raw_cache)),
            ("blurb stage, no Dagster", f"{chunks['direct'] / direct_ctx_s:.2f} chunks/s"),
        ]
    if contextualize and blurbed_s is not None:
        rows += [
            (
                "blurb stage via sensor + daemon",
                f"{blurbed_chunks / (blurbed_s - first_indexed):.2f} chunks/s "
                f"(all {blurbed_chunks} chunks after {blurbed_s:.1f} s)",
            ),
            ("prompt cache, via Dagster", str(dagster_cache)),
        ]
    width = max(len(k) for k, _ in rows)
    print()
    for key, value in rows:
        print(f"{key.ljust(width)}  {value}")
    return 0


def _probe_latencies(settings: Settings, probes: int, *, upload: bool) -> list[float]:
    """Seconds from a one-page text file landing to its marker being found over the API.

    With ``upload`` the file lands through ``POST /api/documents/upload`` (which launches
    its ingest run at once), else it is written straight into the folder (the sensor's
    next tick finds it). The clock starts when the request is sent / the file written.
    """
    latencies = []
    base = f"http://{settings.HOST}:{settings.API_PORT}"
    rng = random.Random(99 if upload else 98)
    kind = "upload" if upload else "folder"
    for trial in range(probes):
        marker = f"latency{kind}{trial}xq"
        name = f"probe-{kind}-{trial}.txt"
        page = generate_file(rng, 90_000 + trial, paragraphs=4)  # ~2,500 characters
        text = f"Probe file {trial}: the word {marker} appears here.\n\n{page}"
        t0 = time.perf_counter()
        if upload:
            httpx.post(
                f"{base}/api/documents/upload",
                files={"files": (name, text.encode(), "text/plain")},
                timeout=60,
            ).raise_for_status()
        else:
            (settings.docs_path / name).write_text(text)
        while True:
            hits = httpx.post(
                f"{base}/api/search", json={"query": marker, "k": 1, "method": "bm25"}, timeout=30
            ).json()["results"]
            if hits and hits[0]["relative_path"] == name:
                latencies.append(time.perf_counter() - t0)
                break
            if time.perf_counter() - t0 > 300:
                raise RuntimeError(f"{name} was not searchable after 300 s")
            time.sleep(0.1)
    return latencies


def _percentiles(values: list[float]) -> str:
    """p50 / p95 / max of ``values`` (nearest-rank p95)."""
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, max(0, round(0.95 * len(ordered)) - 1))]
    return (
        f"p50 {statistics.median(ordered):.1f} s, p95 {p95:.1f} s, "
        f"min {ordered[0]:.1f} s, max {ordered[-1]:.1f} s (n={len(ordered)})"
    )


def _contextualized_chunks(services: Services, paths: dict[str, str]) -> int:
    """Chunks of the files at ``paths`` that have their blurb."""
    return contextualized_chunks_at_paths(services.pg, list(paths))
