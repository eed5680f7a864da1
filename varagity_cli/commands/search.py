"""``varagity search``: ranked chunks with their retrieval traces."""

from __future__ import annotations

from typing import TYPE_CHECKING

from varagity.config import RETRIEVAL_METHODS, get_settings
from varagity_cli.common import EXIT_OK, badges, open_services

if TYPE_CHECKING:
    from varagity_cli.common import Subparsers


def cmd_search(*, query: str, k: int, method: str | None) -> int:
    """Print ranked chunks with their traces."""
    with open_services(get_settings()) as services:
        result = services.retriever(method).retrieve(query, k)
        for chunk in result.chunks:
            rec = chunk.record
            assert chunk.trace is not None
            print(
                f"#{chunk.trace.final_rank} {rec.relative_path}::{rec.chunk_index} "
                f"{badges(chunk.trace)}"
            )
            print("   " + rec.content[:160].replace("\n", " "))
        print("timings (ms): " + ", ".join(f"{k}={v}" for k, v in result.timings_ms.items()))
    return EXIT_OK


def register(sub: Subparsers) -> None:
    """Add ``search``."""
    search = sub.add_parser("search", help="show ranked chunks and their traces")
    search.add_argument("query")
    search.add_argument("-k", type=int, default=5)
    search.add_argument("--method", choices=list(RETRIEVAL_METHODS))
    search.set_defaults(func=lambda a: cmd_search(query=a.query, k=a.k, method=a.method))
