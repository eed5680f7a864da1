"""The iMessage source on a real SQLite ``chat.db`` (tests/support/chatdb.py): sniffing by
content, the text it recovers and leaves out, the -wal rows, and an untouched archive."""

from __future__ import annotations

import hashlib
import os
import shutil
import sqlite3
from datetime import timedelta
from pathlib import Path

import pytest

from tests.support.chatdb import (
    LONG_BODY,
    ME,
    THREADS,
    ChatArchive,
    attributed_body,
    write_chat_db,
)
from varagity.graph.sources import (
    MessageSourceError,
    UnsupportedArchiveError,
    is_companion,
    read_archive,
    rejections,
    source_for,
)
from varagity.graph.sources.imessage import IMessageSource, apple_time
from varagity.graph.sources.typedstream import attributed_body_text


@pytest.fixture
def archive(tmp_path: Path) -> ChatArchive:
    return write_chat_db(tmp_path / "graph-docs")


def _state(folder: Path) -> dict[str, tuple[str, int]]:
    """Every file in ``folder``: sha256 and mtime (ns)."""
    return {
        p.name: (hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_mtime_ns)
        for p in sorted(folder.iterdir())
    }


# --- sniffing ---------------------------------------------------------------------


def test_a_chat_db_under_another_name_is_recognised(archive: ChatArchive, tmp_path: Path) -> None:
    other = tmp_path / "elsewhere"
    other.mkdir()
    for suffix in ("", "-wal", "-shm"):
        shutil.copyfile(f"{archive.path}{suffix}", other / f"messages-backup.sqlite{suffix}")
    renamed = other / "messages-backup.sqlite"
    assert IMessageSource().sniff(renamed)
    assert source_for(renamed).name == "imessage"
    assert rejections(renamed) == {}
    assert is_companion(other / "messages-backup.sqlite-wal")
    assert not is_companion(renamed)
    assert IMessageSource().archive_files(renamed) == (
        renamed,
        other / "messages-backup.sqlite-wal",
        other / "messages-backup.sqlite-shm",
    )


def test_a_text_file_named_chat_db_is_refused_with_its_reason(tmp_path: Path) -> None:
    fake = tmp_path / "chat.db"
    fake.write_text("SQLite? no: a note about the Lisbon trip\n")
    assert not IMessageSource().sniff(fake)
    with pytest.raises(UnsupportedArchiveError) as caught:
        source_for(fake)
    assert "SQLite format 3" in caught.value.reasons["imessage"]
    assert str(fake) in str(caught.value)


def test_an_sqlite_database_without_the_imessage_tables_is_refused(tmp_path: Path) -> None:
    other = tmp_path / "chat.db"
    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE message (ROWID INTEGER PRIMARY KEY, text TEXT)")
        conn.execute("CREATE TABLE handle (ROWID INTEGER PRIMARY KEY, id TEXT)")
    conn.close()
    reason = rejections(other)["imessage"]
    assert "without the iMessage tables" in reason
    assert "chat, chat_message_join, chat_handle_join" in reason
    with pytest.raises(MessageSourceError, match="without the iMessage tables"):
        IMessageSource().read(other, source="chat.db")


