"""The throwaway stack a benchmark starts: its own home, corpus folder and free ports."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from varagity.config import Settings, load_settings
from varagity_stack.model_servers import free_port


def private_stack_settings(prefix: str, **overrides: Any) -> tuple[Path, Settings]:
    """A new temporary root and the settings of a stack living under it.

    The home is ``root/home`` and the corpus folder ``root/docs``; every port is a free
    one, so the stack never meets a running ``varagity up``. ``overrides`` are further
    settings (e.g. ``CONTEXTUALIZE=False``). The caller removes ``root`` when done.
    """
    root = Path(tempfile.mkdtemp(prefix=prefix))
    settings = load_settings(
        VARAGITY_HOME=root / "home",
        DOCS_PATH=root / "docs",
        API_PORT=free_port(),
        DAGSTER_PORT=free_port(),
        LLM_PORT=free_port(),
        EMBEDDING_PORT=free_port(),
        GRAPH_READER_PORT=free_port(),
        **overrides,
    )
    return root, settings
