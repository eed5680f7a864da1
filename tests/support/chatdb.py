"""A synthetic but realistic iMessage ``chat.db`` for the message-graph tests.

The tables have the columns macOS Messages gives them (those the reader uses and a
good number it ignores), the dates are Apple-epoch nanoseconds (or seconds, as old
databases have them), and the rows are the awkward kinds real archives hold:

* ``attributedBody``-only messages (``text`` NULL), encoded in NSArchiver's typedstream
  format byte for byte as macOS writes them (header ``streamtyped``, the
  NSAttributedString / NSObject / NSString class chain, the ``+`` byte string with its
  one-byte length, or ``0x81`` and two bytes for texts over 127 bytes, the attribute
  run and its NSDictionary / NSNumber);
* tapbacks (``associated_message_type`` 2000-2005 and a removal, 3000), a group named
  and later renamed, a member addition (``item_type`` 2 and 1), an attachment-only
  message and texts with attachment placeholders (U+FFFC);
* the last day's rows left uncheckpointed in ``chat.db-wal``: the writing connection
  stays open, with automatic checkpoints off, while the database, its ``-wal`` and its
  ``-shm`` are copied into place.

The conversations are four threads between a few people over several days (a trip to
Lisbon being planned, a family dinner, a book club), so an extraction model has people,
places and dates to find. :func:`write_chat_db` writes all but the script's last day;
:func:`grow_chat_db` rewrites the archive with one more day (as a re-export of a grown
``chat.db`` would), which touches exactly one thread-day.
"""

from __future__ import annotations

import shutil
import sqlite3
import tempfile
import uuid
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Literal

APPLE_EPOCH = datetime(2001, 1, 1, tzinfo=UTC)
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


# --- the schema ------------------------------------------------------------------------

