"""Writing a Messages-shaped ``chat.db``: the reader's counterpart
(:mod:`varagity.graph.sources.imessage`), for archives the project makes itself (the
LiHua-World evaluation archive, :mod:`varagity.eval.lihua`) and for the test fixtures.

:data:`SCHEMA` holds the tables macOS Messages keeps, with the columns the reader uses
and a good number it ignores. The ``insert_*`` helpers write one row each with the values
Messages gives the columns nobody here reads (delivery flags, account, service), so a
caller names only what matters to it. :func:`write_archive` leaves the files as Messages
does on disk: WAL mode, everything but the last transaction checkpointed into the
database file, the last one only in ``-wal`` (with its ``-shm``).
"""

from __future__ import annotations

import re
import shutil
import sqlite3
import tempfile
import uuid
from collections.abc import Callable, Iterable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Literal

from varagity.graph.sources.imessage import APPLE_EPOCH, COMPANION_SUFFIXES

#: The owner's account as the rows name it (``account``, ``destination_caller_id``).
ACCOUNT = "me@icloud.com"
ACCOUNT_LOGIN = f"E:{ACCOUNT}"
# uuid5 namespace of the ids a writer derives (chat group ids, the account id)
_IDS = uuid.UUID("3b0c8f5e-2a61-4d9b-8c47-71e5a9d20f13")
_COLUMN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

DateUnit = Literal["ns", "s"]

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


def apple_date(moment: datetime, unit: DateUnit = "ns") -> int:
    """``moment`` as Messages stores ``message.date``: time since 2001-01-01 UTC, in
    nanoseconds (databases written since macOS 10.13) or whole seconds (older ones).

    Raises:
        ValueError: ``moment`` has no time zone (a wall-clock time is ambiguous).
    """
    if moment.tzinfo is None:
        raise ValueError(f"{moment.isoformat()} has no time zone")
    delta = moment - APPLE_EPOCH
    if unit == "s":
        return delta // timedelta(seconds=1)
    return delta // timedelta(microseconds=1) * 1000


def chat_guid(identifier: str, *, group: bool, service: str = "iMessage") -> str:
    """A chat's guid: ``iMessage;-;<handle>`` one to one, ``iMessage;+;<room>`` a group."""
    return f"{service};{'+' if group else '-'};{identifier}"


def insert_handle(
    conn: sqlite3.Connection, address: str, *, service: str = "iMessage", country: str = "us"
) -> int:
    """A ``handle`` row for ``address`` (a phone number, an e-mail, a name); its ROWID."""
    cursor = conn.execute(
        "INSERT INTO handle (id, country, service, uncanonicalized_id) VALUES (?, ?, ?, ?)",
        (address, country, service, address if "@" in address else None),
    )
    return _rowid(cursor)


def insert_chat(
    conn: sqlite3.Connection,
    guid: str,
    members: Iterable[int],
    *,
    display_name: str = "",
    group_id: str | None = None,
) -> int:
    """A ``chat`` row with its ``chat_handle_join`` rows (``members`` are handle ROWIDs);
    its ROWID. A group is told by its guid (``;+;``); ``display_name`` '' is unnamed."""
    service, style, identifier = guid.split(";", 2)
    group = style == "+"
    cursor = conn.execute(
        """INSERT INTO chat (guid, style, state, account_id, chat_identifier, service_name,
               room_name, account_login, display_name, group_id, last_addressed_handle)
           VALUES (?, ?, 3, ?, ?, ?, ?, ?, ?, ?, ?)""",
        (
            guid,
            43 if group else 45,
            str(uuid.uuid5(_IDS, "account")).upper(),
            identifier,
            service,
            identifier if group else None,
            ACCOUNT_LOGIN,
            display_name,
            group_id or str(uuid.uuid5(_IDS, "group/" + guid)).upper(),
            ACCOUNT,
        ),
    )
    chat_id = _rowid(cursor)
    conn.executemany(
        "INSERT INTO chat_handle_join (chat_id, handle_id) VALUES (?, ?)",
        [(chat_id, member) for member in members],
    )
    return chat_id


