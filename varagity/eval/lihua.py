"""LiHua-World conversation sessions as a Messages archive (``chat.db`` + ``-wal``/``-shm``).

LiHua-World (MiniRAG, arXiv 2501.06713) is a year of one person's chats kept as plain
text: ``sessions/weekNN/YYYYMMDD_HHMM.txt``, each beginning ``Time: YYYYMMDD_HH:MM``
and then one message a line as ``SenderName: text``. The message graph reads archives,
not text files, so the evaluation turns the sessions into the archive a Mac would hold
(:func:`write_archive`) and builds the graph over that through the real iMessage source.

How the text becomes rows:

* **Messages.** A line ``Name: text`` starts a message (:func:`speaker_name`: a
  name of up to four capitalised words); any other line continues the message before
  it and is joined to it with a line break; blank lines and the end marker ``<END>``
  some sessions carry are dropped. Text before the first message is an error.
* **People.** Every speaker is a handle whose id is the name in one spelling, words
  apart (the sessions write both ``Tirion Fordring`` and ``TirionFordring``:
  :func:`person_name`); the owner (``LiHua``) is "me": ``is_from_me`` rows without a
  handle, which the graph names by ``GRAPH_OWNER_NAME``.
* **Chats.** One chat per set of people other than the owner: one person is a one-to-one
  chat (``iMessage;-;Name``), two or more an unnamed group (``iMessage;+;chat…``), the
  same chat in every session. A session lists only who spoke, so a group whose
  members were not all talking that day appears as a slightly different set; such a
  set joins the group whose speakers it shares most of (Jaccard similarity at least
  ``group_overlap``, measured against the largest set that founded the group), and the
  group's members are every speaker of its sessions. ``group_overlap=1`` keeps exact
  sets apart. A session in which only the owner speaks has nobody to be addressed to
  and is an error.
* **Times.** The stamp is a wall-clock time in ``tz`` (UTC unless told); the session's
  messages are ``step`` apart from it (one minute), closer together when that would
  run past midnight, so every message of a session falls on its stamp's day and the
  transcripts keep the order of the lines. A session that would reach into the next
  session of the same chat is an error.
* **The -wal.** The messages of the last day are written in a last transaction that is
  left in ``chat.db-wal``, as Messages leaves its newest rows
  (:func:`varagity.graph.sources.imessage_writer.write_archive`).

Run it as ``python -m varagity.eval.lihua SESSIONS TARGET/chat.db`` (``--help``).
"""

from __future__ import annotations

import argparse
import hashlib
import re
import sqlite3
import sys
import uuid
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta, tzinfo
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from varagity.graph.sources.imessage_writer import (
    apple_date,
    chat_guid,
    insert_chat,
    insert_handle,
    insert_message,
)
from varagity.graph.sources.imessage_writer import write_archive as write_messages_db

#: The archive's owner in LiHua-World ("me").
OWNER = "LiHua"
#: Time between two messages of a session.
STEP = timedelta(minutes=1)
#: Jaccard similarity at which a group session's speakers join an existing group.
GROUP_OVERLAP = 0.75
#: The canonical spelling of a session stamp (``20260105_11:00``).
STAMP_FORMAT = "%Y%m%d_%H:%M"
END_MARKER = "<END>"

_STAMP = re.compile(r"^(?:Time:\s*)?(\d{8})_(\d{2}):?(\d{2})$")
# where a name written in one piece breaks into words ("TirionFordring")
_CAMEL_BREAK = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_SPEAKER = re.compile(r"^(?P<sender>[^\W\d_][\w.\-]*(?: [^\W\d_][\w.\-]*){0,3}): (?P<text>.*)$")
_GUIDS = uuid.UUID("9d2e7c41-6a0b-4f3e-b815-2c4f0a7d95e6")


class SessionFormatError(ValueError):
    """A session file (or folder) is not in the LiHua-World format; says where and why."""

    def __init__(self, path: Path | str, reason: str, line: int | None = None) -> None:
        where = f"{path}:{line}" if line is not None else str(path)
        super().__init__(f"{where}: {reason}")
        self.path = Path(path)
        self.line = line
        self.reason = reason


class ConversionError(ValueError):
    """The sessions cannot be written as one archive (the reason names the sessions)."""


def parse_stamp(value: str) -> datetime:
    """A session stamp as a naive wall-clock time.

    Accepts the canonical ``YYYYMMDD_HH:MM``, the file-name form ``YYYYMMDD_HHMM`` and the
    session's first line ``Time: YYYYMMDD_HH:MM``.

    Raises:
        ValueError: Not a stamp, or not a real date and time.
    """
    match = _STAMP.match(value.strip())
    if match is None:
        raise ValueError(f"{value!r} is not a session stamp (YYYYMMDD_HH:MM)")
    day, hours, minutes = match.groups()
    try:
        return datetime.strptime(f"{day}_{hours}:{minutes}", STAMP_FORMAT)
    except ValueError:
        raise ValueError(f"{value!r} is not a real date and time") from None


