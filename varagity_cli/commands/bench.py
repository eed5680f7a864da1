"""``varagity bench`` and its kin (``bench-scale``, ``bench-backup``, ``bench-load``,
``bench-parsing``, ``bench-previews``): benchmarks that print numbers, assert nothing."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from varagity_cli.common import EXIT_OK, exit_on_sigterm

if TYPE_CHECKING:
    from varagity_cli.common import Subparsers


def cmd_bench(
    *,
    files: int,
    paragraphs: int,
    contextualize: bool,
    llm_log: str | None,
    no_llm_baselines: bool,
    probes: int,
    no_blurb_wait: bool,
) -> int:
    """Run the ingest benchmark."""
    from varagity_bench.ingest import run_ingest_benchmark

    exit_on_sigterm()
    return run_ingest_benchmark(
        files=files,
        paragraphs=paragraphs,
        contextualize=contextualize,
        llm_log=Path(llm_log) if llm_log else None,
        llm_baselines=not no_llm_baselines,
        probes=probes,
        wait_for_blurbs=not no_blurb_wait,
    )


def cmd_bench_scale(*, chunks: int, real: int, queries: int, hnsw: str, ef_search: str) -> int:
    """Hybrid latency, HNSW recall, build times and memory over a generated 100k corpus."""
    from varagity_bench.scale import run_scale_benchmark

    def setting(text: str) -> tuple[int, int]:
        m, _, efc = text.partition(":")
        return int(m), int(efc)

    exit_on_sigterm()
    return run_scale_benchmark(
        chunks=chunks,
        real=real,
        queries=queries,
        hnsw=[setting(s) for s in hnsw.split(",")],
        ef_search=[int(x) for x in ef_search.split(",")],
    )


def cmd_bench_backup(*, documents: int, chunks_per_doc: int) -> int:
    """Export and restore throughput of a generated document corpus."""
    from varagity_bench.backup import run_backup_benchmark

    exit_on_sigterm()
    return run_backup_benchmark(documents=documents, chunks_per_document=chunks_per_doc)


def cmd_bench_load(
    *,
    chats: int | None,
    files: int | None,
    during_blurbs: bool,
    url: str | None,
    api_key: str | None,
    answer_tokens: int,
) -> int:
    """Run the concurrent-chat load benchmark."""
    from varagity_bench.load import run_blurb_benchmark, run_load_benchmark

    exit_on_sigterm()
    if during_blurbs:
        return run_blurb_benchmark(
            chats=chats or 8,
            files=files or 4,
            url=url,
            api_key=api_key,
            answer_tokens=answer_tokens,
        )
    return run_load_benchmark(
        chats=chats or 20,
        files=files or 20,
        url=url,
        api_key=api_key,
        answer_tokens=answer_tokens,
    )


def cmd_bench_parsing(*, pages: int, files: int, chars: int) -> int:
    """Parser and chunker throughput: PDF text layer, OCR per engine, office formats."""
    from varagity_bench.chunking import bench_chunkers
    from varagity_bench.office import bench_office
    from varagity_bench.pdf import bench_pdf

    pdf = bench_pdf(pages)
    print(f"PDF text layer: {pdf['text_layer_pages_per_s']} pages/s ({pages} pages)")
    for engine, rate in pdf.get("ocr_pages_per_s", {}).items():
        recall = pdf.get("ocr_word_recall", {}).get(engine)
        print(f"OCR {engine}: {rate} pages/s at {pdf['ocr_dpi']} dpi (word recall {recall})")
    for engine, reason in pdf.get("unavailable", {}).items():
        print(f"OCR {engine}: not measured ({reason})")
    for fmt, rate in bench_office(files).items():
        print(f"{fmt}: {rate:.1f} files/s")
    for strategy, rate in bench_chunkers(chars).items():
        print(f"chunking {strategy}: {rate:.1f} chunks/s")
    return EXIT_OK


def cmd_bench_previews(*, pages: int) -> int:
    """Page-preview latency per format: first render, next page, cached."""
    from varagity_bench.previews import bench_previews

    result = bench_previews(pages)
    labels = {
        "text_pdf": "text PDF",
        "scanned_pdf": f"scanned PDF (OCR {result['ocr_engine']})",
        "pptx": "PowerPoint (LibreOffice)",
    }
    for key, label in labels.items():
        if key in result:
            t = result[key]
            print(
                f"{label}: first {t['first_ms']} ms, next page {t['next_page_ms']} ms, "
                f"cached {t['cached_ms']} ms ({pages} pages)"
            )
    for key, reason in result["unavailable"].items():
        print(f"{labels[key]}: not measured ({reason})")
    return EXIT_OK


def register(sub: Subparsers) -> None:
    """Add ``bench``, ``bench-scale``, ``bench-backup``, ``bench-load``,
    ``bench-parsing`` and ``bench-previews``."""
    bench = sub.add_parser("bench", help="ingest benchmark: files/s, chunks/s, Dagster overhead")
    bench.add_argument("--files", type=int, default=20)
    bench.add_argument("--paragraphs", type=int, default=6)
    bench.add_argument("--contextualize", action="store_true")
    bench.add_argument(
        "--llm-log",
        help="log of the chat server at LLM_BASE_URL (for the prompt-cache share); "
        "the stack's own server log when LLM_BASE_URL is unset",
    )
    bench.add_argument(
        "--no-llm-baselines",
        action="store_true",
        help="with --contextualize, time blurbs only through Dagster (skip the raw LLM and "
        "in-process blurb baselines: a third of the LLM time)",
    )
    bench.add_argument(
        "--probes",
        type=int,
        default=20,
        help="one-page files timed from upload to searchable (a quarter as many more "
        "dropped straight into the folder)",
    )
    bench.add_argument(
        "--no-blurb-wait",
        action="store_true",
        help="with --contextualize, do not wait for the Dagster set's blurbs (no blurb "
        "throughput; the blurb runs still load the machine during the measurements)",
    )
    bench.set_defaults(
        func=lambda a: cmd_bench(
            files=a.files,
            paragraphs=a.paragraphs,
            contextualize=a.contextualize,
            llm_log=a.llm_log,
            no_llm_baselines=a.no_llm_baselines,
            probes=a.probes,
            no_blurb_wait=a.no_blurb_wait,
        )
    )

    scale = sub.add_parser(
        "bench-scale",
        help="hybrid latency per stage vs the raw parts, HNSW recall, build times and "
        "memory over a generated 100k-chunk corpus",
    )
    scale.add_argument("--chunks", type=int, default=100_000)
    scale.add_argument("--real", type=int, default=1000, help="chunks embedded by the real server")
    scale.add_argument("--queries", type=int, default=60)
    scale.add_argument(
        "--hnsw", default="16:64,16:128,24:64", help="m:ef_construction builds to compare"
    )
    scale.add_argument("--ef-search", default="40,64,100,200")
    scale.set_defaults(
        func=lambda a: cmd_bench_scale(
            chunks=a.chunks, real=a.real, queries=a.queries, hnsw=a.hnsw, ef_search=a.ef_search
        )
    )

    backup = sub.add_parser(
        "bench-backup",
        help="backup export and restore throughput (chunks/s) and bundle size per 1,000 "
        "chunks over a generated corpus",
    )
    backup.add_argument("--documents", type=int, default=200)
    backup.add_argument("--chunks-per-doc", type=int, default=20)
    backup.set_defaults(
        func=lambda a: cmd_bench_backup(documents=a.documents, chunks_per_doc=a.chunks_per_doc)
    )

    load = sub.add_parser(
        "bench-load",
        help="N concurrent SSE chats during an ingest: errors, time to retrieval/done p50/p95",
    )
    load.add_argument("--chats", type=int, help="chats (default 20; 8 with --during-blurbs)")
    load.add_argument(
        "--files", type=int, help="files uploaded (default 20; 4 with --during-blurbs)"
    )
    load.add_argument(
        "--during-blurbs",
        action="store_true",
        help="instead: first token of a chat asked alone while files are contextualized vs idle",
    )
    load.add_argument("--url", help="load a running API instead of a private stack")
    load.add_argument("--api-key", help="the running API's API_KEY")
    load.add_argument(
        "--answer-tokens", type=int, default=64, help="LLM_MAX_TOKENS of the private stack"
    )
    load.set_defaults(
        func=lambda a: cmd_bench_load(
            chats=a.chats,
            files=a.files,
            during_blurbs=a.during_blurbs,
            url=a.url,
            api_key=a.api_key,
            answer_tokens=a.answer_tokens,
        )
    )

    parsing = sub.add_parser(
        "bench-parsing", help="parser, OCR and chunking throughput on generated files"
    )
    parsing.add_argument("--pages", type=int, default=6, help="pages per generated PDF")
    parsing.add_argument("--files", type=int, default=10, help="files per office format")
    parsing.add_argument("--chars", type=int, default=200_000, help="text size for chunkers")
    parsing.set_defaults(
        func=lambda a: cmd_bench_parsing(pages=a.pages, files=a.files, chars=a.chars)
    )

    previews = sub.add_parser(
        "bench-previews",
        help="evidence page-preview latency: text PDF, scanned PDF, PowerPoint (first, cached)",
    )
    previews.add_argument("--pages", type=int, default=6, help="pages per generated file")
    previews.set_defaults(func=lambda a: cmd_bench_previews(pages=a.pages))
