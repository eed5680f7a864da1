"""The message sources this build has, the pick of one for a file, and an archive read
end to end into thread-day transcripts."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import tzinfo
from functools import cache
from pathlib import Path, PurePosixPath

from varagity.graph.contacts import ContactBook
from varagity.graph.forgotten import ForgetRule, read_rules, remembered
from varagity.graph.sources.base import MessageSource, UnsupportedArchiveError
from varagity.graph.transcripts import render_thread_days
from varagity.graph.types import ThreadDay


@cache
def message_sources() -> tuple[MessageSource, ...]:
    """Every message source, in the order they are asked."""
    from varagity.graph.sources.imessage import IMessageSource

    return (IMessageSource(),)


def rejections(path: Path) -> dict[str, str]:
    """Each source's reason for not reading ``path`` (empty when one reads it)."""
    reasons: dict[str, str] = {}
    for source in message_sources():
        reason = source.rejection(path)
        if reason is None:
            return {}
        reasons[source.name] = reason
    return reasons


def source_for(path: Path) -> MessageSource:
    """The source that reads ``path``, judged by content.

    Raises:
        UnsupportedArchiveError: No source does; its ``reasons`` say why per source.
    """
    reasons: dict[str, str] = {}
    for source in message_sources():
        reason = source.rejection(path)
        if reason is None:
            return source
        reasons[source.name] = reason
    raise UnsupportedArchiveError(path, reasons)


def is_companion(path: Path) -> bool:
    """Whether ``path`` belongs to another file's archive (``chat.db-wal``)."""
    return any(source.is_companion(path) for source in message_sources())


def companion_owner(name: str) -> str | None:
    """The file name a file called ``name`` would be a companion of, judged by its name
    alone (``chat.db-wal`` -> ``chat.db``); ``None`` when no source keeps a companion
    named like that. :func:`is_companion` says whether it is one on disk."""
    for source in message_sources():
        for suffix in source.companion_suffixes:
            if name.endswith(suffix) and len(name) > len(suffix):
                return name[: -len(suffix)]
    return None


def read_archive(
    root: Path,
    relative_path: str,
    *,
    tz: tzinfo | None = None,
    contacts: ContactBook | None = None,
    forgotten: Sequence[ForgetRule] | None = None,
) -> list[ThreadDay]:
    """The thread-day transcripts of the archive ``root / relative_path``, without the
    messages the user forgot (:mod:`varagity.graph.forgotten`).

    Args:
        root: ``GRAPH_DOCS_PATH``.
        relative_path: The archive under it (``/``-separated); becomes each day's
            ``source``.
        tz: Where days begin and end (:func:`varagity.graph.transcripts.graph_timezone`);
            ``None`` is this machine's local zone.
        contacts: Names for its handles (the graph build passes
            :func:`varagity.graph.contacts.load_contacts` of the archive); ``None``
            writes every handle as it is.
        forgotten: The rules to leave messages out by; ``None`` reads the graph
            folder's own (:func:`~varagity.graph.forgotten.read_rules` of ``root``).

    Raises:
        UnsupportedArchiveError: No source reads the file.
        MessageSourceError: The archive is unreadable.
        ValueError: The graph folder's forget rules are unreadable.
    """
    relative = PurePosixPath(relative_path)
    if relative.is_absolute() or ".." in relative.parts:
        raise ValueError(f"{relative_path!r} is not a path inside the graph folder")
    path = root / relative
    source = source_for(path)
    messages = source.read(path, source=relative.as_posix())
    rules = read_rules(root) if forgotten is None else forgotten
    messages = remembered(messages, rules, tz)
    return render_thread_days(messages, source=relative.as_posix(), tz=tz, contacts=contacts)
