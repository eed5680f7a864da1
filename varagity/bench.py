"""``varagity bench``: ingest throughput and latency on the real embedded stack.

It starts a private stack (temporary home, free ports), generates N text files, and
measures, on the same text:

1. the raw embedder: chunks/s straight to the embedding server;
2. the pipeline without Dagster: every stage in-process, file after file;
3. the pipeline through Dagster: files dropped into the watched folder, picked up by
   the sensor and ingested by daemon-launched runs, until all are searchable;
4. file-to-searchable latency: one new file dropped, polled through the API.

Dagster overhead per file = (3 - 2) / N. Numbers depend on the machine; this prints
them, it asserts nothing.
"""

from __future__ import annotations

import random
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import httpx

from varagity.config import load_settings
from varagity.ingest.parsers import parse_file
from varagity.ingest.stages import (
    chunk_document,
    contextualize_document,
    ingest_file,
    purge_path,
)
from varagity.models.local_servers import free_port
from varagity.services import Services
from varagity.stack import Stack, unindexed_files

_WORDS = (
    "turbine lattice harbor ledger quantum saffron granite beacon meadow cipher orbit "
    "lantern vessel thicket copper falcon glacier ember tundra canopy marble prism "
    "quarry cobalt willow summit delta ripple anchor compass fathom kernel vector"
).split()


def generate_file(rng: random.Random, index: int, paragraphs: int) -> str:
    """A Markdown file of pseudo-random prose with one unique, searchable marker."""
    parts = [f"# Report {index}\n", f"Marker token bench{index:05d}zq identifies this file.\n"]
    for p in range(paragraphs):
        sentences = []
        for _ in range(rng.randint(4, 7)):
            words = rng.choices(_WORDS, k=rng.randint(8, 16))
            sentences.append(" ".join(words).capitalize() + ".")
        parts.append(f"## Section {p + 1}\n\n" + " ".join(sentences) + "\n")
    return "\n".join(parts)


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
    rng = random.Random(1234)
    texts = {f"batch/report-{i:04d}.md": generate_file(rng, i, paragraphs) for i in range(files)}
    direct_root = root / "direct"
    for rel, text in texts.items():
        (direct_root / rel).parent.mkdir(parents=True, exist_ok=True)
        (direct_root / rel).write_text(text, encoding="utf-8")

    stack = Stack(settings)
    print(f"starting a private stack under {root} ...", flush=True)
    stack.start()
    try:
        direct_settings = settings.model_copy(update={"DOCS_PATH": direct_root})
        services = Services.open(direct_settings)
        try:
            drafts = [
                d
                for rel in texts
                for d in chunk_document(
                    parse_file(direct_root, rel, max_bytes=settings.MAX_FILE_BYTES),
                    settings,
                )
            ]
            n_chunks = len(drafts)
            t0 = time.perf_counter()
            services.embedder.embed_passages([d.content for d in drafts])
            raw_embed_s = time.perf_counter() - t0
            raw_llm_s = None
            if contextualize:  # the LLM alone, over the same documents and chunks
                t0 = time.perf_counter()
                for rel in texts:
                    parsed = parse_file(direct_root, rel, max_bytes=settings.MAX_FILE_BYTES)
                    contextualize_document(
                        parsed, chunk_document(parsed, settings), services.chat, settings
                    )
                raw_llm_s = time.perf_counter() - t0

            t0 = time.perf_counter()
            for rel in texts:
                ingest_file(services, rel)
            direct_s = time.perf_counter() - t0
            for rel in texts:
                purge_path(rel, pg=services.pg, bm25=services.bm25)
        finally:
            services.close()

        t0 = time.perf_counter()
        for rel, text in texts.items():
            target = settings.docs_path / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
        services = Services.open(settings)
        try:
            while unindexed_files(settings, services.pg):
                if stack.dead_child() is not None:
                    raise RuntimeError(f"{stack.dead_child()} died during the benchmark")
                time.sleep(0.5)
            dagster_s = time.perf_counter() - t0
        finally:
            services.close()

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

    overhead = (dagster_s - direct_s) / files
    rows = [
        ("files", f"{files}"),
        ("chunks", f"{n_chunks}"),
        ("contextualize", str(contextualize)),
        ("raw embedder", f"{n_chunks / raw_embed_s:.1f} chunks/s"),
        (
            "raw LLM (contextualize)",
            f"{n_chunks / raw_llm_s:.2f} chunks/s"
            if raw_llm_s
            else "not measured (CONTEXTUALIZE off)",
        ),
        (
            "pipeline, no Dagster",
            f"{files / direct_s:.2f} files/s, {n_chunks / direct_s:.1f} chunks/s",
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
