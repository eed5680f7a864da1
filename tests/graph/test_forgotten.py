"""The forget rules every read of an archive leaves messages out by
(:mod:`varagity.graph.forgotten`): which messages each kind matches, days cut in the
graph's time zone, the rules file beside the archives, and a damaged file refused."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from varagity.graph.forgotten import (
    RULES_FILE,
    ForgetRule,
    add_rule,
    read_rules,
    remembered,
)
from varagity.graph.types import Message


def _message(guid: str, thread: str, sender: str, when: datetime) -> Message:
    return Message(guid, thread, thread, sender, when, f"text of {guid}")


LATE = datetime(2026, 3, 2, 23, 30, tzinfo=UTC)  # 2026-03-03 in Berlin
MESSAGES = (
    _message("a", "t1", "kim@example.com", datetime(2026, 3, 2, 9, tzinfo=UTC)),
    _message("b", "t1", "Me", LATE),
    _message("c", "t2", "kim@example.com", datetime(2026, 3, 4, 9, tzinfo=UTC)),
    _message("d", "t2", "lee@example.com", datetime(2026, 3, 4, 10, tzinfo=UTC)),
)


def _kept(rules: list[ForgetRule], tz: ZoneInfo | None = None) -> list[str]:
    return [m.guid for m in remembered(MESSAGES, rules, tz or ZoneInfo("UTC"))]


def test_each_kind_of_rule_forgets_its_messages() -> None:
    assert _kept([]) == ["a", "b", "c", "d"]
    assert _kept([ForgetRule("thread", "1", thread_id="t1")]) == ["c", "d"]
    assert _kept([ForgetRule("handle", "1", handle="kim@example.com")]) == ["b", "d"]
    days = ForgetRule("range", "1", first_day="2026-03-02", last_day="2026-03-02")
    assert _kept([days]) == ["c", "d"]
    # the days are the graph's: 23:30 UTC is already the next day in Berlin
    assert _kept([days], ZoneInfo("Europe/Berlin")) == ["b", "c", "d"]
    one_thread = ForgetRule(
        "range", "1", thread_id="t2", first_day="2026-03-01", last_day="2026-03-09"
    )
    assert _kept([one_thread]) == ["a", "b"]
    assert _kept([days, one_thread]) == []


def test_rules_are_kept_beside_the_archives_and_a_damaged_file_is_refused(tmp_path: Path) -> None:
    assert read_rules(tmp_path) == ()
    first = ForgetRule("thread", "f1", thread_id="iMessage;-;kim@example.com")
    second = ForgetRule("range", "f2", first_day="2026-03-02", last_day="2026-03-03")
    add_rule(tmp_path, first)
    assert add_rule(tmp_path, second) == (first, second)
    assert read_rules(tmp_path) == (first, second)
    assert (tmp_path / RULES_FILE).name.startswith(".")  # hidden: never scanned as an archive
    (tmp_path / RULES_FILE).write_text("{ not json")
    with pytest.raises(ValueError, match="not a readable list"):
        read_rules(tmp_path)


def test_a_rule_must_say_what_it_forgets() -> None:
    with pytest.raises(ValueError, match="thread id"):
        ForgetRule("thread", "x")
    with pytest.raises(ValueError, match="handle"):
        ForgetRule("handle", "x")
    with pytest.raises(ValueError, match="reversed"):
        ForgetRule("range", "x", first_day="2026-03-04", last_day="2026-03-02")
