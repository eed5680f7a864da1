"""``varagity bench``: ingest throughput and latency on the real embedded stack.

It starts a private stack (temporary home, free ports), generates three sets of N
text files of the same shape (llama.cpp caches prompts, so each measurement gets
documents the server has not seen), and measures:

1. the raw embedder (chunks/s straight to the embedding server) and, with
   ``--contextualize``, the raw LLM (the situating-context calls alone);
2. the pipeline without Dagster: every stage in-process, file after file;
3. the pipeline through Dagster: files dropped into the watched folder, picked up by
   the sensor and ingested by daemon-launched runs, until all are searchable;
4. file-to-searchable latency: one new file dropped, polled through the API.

Dagster overhead per file = (3 - 2 scaled to 3's chunk count) / N. Numbers depend on
the machine; this prints them, it asserts nothing.
"""

from __future__ import annotations

import random
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import httpx

from varagity.config import Settings, load_settings
from varagity.ingest.parsers import ParsedDocument, parse_file
from varagity.ingest.stages import (
    ChunkDraft,
    chunk_document,
    contextualize_document,
    ingest_file,
    purge_path,
)
from varagity.models.local_servers import free_port
from varagity.services import Services
from varagity.stack import Stack, unindexed_files
from varagity.synthetic_text import sentence


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


def run_ingest_benchmark(*, files: int, paragraphs: int, contextualize: bool) -> int:
    """Run the benchmark and print the figures; returns a process exit code."""
    if files < 1:
        raise ValueError("--files must be at least 1")
    root = Path(tempfile.mkdtemp(prefix="varagity-bench-"))
    settings = load_settings(
        VARAGITY_HOME=root / "home",
        DOCS_PATH=root / "docs",
        CONTEXTUALIZE=contextualize,
        API_PORT=free_port(),
        DAGSTER_PORT=free_port(),
        LLM_PORT=free_port(),
        EMBEDDING_PORT=free_port(),
    )
    # three corpora of the same shape: llama.cpp caches prompts, so each measurement
    # gets documents the model server has not seen yet
    sets = {
        name: _corpus(seed, files, paragraphs)
        for name, seed in (("raw", 1), ("direct", 2), ("dagster", 3))
    }
    for name in ("raw", "direct"):
        _write_corpus(root / name, sets[name])

    stack = Stack(settings)
    print(f"starting a private stack under {root} ...", flush=True)
    stack.start()
    try:
        raw = _chunks_of(root / "raw", sets["raw"], settings)
        services = Services.open(settings.model_copy(update={"DOCS_PATH": root / "raw"}))
        try:
            t0 = time.perf_counter()
            services.embedder.embed_passages([d.content for _, d in raw])
            raw_embed_s = time.perf_counter() - t0
            raw_llm_s = None
            if contextualize:  # the LLM alone, document by document
                t0 = time.perf_counter()
                for parsed, drafts in _grouped(root / "raw", sets["raw"], settings):
                    contextualize_document(parsed, drafts, services.chat, settings)
                raw_llm_s = time.perf_counter() - t0
        finally:
            services.close()

        services = Services.open(settings.model_copy(update={"DOCS_PATH": root / "direct"}))
        try:
            t0 = time.perf_counter()
            for rel in sets["direct"]:
                ingest_file(services, rel)
            direct_s = time.perf_counter() - t0
            for rel in sets["direct"]:
                purge_path(rel, pg=services.pg, bm25=services.bm25)
        finally:
            services.close()

        t0 = time.perf_counter()
        _write_corpus(settings.docs_path, sets["dagster"])
        services = Services.open(settings)
        try:
            while unindexed_files(settings, services.pg):
                if stack.dead_child() is not None:
                    raise RuntimeError(f"{stack.dead_child()} died during the benchmark")
                time.sleep(0.5)
            dagster_s = time.perf_counter() - t0
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

        latencies = []
        api = f"http://{settings.HOST}:{settings.API_PORT}/api/search"
        for trial in range(3):
            marker = f"latencyprobe{trial}xq"
            path = settings.docs_path / f"probe-{trial}.txt"
            t0 = time.perf_counter()
            path.write_text(f"Probe file {trial}: the word {marker} appears here.\n")
            while True:
                hits = httpx.post(
                    api, json={"query": marker, "k": 1, "method": "bm25"}, timeout=30
                ).json()["results"]
                if hits and hits[0]["relative_path"] == path.name:
                    latencies.append(time.perf_counter() - t0)
                    break
                if time.perf_counter() - t0 > 300:
                    raise RuntimeError(f"{path.name} was not searchable after 300 s")
                time.sleep(0.25)
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
            "raw LLM (contextualize)",
            f"{n_chunks / raw_llm_s:.2f} chunks/s"
            if raw_llm_s
            else "not measured (CONTEXTUALIZE off)",
        ),
        (
            "pipeline, no Dagster",
            f"{files / direct_s:.2f} files/s, {chunks['direct'] / direct_s:.1f} chunks/s",
        ),
        (
            "pipeline via sensor + daemon",
            f"{files / dagster_s:.2f} files/s, {n_chunks / dagster_s:.1f} chunks/s",
        ),
        ("Dagster overhead", f"{overhead:.2f} s/file ({dagster_s:.1f} s vs {direct_s:.1f} s)"),
        (
            "file landed -> searchable",
            f"median {statistics.median(latencies):.1f} s "
            f"(runs: {', '.join(f'{x:.1f}' for x in latencies)})",
        ),
    ]
    width = max(len(k) for k, _ in rows)
    print()
    for key, value in rows:
        print(f"{key.ljust(width)}  {value}")
    return 0
