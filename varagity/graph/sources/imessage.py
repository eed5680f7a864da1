"""The iMessage source: a macOS Messages ``chat.db`` (SQLite) with its ``-wal``/``-shm``.

Recognised by content: the SQLite header plus the tables Messages keeps (``message``,
``handle``, ``chat``, ``chat_message_join``, ``chat_handle_join``), whatever the file is
called. Read from a private snapshot: the database and its companions are copied
together into a temporary folder (again, if any of them changed while being copied)
and the copy is opened, so the user's archive is never written to, locked, or given a
new file beside it, and the rows Messages has not yet checkpointed out of the ``-wal``
are read too.

What counts as conversation text:

* ``text``, or when it is NULL (most messages of recent macOS releases) the string
  inside ``attributedBody`` (:mod:`~varagity.graph.sources.typedstream`);
* without the U+FFFC placeholders attachments leave in the text; a message that was
  only an attachment has no text and is left out;
* not reactions (tapbacks, ``associated_message_type`` != 0: 2000-2006 added,
  3000-3006 removed, stickers ...) and not group events (``item_type`` != 0: member
  changes, renames, a photo set as the group's picture).

Dates are Apple-epoch (since 2001-01-01 UTC): nanoseconds in databases written since
macOS 10.13, seconds in older ones.
"""

from __future__ import annotations

import bisect
import contextlib
import logging
import re
import shutil
import sqlite3
import tempfile
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

from varagity.graph.sources.base import Message, MessageSourceError
from varagity.graph.sources.typedstream import attributed_body_text
from varagity.graph.types import OWNER

log = logging.getLogger(__name__)

SQLITE_HEADER = b"SQLite format 3\x00"
#: The tables every Messages database has (and this reader joins).
TABLES = ("message", "handle", "chat", "chat_message_join", "chat_handle_join")
#: The files SQLite keeps beside a database (``-journal`` only outside WAL mode).
COMPANION_SUFFIXES = ("-wal", "-shm", "-journal")
#: Columns the reader cannot do without.
REQUIRED_COLUMNS = {
    "message": ("ROWID", "guid", "text", "date", "is_from_me", "handle_id"),
    "handle": ("ROWID", "id"),
    "chat": ("ROWID", "guid", "chat_identifier", "display_name"),
    "chat_message_join": ("chat_id", "message_id"),
    "chat_handle_join": ("chat_id", "handle_id"),
}
UNKNOWN_SENDER = "Unknown"
OBJECT_REPLACEMENT = "\ufffc"  # where an attachment sat in the text

APPLE_EPOCH = datetime(2001, 1, 1, tzinfo=UTC)
# Seconds since 2001 stay below 1e10 until the year 2317; nanoseconds passed 1e10 ten
# seconds after the epoch. Anything larger is nanoseconds.
_SECONDS_LIMIT = 10**10
_COPY_ATTEMPTS = 5
_SPACES = re.compile(r"[^\S\n]+")  # runs of whitespace other than line breaks


