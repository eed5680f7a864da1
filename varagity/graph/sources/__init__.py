"""Message sources: archive formats the message graph reads (iMessage ``chat.db`` first).

:mod:`~varagity.graph.sources.base` is the contract, :mod:`~varagity.graph.sources.registry`
picks a source for a file by its content and reads an archive into thread-day
transcripts.
"""

from varagity.graph.sources.base import (
    Message,
    MessageSource,
    MessageSourceError,
    UnsupportedArchiveError,
)
from varagity.graph.sources.registry import (
    companion_owner,
    is_companion,
    message_sources,
    read_archive,
    rejections,
    source_for,
)

__all__ = [
    "Message",
    "MessageSource",
    "MessageSourceError",
    "UnsupportedArchiveError",
    "companion_owner",
    "is_companion",
    "message_sources",
    "read_archive",
    "rejections",
    "source_for",
]
