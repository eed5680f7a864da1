"""The ``varagity`` console script: the top-level parser built from the command groups
(:mod:`varagity_cli.commands`, one module each), then the chosen command run with the
settings checked and logging set up."""

from __future__ import annotations

import argparse
import logging
import sys

from varagity.config import SettingsError, get_settings
from varagity.logging_setup import configure_logging
from varagity_cli.commands import (
    ask,
    backup,
    bench,
    chaos,
    chat,
    doctor,
    eval_cv,
    evaluation,
    feedback,
    forget,
    graph,
    models,
    reingest,
    search,
    topology,
    up,
)
from varagity_cli.commands import eval as eval_group
from varagity_cli.common import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_USAGE

DESCRIPTION = (
    "The ``varagity`` command: ``up``, ``doctor``, ``chaos``, ``ask``, ``chat``, ``search``,\n"
    "``reingest``, ``graph``, ``backup``, ``evaluation``, ``bench``, ``eval``, ``feedback``,\n"
    "``models``."
)

log = logging.getLogger("varagity")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (exposed for tests): each command's ``func`` runs it."""
    parser = argparse.ArgumentParser(prog="varagity", description=DESCRIPTION)
    sub = parser.add_subparsers(dest="command", required=True)
    up.register(sub)
    doctor.register(sub)
    chaos.register(sub)
    ask.register(sub)
    chat.register(sub)
    search.register(sub)
    reingest.register(sub)
    graph.register(sub)
    forget.register(sub)
    backup.register(sub)
    evaluation.register(sub)
    bench.register(sub)
    models.register(sub)
    eval_group.register(sub)
    feedback.register(sub)
    eval_cv.register(sub)
    topology.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``varagity`` console script."""
    args = build_parser().parse_args(argv)
    try:
        settings = get_settings()
    except SettingsError as exc:
        print(exc, file=sys.stderr)
        return EXIT_USAGE
    configure_logging(settings.LOG_LEVEL, verbose=getattr(args, "verbose", 0))
    try:
        return int(args.func(args))
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except Exception as exc:
        log.debug("command failed", exc_info=True)
        print(f"error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return EXIT_FAILED


if __name__ == "__main__":
    sys.exit(main())