def format_stamp(moment: datetime) -> str:
    """The canonical stamp of a wall-clock time (``20260105_11:00``)."""
    return moment.strftime(STAMP_FORMAT)


def normalize_stamp(value: str) -> str:
    """``value`` (any form :func:`parse_stamp` accepts) in the canonical spelling."""
    return format_stamp(parse_stamp(value))


@dataclass(frozen=True, slots=True)
class SessionMessage:
    """One message of a session: who wrote it, its text (continuation lines joined with
    line breaks) and the line of the file it starts on."""

    sender: str
    text: str
    line: int


@dataclass(frozen=True, slots=True)
class Session:
    """One session file: its stamp, the wall-clock time it names, its messages."""

    path: Path
    stamp: str
    start: datetime
    messages: tuple[SessionMessage, ...]

    @property
    def day(self) -> date:
        """The day of the stamp (where every message of the session lands)."""
        return self.start.date()

    @property
    def speakers(self) -> frozenset[str]:
        """Everyone who wrote in the session."""
        return frozenset(m.sender for m in self.messages)


def speaker_name(line: str) -> str | None:
    """The sender a message line starts with, in one spelling (:func:`person_name`:
    ``TirionFordring: ...`` and ``Tirion Fordring: ...`` are one person); ``None`` for a
    line that
    continues a message. A name is up to four words of letters, digits, ``.``, ``-`` and
    ``_``, not starting with a digit; a name of several words has each capitalised (so
    ``Quick recipe: ...`` is text, not a speaker)."""
    match = _SPEAKER.match(line)
    if match is None:
        return None
    words = match["sender"].split(" ")
    if len(words) > 1 and not all(word[0].isupper() for word in words):
        return None
    return person_name("".join(words))


def person_name(name: str) -> str:
    """One spelling of a person's name, words apart: ``TirionFordring`` and ``Tirion
    Fordring`` are ``Tirion Fordring``, ``LiHua`` is ``Li Hua`` (a question that says
    "Tirion" then finds the transcript's "Tirion Fordring")."""
    return _CAMEL_BREAK.sub(" ", "".join(name.split()))


def read_session(path: Path) -> Session:
    """Read one session file.

    Raises:
        SessionFormatError: Unreadable, no ``Time:`` first line, or text before the
            first ``Name: text`` line.
    """
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise SessionFormatError(path, f"cannot be read ({exc})") from exc
    lines = text.splitlines()
    if not lines or not lines[0].strip().startswith("Time:"):
        raise SessionFormatError(path, "does not begin with 'Time: YYYYMMDD_HH:MM'", 1)
    try:
        start = parse_stamp(lines[0])
    except ValueError as exc:
        raise SessionFormatError(path, str(exc), 1) from None
    messages: list[SessionMessage] = []
    parts: list[str] = []
    sender, first = "", 0

    def close() -> None:
        body = "\n".join(parts).strip()
        if sender and body:
            messages.append(SessionMessage(sender, body, first))

    for number, raw in enumerate(lines[1:], start=2):
        line = raw.strip()
        if not line or line == END_MARKER:
            continue
        name = speaker_name(line)
        if name is not None:
            close()
            sender, parts, first = name, [line.split(": ", 1)[1]], number
        elif not sender:
            raise SessionFormatError(path, "text before the first 'Name: text' line", number)
        else:
            parts.append(line)
    close()
    return Session(path=path, stamp=format_stamp(start), start=start, messages=tuple(messages))


def read_sessions(folder: Path) -> tuple[Session, ...]:
    """Every ``*.txt`` session under ``folder`` (any depth), oldest first.

    Raises:
        SessionFormatError: The folder does not exist or holds no session, or a file is
            malformed.
    """
    if not folder.is_dir():
        raise SessionFormatError(folder, "is not a folder of sessions")
    files = sorted(p for p in folder.rglob("*.txt") if p.is_file() and p.name != "README.txt")
    if not files:
        raise SessionFormatError(folder, "holds no session files (*.txt)")
    sessions = [read_session(p) for p in files]
    sessions.sort(key=lambda s: (s.start, s.path.relative_to(folder).as_posix()))
    return tuple(sessions)


@dataclass(frozen=True, slots=True)
class Chat:
    """One chat of the archive: its guid, members (the owner not among them) and
    sessions, oldest first."""

    guid: str
    members: tuple[str, ...]
    sessions: tuple[Session, ...]

    @property
    def group(self) -> bool:
        """Whether it is a group chat (two or more people besides the owner)."""
        return len(self.members) > 1


