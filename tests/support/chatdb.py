"""A synthetic but realistic iMessage ``chat.db`` for the message-graph tests.

The tables and the writing are the project's own Messages writer
(:mod:`varagity.graph.sources.imessage_writer`, which the LiHua-World converter shares):
the columns macOS Messages gives them (those the reader uses and a good number it
ignores). The dates are Apple-epoch nanoseconds (or seconds, as old
databases have them), and the rows are the awkward kinds real archives hold:

* ``attributedBody``-only messages (``text`` NULL), encoded in NSArchiver's typedstream
  format byte for byte as macOS writes them (header ``streamtyped``, the
  NSAttributedString / NSObject / NSString class chain, the ``+`` byte string with its
  one-byte length, or ``0x81`` and two bytes for texts over 127 bytes, the attribute
  run and its NSDictionary / NSNumber);
* tapbacks (``associated_message_type`` 2000-2005 and a removal, 3000), a group named
  and later renamed, a member addition (``item_type`` 2 and 1), an attachment-only
  message and texts with attachment placeholders (U+FFFC);
* the last day's rows left uncheckpointed in ``chat.db-wal`` (the writer's last
  transaction).

The conversations are four threads between a few people over several days (a trip to
Lisbon being planned, a family dinner, a book club), so an extraction model has people,
places and dates to find. :func:`write_chat_db` writes all but the script's last day;
:func:`grow_chat_db` rewrites the archive with one more day (as a re-export of a grown
``chat.db`` would), which touches exactly one thread-day.
"""

from __future__ import annotations

import sqlite3
import uuid
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Literal

from varagity.graph.sources.imessage_writer import (
    DateUnit,
    apple_date,
    insert_chat,
    insert_handle,
    insert_message,
    write_archive,
)

FIRST_DAY = date(2026, 3, 2)  # a Monday
_GUIDS = uuid.UUID("6f1c2a8e-4b7d-4c1e-9a53-0d2f6e8b1c47")

ME = "Me"
MAYA = "maya.chen@icloud.com"
JONAS = "jonas.weber@icloud.com"
PRIYA = "+14155550178"
DAD = "+16175550101"
SAM = "sam.okafor@gmail.com"


# --- typedstream (NSArchiver) -------------------------------------------------------


class _Typedstream:
    """The subset of NSArchiver's writer an iMessage attributedBody needs."""

    def __init__(self) -> None:
        self.out = bytearray(b"\x04\x0bstreamtyped\x81\xe8\x03")  # v4, signature, 1000
        self.strings: list[bytes] = []
        self.objects = 0  # objects, classes and C strings share one numbering
        self.classes: dict[bytes, int] = {}

    def integer(self, value: int) -> None:
        if -110 <= value <= 127:  # one byte, unless it would read as a tag (0x80-0x91)
            self.out += value.to_bytes(1, "little", signed=True)
        elif -(2**15) <= value < 2**15:
            self.out += b"\x81" + value.to_bytes(2, "little", signed=True)
        else:
            self.out += b"\x82" + value.to_bytes(4, "little", signed=True)

    def reference(self, number: int) -> None:
        self.integer(number - 110)  # reference 0 is the byte 0x92

    def shared_string(self, value: bytes) -> None:
        if value in self.strings:
            self.reference(self.strings.index(value))
            return
        self.out.append(0x84)
        self.integer(len(value))
        self.out += value
        self.strings.append(value)

    def begin_object(self, *chain: tuple[bytes, int]) -> None:
        self.out.append(0x84)
        self.objects += 1
        for name, version in chain:
            if name in self.classes:
                self.reference(self.classes[name])
                return
            self.out.append(0x84)
            self.classes[name] = self.objects
            self.objects += 1
            self.shared_string(name)
            self.integer(version)
        self.out.append(0x85)  # a root class: no superclass

    def end_object(self) -> None:
        self.out.append(0x86)

    def nsstring(self, text: bytes) -> None:
        self.shared_string(b"@")
        self.begin_object((b"NSString", 1), (b"NSObject", 0))
        self.shared_string(b"+")
        self.integer(len(text))
        self.out += text
        self.end_object()


