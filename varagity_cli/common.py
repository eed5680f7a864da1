"""What the command modules share: exit statuses, the ``error:`` line, the services a
command opens, SIGTERM handling, the ``--verbose`` option and the subparsers type."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, TypeAlias

if TYPE_CHECKING:
    from varagity.config import Settings
    from varagity.services import Services

    Subparsers: TypeAlias = argparse._SubParsersAction[argparse.ArgumentParser]

EXIT_OK = 0
EXIT_FAILED = 1
"""The work failed, or a check found a problem."""
EXIT_USAGE = 2
"""Refused before any work: bad options or settings, an unknown name."""
EXIT_INTERRUPTED = 130
"""Ctrl-C."""
EXIT_TERMINATED = 143
"""SIGTERM (:func:`exit_on_sigterm`)."""


def fail(message: str, code: int = EXIT_FAILED) -> int:
    """Write ``error: message`` to stderr; ``code``, for the command to return."""
    print(f"error: {message}", file=sys.stderr)
    return code


@contextmanager
def open_services(settings: Settings) -> Iterator[Services]:
    """The stores and model clients a command works with, closed when it is done."""
    from varagity.services import Services

    services = Services.open(settings)
    try:
        yield services
    finally:
        services.close()


def exit_on_sigterm() -> None:
    """Make SIGTERM (a ``timeout``'s, a service manager's) exit through the command's
    ``finally`` blocks, as Ctrl-C does: the stack or model server a benchmark starts runs
    in sessions of its own and would outlive a process that SIGTERM ends outright."""
    import signal

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(EXIT_TERMINATED))


def add_verbose(
    parser: argparse.ArgumentParser,
    two: str = "the prompt sent to the model and its raw output",
) -> None:
    """Add ``-v/--verbose 0|1|2`` (:mod:`varagity_cli.render` says what each level shows;
    ``two`` is what level 2 adds for this command; it also logs this project's modules
    at DEBUG)."""
    parser.add_argument(
        "-v",
        "--verbose",
        type=int,
        choices=(0, 1, 2),
        default=0,
        metavar="{0,1,2}",
        help="0: the results (default); 1: also the retrieval trace table and the time of "
        f"each stage; 2: also {two}, and DEBUG logs",
    )
