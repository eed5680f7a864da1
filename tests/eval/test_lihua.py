"""The LiHua-World converter: session files in, a Messages ``chat.db`` out that the
project's iMessage source reads back with the same messages, senders, chats and times.

The expected messages are counted here with a plain line rule of their own (the committed
sessions write every sender as one CamelCase word), not with the converter's parser.
"""

from __future__ import annotations

import re
import shutil
import sqlite3
from collections import defaultdict
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from varagity.eval.lihua import (
    ConversionError,
    Session,
    SessionFormatError,
    SessionMessage,
    assign_chats,
    main,
    message_times,
    normalize_stamp,
    parse_stamp,
    read_session,
    read_sessions,
    speaker_name,
    write_archive,
)
from varagity.graph.sources import read_archive
from varagity.graph.sources.imessage import IMessageSource
from varagity.graph.transcripts import local_time
from varagity.graph.types import Message

REPO = Path(__file__).resolve().parents[2]
SESSIONS = REPO / "eval_suites" / "graph" / "sessions"
OWNER = "NoorHaddad"
LIHUA = REPO.parent / "shared" / "eval_data" / "lihua_world" / "sessions"
_SENDER = re.compile(r"^([A-Z][A-Za-z]+): ")


def _expected(folder: Path, owner: str) -> list[tuple[datetime, str]]:
    """(time, sender) of every message of the committed sessions, read by a line rule:
    the stamp of the first line, then one minute per ``Name: `` line."""
    expected = []
    for path in sorted(folder.rglob("*.txt")):
        lines = path.read_text(encoding="utf-8").splitlines()
        start = datetime.strptime(lines[0], "Time: %Y%m%d_%H:%M").replace(tzinfo=UTC)
        senders = [m.group(1) for m in map(_SENDER.match, lines[1:]) if m]
        for index, sender in enumerate(senders):
            # the converter writes a name in one piece as words ("IngridBakke")
            who = "Me" if sender == owner else re.sub(r"(?<=[a-z])(?=[A-Z])", " ", sender)
            expected.append((start + timedelta(minutes=index), who))
    return sorted(expected)


def _read(path: Path) -> list[Message]:
    return IMessageSource().read(path, source=path.name)


def _by_thread(messages: list[Message]) -> dict[str, list[Message]]:
    threads: dict[str, list[Message]] = defaultdict(list)
    for message in messages:
        threads[message.thread_id].append(message)
    return threads


def _session(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def committed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Message]]:
    target = tmp_path_factory.mktemp("archive") / "chat.db"
    write_archive(SESSIONS, target, owner=OWNER)
    return target, _read(target)


# --- the committed suite's sessions through the iMessage source ------------------------


def test_every_message_comes_back_with_its_sender_and_time(
    committed: tuple[Path, list[Message]],
) -> None:
    _, messages = committed
    expected = _expected(SESSIONS, OWNER)
    assert len(messages) == len(expected) == 57
    assert sorted((m.sent_at, m.sender) for m in messages) == expected
    # within each chat the reader's order is the sessions' order: times strictly rise
    for thread in _by_thread(messages).values():
        times = [m.sent_at for m in thread]
        assert times == sorted(times) and len(set(times)) == len(times)


def test_the_stamps_are_the_times_and_days_the_graph_sees(
    committed: tuple[Path, list[Message]],
) -> None:
    _, messages = committed
    starts = {
        datetime.strptime(p.read_text().splitlines()[0], "Time: %Y%m%d_%H:%M")
        for p in SESSIONS.rglob("*.txt")
    }
    seen = {local_time(m.sent_at, UTC).replace(tzinfo=None) for m in messages}
    assert starts <= seen  # each session's first message is sent at its stamp
    assert {m.sent_at.date() for m in messages} == {s.date() for s in starts}


