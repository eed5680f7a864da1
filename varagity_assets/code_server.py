"""The code server of the embedded stack: ``dagster api grpc`` with warm run workers.

Dagster's code server starts every run in a fresh ``spawn`` process that imports
Dagster, the code location and everything the location pulls in (openai, numpy,
psycopg, ...) before the first step runs: measured 2-3 s idle and ~6.5 s on two busy
cores, paid by every ingest run and so by every new file's time to searchable.

This server is the same code server with one difference: its run workers are forked
from a ``forkserver`` that imported those modules once (:data:`WARM_MODULES`). A run
still gets its own process (a crash or ``kill -9`` takes down that run only), the
server still tracks it as a :class:`multiprocessing.Process`, and its cleanup thread
still sees a dead worker and fails its run, so run monitoring frees its slots as before.

``varagity up`` starts it (``python -m varagity_assets.code_server --port N
--module-name varagity_assets.definitions --location-name varagity``, the arguments of
``dagster api grpc``) and points the webserver and the daemon at it through a
``grpc_server`` workspace entry.
"""

from __future__ import annotations

import multiprocessing
import sys
from collections.abc import Sequence
from multiprocessing import forkserver
from typing import Any

WARM_MODULES = (
    # what a run worker executes: the run/step machinery and the Postgres instance storage
    "dagster._grpc.impl",
    "dagster._core.execution.api",
    "dagster_postgres",
    "varagity_assets.compute_logs",
    # the code location, built (every defs/ module imported, the component tree and
    # its schemas made), and what its ingest steps import when they first run
    "varagity_assets.warm_definitions",
    "varagity.ingest.parsing",
    "varagity.ingest.parsers.text",
    "charset_normalizer",
    # the ingest job's data-quality checks: great-expectations alone takes ~5 s of CPU
    # to import (over 20 s wall on two busy cores), once per run without this
    "great_expectations",
    "varagity.quality",
)
"""Imported once by the forkserver; every run worker forked from it starts with them."""


def warm_context() -> Any:
    """A ``forkserver`` multiprocessing context that preloads :data:`WARM_MODULES`."""
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(list(WARM_MODULES))
    return ctx


def use_warm_workers() -> None:
    """Make every code server created from now on start its runs from :func:`warm_context`.

    Dagster's ``DagsterApiServer`` picks its run-process context (``spawn``) in its
    constructor and offers no setting for it; this replaces it right after.
    """
    from dagster._grpc.server import DagsterApiServer

    init = DagsterApiServer.__init__
    if getattr(init, "_varagity_warm", False):
        return
    ctx = warm_context()

    def __init__(self: DagsterApiServer, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        self._mp_ctx = ctx

    __init__._varagity_warm = True  # type: ignore[attr-defined]
    DagsterApiServer.__init__ = __init__  # type: ignore[method-assign]


def main(argv: Sequence[str] | None = None) -> None:
    """Run ``dagster api grpc`` with ``argv`` (default: this process's arguments)."""
    from dagster._cli import main as dagster_main

    use_warm_workers()
    # start the forkserver (and its imports) now, beside the server's own start-up,
    # rather than on the first run
    forkserver.ensure_running()
    sys.argv = ["dagster", "api", "grpc", *(sys.argv[1:] if argv is None else argv)]
    dagster_main()


if __name__ == "__main__":
    main()
