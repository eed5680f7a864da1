"""``GRAPH_ENGINE`` names the engine that keeps the message graph: this maps the name
to its class and opens it on its working directory (``GRAPH_STORAGE_PATH/<name>``).

Engine modules are imported when an engine is opened, not with this module: the
LightRAG package takes about a second to import, and most processes that read
settings never touch the graph.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, cast

from varagity.config import Settings
from varagity.graph.base import EngineFormat, GraphEngine

if TYPE_CHECKING:
    from varagity.models.chat import ChatClient
    from varagity.models.embeddings import EmbeddingClient

#: ``GRAPH_ENGINE`` value -> ``module:class`` of the engine (varagity.config.GraphEngineName
#: lists the same names; a test keeps them equal).
ENGINES: dict[str, str] = {
    "lightrag": "varagity.graph.lightrag_engine:LightRAGEngine",
}


class EngineClass(Protocol):
    """What the registry needs of an engine class."""

    name: str

    @classmethod
    def open(
        cls,
        settings: Settings,
        workdir: Path,
        *,
        chat: ChatClient,
        embedder: EmbeddingClient,
        writer: bool,
    ) -> GraphEngine: ...

    @classmethod
    def installed_format(cls) -> EngineFormat: ...


class UnknownGraphEngine(ValueError):
    """``GRAPH_ENGINE`` names no registered engine."""


def engine_class(name: str) -> EngineClass:
    """The engine class registered as ``name``.

    Raises:
        UnknownGraphEngine: No engine has that name.
    """
    try:
        target = ENGINES[name]
    except KeyError:
        known = ", ".join(sorted(ENGINES))
        raise UnknownGraphEngine(
            f"GRAPH_ENGINE={name!r} is not an engine (known: {known})"
        ) from None
    module_name, _, class_name = target.partition(":")
    return cast(EngineClass, getattr(importlib.import_module(module_name), class_name))


def workdir_for(settings: Settings) -> Path:
    """The engine's working directory: ``GRAPH_STORAGE_PATH/<GRAPH_ENGINE>``."""
    return settings.graph_storage_path / settings.GRAPH_ENGINE


def running_engine_format(settings: Settings) -> EngineFormat:
    """The engine this stack would write with (name, package, installed version),
    without opening any working directory (what a backup bundle is compared with)."""
    return engine_class(settings.GRAPH_ENGINE).installed_format()


def open_engine(
    settings: Settings, *, chat: ChatClient, embedder: EmbeddingClient, writer: bool
) -> GraphEngine:
    """Open ``GRAPH_ENGINE`` on its working directory.

    Args:
        settings: Where the graph lives and how the engine extracts and retrieves.
        chat: The OpenAI-compatible chat client the engine extracts (and, with
            ``GRAPH_QUERY_KEYWORDS=llm``, finds query keywords) with.
        embedder: The embedding client for its entity, relation and chunk indexes.
        writer: True for the single writer (the graph build); False opens a reader,
            which never writes the working directory.
    """
    cls = engine_class(settings.GRAPH_ENGINE)
    return cls.open(settings, workdir_for(settings), chat=chat, embedder=embedder, writer=writer)