def test_one_to_one_and_group_chats(committed: tuple[Path, list[Message]]) -> None:
    target, messages = committed
    threads = _by_thread(messages)
    names = {thread: ms[0].thread_name for thread, ms in threads.items()}
    one_to_one = {t: n for t, n in names.items() if ";-;" in t}
    groups = {t: n for t, n in names.items() if ";+;" in t}
    assert sorted(one_to_one.values()) == [
        "Dev Patel",
        "Ingrid Bakke",
        "Kofi Mensah",
        "Tomas Reyes",
    ]
    assert all(t == f"iMessage;-;{n}" for t, n in one_to_one.items())
    assert sorted(groups.values()) == [
        "Dev Patel, Tomas Reyes",
        "Ingrid Bakke, Sara Lindqvist, Tomas Reyes",
    ]
    # the recurring group is one chat over its three sessions' days
    supper = next(t for t, n in groups.items() if "Sara Lindqvist" in n)
    assert sorted({m.sent_at.date() for m in threads[supper]}) == [
        date(2026, 3, 2),
        date(2026, 3, 12),
        date(2026, 3, 25),
    ]
    conn = sqlite3.connect(f"{target.resolve().as_uri()}?mode=ro", uri=True)
    try:
        members = dict(
            conn.execute(
                "SELECT c.guid, count(*) FROM chat c JOIN chat_handle_join j "
                "ON j.chat_id = c.ROWID GROUP BY c.guid"
            ).fetchall()
        )
        owner_rows = conn.execute(
            "SELECT count(*), sum(handle_id) FROM message WHERE is_from_me = 1"
        ).fetchone()
        handles = {h for (h,) in conn.execute("SELECT id FROM handle")}
    finally:
        conn.close()
    assert {g: members[g] for g in groups} == {g: len(n.split(", ")) for g, n in groups.items()}
    assert all(members[t] == 1 for t in one_to_one)
    assert OWNER not in handles and "Me" not in handles
    assert owner_rows[0] == sum(m.sender == "Me" for m in messages) and owner_rows[1] == 0


def test_continuation_lines_join_the_message_before_them(
    committed: tuple[Path, list[Message]],
) -> None:
    _, messages = committed
    menu = next(m for m in messages if "set menu includes" in m.text)
    assert menu.sender == "Ingrid Bakke"
    assert menu.text.endswith(
        "from their site:\n- khachapuri to share\n- a walnut and beetroot salad\n"
        "- mtsvadi skewers\n- churchkhela for dessert"
    )
    book = next(m for m in messages if "Cartographer" in m.text)
    # a blank line inside a message is dropped, the paragraph after it kept
    assert book.text.endswith("by the end of March.\nMy book club reads it in April.")
    assert not any(m.text.startswith(("- ", "1. ", "My book club")) for m in messages)


def test_the_last_day_lives_only_in_the_wal(
    committed: tuple[Path, list[Message]], tmp_path: Path
) -> None:
    target, messages = committed
    last = [m for m in messages if m.sent_at.date() == date(2026, 3, 27)]
    assert len(last) == 5
    assert Path(f"{target}-wal").stat().st_size > 0 and Path(f"{target}-shm").is_file()
    shutil.copyfile(target, tmp_path / "chat.db")
    alone = _read(tmp_path / "chat.db")
    assert {m.guid for m in messages} - {m.guid for m in alone} == {m.guid for m in last}


def test_each_session_is_one_thread_day_of_the_graph(
    committed: tuple[Path, list[Message]],
) -> None:
    target, _ = committed
    days = read_archive(target.parent, target.name, tz=UTC)
    session_days = sorted(p.read_text().splitlines()[0][6:14] for p in SESSIONS.rglob("*.txt"))
    assert sorted(d.span.replace("-", "") for d in days) == session_days
    supper = [d for d in days if "Sara Lindqvist" in d.thread_name]
    assert len(supper) == 3 and len({d.thread_id for d in supper}) == 1
    first = min(supper, key=lambda d: d.span)
    assert first.text.startswith("[19:30] Ingrid Bakke: Supper club idea")
    assert "[19:33] Me: I'm with Sara and Ingrid" in first.text


def test_writing_twice_gives_the_same_messages(
    committed: tuple[Path, list[Message]], tmp_path: Path
) -> None:
    _, messages = committed
    again = write_archive(SESSIONS, tmp_path / "chat.db", owner=OWNER, wal=False)
    assert again.wal_day is None and again.wal_messages == 0
    assert _read(tmp_path / "chat.db") == messages