def _jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / len(a | b)


def _group_guid(founders: frozenset[str]) -> str:
    digest = hashlib.sha256("\n".join(sorted(founders)).encode()).hexdigest()
    return chat_guid(f"chat{int(digest[:15], 16) % 10**12:012d}", group=True)


def assign_chats(
    sessions: Sequence[Session], *, owner: str = OWNER, group_overlap: float = GROUP_OVERLAP
) -> tuple[Chat, ...]:
    """The chats the sessions belong to (see the module's notes), in order of their first
    session.

    Raises:
        ValueError: ``group_overlap`` is not in (0, 1].
        ConversionError: A session in which only the owner speaks.
    """
    if not 0 < group_overlap <= 1:
        raise ValueError(f"group_overlap must be in (0, 1], got {group_overlap}")
    owner = person_name(owner)
    people: dict[Session, frozenset[str]] = {}
    for session in sessions:
        others = session.speakers - {owner}
        if not others:
            raise ConversionError(
                f"{session.path}: only {owner} speaks (or nobody does): no chat to put it in"
            )
        people[session] = others
    uses = Counter(people.values())
    # the largest sets found groups first; among equals the most frequent, then by name
    order = sorted(uses, key=lambda s: (-len(s), -uses[s], sorted(s)))
    founder_of: dict[frozenset[str], frozenset[str]] = {}
    founders: list[frozenset[str]] = []
    for others in order:
        if len(others) == 1:
            founder_of[others] = others
            continue
        home = next(
            (f for f in founders if len(f) > 1 and _jaccard(f, others) >= group_overlap), None
        )
        if home is None:
            founders.append(others)
            home = others
        founder_of[others] = home
    grouped: dict[frozenset[str], list[Session]] = {}
    for session in sessions:
        grouped.setdefault(founder_of[people[session]], []).append(session)
    chats = []
    for founder, members_sessions in grouped.items():
        members_sessions.sort(key=lambda s: s.start)
        members = frozenset().union(*(people[s] for s in members_sessions))
        if len(founder) == 1:
            guid = chat_guid(next(iter(founder)), group=False)
        else:
            guid = _group_guid(founder)
        chats.append(Chat(guid, tuple(sorted(members)), tuple(members_sessions)))
    chats.sort(key=lambda c: (c.sessions[0].start, c.guid))
    return tuple(chats)


def message_times(session: Session, tz: tzinfo = UTC, step: timedelta = STEP) -> list[datetime]:
    """When each message of ``session`` was sent (aware, UTC): the stamp in ``tz``, then
    ``step`` apart, closer when the day would end first (all on the stamp's day)."""
    count = len(session.messages)
    start = session.start.replace(tzinfo=tz).astimezone(UTC)
    midnight = datetime.combine(session.day + timedelta(days=1), datetime.min.time(), tz)
    if count:
        step = min(step, (midnight.astimezone(UTC) - start) / count)
    return [start + step * index for index in range(count)]


@dataclass(frozen=True, slots=True)
class ArchiveSummary:
    """What :func:`write_archive` wrote."""

    path: Path
    files: tuple[Path, ...]
    sessions: int
    messages: int
    one_to_one_chats: int
    group_chats: int
    handles: int
    wal_day: date | None = None
    wal_messages: int = 0
    chats: tuple[Chat, ...] = field(default=(), repr=False)

    def describe(self) -> str:
        """One line for people."""
        text = (
            f"{self.path}: {self.sessions} sessions, {self.messages} messages, "
            f"{self.one_to_one_chats} one-to-one chats, {self.group_chats} group chats, "
            f"{self.handles} handles"
        )
        if self.wal_day is not None:
            text += f"; the {self.wal_messages} messages of {self.wal_day} only in -wal"
        return text


def _timed(
    chats: Sequence[Chat], tz: tzinfo, step: timedelta
) -> list[tuple[Chat, Session, list[datetime]]]:
    timed = []
    for chat in chats:
        previous: tuple[Session, datetime] | None = None
        for session in chat.sessions:
            times = message_times(session, tz, step)
            if not times:
                continue
            if previous is not None and times[0] <= previous[1]:
                raise ConversionError(
                    f"{session.path} starts before {previous[0].path} (same chat) has ended "
                    f"with {step} between messages; give a smaller step"
                )
            previous = (session, times[-1])
            timed.append((chat, session, times))
    return timed