def insert_message(
    conn: sqlite3.Connection,
    chat_id: int,
    *,
    guid: str,
    date: int,
    text: str | None,
    handle_id: int,
    is_from_me: bool,
    service: str = "iMessage",
    attributed_body: bytes | None = None,
    **columns: object,
) -> int:
    """A ``message`` row in chat ``chat_id`` (and its ``chat_message_join`` row); its
    ROWID. ``date`` is Apple-epoch (:func:`apple_date`); ``handle_id`` is the sender's
    handle, 0 for the owner's own messages. ``columns`` sets any other column of the
    table (``item_type``, ``associated_message_type``, ``group_title`` ...).

    Raises:
        ValueError: A name in ``columns`` is not a column name.
    """
    values: dict[str, object] = {
        "guid": guid,
        "text": text,
        "handle_id": handle_id,
        "attributedBody": attributed_body,
        "service": service,
        "account": ACCOUNT_LOGIN,
        "date": date,
        "date_read": 0 if is_from_me else date,
        "date_delivered": date if is_from_me else 0,
        "is_delivered": 1,
        "is_finished": 1,
        "is_from_me": int(is_from_me),
        "is_read": int(not is_from_me),
        "is_sent": int(is_from_me),
        "destination_caller_id": ACCOUNT,
        "part_count": 1,
        "sort_id": 0,
    }
    for name, value in columns.items():
        if not _COLUMN.match(name):
            raise ValueError(f"{name!r} is not a column name")
        values[name] = value
    names = ", ".join(values)
    marks = ", ".join("?" for _ in values)
    cursor = conn.execute(f"INSERT INTO message ({names}) VALUES ({marks})", tuple(values.values()))
    message_id = _rowid(cursor)
    conn.execute(
        "INSERT INTO chat_message_join (chat_id, message_id, message_date) VALUES (?, ?, ?)",
        (chat_id, message_id, date),
    )
    return message_id


def _rowid(cursor: sqlite3.Cursor) -> int:
    if cursor.lastrowid is None:  # pragma: no cover - an INSERT always sets it
        raise sqlite3.DatabaseError("no row was inserted")
    return cursor.lastrowid


Fill = Callable[[sqlite3.Connection], None]


def write_archive(target: Path, fill: Fill, last: Fill | None = None) -> tuple[Path, ...]:
    """Write a Messages database as ``target`` with its ``-wal`` and ``-shm``, replacing
    any archive there.

    ``fill`` writes the rows of the first transaction (handles, chats, the older
    messages), which is checkpointed into the database file; ``last`` the rows of a
    second one, which stays only in the ``-wal``, as Messages leaves its newest rows
    (the files are copied into place while the writing connection is still open, so
    closing it checkpoints nothing into ``target``). Both run inside their transaction;
    the schema is written before. Without ``last`` the ``-wal`` is empty.

    Returns:
        ``target``, its ``-wal`` and its ``-shm``.
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="chatdb-build-") as folder:
        build = Path(folder) / "chat.db"
        conn = sqlite3.connect(build, isolation_level=None)
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            conn.executescript(SCHEMA)
            conn.execute("BEGIN")
            conn.execute(
                "INSERT INTO _SqliteDatabaseProperties VALUES ('_ClientVersion', '17001'), "
                "('counter_in_all', '0')"
            )
            fill(conn)
            conn.execute("COMMIT")
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            conn.execute("PRAGMA wal_autocheckpoint = 0")
            if last is not None:
                conn.execute("BEGIN")
                last(conn)
                conn.execute("COMMIT")
            for suffix in COMPANION_SUFFIXES:
                Path(f"{target}{suffix}").unlink(missing_ok=True)
            for suffix in ("", "-wal", "-shm"):
                shutil.copyfile(f"{build}{suffix}", f"{target}{suffix}")
        finally:
            conn.close()
    return (target, Path(f"{target}-wal"), Path(f"{target}-shm"))
