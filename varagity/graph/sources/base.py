"""The message-source contract: what the graph reads from a message archive.

A message source is one archive format (iMessage ``chat.db`` first). It recognises its
files by their content, never by their name (:meth:`MessageSource.sniff`), says which
files on disk make up one archive (a SQLite database travels with its ``-wal`` and
``-shm``), and reads the archive into :class:`Message` records: conversation text only,
in thread order. The renderer (:mod:`varagity.graph.transcripts`) turns those into
thread-day transcripts; :mod:`varagity.graph.sources.registry` picks the source for a
file. A source never writes to the user's archive.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from varagity.graph.types import Message

__all__ = ["Message", "MessageSource", "MessageSourceError", "UnsupportedArchiveError"]


class MessageSourceError(ValueError):
    """An archive cannot be read; the message names the file and says why."""

    def __init__(self, path: Path | str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = Path(path)
        self.reason = reason


class UnsupportedArchiveError(MessageSourceError):
    """No message source recognises the file; :attr:`reasons` holds each source's why-not."""

    def __init__(self, path: Path | str, reasons: dict[str, str]) -> None:
        detail = "; ".join(f"{name}: {why}" for name, why in reasons.items()) or "no sources"
        super().__init__(path, f"not a supported message archive ({detail})")
        self.reasons = dict(reasons)


class MessageSource(Protocol):
    """One archive format."""

    name: str
    #: Name endings of the files kept beside an archive that belong to it
    #: (``("-wal", "-shm", "-journal")`` for a SQLite database); empty when none.
    companion_suffixes: tuple[str, ...]

    def sniff(self, path: Path) -> bool:
        """Whether ``path`` is an archive of this format, judged by its content."""
        ...

    def rejection(self, path: Path) -> str | None:
        """Why ``path`` is not an archive of this format (``None`` when it is)."""
        ...

    def archive_files(self, path: Path) -> tuple[Path, ...]:
        """The files on disk that make up the archive at ``path`` (itself first)."""
        ...

    def is_companion(self, path: Path) -> bool:
        """Whether ``path`` is part of another file's archive (a ``-wal``, a ``-shm``)
        rather than an archive of its own."""
        ...

    def read(self, path: Path, *, source: str) -> list[Message]:
        """Every message of conversation text in the archive, ordered by thread and
        time. ``source`` is the archive's name relative to ``GRAPH_DOCS_PATH``.

        Raises:
            MessageSourceError: The archive is unreadable, corrupt or not this format.
        """
        ...