def write_archive(
    sessions: Iterable[Session] | Path,
    target: Path,
    *,
    owner: str = OWNER,
    tz: tzinfo = UTC,
    step: timedelta = STEP,
    group_overlap: float = GROUP_OVERLAP,
    wal: bool = True,
) -> ArchiveSummary:
    """Write LiHua-World sessions as a Messages ``chat.db`` at ``target`` (with its
    ``-wal`` and ``-shm``; an archive there is replaced).

    Args:
        sessions: The sessions, or the folder holding them (``sessions/``).
        target: The database file to write (``.../chat.db``).
        owner: The speaker who is "me" (``LiHua``; ``Li Hua`` is the same).
        tz: The zone the stamps' wall-clock times are in.
        step: Time between two messages of a session.
        group_overlap: See :func:`assign_chats`.
        wal: Leave the last day's messages only in the ``-wal`` (else it is empty).

    Raises:
        SessionFormatError: A session file is malformed.
        ConversionError: The sessions do not fit one archive (see the module's notes).
    """
    if step <= timedelta(0):
        raise ValueError(f"step must be positive, got {step}")
    owner = person_name(owner)  # as speaker names are compared
    loaded = read_sessions(sessions) if isinstance(sessions, Path) else tuple(sessions)
    if not loaded:
        raise ConversionError("no sessions to write")
    chats = assign_chats(loaded, owner=owner, group_overlap=group_overlap)
    timed = _timed(chats, tz, step)
    people = sorted({member for chat in chats for member in chat.members})
    last_day = max(s.day for s in loaded) if wal else None
    older = [t for t in timed if t[1].day != last_day]
    newest = [t for t in timed if t[1].day == last_day]
    ids: dict[str, int] = {}
    chat_ids: dict[str, int] = {}

    def rows(conn: sqlite3.Connection, part: list[tuple[Chat, Session, list[datetime]]]) -> None:
        for chat, session, times in part:
            for index, (message, sent_at) in enumerate(zip(session.messages, times, strict=True)):
                from_me = message.sender == owner
                key = f"{session.path.name}/{session.stamp}/{index}/{message.sender}"
                insert_message(
                    conn,
                    chat_ids[chat.guid],
                    guid=str(uuid.uuid5(_GUIDS, key)).upper(),
                    date=apple_date(sent_at),
                    text=message.text,
                    handle_id=0 if from_me else ids[message.sender],
                    is_from_me=from_me,
                )

    def fill(conn: sqlite3.Connection) -> None:
        for person in people:
            ids[person] = insert_handle(conn, person)
        for chat in chats:
            chat_ids[chat.guid] = insert_chat(conn, chat.guid, [ids[m] for m in chat.members])
        rows(conn, older)

    files = write_messages_db(target, fill, (lambda conn: rows(conn, newest)) if newest else None)
    return ArchiveSummary(
        path=target,
        files=files,
        sessions=len(loaded),
        messages=sum(len(s.messages) for s in loaded),
        one_to_one_chats=sum(not c.group for c in chats),
        group_chats=sum(c.group for c in chats),
        handles=len(people),
        wal_day=last_day if newest else None,
        wal_messages=sum(len(t[2]) for t in newest),
        chats=chats,
    )


def _zone(name: str) -> tzinfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise argparse.ArgumentTypeError(
            f"{name!r} is not a known IANA time zone (e.g. UTC, Asia/Shanghai)"
        ) from None


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m varagity.eval.lihua SESSIONS TARGET``: write the archive, print a
    summary; 2 on a malformed session or sessions that do not fit one archive."""
    parser = argparse.ArgumentParser(
        prog="python -m varagity.eval.lihua",
        description="Write LiHua-World conversation sessions as a Messages chat.db "
        "(with -wal and -shm) the message graph reads.",
    )
    parser.add_argument("sessions", type=Path, help="the sessions folder (weekNN/*.txt)")
    parser.add_argument(
        "target", type=Path, help="the chat.db to write (an archive there is replaced)"
    )
    parser.add_argument("--owner", default=OWNER, help=f"the speaker who is 'me' ({OWNER})")
    parser.add_argument(
        "--timezone",
        type=_zone,
        default=UTC,
        help="the zone of the stamps' wall-clock times (UTC); build the graph with the same "
        "GRAPH_TIMEZONE so its days are the stamps' days",
    )
    parser.add_argument(
        "--step-seconds",
        type=float,
        default=STEP.total_seconds(),
        help="seconds between two messages of a session (60)",
    )
    parser.add_argument(
        "--group-overlap",
        type=float,
        default=GROUP_OVERLAP,
        help=f"Jaccard similarity at which a session joins a group ({GROUP_OVERLAP}; 1: exact)",
    )
    parser.add_argument(
        "--no-wal", action="store_true", help="checkpoint everything (an empty -wal)"
    )
    args = parser.parse_args(argv)
    try:
        summary = write_archive(
            args.sessions,
            args.target,
            owner=args.owner,
            tz=args.timezone,
            step=timedelta(seconds=args.step_seconds),
            group_overlap=args.group_overlap,
            wal=not args.no_wal,
        )
    except (SessionFormatError, ConversionError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(summary.describe())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
