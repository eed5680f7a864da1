"""The chat engines by ``CHAT_ENGINE`` name, and the factory that builds one."""

from __future__ import annotations

from varagity.chat.base import ChatEngine
from varagity.chat.condense import CondenseContextEngine
from varagity.chat.simple import SimpleEngine
from varagity.models.protocols import Completer

#: Registry names, in the order the settings document them.
CHAT_ENGINES: tuple[str, ...] = ("simple", "condense_context")


def build_chat_engine(
    name: str,
    *,
    completer: Completer,
    condense_enabled: bool = True,
    condense_max_tokens: int = 96,
) -> ChatEngine:
    """The engine registered under ``name``.

    Args:
        name: One of :data:`CHAT_ENGINES`.
        completer: The chat model client (used by ``condense_context``).
        condense_enabled: ``CONDENSE_ENABLED``; false makes ``condense_context``
            search with the question as asked.
        condense_max_tokens: ``CONDENSE_MAX_TOKENS``, the cap on a rewrite.

    Raises:
        ValueError: ``name`` is not a registered engine.
    """
    if name == "simple":
        return SimpleEngine()
    if name == "condense_context":
        return CondenseContextEngine(
            completer, enabled=condense_enabled, max_tokens=condense_max_tokens
        )
    raise ValueError(f"Unknown chat engine {name!r}; choose one of: {', '.join(CHAT_ENGINES)}")
