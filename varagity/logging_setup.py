"""The one place logging is configured."""

from __future__ import annotations

import logging


def configure_logging(level: str = "INFO") -> None:
    """Timestamped, leveled logs on stderr (idempotent)."""
    root = logging.getLogger()
    if getattr(root, "_varagity_configured", False):
        root.setLevel(level)
        return
    if not root.handlers:  # a host (uvicorn, dagster, pytest) may already have set one up
        logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    root.setLevel(level)
    root._varagity_configured = True  # type: ignore[attr-defined]
    for noisy in (
        "httpx",
        "httpx2",
        "httpcore",
        "openai",
        "pgserver",
        "docling",
        "sentence_transformers",
    ):
        logging.getLogger(noisy).setLevel(logging.WARNING)