SCHEMA = """
CREATE TABLE _SqliteDatabaseProperties (key TEXT, value TEXT, UNIQUE(key));
CREATE TABLE handle (ROWID INTEGER PRIMARY KEY AUTOINCREMENT UNIQUE, id TEXT NOT NULL,
    country TEXT, service TEXT NOT NULL, uncanonicalized_id TEXT,
    person_centric_id TEXT, UNIQUE (id, service));
CREATE TABLE chat (ROWID INTEGER PRIMARY KEY AUTOINCREMENT, guid TEXT UNIQUE NOT NULL,
    style INTEGER, state INTEGER, account_id TEXT, properties BLOB, chat_identifier TEXT,
    service_name TEXT, room_name TEXT, account_login TEXT, is_archived INTEGER DEFAULT 0,
    last_addressed_handle TEXT, display_name TEXT, group_id TEXT,
    is_filtered INTEGER DEFAULT 0, successful_query INTEGER, engram_id TEXT,
    server_change_token TEXT, ck_sync_state INTEGER DEFAULT 0, original_group_id TEXT,
    last_read_message_timestamp INTEGER DEFAULT 0, cloudkit_record_id TEXT,
    last_addressed_sim_id TEXT, is_blackholed INTEGER DEFAULT 0,
    syndication_date INTEGER DEFAULT 0, syndication_type INTEGER DEFAULT 0,
    is_recovered INTEGER DEFAULT 0, is_deleting_incoming_messages INTEGER DEFAULT 0);
CREATE TABLE message (ROWID INTEGER PRIMARY KEY AUTOINCREMENT, guid TEXT UNIQUE NOT NULL,
    text TEXT, replace INTEGER DEFAULT 0, service_center TEXT, handle_id INTEGER DEFAULT 0,
    subject TEXT, country TEXT, attributedBody BLOB, version INTEGER DEFAULT 0,
    type INTEGER DEFAULT 0, service TEXT, account TEXT, account_guid TEXT,
    error INTEGER DEFAULT 0, date INTEGER, date_read INTEGER, date_delivered INTEGER,
    is_delivered INTEGER DEFAULT 0, is_finished INTEGER DEFAULT 0,
    is_emote INTEGER DEFAULT 0, is_from_me INTEGER DEFAULT 0, is_empty INTEGER DEFAULT 0,
    is_delayed INTEGER DEFAULT 0, is_auto_reply INTEGER DEFAULT 0,
    is_prepared INTEGER DEFAULT 0, is_read INTEGER DEFAULT 0,
    is_system_message INTEGER DEFAULT 0, is_sent INTEGER DEFAULT 0,
    has_dd_results INTEGER DEFAULT 0, is_service_message INTEGER DEFAULT 0,
    is_forward INTEGER DEFAULT 0, was_downgraded INTEGER DEFAULT 0,
    is_archive INTEGER DEFAULT 0, cache_has_attachments INTEGER DEFAULT 0,
    cache_roomnames TEXT, was_data_detected INTEGER DEFAULT 0,
    was_deduplicated INTEGER DEFAULT 0, is_audio_message INTEGER DEFAULT 0,
    is_played INTEGER DEFAULT 0, date_played INTEGER, item_type INTEGER DEFAULT 0,
    other_handle INTEGER DEFAULT 0, group_title TEXT, group_action_type INTEGER DEFAULT 0,
    share_status INTEGER DEFAULT 0, share_direction INTEGER DEFAULT 0,
    is_expirable INTEGER DEFAULT 0, expire_state INTEGER DEFAULT 0,
    message_action_type INTEGER DEFAULT 0, message_source INTEGER DEFAULT 0,
    associated_message_guid TEXT, associated_message_type INTEGER DEFAULT 0,
    balloon_bundle_id TEXT, payload_data BLOB, expressive_send_style_id TEXT,
    associated_message_range_location INTEGER DEFAULT 0,
    associated_message_range_length INTEGER DEFAULT 0, time_expressive_send_played INTEGER,
    message_summary_info BLOB, ck_sync_state INTEGER DEFAULT 0, ck_record_id TEXT,
    ck_record_change_tag TEXT, destination_caller_id TEXT, is_corrupt INTEGER DEFAULT 0,
    reply_to_guid TEXT, sort_id INTEGER, is_spam INTEGER DEFAULT 0,
    has_unseen_mention INTEGER DEFAULT 0, thread_originator_guid TEXT,
    thread_originator_part TEXT, syndication_ranges TEXT, synced_syndication_ranges TEXT,
    was_delivered_quietly INTEGER DEFAULT 0, did_notify_recipient INTEGER DEFAULT 0,
    date_retracted INTEGER, date_edited INTEGER, was_detonated INTEGER DEFAULT 0,
    part_count INTEGER, is_stewie INTEGER DEFAULT 0, is_kt_verified INTEGER DEFAULT 0,
    is_sos INTEGER DEFAULT 0, is_critical INTEGER DEFAULT 0,
    bia_reference_id TEXT DEFAULT NULL, fallback_hash TEXT DEFAULT NULL);
CREATE TABLE attachment (ROWID INTEGER PRIMARY KEY AUTOINCREMENT, guid TEXT UNIQUE NOT NULL,
    created_date INTEGER DEFAULT 0, start_date INTEGER DEFAULT 0, filename TEXT, uti TEXT,
    mime_type TEXT, transfer_state INTEGER DEFAULT 0, is_outgoing INTEGER DEFAULT 0,
    user_info BLOB, transfer_name TEXT, total_bytes INTEGER DEFAULT 0,
    is_sticker INTEGER DEFAULT 0, sticker_user_info BLOB, attribution_info BLOB,
    hide_attachment INTEGER DEFAULT 0, ck_sync_state INTEGER DEFAULT 0,
    ck_server_change_token_blob BLOB, ck_record_id TEXT, original_guid TEXT UNIQUE NOT NULL,
    is_commsafety_sensitive INTEGER DEFAULT 0);
CREATE TABLE chat_handle_join (chat_id INTEGER REFERENCES chat (ROWID) ON DELETE CASCADE,
    handle_id INTEGER REFERENCES handle (ROWID) ON DELETE CASCADE, UNIQUE(chat_id, handle_id));
CREATE TABLE chat_message_join (chat_id INTEGER REFERENCES chat (ROWID) ON DELETE CASCADE,
    message_id INTEGER REFERENCES message (ROWID) ON DELETE CASCADE,
    message_date INTEGER DEFAULT 0, PRIMARY KEY (chat_id, message_id));
CREATE TABLE message_attachment_join (message_id INTEGER REFERENCES message (ROWID)
    ON DELETE CASCADE, attachment_id INTEGER REFERENCES attachment (ROWID) ON DELETE CASCADE,
    UNIQUE(message_id, attachment_id));
CREATE TABLE deleted_messages (ROWID INTEGER PRIMARY KEY AUTOINCREMENT UNIQUE,
    guid TEXT NOT NULL);
CREATE INDEX message_idx_handle ON message(handle_id, date);
CREATE INDEX chat_message_join_idx_message_date_id_chat_id
    ON chat_message_join(chat_id, message_date, message_id);
"""


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
    date_unit: Literal["ns", "s"] = "ns"
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


def _apple_date(moment: datetime, unit: str, index: int) -> int:
    seconds = int((moment - APPLE_EPOCH).total_seconds())
    if unit == "s":
        return seconds
    return seconds * 1_000_000_000 + (index * 7_919 % 1_000) * 1_000_000  # sub-second noise


