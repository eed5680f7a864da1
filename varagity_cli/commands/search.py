"""``varagity search``: ranked chunks with their retrieval traces."""

from __future__ import annotations

from typing import TYPE_CHECKING, TextIO

from varagity.config import RETRIEVAL_METHODS, get_settings
from varagity_cli.common import EXIT_OK, add_verbose, open_services
from varagity_cli.render import (
    badges,
    heading,
    passages_section,
    timings_section,
    trace_section,
)

if TYPE_CHECKING:
    from varagity.retrieval.base import Retrieval
    from varagity_cli.common import Subparsers


def cmd_search(*, query: str, k: int, method: str | None, verbose: int = 0) -> int:
    """Print ranked chunks with their traces (see :func:`render_search`)."""
    with open_services(get_settings()) as services:
        render_search(services.retriever(method).retrieve(query, k), verbose=verbose)
    return EXIT_OK


def render_search(result: Retrieval, *, verbose: int = 0, out: TextIO | None = None) -> None:
    """Each hit on a line with its badges and the start of its text, then the timings.

    With ``verbose`` 1 the timings line gives way to the retrieval trace table and the
    timings table; 2 adds the passage HyDE searched with (when it wrote one) and each
    hit's whole text (:mod:`varagity_cli.render`).
    """
    for chunk in result.chunks:
        rec = chunk.record
        assert chunk.trace is not None
        print(
            f"#{chunk.trace.final_rank} {rec.relative_path}::{rec.chunk_index} "
            f"{badges(chunk.trace)}",
            file=out,
        )
        print("   " + rec.content[:160].replace("\n", " "), file=out)
    if verbose == 0:
        timings = ", ".join(f"{k}={v}" for k, v in result.timings_ms.items())
        print(f"timings (ms): {timings}", file=out)
        return
    print(trace_section(result.chunks, method=result.method, query=result.query), file=out)
    print(timings_section(result.timings_ms), file=out)
    if verbose >= 2:
        if result.hypothetical is not None:
            title = "Hypothetical passage (HyDE: what the semantic arm searched with)"
            print("\n".join([heading(title), result.hypothetical.rstrip()]), file=out)
        print(passages_section(result.chunks), file=out)


def register(sub: Subparsers) -> None:
    """Add ``search``."""
    search = sub.add_parser("search", help="show ranked chunks and their traces")
    search.add_argument("query")
    search.add_argument("-k", type=int, default=5)
    search.add_argument("--method", choices=list(RETRIEVAL_METHODS))
    add_verbose(search, two="each hit's whole text and HyDE's hypothetical passage")
    search.set_defaults(
        func=lambda a: cmd_search(query=a.query, k=a.k, method=a.method, verbose=a.verbose)
    )