def apple_time(value: int | float | None) -> datetime:
    """An Apple-epoch ``message.date`` (nanoseconds or seconds) as an aware UTC time."""
    if not value:
        return APPLE_EPOCH
    if abs(value) >= _SECONDS_LIMIT:
        return APPLE_EPOCH + timedelta(microseconds=int(value) // 1000)
    return APPLE_EPOCH + timedelta(seconds=value)


def message_text(text: str | None, attributed_body: bytes | None) -> str:
    """The conversation text of one row: ``text``, else the attributedBody's string,
    without attachment placeholders and surrounding whitespace ('' when none)."""
    raw = text if text and text.strip(OBJECT_REPLACEMENT + " \n\t") else None
    if raw is None:
        raw = attributed_body_text(attributed_body) or ""
    return _SPACES.sub(" ", raw.replace(OBJECT_REPLACEMENT, " ")).strip()


def _companions(path: Path) -> tuple[Path, ...]:
    return tuple(path.with_name(path.name + suffix) for suffix in COMPANION_SUFFIXES)


def _signature(paths: tuple[Path, ...]) -> tuple[tuple[int, int] | None, ...]:
    signature: list[tuple[int, int] | None] = []
    for path in paths:
        try:
            stat = path.stat()
        except FileNotFoundError:
            signature.append(None)
        else:
            signature.append((stat.st_size, stat.st_mtime_ns))
    return tuple(signature)


@contextlib.contextmanager
def snapshot(path: Path) -> Iterator[Path]:
    """A private copy of the database at ``path`` with its ``-wal``/``-shm``, taken in
    one go (again while any of them changes during the copy); removed on exit.

    Raises:
        MessageSourceError: The files cannot be read, or kept changing.
    """
    files = (path, *_companions(path))
    with tempfile.TemporaryDirectory(prefix="varagity-archive-") as folder:
        target = Path(folder) / "chat.db"
        for _ in range(_COPY_ATTEMPTS):
            before = _signature(files)
            if before[0] is None:
                raise MessageSourceError(path, "does not exist")
            try:
                for source, present in zip(files, before, strict=True):
                    copy = target.with_name(target.name + source.name[len(path.name) :])
                    copy.unlink(missing_ok=True)
                    if present is not None:
                        shutil.copyfile(source, copy)
            except PermissionError as exc:
                raise MessageSourceError(
                    path, f"cannot be read: permission denied ({exc})"
                ) from exc
            except OSError as exc:
                raise MessageSourceError(path, f"cannot be copied for reading: {exc}") from exc
            if _signature(files) == before:
                break
        else:
            raise MessageSourceError(
                path,
                f"kept changing while it was being copied ({_COPY_ATTEMPTS} tries); "
                "quit Messages or copy the archive elsewhere and try again",
            )
        yield target


def _header_rejection(path: Path) -> str | None:
    try:
        with path.open("rb") as handle:
            header = handle.read(len(SQLITE_HEADER))
    except FileNotFoundError:
        return "does not exist"
    except IsADirectoryError:
        return "is a folder"
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"
    if header != SQLITE_HEADER:
        return "not an SQLite database (no 'SQLite format 3' header)"
    return None


def _tables(conn: sqlite3.Connection) -> set[str]:
    rows = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
    return {str(name) for (name,) in rows}


def _missing_tables(tables: set[str]) -> str | None:
    missing = [t for t in TABLES if t not in tables]
    if missing:
        return f"an SQLite database without the iMessage tables (missing {', '.join(missing)})"
    return None


def _sqlite_reason(exc: sqlite3.Error) -> str:
    text = str(exc)
    if "locked" in text or "busy" in text:
        return f"is locked by another program ({text}); quit it or copy the archive and retry"
    if "not a database" in text or "malformed" in text or "corrupt" in text:
        return f"is corrupt ({text})"
    return f"cannot be read as SQLite ({text})"


class IMessageSource:
    """A macOS Messages ``chat.db``."""

    name = "imessage"
    companion_suffixes: tuple[str, ...] = COMPANION_SUFFIXES

    def rejection(self, path: Path) -> str | None:
        """Why ``path`` is not an iMessage database, read without writing a byte: the
        header, then the tables (the database opened immutable; a schema still only in
        the ``-wal`` is looked for in a snapshot)."""
        reason = _header_rejection(path)
        if reason is not None:
            return reason
        try:
            uri = f"{path.resolve().as_uri()}?mode=ro&immutable=1"
            with contextlib.closing(sqlite3.connect(uri, uri=True)) as conn:
                missing = _missing_tables(_tables(conn))
        except sqlite3.Error as exc:
            return _sqlite_reason(exc)
        if missing is not None and path.with_name(path.name + "-wal").exists():
            try:
                with snapshot(path) as copy, contextlib.closing(sqlite3.connect(copy)) as conn:
                    missing = _missing_tables(_tables(conn))
            except MessageSourceError as exc:
                return exc.reason
            except sqlite3.Error as exc:
                return _sqlite_reason(exc)
        return missing

    def sniff(self, path: Path) -> bool:
        """Whether ``path`` is an iMessage database (by content, not name)."""
        return self.rejection(path) is None

    def archive_files(self, path: Path) -> tuple[Path, ...]:
        """The database and those of its ``-wal``/``-shm``/``-journal`` that exist."""
        return (path, *(p for p in _companions(path) if p.exists()))

    def is_companion(self, path: Path) -> bool:
        """``chat.db-wal`` beside a ``chat.db`` (and the like)."""
        for suffix in COMPANION_SUFFIXES:
            if path.name.endswith(suffix) and len(path.name) > len(suffix):
                return path.with_name(path.name[: -len(suffix)]).is_file()
        return False

    def read(self, path: Path, *, source: str) -> list[Message]:
        """Every message of conversation text, ordered by thread guid, time and row.

        Raises:
            MessageSourceError: Not an iMessage database, corrupt, locked or unreadable.
        """
        reason = _header_rejection(path)
        if reason is not None:
            raise MessageSourceError(path, reason)
        with snapshot(path) as copy:
            try:
                with contextlib.closing(sqlite3.connect(copy)) as conn:
                    conn.execute("PRAGMA query_only = ON")
                    return self._read(conn, path)
            except sqlite3.Error as exc:
                raise MessageSourceError(path, _sqlite_reason(exc)) from exc

    def _read(self, conn: sqlite3.Connection, path: Path) -> list[Message]:
        missing = _missing_tables(_tables(conn))
        if missing is not None:
            raise MessageSourceError(path, missing)
        columns = {
            table: {str(row[1]) for row in conn.execute(f"PRAGMA table_info({table})")}
            for table in TABLES
        }
        for table, needed in REQUIRED_COLUMNS.items():
            lacking = [c for c in needed if c not in columns[table]]
            if lacking:
                raise MessageSourceError(
                    path, f"its {table} table lacks {', '.join(lacking)}: not a Messages schema"
                )

        def optional(column: str, default: str) -> str:
            return f"m.{column}" if column in columns["message"] else default

        members: dict[int, list[str]] = {}
        for chat_id, handle in conn.execute(
            "SELECT j.chat_id, h.id FROM chat_handle_join j JOIN handle h ON h.ROWID = j.handle_id"
        ):
            if handle:
                members.setdefault(int(chat_id), []).append(str(handle))
        chats: dict[int, tuple[str, str, str]] = {}  # guid, current name, members
        for chat_id, guid, display_name, identifier in conn.execute(
            "SELECT ROWID, guid, display_name, chat_identifier FROM chat"
        ):
            people = ", ".join(sorted(set(members.get(int(chat_id), []))))
            name = (display_name or "").strip() or people or identifier or guid
            chats[int(chat_id)] = (str(guid), str(name), people or str(identifier or guid))
        renames: dict[int, list[tuple[datetime, int, str]]] = {}
        if {"item_type", "group_title"} <= columns["message"]:
            for chat_id, date, rowid, title in conn.execute(
                "SELECT j.chat_id, m.date, m.ROWID, m.group_title FROM message m "
                "JOIN chat_message_join j ON j.message_id = m.ROWID WHERE m.item_type = 2"
            ):
                renames.setdefault(int(chat_id), []).append(
                    (apple_time(date), int(rowid), (title or "").strip())
                )
        for events in renames.values():
            events.sort()

        def thread_name(chat_id: int, sent_at: datetime, rowid: int) -> str:
            """The name the thread had when the message was sent: the title of the
            last rename before it (the members before the first, or once a name was
            removed); the current name for a chat with no rename on record. So a
            later rename changes no earlier day's transcript."""
            _, current, people = chats[chat_id]
            events = renames.get(chat_id)
            if not events:
                return current
            before = bisect.bisect_right(events, (sent_at, rowid, "\U0010ffff"))
            title = events[before - 1][2] if before else ""
            return title or people

        query = f"""
            SELECT m.ROWID, m.guid, m.text, {optional("attributedBody", "NULL")}, m.date,
                   m.is_from_me, h.id, j.chat_id
            FROM message m
            JOIN chat_message_join j ON j.message_id = m.ROWID
            LEFT JOIN handle h ON h.ROWID = m.handle_id
            WHERE COALESCE({optional("item_type", "0")}, 0) = 0
              AND COALESCE({optional("associated_message_type", "0")}, 0) = 0
        """
        messages: list[tuple[str, datetime, int, Message]] = []
        undecodable = 0
        for rowid, guid, text, body, date, from_me, handle, chat_id in conn.execute(query):
            chat = chats.get(int(chat_id))
            if chat is None:
                continue
            content = message_text(text, body)
            if not content:
                if body and not text and attributed_body_text(body) is None:
                    undecodable += 1
                continue
            thread_id, sent_at = chat[0], apple_time(date)
            if from_me:
                sender = OWNER
            elif handle:
                sender = str(handle)
            else:
                handles = members.get(int(chat_id), [])
                sender = handles[0] if len(handles) == 1 else UNKNOWN_SENDER
            message = Message(
                guid=str(guid),
                thread_id=thread_id,
                thread_name=thread_name(int(chat_id), sent_at, int(rowid)),
                sender=sender,
                sent_at=sent_at,
                text=content,
            )
            messages.append((thread_id, message.sent_at, int(rowid), message))
        if undecodable:
            log.warning("%s: %d message bodies could not be decoded (left out)", path, undecodable)
        messages.sort(key=lambda item: item[:3])
        return [item[3] for item in messages]
