"""Thread-day transcripts rendered from the fixture ``chat.db``: doc_keys, the text,
determinism, and where days begin in a time zone."""

from __future__ import annotations

import sqlite3
from collections import defaultdict
from datetime import UTC, date
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from tests.support.chatdb import DAD, THREADS, ChatArchive, write_chat_db
from varagity.config import SettingsError, load_settings
from varagity.graph.sources import read_archive
from varagity.graph.transcripts import graph_timezone
from varagity.graph.types import ThreadDay


@pytest.fixture
def archive(tmp_path: Path) -> ChatArchive:
    return write_chat_db(tmp_path / "graph-docs")


def _days(archive: ChatArchive) -> dict[str, ThreadDay]:
    return {d.doc_key: d for d in read_archive(archive.path.parent, "chat.db", tz=UTC)}


def test_one_transcript_per_thread_per_day(archive: ChatArchive) -> None:
    expected: dict[str, list[str]] = defaultdict(list)
    for row in sorted(archive.conversation, key=lambda r: r.sent_at):
        key = f"{THREADS[row.thread].guid}::{row.sent_at.date().isoformat()}"
        expected[key].append(row.guid)
    days = _days(archive)
    assert set(days) == set(expected)
    for key, day in days.items():
        assert day.message_guids == tuple(expected[key])
        assert day.source == "chat.db"
        assert day.doc_key == f"{day.thread_id}::{day.span}"
        assert date.fromisoformat(day.span)  # single days, no first..last spans
    assert list(days) == sorted(days)


def test_transcript_text_has_one_line_per_message(archive: ChatArchive) -> None:
    day = _days(archive)[f"{THREADS['lisbon'].guid}::2026-03-02"]
    assert day.thread_name == "Lisbon trip"  # renamed "Lisbon crew" two days later
    lines = day.text.splitlines()
    assert lines == [
        "[18:05] maya.chen@icloud.com: Okay team, Lisbon is happening! I'm looking at flights for "
        "Thursday March 19, back Monday the 23rd.",
        "[18:07] jonas.weber@icloud.com: I'm in. TAP has a direct from Boston at 21:40, TP218.",
        "[18:09] Me: Same. I can book the apartment in Alfama if everyone is okay with about "
        "140 euros a night split four ways.",
        "[18:12] +14155550178: Yes please! Alfama is perfect, close to the tram 28 stop.",
    ]
    assert "Loved" not in day.text  # the tapback is not conversation


def test_rendering_is_byte_identical_across_reads_and_re_exports(
    archive: ChatArchive, tmp_path: Path
) -> None:
    first = read_archive(archive.path.parent, "chat.db", tz=UTC)
    again = read_archive(archive.path.parent, "chat.db", tz=UTC)
    exported = write_chat_db(tmp_path / "second-export")
    other = read_archive(exported.path.parent, "chat.db", tz=UTC)
    assert [(d.doc_key, d.text) for d in first] == [(d.doc_key, d.text) for d in again]
    assert [d.content_sha256 for d in first] == [d.content_sha256 for d in other]
    assert first == other


def test_days_end_at_midnight_in_the_configured_zone(archive: ChatArchive) -> None:
    late = next(r for r in archive.conversation if r.sender == DAD and r.at == "23:40")
    dad = THREADS["dad"].guid
    in_utc = _days(archive)
    tokyo = {
        d.doc_key: d
        for d in read_archive(archive.path.parent, "chat.db", tz=ZoneInfo("Asia/Tokyo"))
    }
    assert late.guid in in_utc[f"{dad}::2026-03-03"].message_guids
    assert late.guid in tokyo[f"{dad}::2026-03-04"].message_guids
    assert late.guid not in tokyo[f"{dad}::2026-03-03"].message_guids
    assert "[08:40] +16175550101: Did you sign the Hartwell contract today?" in (
        tokyo[f"{dad}::2026-03-04"].text
    )
    # the same messages, split differently: nothing lost, nothing doubled
    assert sorted(g for d in in_utc.values() for g in d.message_guids) == sorted(
        g for d in tokyo.values() for g in d.message_guids
    )


def test_graph_timezone_setting() -> None:
    assert graph_timezone(load_settings(GRAPH_TIMEZONE="Europe/Lisbon")) == ZoneInfo(
        "Europe/Lisbon"
    )
    assert graph_timezone(load_settings(GRAPH_TIMEZONE="")) is None
    with pytest.raises(SettingsError, match="GRAPH_TIMEZONE"):
        load_settings(GRAPH_TIMEZONE="Mars/Olympus_Mons")


def test_the_archive_path_must_stay_inside_the_folder(archive: ChatArchive) -> None:
    with pytest.raises(ValueError, match="inside the graph folder"):
        read_archive(archive.path.parent, "../chat.db")


def test_render_orders_each_day_and_keeps_one_line_per_message() -> None:
    from datetime import datetime, timedelta

    from varagity.graph.transcripts import render_thread_days
    from varagity.graph.types import Message

    start = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
    late = Message("g2", "t", "Trip", "Me", start + timedelta(minutes=5), "See you\nat the\n  gate")
    early = Message("g1", "t", "Trip", "ana@example.com", start, "Boarding at 9:40")
    next_day = Message("g3", "t", "Trip", "Me", start + timedelta(days=1), "Landed")
    days = render_thread_days([next_day, late, early], source="x/chat.db", tz=UTC)
    assert [d.doc_key for d in days] == ["t::2026-03-02", "t::2026-03-03"]
    assert days[0].message_guids == ("g1", "g2")
    assert days[0].text.splitlines() == [
        "[09:00] ana@example.com: Boarding at 9:40",
        "[09:05] Me: See you at the gate",
    ]
    assert days[0].text == render_thread_days([early, late], source="x/chat.db", tz=UTC)[0].text
    # no zone: this machine's, at the offset of each moment
    local = render_thread_days([early], tz=None)[0]
    assert local.span == early.sent_at.astimezone().date().isoformat()
    assert f"[{early.sent_at.astimezone():%H:%M}]" in local.text


def test_a_later_rename_changes_no_earlier_day(archive: ChatArchive) -> None:
    before = _days(archive)
    lisbon = THREADS["lisbon"].guid
    assert before[f"{lisbon}::2026-03-05"].thread_name == "Lisbon crew"
    messages_app = sqlite3.connect(archive.path)  # Messages renames the group again
    with messages_app:
        (chat_id,) = messages_app.execute(
            "SELECT ROWID FROM chat WHERE guid = ?", (lisbon,)
        ).fetchone()
        (last,) = messages_app.execute("SELECT max(date) FROM message").fetchone()
        cursor = messages_app.execute(
            "INSERT INTO message (guid, item_type, group_title, date) VALUES ('RENAME-3', 2, ?, ?)",
            ("Portugal 2026", last + 10**9),
        )
        messages_app.execute(
            "INSERT INTO chat_message_join (chat_id, message_id) VALUES (?, ?)",
            (chat_id, cursor.lastrowid),
        )
        messages_app.execute(
            "UPDATE chat SET display_name = 'Portugal 2026' WHERE ROWID = ?", (chat_id,)
        )
    messages_app.close()
    assert _days(archive) == before