def test_a_schema_still_only_in_the_wal_is_recognised(tmp_path: Path) -> None:
    build, target = tmp_path / "build", tmp_path / "target"
    build.mkdir()
    target.mkdir()
    conn = sqlite3.connect(build / "chat.db", isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA wal_autocheckpoint = 0")
    for table in ("message", "handle", "chat", "chat_message_join", "chat_handle_join"):
        conn.execute(f"CREATE TABLE {table} (ROWID INTEGER PRIMARY KEY)")
    try:
        for suffix in ("", "-wal", "-shm"):
            shutil.copyfile(build / f"chat.db{suffix}", target / f"chat.db{suffix}")
    finally:
        conn.close()
    assert IMessageSource().sniff(target / "chat.db")
    (target / "chat.db-wal").unlink()
    assert "missing message" in (IMessageSource().rejection(target / "chat.db") or "")


# --- reading ----------------------------------------------------------------------


def test_reads_every_conversation_message_and_nothing_else(archive: ChatArchive) -> None:
    messages = IMessageSource().read(archive.path, source="chat.db")
    by_guid = {m.guid: m for m in messages}
    assert len(by_guid) == len(messages) == len(archive.conversation)
    for row in archive.conversation:
        message = by_guid[row.guid]
        assert message.text == row.rendered_text
        assert message.sender == ("Me" if row.sender == ME else row.sender)
        assert message.thread_id == THREADS[row.thread].guid
        assert abs(message.sent_at - row.sent_at) < timedelta(seconds=1)
    # tapbacks, the rename, the member change and the attachment-only message
    kinds = {row.kind for row in archive.excluded}
    assert kinds == {"tapback", "rename", "member", "attachment"}
    assert not {row.guid for row in archive.excluded} & set(by_guid)
    assert all("\ufffc" not in m.text for m in messages)
    # thread names: a group's (renamed) display name, a one-to-one chat's member
    names = {m.thread_id: m.thread_name for m in messages}  # each thread's last message
    assert names[THREADS["lisbon"].guid] == "Lisbon crew"
    lisbon = [m for m in messages if m.thread_id == THREADS["lisbon"].guid]
    assert lisbon[0].thread_name == "Lisbon trip"  # before the rename
    assert names[THREADS["maya"].guid] == "maya.chen@icloud.com"
    assert names[THREADS["books"].guid] == "+14155550178, jonas.weber@icloud.com"


def test_text_only_in_attributed_body_is_recovered(archive: ChatArchive) -> None:
    conn = sqlite3.connect(f"{archive.path.resolve().as_uri()}?mode=ro&immutable=1", uri=True)
    try:
        stored = dict(conn.execute("SELECT guid, text FROM message WHERE text IS NULL"))
    finally:
        conn.close()
    messages = {m.guid: m.text for m in IMessageSource().read(archive.path, source="chat.db")}
    checkpointed = [r for r in archive.body_only if r not in archive.wal_rows]
    assert len(archive.body_only) >= 5 and checkpointed
    for row in checkpointed:
        assert row.guid in stored  # text really is NULL in the table
    for row in archive.body_only:
        assert messages[row.guid] == row.rendered_text
    assert messages[next(r.guid for r in archive.body_only if r.text == LONG_BODY)] == LONG_BODY


def test_rows_left_in_the_wal_are_read(archive: ChatArchive, tmp_path: Path) -> None:
    wal_guids = {r.guid for r in archive.wal_rows if r.conversation}
    assert wal_guids
    assert Path(f"{archive.path}-wal").stat().st_size > 0
    read = {m.guid for m in IMessageSource().read(archive.path, source="chat.db")}
    assert wal_guids <= read
    # the database file alone does not have them: they live only in the -wal
    alone = tmp_path / "alone"
    alone.mkdir()
    shutil.copyfile(archive.path, alone / "chat.db")
    without_wal = {m.guid for m in IMessageSource().read(alone / "chat.db", source="chat.db")}
    assert not wal_guids & without_wal
    assert read - wal_guids == without_wal


def test_the_archive_is_never_touched(archive: ChatArchive) -> None:
    folder = archive.path.parent
    before = _state(folder)
    assert set(before) == {"chat.db", "chat.db-wal", "chat.db-shm"}
    source = IMessageSource()
    assert source.sniff(archive.path)
    source.read(archive.path, source="chat.db")
    read_archive(folder, "chat.db")
    assert _state(folder) == before


def test_dates_in_seconds_read_like_nanoseconds(tmp_path: Path) -> None:
    ns = write_chat_db(tmp_path / "ns")
    seconds = write_chat_db(tmp_path / "s", date_unit="s")
    conn = sqlite3.connect(f"{seconds.path.resolve().as_uri()}?mode=ro&immutable=1", uri=True)
    try:
        (largest,) = conn.execute("SELECT max(date) FROM message").fetchone()
    finally:
        conn.close()
    assert largest < 10**10  # really seconds
    as_ns = {m.guid: m.sent_at for m in IMessageSource().read(ns.path, source="x")}
    as_s = {m.guid: m.sent_at for m in IMessageSource().read(seconds.path, source="x")}
    assert as_ns.keys() == as_s.keys()
    assert all(abs(as_ns[g] - as_s[g]) < timedelta(seconds=1) for g in as_ns)
    assert apple_time(0).year == 2001


def test_a_corrupt_database_is_a_specific_error(archive: ChatArchive, tmp_path: Path) -> None:
    damaged = tmp_path / "damaged" / "chat.db"
    damaged.parent.mkdir()
    data = bytearray(archive.path.read_bytes())
    page = int.from_bytes(data[16:18], "big")
    data[page:] = b"\x5a" * (len(data) - page)  # every page but the first
    damaged.write_bytes(bytes(data))
    with pytest.raises(MessageSourceError) as caught:
        IMessageSource().read(damaged, source="chat.db")
    assert caught.value.reason.startswith("is corrupt")
    assert str(damaged) in str(caught.value)


def test_a_missing_archive_is_a_specific_error(tmp_path: Path) -> None:
    with pytest.raises(MessageSourceError, match="does not exist"):
        IMessageSource().read(tmp_path / "chat.db", source="chat.db")


# --- attributedBody -----------------------------------------------------------------

# "Hello" as macOS Messages archives it: the layout the open-source typedstream readers
# document (streamtyped header, NSAttributedString/NSObject, NSString '+' payload, the
# attribute run and its dictionary of __kIMMessagePartAttributeName -> NSNumber 0).
HELLO = bytes.fromhex(
    "040b73747265616d747970656481e803840140848484124e5341747472696275746564537472696e67"
    "008484084e534f626a65637400859284848408"
    "4e53537472696e67019484012b0548656c6c6f86"
    "840269490105928484840c4e5344696374696f6e617279009484016901928496961d5f5f6b494d4d"
    "657373616765506172744174747269627574654e616d658692848484084e534e756d626572008484"
    "074e5356616c7565009484012a84999900868686"
)


def test_the_fixture_writes_attributed_bodies_as_macos_does() -> None:
    assert attributed_body("Hello") == HELLO
    assert attributed_body_text(HELLO) == "Hello"


@pytest.mark.parametrize("size", [1, 127, 128, 300, 32767, 40000])
def test_attributed_body_lengths_in_every_form(size: int) -> None:
    text = ("Rua de São Miguel 12 · " * 2000)[:size]
    blob = attributed_body(text)
    encoded = len(text.encode("utf-8"))
    if encoded > 127:
        form = b"\x81" + encoded.to_bytes(2, "little") if encoded < 2**15 else b"\x82"
        assert b"\x01+" + form in blob
    assert attributed_body_text(blob) == text


def test_undecodable_attributed_bodies_give_none_not_an_exception() -> None:
    blob = attributed_body("Pena Palace opens at 9:30.")
    assert attributed_body_text(None) is None
    assert attributed_body_text(b"") is None
    assert attributed_body_text(b"\x00\x01garbage") is None
    assert attributed_body_text(blob[:40]) is None
    # another header (a writer we do not know): the NSString payload is still found
    assert attributed_body_text(b"\x05" + blob[1:]) == "Pena Palace opens at 9:30."


def test_a_copy_taken_while_the_archive_changed_is_taken_again(
    archive: ChatArchive, monkeypatch: pytest.MonkeyPatch
) -> None:
    from varagity.graph.sources import imessage

    copies: list[str] = []
    real_copy = shutil.copyfile
    wal = Path(f"{archive.path}-wal")

    def copy_while_messages_writes(src: Path, dst: Path) -> object:
        copies.append(Path(src).name)
        if len(copies) == 2:  # the first attempt's -wal: Messages appends meanwhile
            stat = wal.stat()
            os.utime(wal, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
        return real_copy(src, dst)

    monkeypatch.setattr(imessage.shutil, "copyfile", copy_while_messages_writes)
    messages = IMessageSource().read(archive.path, source="chat.db")
    assert copies == ["chat.db", "chat.db-wal", "chat.db-shm"] * 2
    assert {r.guid for r in archive.wal_rows if r.conversation} <= {m.guid for m in messages}


def test_an_archive_that_never_stops_changing_is_a_specific_error(
    archive: ChatArchive, monkeypatch: pytest.MonkeyPatch
) -> None:
    from varagity.graph.sources import imessage

    real_copy = shutil.copyfile

    def always_changing(src: Path, dst: Path) -> object:
        stat = archive.path.stat()
        os.utime(archive.path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
        return real_copy(src, dst)

    monkeypatch.setattr(imessage.shutil, "copyfile", always_changing)
    with pytest.raises(MessageSourceError, match="kept changing while it was being copied"):
        IMessageSource().read(archive.path, source="chat.db")


def test_an_archive_locked_mid_write_is_read_as_of_its_last_commit(archive: ChatArchive) -> None:
    messages_app = sqlite3.connect(archive.path, isolation_level=None)
    try:
        messages_app.execute("PRAGMA cache_size = 1")  # spill the write to disk early
        messages_app.execute("BEGIN EXCLUSIVE")
        for i in range(500):
            messages_app.execute(
                "INSERT INTO message (guid, text, date) VALUES (?, 'not sent yet', 0)",
                (f"UNCOMMITTED-{i}",),
            )
            messages_app.execute(
                "INSERT INTO chat_message_join (chat_id, message_id) "
                "VALUES (1, last_insert_rowid())"
            )
        assert IMessageSource().sniff(archive.path)
        guids = {m.guid for m in IMessageSource().read(archive.path, source="chat.db")}
    finally:
        messages_app.execute("ROLLBACK")
        messages_app.close()
    assert {r.guid for r in archive.conversation} == guids
