"""Messages the user forgot: the rules every read of an archive leaves them out by.

An archive in ``GRAPH_DOCS_PATH`` is the user's own file and is never written, so a
forgotten thread, handle or range of days stays in it. What forgetting changes is what
the graph is given: every read of an archive (a build, a bounded rebuild, the folder
diff, :func:`~varagity.graph.sources.registry.read_archive`) drops the messages a rule
matches before it renders the thread-days, so no later build puts them back.

The rules live beside the archives, in the hidden file :data:`RULES_FILE` at the
graph folder's root (hidden files are never scanned, listed or uploaded over): they
survive a ``docker compose down -v`` exactly as long as the archives they apply to. A
rule holds identifiers only (a thread id, a handle, two days), never message text.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from datetime import date, tzinfo
from pathlib import Path
from typing import Literal

from varagity.graph.manifest import write_json_atomic
from varagity.graph.transcripts import local_time
from varagity.graph.types import Message

log = logging.getLogger(__name__)

RULES_FILE = ".varagity-forgotten.json"
RULES_SCHEMA = 1

RuleKind = Literal["thread", "handle", "range"]


@dataclass(frozen=True)
class ForgetRule:
    """Which messages one forget took out of the graph.

    ``thread``: every message of ``thread_id``; ``handle``: every message ``handle``
    sent (any thread, any archive); ``range``: every message of the local days
    ``first_day`` .. ``last_day`` (of ``thread_id`` only, when it is set).
    """

    kind: RuleKind
    forget_id: str
    thread_id: str | None = None
    handle: str | None = None
    first_day: str | None = None
    last_day: str | None = None

    def __post_init__(self) -> None:
        if self.kind == "thread" and not self.thread_id:
            raise ValueError("a thread rule needs a thread id")
        if self.kind == "handle" and not self.handle:
            raise ValueError("a handle rule needs a handle")
        if self.kind == "range":
            if not self.first_day or not self.last_day:
                raise ValueError("a range rule needs its first and last day")
            first, last = date.fromisoformat(self.first_day), date.fromisoformat(self.last_day)
            if first > last:
                raise ValueError(f"the range {self.first_day}..{self.last_day} is reversed")
        if self.kind not in ("thread", "handle", "range"):
            raise ValueError(f"unknown rule kind {self.kind!r}")

    def matches(self, message: Message, tz: tzinfo | None) -> bool:
        """Whether ``message`` is forgotten by this rule (days in ``tz``, as rendered)."""
        if self.kind == "thread":
            return message.thread_id == self.thread_id
        if self.kind == "handle":
            return message.sender == self.handle
        if self.thread_id is not None and message.thread_id != self.thread_id:
            return False
        day = local_time(message.sent_at, tz).date().isoformat()
        return (self.first_day or "") <= day <= (self.last_day or "")

    @property
    def described(self) -> str:
        """``thread iMessage;-;x``, ``handle +1415…``, ``days 2026-03-02..2026-03-03``."""
        if self.kind == "thread":
            return f"thread {self.thread_id}"
        if self.kind == "handle":
            return f"handle {self.handle}"
        where = f" of thread {self.thread_id}" if self.thread_id else ""
        return f"messages of days {self.first_day}..{self.last_day}{where}"


def rules_path(root: Path) -> Path:
    """Where the rules of the graph folder ``root`` live."""
    return root / RULES_FILE


def read_rules(root: Path) -> tuple[ForgetRule, ...]:
    """The rules of the graph folder ``root`` (none when the file is absent).

    Raises:
        ValueError: The file is there but unreadable: forgotten messages must never
            come back because a file could not be parsed, so a read of the archives
            fails instead.
    """
    path = rules_path(root)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return ()
    try:
        data = json.loads(raw)
        if data.get("schema_version") != RULES_SCHEMA:
            raise ValueError(f"schema {data.get('schema_version')!r}")
        return tuple(ForgetRule(**rule) for rule in data["rules"])
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        raise ValueError(f"{path} is not a readable list of forgotten messages: {exc}") from exc


def add_rule(root: Path, rule: ForgetRule) -> tuple[ForgetRule, ...]:
    """Add ``rule`` to the graph folder's rules (written atomically); returns them all."""
    rules = (*read_rules(root), rule)
    root.mkdir(parents=True, exist_ok=True)
    write_json_atomic(
        rules_path(root),
        {"schema_version": RULES_SCHEMA, "rules": [asdict(r) for r in rules]},
    )
    log.info("forgotten in the graph folder %s: %s", root, rule.described)
    return rules


def remembered(
    messages: Iterable[Message], rules: Sequence[ForgetRule], tz: tzinfo | None
) -> list[Message]:
    """``messages`` without those any of ``rules`` forgot."""
    if not rules:
        return list(messages)
    return [m for m in messages if not any(rule.matches(m, tz) for rule in rules)]