# --- the session format ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "name"),
    [
        ("WolfgangSchulz: hi", "Wolfgang Schulz"),
        ("Tirion Fordring: the storm goes on", "Tirion Fordring"),
        ("Li Hua: thanks!", "Li Hua"),
        ("ChaeSong-hwa: sure", "Chae Song-hwa"),
        ("Quick Greek yogurt recipe: mix it", None),
        ("And for that breathing method: count", None),
        ("**Ingredients:**", None),
        ("1. **Rest**: sleep", None),
        ("Note:no space", None),
    ],
)
def test_speaker_lines(line: str, name: str | None) -> None:
    assert speaker_name(line) == name


def test_a_session_is_read_with_its_continuations_and_without_the_end_marker(
    tmp_path: Path,
) -> None:
    path = _session(
        tmp_path,
        "week1/20260105_1100.txt",
        "Time: 20260105_11:00\nLiHua: Lunch on the 8th?\nWolfgang Schulz: Yes!\n"
        "I know a place.\n\nIt has a garden.\nLiHua: Great\n\n<END>\n",
    )
    session = read_session(path)
    assert session.stamp == "20260105_11:00" and session.day == date(2026, 1, 5)
    assert [(m.sender, m.text, m.line) for m in session.messages] == [
        ("Li Hua", "Lunch on the 8th?", 2),
        ("Wolfgang Schulz", "Yes!\nI know a place.\nIt has a garden.", 3),
        ("Li Hua", "Great", 7),
    ]
    assert session.speakers == {"Li Hua", "Wolfgang Schulz"}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("LiHua: hi\n", r":1: does not begin with 'Time: YYYYMMDD_HH:MM'"),
        ("Time: 2026-01-05 11:00\nLiHua: hi\n", r":1: .*not a session stamp"),
        ("Time: 20260231_11:00\nLiHua: hi\n", r":1: .*not a real date"),
        ("Time: 20260105_11:00\nhello there\nLiHua: hi\n", r":2: text before the first"),
    ],
)
def test_malformed_sessions_say_where(tmp_path: Path, text: str, message: str) -> None:
    path = _session(tmp_path, "s.txt", text)
    with pytest.raises(SessionFormatError, match=message) as caught:
        read_session(path)
    assert caught.value.path == path


def test_a_folder_without_sessions_is_refused(tmp_path: Path) -> None:
    with pytest.raises(SessionFormatError, match="holds no session files"):
        read_sessions(tmp_path)
    with pytest.raises(SessionFormatError, match="is not a folder"):
        read_sessions(tmp_path / "missing")


def test_stamp_spellings() -> None:
    assert normalize_stamp("20260426_1330") == "20260426_13:30"
    assert normalize_stamp("Time: 20260930_16:00") == "20260930_16:00"
    with pytest.raises(ValueError, match="not a session stamp"):
        normalize_stamp("What")


# --- chats, times and what cannot be written --------------------------------------------


def _fake(stamp: str, *speakers: str, name: str = "") -> Session:
    start = parse_stamp(stamp)
    messages = tuple(SessionMessage(s, f"message {i}", i + 2) for i, s in enumerate(speakers))
    return Session(Path(name or f"{stamp}.txt"), stamp, start, messages)


def test_near_identical_groups_are_one_chat_and_small_groups_stay_apart() -> None:
    big = _fake("20260101_10:00", "Li Hua", "A", "B", "C", "D", "E")
    quiet = _fake("20260102_10:00", "B", "C", "D", "E")  # A silent, and so is the owner
    pair = _fake("20260103_10:00", "Li Hua", "A", "B")
    trio = _fake("20260104_10:00", "Li Hua", "A", "B", "C")
    alone = _fake("20260105_10:00", "Li Hua", "A")
    chats = assign_chats([big, quiet, pair, trio, alone])
    by_members = {c.members: c for c in chats}
    assert set(by_members) == {("A", "B", "C", "D", "E"), ("A", "B"), ("A", "B", "C"), ("A",)}
    assert by_members["A", "B", "C", "D", "E"].sessions == (big, quiet)
    assert by_members["A",].guid == "iMessage;-;A" and not by_members["A",].group
    assert all(c.group and ";+;chat" in c.guid for m, c in by_members.items() if len(m) > 1)
    exact = assign_chats([big, quiet], group_overlap=1)
    assert len(exact) == 2
    assert assign_chats([alone], owner="Li Hua") == assign_chats([alone])  # spelled either way