def _insert(conn: sqlite3.Connection, rows: tuple[Row, ...], unit: str, offset: int) -> None:
    handles = {h: rowid for rowid, h in conn.execute("SELECT ROWID, id FROM handle")}
    chats = {g: rowid for rowid, g in conn.execute("SELECT ROWID, guid FROM chat")}
    guid_of = {r.key: r.guid for r in SCRIPT if r.key}
    for index, row in enumerate(rows, start=offset):
        thread = THREADS[row.thread]
        chat_id = chats[thread.guid]
        when = _apple_date(row.sent_at, unit, index)
        from_me = row.sender == ME
        handle_id = 0 if from_me else handles[row.sender]
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
        cursor = conn.execute(
            """INSERT INTO message (guid, text, handle_id, attributedBody, service, account,
                   date, date_read, date_delivered, is_delivered, is_finished, is_from_me,
                   is_read, is_sent, cache_has_attachments, item_type, other_handle,
                   group_title, associated_message_guid, associated_message_type,
                   destination_caller_id, part_count, sort_id)
               VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 1, 1, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1, 0)""",
            (
                row.guid,
                text,
                handle_id,
                body,
                thread.service,
                "E:me@icloud.com",
                when,
                0 if from_me else when + 60,
                when + 2 if from_me else 0,
                int(from_me),
                int(not from_me),
                int(from_me),
                int(row.kind == "attachment" or "\ufffc" in row.text),
                item_type,
                other_handle,
                group_title,
                associated_guid,
                associated_type,
                "me@icloud.com",
            ),
        )
        message_id = cursor.lastrowid
        conn.execute(
            "INSERT INTO chat_message_join (chat_id, message_id, message_date) VALUES (?, ?, ?)",
            (chat_id, message_id, when),
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


def _build(
    folder: Path, rows: tuple[Row, ...], wal_rows: tuple[Row, ...], unit: str
) -> sqlite3.Connection:
    conn = sqlite3.connect(folder / "chat.db", isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.executescript(SCHEMA)
    conn.execute("BEGIN")
    conn.execute(
        "INSERT INTO _SqliteDatabaseProperties VALUES ('_ClientVersion', '17001'), "
        "('counter_in_all', '0')"
    )
    people = sorted({p for t in THREADS.values() for p in t.members} | {SAM})
    for person in people:
        service = "SMS" if person == DAD else "iMessage"
        conn.execute(
            "INSERT INTO handle (id, country, service, uncanonicalized_id) VALUES (?, 'us', ?, ?)",
            (person, service, person if "@" in person else None),
        )
    handles = {h: rowid for rowid, h in conn.execute("SELECT ROWID, id FROM handle")}
    for thread in THREADS.values():
        identifier = thread.guid.split(";")[2]
        cursor = conn.execute(
            """INSERT INTO chat (guid, style, state, account_id, chat_identifier, service_name,
                   room_name, account_login, display_name, group_id, last_addressed_handle)
               VALUES (?, ?, 3, ?, ?, ?, ?, 'E:me@icloud.com', ?, ?, 'me@icloud.com')""",
            (
                thread.guid,
                43 if thread.group else 45,
                str(uuid.uuid5(_GUIDS, "account")).upper(),
                identifier,
                thread.service,
                identifier if thread.group else None,
                thread.display_name,
                str(uuid.uuid5(_GUIDS, "group/" + thread.key)).upper(),
            ),
        )
        for member in thread.members:
            conn.execute(
                "INSERT INTO chat_handle_join (chat_id, handle_id) VALUES (?, ?)",
                (cursor.lastrowid, handles[member]),
            )
    _insert(conn, rows, unit, 0)
    conn.execute("COMMIT")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.execute("PRAGMA wal_autocheckpoint = 0")
    conn.execute("BEGIN")
    _insert(conn, wal_rows, unit, len(rows))
    conn.execute("COMMIT")
    return conn


def write_chat_db(
    folder: Path,
    name: str = "chat.db",
    *,
    days: int = INITIAL_DAYS,
    date_unit: Literal["ns", "s"] = "ns",
) -> ChatArchive:
    """Write the first ``days`` days of the script as ``folder / name`` plus its ``-wal``
    and ``-shm``, the last day's rows only in the ``-wal``; replaces an archive there."""
    if not 1 <= days <= len(SCRIPT_DAYS):
        raise ValueError(f"the script has {len(SCRIPT_DAYS)} days, not {days}")
    kept = set(SCRIPT_DAYS[:days])
    rows = tuple(r for r in SCRIPT if r.day in kept)
    last = SCRIPT_DAYS[days - 1]
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / name
    with tempfile.TemporaryDirectory(prefix="chatdb-build-") as build:
        conn = _build(
            Path(build),
            tuple(r for r in rows if r.day != last),
            tuple(r for r in rows if r.day == last),
            date_unit,
        )
        try:  # copied while the writer is open: the -wal is not checkpointed away
            for suffix in ("", "-wal", "-shm"):
                shutil.copyfile(Path(build) / f"chat.db{suffix}", f"{target}{suffix}")
        finally:
            conn.close()
    return ChatArchive(path=target, days=days, date_unit=date_unit, rows=rows)


def grow_chat_db(archive: ChatArchive) -> ChatArchive:
    """Re-export ``archive`` with the script's next day added (one thread's new day)."""
    return write_chat_db(
        archive.path.parent, archive.path.name, days=archive.days + 1, date_unit=archive.date_unit
    )
