"""The records every part of the message graph speaks: transcripts in, evidence out."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import datetime

#: How a message source names the archive's owner as a sender (its own messages).
OWNER = "Me"


def doc_key_for(thread_id: str, span: str) -> str:
    """The graph's identity of one transcript: ``f"{thread_id}::{span}"``.

    ``span`` is one day (``YYYY-MM-DD``) or a ``first..last`` range of days.
    """
    return f"{thread_id}::{span}"


def split_doc_key(doc_key: str) -> tuple[str, str]:
    """The ``(thread_id, span)`` a doc_key (:func:`doc_key_for`) is made of."""
    thread_id, _, span = doc_key.rpartition("::")
    return thread_id, span


@dataclass(frozen=True)
class ThreadDay:
    """One rendered transcript: a thread's messages of one day (or span of days).

    Attributes:
        thread_id: The source's stable id of the conversation (iMessage: the chat's
            ``guid``), unique across every archive of the graph corpus.
        thread_name: What a person calls the thread (display name, or its members).
        span: ``YYYY-MM-DD`` or ``first..last``.
        text: The transcript the engine reads (one line per message, sender and time).
        message_guids: The source's ids of the messages the transcript holds, in order.
        source: The archive it came from, relative to ``GRAPH_DOCS_PATH``.
        senders: Who wrote the day's messages, as the text names them, in order of
            their first message (the graph's skeleton, :mod:`varagity.graph.skeleton`).
    """

    thread_id: str
    thread_name: str
    span: str
    text: str
    message_guids: tuple[str, ...]
    source: str = ""
    senders: tuple[str, ...] = ()

    @property
    def doc_key(self) -> str:
        """:func:`doc_key_for` of this transcript."""
        return doc_key_for(self.thread_id, self.span)

    @property
    def content_sha256(self) -> str:
        """sha256 of what the engine is given for the day, :attr:`thread_name` and
        :attr:`text` (UTF-8): what the manifest compares."""
        given = f"{self.thread_name}\n{self.text}"
        return hashlib.sha256(given.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class GraphDiff:
    """What a build must do to the engine: insert ``new``, delete-then-reinsert
    ``changed``, delete ``removed`` (doc_keys)."""

    new: tuple[ThreadDay, ...] = ()
    changed: tuple[ThreadDay, ...] = ()
    removed: tuple[str, ...] = ()

    @property
    def empty(self) -> bool:
        """Nothing to do."""
        return not (self.new or self.changed or self.removed)


@dataclass(frozen=True)
class GraphEntity:
    """An entity the engine extracted (a person, place, event ...)."""

    name: str
    type: str = ""
    description: str = ""
    doc_keys: tuple[str, ...] = ()


@dataclass(frozen=True)
class GraphRelation:
    """A relation between two entities, with the days it was seen on."""

    source: str
    target: str
    description: str = ""
    keywords: str = ""
    weight: float = 1.0
    doc_keys: tuple[str, ...] = ()


@dataclass(frozen=True)
class DayCard:
    """A transcript day cited as evidence (day-grain, never message-grain)."""

    doc_key: str
    thread_name: str
    span: str
    excerpt: str
    message_guids: tuple[str, ...] = ()


@dataclass(frozen=True)
class ComputedAnswer:
    """An answer retrieval worked out from the archive itself (the order of two events
    from their days, :mod:`varagity.graph.order`; the exchange that answers, quoted,
    :mod:`varagity.graph.exchange`), written as the answer instead of the model's.

    Attributes:
        text: The answer, citing its day cards as ``[n]``.
        quoted: Each day card number it cites and the transcript lines it rests on.
    """

    text: str
    quoted: tuple[tuple[int, str], ...]


@dataclass(frozen=True)
class GraphRetrieval:
    """What graph retrieval found for a question (no answer text: the model writes
    that, unless retrieval computed it: ``computed``)."""

    entities: tuple[GraphEntity, ...] = ()
    relations: tuple[GraphRelation, ...] = ()
    days: tuple[DayCard, ...] = ()
    mode: str = "mix"
    extra: dict[str, object] = field(default_factory=dict)
    computed: ComputedAnswer | None = None


@dataclass(frozen=True)
class Message:
    """One message of conversation text, as a message source read it (what the
    renderer, :mod:`varagity.graph.transcripts`, turns into :class:`ThreadDay`).

    Attributes:
        guid: The source's stable id of the message.
        thread_id: The source's stable id of its conversation (iMessage: the chat guid).
        thread_name: What a person calls the conversation.
        sender: Who wrote it: a handle (phone number, e-mail) or :data:`OWNER`.
        sent_at: When it was sent, timezone-aware (UTC from the iMessage source).
        text: The text, without attachment placeholders; never empty.
    """

    guid: str
    thread_id: str
    thread_name: str
    sender: str
    sent_at: datetime
    text: str