def attributed_body(text: str) -> bytes:
    """``text`` archived as macOS Messages archives a message's NSAttributedString: one
    attribute run (``__kIMMessagePartAttributeName`` = 0) over the whole string."""
    stream = _Typedstream()
    stream.shared_string(b"@")
    stream.begin_object((b"NSAttributedString", 0), (b"NSObject", 0))
    stream.nsstring(text.encode("utf-8"))
    stream.shared_string(b"iI")  # the run: attribute dictionary #1, length in UTF-16 units
    stream.integer(1)
    stream.integer(len(text.encode("utf-16-le")) // 2)
    stream.shared_string(b"@")
    stream.begin_object((b"NSDictionary", 0), (b"NSObject", 0))
    stream.shared_string(b"i")
    stream.integer(1)
    stream.nsstring(b"__kIMMessagePartAttributeName")
    stream.shared_string(b"@")
    stream.begin_object((b"NSNumber", 0), (b"NSValue", 0), (b"NSObject", 0))
    stream.shared_string(b"*")  # the number's type, a C string: "i"
    stream.out.append(0x84)
    stream.objects += 1
    stream.shared_string(b"i")
    stream.shared_string(b"i")
    stream.integer(0)
    stream.end_object()  # NSNumber
    stream.end_object()  # NSDictionary
    stream.end_object()  # NSAttributedString
    return bytes(stream.out)


# --- the conversations --------------------------------------------------------------


@dataclass(frozen=True)
class Thread:
    key: str
    guid: str
    service: str
    members: tuple[str, ...]
    display_name: str = ""

    @property
    def group(self) -> bool:
        return self.guid.split(";")[1] == "+"


THREADS = {
    t.key: t
    for t in (
        Thread("lisbon", "iMessage;+;chat618203554712", "iMessage", (MAYA, JONAS, PRIYA)),
        Thread("maya", f"iMessage;-;{MAYA}", "iMessage", (MAYA,)),
        Thread("dad", f"SMS;-;{DAD}", "SMS", (DAD,)),
        Thread("books", "iMessage;+;chat774120098311", "iMessage", (PRIYA, JONAS)),
    )
}

Kind = Literal["message", "tapback", "rename", "member", "attachment"]
Body = Literal["text", "both", "attributed"]


@dataclass(frozen=True)
class Row:
    """One row of the script: ``day`` counts from :data:`FIRST_DAY`, ``at`` is UTC."""

    day: int
    at: str
    thread: str
    sender: str
    text: str = ""
    body: Body = "text"
    kind: Kind = "message"
    key: str = ""  # a name a tapback can point at
    target: str = ""  # the key of the message a tapback reacts to
    reaction: int = 0  # associated_message_type
    other: str = ""  # the member a member change adds

    @property
    def guid(self) -> str:
        return str(uuid.uuid5(_GUIDS, f"{self.thread}/{self.day}/{self.at}/{self.sender}")).upper()

    @property
    def sent_at(self) -> datetime:
        hours, minutes = (int(part) for part in self.at.split(":"))
        moment = datetime.combine(FIRST_DAY, datetime.min.time(), tzinfo=UTC)
        return moment + timedelta(days=self.day, hours=hours, minutes=minutes)

    @property
    def conversation(self) -> bool:
        """Whether the row is conversation text (what a reader must return)."""
        return self.kind == "message" and bool(self.rendered_text)

    @property
    def rendered_text(self) -> str:
        """The text without attachment placeholders, as a reader should return it."""
        return " ".join(self.text.replace("\ufffc", " ").split())


LONG_BODY = (
    "We're reading “The Remains of the Day” by Kazuo Ishiguro — finish it by then, and "
    "please bring something to drink; I'll make the pasta and Priya is bringing the "
    "tiramisu she promised last time."
)

SCRIPT: tuple[Row, ...] = (
    # Monday: the trip is proposed (Maya names the new group first)
    Row(0, "18:00", "lisbon", MAYA, "Lisbon trip", kind="rename"),
    Row(
        0,
        "18:05",
        "lisbon",
        MAYA,
        "Okay team, Lisbon is happening! I'm looking at flights "
        "for Thursday March 19, back Monday the 23rd.",
    ),
    Row(
        0,
        "18:07",
        "lisbon",
        JONAS,
        "I'm in. TAP has a direct from Boston at 21:40, TP218.",
        body="attributed",
    ),
    Row(
        0,
        "18:09",
        "lisbon",
        ME,
        "Same. I can book the apartment in Alfama if everyone is "
        "okay with about 140 euros a night split four ways.",
        body="both",
        key="alfama",
    ),
    Row(
        0,
        "18:10",
        "lisbon",
        PRIYA,
        "Loved “Same. I can book the apartment in Alfama…”",
        kind="tapback",
        target="alfama",
        reaction=2000,
    ),
    Row(0, "18:12", "lisbon", PRIYA, "Yes please! Alfama is perfect, close to the tram 28 stop."),
    Row(
        0,
        "20:30",
        "maya",
        MAYA,
        "Also, can you ask your dad if we can borrow the big suitcase for Lisbon?",
        body="attributed",
    ),
    Row(0, "20:31", "maya", ME, "Will do, I'm seeing him for dinner on Wednesday.", key="dinner"),
    # Tuesday: family, the book club, a late text
    Row(
        1,
        "08:15",
        "dad",
        DAD,
        "Morning! Are you still coming for dinner Wednesday? Mom is making her lamb stew.",
    ),
    Row(
        1,
        "08:40",
        "dad",
        ME,
        "Yes, I'll be there around 7. Can Maya borrow the big blue suitcase for Lisbon?",
    ),
    Row(
        1,
        "09:02",
        "dad",
        DAD,
        "Of course. It's in the garage in Newton, I'll bring it down from the shelf.",
        body="attributed",
    ),
    Row(
        1,
        "19:00",
        "books",
        PRIYA,
        "Next book club is at Jonas's place in Cambridge on Sunday the 15th, 4pm.",
        key="bookclub",
    ),
    Row(1, "19:04", "books", JONAS, LONG_BODY, body="attributed"),
    Row(
        1,
        "19:05",
        "books",
        ME,
        "Liked “Next book club is at Jonas's place…”",
        kind="tapback",
        target="bookclub",
        reaction=2001,
    ),
    Row(1, "23:40", "dad", DAD, "Did you sign the Hartwell contract today? Call me tomorrow."),
    # Wednesday: the apartment, a new group name, Sintra
    Row(2, "12:00", "lisbon", ME, "\ufffc", kind="attachment", body="both"),
    Row(
        2,
        "12:01",
        "lisbon",
        ME,
        "That's the apartment on Rua de São Miguel, two bedrooms \ufffc and a rooftop "
        "terrace \ufffc",
        body="attributed",
    ),
    Row(2, "12:30", "lisbon", MAYA, "Lisbon crew", kind="rename"),
    Row(2, "12:31", "lisbon", JONAS, "Ha, nice name. Booked my seat on TP218, 14C.", key="seat"),
    Row(
        2,
        "12:40",
        "lisbon",
        MAYA,
        "Laughed at “Ha, nice name. Booked my seat on TP218, 14C.”",
        kind="tapback",
        target="seat",
        reaction=2003,
    ),
    Row(
        2,
        "13:10",
        "lisbon",
        PRIYA,
        "Can we do a day trip to Sintra on Saturday the 21st? Pena Palace opens at 9:30.",
        body="both",
    ),
    Row(
        2, "21:15", "maya", ME, "Dad says yes to the suitcase, I'll bring it on Friday.", key="yes"
    ),
    Row(
        2,
        "21:16",
        "maya",
        MAYA,
        "Loved “Dad says yes to the suitcase, I'll bring it on Friday.”",
        kind="tapback",
        target="yes",
        reaction=2000,
    ),
    # Thursday: Sam joins (the archive's last day: these rows stay in the -wal)
    Row(3, "09:00", "lisbon", MAYA, kind="member", other=SAM),
    Row(
        3,
        "09:05",
        "lisbon",
        SAM,
        "Hi all! Maya told me about Lisbon, I'd love to join for the weekend part.",
        body="attributed",
    ),
    Row(
        3,
        "09:10",
        "lisbon",
        MAYA,
        "Welcome Sam! We land Friday the 20th at 9:55, the apartment is at Rua de São Miguel 12.",
    ),
    Row(
        3,
        "09:12",
        "lisbon",
        ME,
        "Removed a heart from “Same. I can book the apartment…”",
        kind="tapback",
        target="alfama",
        reaction=3000,
    ),
    Row(
        3,
        "18:30",
        "dad",
        DAD,
        "Dinner was lovely. Don't forget the suitcase is by the front door.",
        body="attributed",
    ),
    # the next Monday (the grown archive's extra day): one thread only
    Row(
        7,
        "10:00",
        "maya",
        MAYA,
        "Flight update: TAP moved TP218 to 22:15 on the 19th, so we can leave work normally.",
        body="attributed",
    ),
    Row(
        7,
        "10:02",
        "maya",
        ME,
        "Great, I'll tell Jonas and Priya. Let's meet at Logan airport at 20:00.",
    ),
)
SCRIPT_DAYS: tuple[int, ...] = tuple(sorted({row.day for row in SCRIPT}))
#: Days :func:`write_chat_db` writes by default: all but the script's last.
INITIAL_DAYS = len(SCRIPT_DAYS) - 1


@dataclass
class ChatArchive:
    """A ``chat.db`` on disk and what the script put in it."""

    path: Path
    days: int
    date_unit: DateUnit = "ns"
    rows: tuple[Row, ...] = field(default=())

    @property
    def wal_rows(self) -> tuple[Row, ...]:
        """The rows left uncheckpointed in ``-wal`` (the last written day's)."""
        last = SCRIPT_DAYS[self.days - 1]
        return tuple(r for r in self.rows if r.day == last)

    @property
    def conversation(self) -> tuple[Row, ...]:
        """The rows a reader must return, in archive order."""
        return tuple(r for r in self.rows if r.conversation)

    @property
    def excluded(self) -> tuple[Row, ...]:
        """Tapbacks, group events and the attachment-only message."""
        return tuple(r for r in self.rows if not r.conversation)

    @property
    def body_only(self) -> tuple[Row, ...]:
        """Conversation rows whose text is only in ``attributedBody``."""
        return tuple(r for r in self.conversation if r.body == "attributed")

    def files(self) -> tuple[Path, ...]:
        """The database and its companions."""
        return (self.path, *(self.path.with_name(self.path.name + s) for s in ("-wal", "-shm")))


def _apple_date(moment: datetime, unit: DateUnit, index: int) -> int:
    if unit == "s":
        return apple_date(moment, "s")
    return apple_date(moment) + (index * 7_919 % 1_000) * 1_000_000  # sub-second noise


def _insert(conn: sqlite3.Connection, rows: tuple[Row, ...], unit: DateUnit, offset: int) -> None:
    handles = {h: rowid for rowid, h in conn.execute("SELECT ROWID, id FROM handle")}
    chats = {g: rowid for rowid, g in conn.execute("SELECT ROWID, guid FROM chat")}
    guid_of = {r.key: r.guid for r in SCRIPT if r.key}
    for index, row in enumerate(rows, start=offset):
        thread = THREADS[row.thread]
        chat_id = chats[thread.guid]
        when = _apple_date(row.sent_at, unit, index)
        from_me = row.sender == ME
        text: str | None = row.text
        body: bytes | None = attributed_body(row.text) if row.text else None
        if row.body == "text":
            body = None
        elif row.body == "attributed":
            text = None
        item_type, group_title, other_handle = 0, None, 0
        associated_guid, associated_type = None, 0
        if row.kind == "tapback":
            associated_guid, associated_type = f"p:0/{guid_of[row.target]}", row.reaction
        elif row.kind == "rename":
            item_type, group_title, text, body = 2, row.text, None, None
            conn.execute("UPDATE chat SET display_name = ? WHERE ROWID = ?", (row.text, chat_id))
        elif row.kind == "member":
            item_type, other_handle, text, body = 1, handles[row.other], None, None
            conn.execute(
                "INSERT OR IGNORE INTO chat_handle_join (chat_id, handle_id) VALUES (?, ?)",
                (chat_id, other_handle),
            )
        message_id = insert_message(
            conn,
            chat_id,
            guid=row.guid,
            date=when,
            text=text,
            handle_id=0 if from_me else handles[row.sender],
            is_from_me=from_me,
            service=thread.service,
            attributed_body=body,
            cache_has_attachments=int(row.kind == "attachment" or "\ufffc" in row.text),
            item_type=item_type,
            other_handle=other_handle,
            group_title=group_title,
            associated_message_guid=associated_guid,
            associated_message_type=associated_type,
        )
        if "\ufffc" in row.text:
            attachment_guid = str(uuid.uuid5(_GUIDS, "attachment/" + row.guid)).upper()
            name = f"IMG_{2040 + index}.HEIC"
            cursor = conn.execute(
                """INSERT INTO attachment (guid, created_date, filename, uti, mime_type,
                       transfer_state, is_outgoing, transfer_name, total_bytes, original_guid)
                   VALUES (?, ?, ?, 'public.heic', 'image/heic', 5, ?, ?, 1843207, ?)""",
                (
                    attachment_guid,
                    when // 1_000_000_000 if unit == "ns" else when,
                    f"~/Library/Messages/Attachments/5e/14/{attachment_guid}/{name}",
                    int(from_me),
                    name,
                    attachment_guid,
                ),
            )
            conn.execute(
                "INSERT INTO message_attachment_join (message_id, attachment_id) VALUES (?, ?)",
                (message_id, cursor.lastrowid),
            )


def _people_and_threads(conn: sqlite3.Connection) -> None:
    people = sorted({p for t in THREADS.values() for p in t.members} | {SAM})
    handles = {
        person: insert_handle(conn, person, service="SMS" if person == DAD else "iMessage")
        for person in people
    }
    for thread in THREADS.values():
        insert_chat(
            conn,
            thread.guid,
            [handles[member] for member in thread.members],
            display_name=thread.display_name,
            group_id=str(uuid.uuid5(_GUIDS, "group/" + thread.key)).upper(),
        )


def write_chat_db(
    folder: Path,
    name: str = "chat.db",
    *,
    days: int = INITIAL_DAYS,
    date_unit: DateUnit = "ns",
) -> ChatArchive:
    """Write the first ``days`` days of the script as ``folder / name`` plus its ``-wal``
    and ``-shm``, the last day's rows only in the ``-wal``; replaces an archive there."""
    if not 1 <= days <= len(SCRIPT_DAYS):
        raise ValueError(f"the script has {len(SCRIPT_DAYS)} days, not {days}")
    kept = set(SCRIPT_DAYS[:days])
    rows = tuple(r for r in SCRIPT if r.day in kept)
    last = SCRIPT_DAYS[days - 1]
    older = tuple(r for r in rows if r.day != last)
    newest = tuple(r for r in rows if r.day == last)

    def fill(conn: sqlite3.Connection) -> None:
        _people_and_threads(conn)
        _insert(conn, older, date_unit, 0)

    write_archive(folder / name, fill, lambda conn: _insert(conn, newest, date_unit, len(older)))
    return ChatArchive(path=folder / name, days=days, date_unit=date_unit, rows=rows)


def grow_chat_db(archive: ChatArchive) -> ChatArchive:
    """Re-export ``archive`` with the script's next day added (one thread's new day)."""
    return write_chat_db(
        archive.path.parent, archive.path.name, days=archive.days + 1, date_unit=archive.date_unit
    )
