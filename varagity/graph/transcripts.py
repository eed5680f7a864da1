"""Messages become thread-day transcripts: the unit the graph engine reads and cites.

One :class:`~varagity.graph.types.ThreadDay` per conversation per calendar day, the day
taken in ``GRAPH_TIMEZONE`` (default: this machine's zone), so a chat at 23:30 belongs
to the evening it happened in. Its text is one line per message, ``[HH:MM] sender:
text``, with no heading of its own: the engine puts the thread and the day above it in
the words it extracts best from (a second heading was once extracted as an entity).
Rendering is pure and deterministic: the same messages always give byte-identical
text, so a day's content hash changes only when its messages (or its name) do, which
is what makes the manifest diff (:mod:`varagity.graph.manifest`) re-extract only the
days that changed.

With a :class:`~varagity.graph.contacts.ContactBook` (the contacts file beside the
archives), a sender is written by name instead of handle, and so is each handle in a
thread named by its members; the owner stays ``Me``, a handle the book does not name
stays as it is. A changed book thus changes the text, and the content hash, of exactly
the days whose people it renames: those are the days the next build re-extracts.

Every doc_key is a single day (``thread::YYYY-MM-DD``). Spans of several days
(``first..last``) are allowed by the contract but not produced: nothing measured yet
says that gluing short days together extracts better, and single days keep a grown
archive's diff to the day that grew.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import date, datetime, tzinfo
from zoneinfo import ZoneInfo

from varagity.config import Settings
from varagity.graph.contacts import ContactBook
from varagity.graph.types import Message, ThreadDay

#: A line of a transcript as :func:`render_day` writes it: ``head`` (the clock and who
#: wrote it, ``sender``) and ``text``.
MESSAGE_LINE = re.compile(r"^(?P<head>\[\d{1,2}:\d{2}\]\s*(?P<sender>[^:\n]*):\s?)(?P<text>.*)$")
_WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


def graph_timezone(settings: Settings) -> tzinfo | None:
    """``GRAPH_TIMEZONE`` as a zone, ``None`` (this machine's zone) when unset."""
    name = settings.GRAPH_TIMEZONE.strip()
    return ZoneInfo(name) if name else None


def local_time(moment: datetime, tz: tzinfo | None) -> datetime:
    """``moment`` on the wall clock of ``tz`` (``None``: this machine's zone, with the
    offset that held at that moment, summer time included)."""
    return moment.astimezone(tz) if tz is not None else moment.astimezone()


def _one_line(text: str) -> str:
    return " ".join(part.strip() for part in text.splitlines() if part.strip())


def weekday_of(span: str) -> str:
    """``span`` with the weekday named when it is one day (``Monday 2026-03-02``)."""
    try:
        day = date.fromisoformat(span)
    except ValueError:
        return span.replace("..", " to ")
    return f"{_WEEKDAYS[day.weekday()]} {span}"


def _sender(message: Message, contacts: ContactBook | None) -> str:
    """Who wrote ``message`` as a transcript line names them."""
    return _one_line(contacts.label(message.sender) if contacts else message.sender)


def render_day(
    messages: Iterable[Message], tz: tzinfo | None, contacts: ContactBook | None = None
) -> str:
    """The transcript text of one thread's day (messages in the order given), each
    sender by the name ``contacts`` gives it when it gives one."""
    lines = []
    for message in messages:
        clock = local_time(message.sent_at, tz).strftime("%H:%M")
        lines.append(f"[{clock}] {_sender(message, contacts)}: {_one_line(message.text)}")
    return "\n".join(lines) + "\n"


def render_thread_days(
    messages: Iterable[Message],
    *,
    source: str = "",
    tz: tzinfo | None = None,
    contacts: ContactBook | None = None,
) -> list[ThreadDay]:
    """One transcript per thread per local day, ordered by doc_key.

    Args:
        messages: Conversation text from a message source (any order; a day's messages
            are put in time order, ties kept as given).
        source: The archive they came from (relative to ``GRAPH_DOCS_PATH``).
        tz: Where days begin and end; ``None`` is this machine's zone.
        contacts: Names for handles (:func:`varagity.graph.contacts.load_contacts`):
            senders and member-named threads are written with them.
    """
    days: dict[tuple[str, date], list[Message]] = {}
    for message in messages:
        key = (message.thread_id, local_time(message.sent_at, tz).date())
        days.setdefault(key, []).append(message)
    rendered: list[ThreadDay] = []
    for (thread_id, day), group in days.items():
        group.sort(key=lambda m: m.sent_at)
        thread_name = group[-1].thread_name
        if contacts:
            thread_name = contacts.thread_name(thread_name)
        rendered.append(
            ThreadDay(
                thread_id=thread_id,
                thread_name=thread_name,
                span=day.isoformat(),
                text=render_day(group, tz, contacts),
                message_guids=tuple(m.guid for m in group),
                source=source,
                senders=tuple(dict.fromkeys(_sender(m, contacts) for m in group)),
            )
        )
    rendered.sort(key=lambda d: d.doc_key)
    return rendered