def test_a_session_only_the_owner_speaks_in_is_refused() -> None:
    with pytest.raises(ConversionError, match="only Li Hua speaks"):
        assign_chats([_fake("20260101_10:00", "Li Hua", "Li Hua")])


def test_a_late_session_stays_on_its_day() -> None:
    late = _fake("20260101_23:58", "Li Hua", "A", "Li Hua", "A", "Li Hua")
    times = message_times(late)
    assert times[0] == datetime(2026, 1, 1, 23, 58, tzinfo=UTC)
    assert times == sorted(set(times))
    assert all(t.date() == date(2026, 1, 1) for t in times)


def test_stamps_are_wall_clock_times_in_the_given_zone(tmp_path: Path) -> None:
    shanghai = ZoneInfo("Asia/Shanghai")
    _session(tmp_path / "s", "w1/a.txt", "Time: 20260105_07:00\nLiHua: early\nBo: yes\n")
    write_archive(tmp_path / "s", tmp_path / "chat.db", tz=shanghai)
    first, second = _read(tmp_path / "chat.db")
    assert first.sent_at == datetime(2026, 1, 4, 23, 0, tzinfo=UTC)  # 07:00 in UTC+8
    assert local_time(first.sent_at, shanghai).strftime("%Y%m%d_%H:%M") == "20260105_07:00"
    assert second.sent_at - first.sent_at == timedelta(minutes=1)


def test_sessions_that_overlap_in_one_chat_are_refused(tmp_path: Path) -> None:
    body = "LiHua: a\nBo: b\nLiHua: c\nBo: d\n"
    _session(tmp_path / "s", "a.txt", "Time: 20260105_10:00\n" + body)
    _session(tmp_path / "s", "b.txt", "Time: 20260105_10:02\n" + body)
    with pytest.raises(ConversionError, match=r"starts before .*a\.txt"):
        write_archive(tmp_path / "s", tmp_path / "chat.db")
    summary = write_archive(tmp_path / "s", tmp_path / "chat.db", step=timedelta(seconds=20))
    assert summary.messages == 8 and len(_read(tmp_path / "chat.db")) == 8


def test_the_command_writes_the_archive_and_reports_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "out" / "chat.db"
    assert main([str(SESSIONS), str(target), "--owner", OWNER]) == 0
    out = capsys.readouterr().out
    assert "11 sessions, 57 messages, 4 one-to-one chats, 2 group chats, 5 handles" in out
    assert "the 5 messages of 2026-03-27 only in -wal" in out
    assert len(_read(target)) == 57
    _session(tmp_path / "bad", "x.txt", "no stamp\n")
    assert main([str(tmp_path / "bad"), str(tmp_path / "x.db")]) == 2
    assert "does not begin with 'Time:" in capsys.readouterr().err
    assert not (tmp_path / "x.db").exists()


# --- the real LiHua-World sessions, when they are beside the repository ------------------


@pytest.mark.skipif(not LIHUA.is_dir(), reason="../shared/eval_data/lihua_world is not here")
def test_the_lihua_world_year_reads_back_whole(tmp_path: Path) -> None:
    sessions = read_sessions(LIHUA)
    summary = write_archive(sessions, tmp_path / "chat.db")
    messages = _read(tmp_path / "chat.db")
    assert summary.sessions == len(sessions) == 442
    assert len(messages) == summary.messages == sum(len(s.messages) for s in sessions)
    expected = sorted(
        (t, "Me" if m.sender == "Li Hua" else m.sender)
        for s in sessions
        for m, t in zip(s.messages, message_times(s), strict=True)
    )
    assert sorted((m.sent_at, m.sender) for m in messages) == expected
    for session in sessions:  # every message on its session's day
        assert {t.date() for t in message_times(session)} <= {session.day}
    for thread in _by_thread(messages).values():
        times = [m.sent_at for m in thread]
        assert times == sorted(times)
    assert summary.group_chats >= 5 and summary.one_to_one_chats >= 10
    assert summary.wal_messages > 0
