"""The one place logging is configured: every process of the stack (the CLI, the API, the
embedding server, the Dagster UI's front) calls :func:`configure_logging` and nothing
else calls ``logging.basicConfig``."""

from __future__ import annotations

import logging

#: The format of every log line.
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
#: This project's packages: their loggers open to DEBUG at verbosity 2.
OWN_LOGGERS = (
    "varagity",
    "varagity_api",
    "varagity_assets",
    "varagity_bench",
    "varagity_cli",
    "varagity_stack",
)
#: Libraries that log a line per request or per file at INFO: kept at WARNING.
NOISY_LOGGERS = (
    "httpx",
    "httpx2",
    "httpcore",
    "openai",
    "pgserver",
    "docling",
    "sentence_transformers",
)


def configure_logging(level: str = "INFO", *, verbose: int = 0) -> None:
    """Timestamped, leveled logs on stderr (idempotent: a second call sets the levels).

    Args:
        level: The root level (``LOG_LEVEL``).
        verbose: The command's ``--verbose``; at 2 this project's own loggers log at
            DEBUG whatever ``level`` is (the libraries' stay at ``level``).
    """
    root = logging.getLogger()
    if not getattr(root, "_varagity_configured", False):
        if not root.handlers:  # a host (uvicorn, dagster, pytest) may already have set one up
            logging.basicConfig(level=level, format=LOG_FORMAT)
        root._varagity_configured = True  # type: ignore[attr-defined]
        for noisy in NOISY_LOGGERS:
            logging.getLogger(noisy).setLevel(logging.WARNING)
    root.setLevel(level)
    debug = verbose >= 2
    if debug or getattr(root, "_varagity_debug", False):  # open them, or close what we opened
        for name in OWN_LOGGERS:
            logging.getLogger(name).setLevel(logging.DEBUG if debug else logging.NOTSET)
        root._varagity_debug = debug  # type: ignore[attr-defined]
