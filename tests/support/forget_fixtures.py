"""What the forget tests share (the API's, tests/api/test_forget_api.py, and the CLI's,
tests/cli/test_forget_cli.py): a Messages archive of two threads, one whose every message
carries a marker no other text has, the settings of a stack with the graph on, and the
searches of every Postgres column and every file for a needle."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from psycopg import sql

from tests.conftest import SettingsFactory, free_port
from varagity.config import Settings
from varagity.graph.sources.imessage_writer import (
    apple_date,
    insert_chat,
    insert_handle,
    insert_message,
    write_archive,
)
from varagity.stores.postgres import connect

#: In every message of the forgotten thread, and nowhere else.
MARKER = "Zephyrquill7731"
#: In every message of the thread that stays.
KEPT = "Harbourlantern5512"
SECRET = "iMessage;-;kim@example.com"
OTHER = "iMessage;-;lee@example.com"


def day(day: int, hour: int, minute: int = 0) -> datetime:
    return datetime(2026, 3, 2 + day, hour, minute, tzinfo=UTC)


#: (thread, sender or None for the owner, when, text)
MESSAGES = (
    (SECRET, "kim@example.com", day(0, 9), f"The vault code is {MARKER}, keep it between us"),
    (SECRET, None, day(0, 9, 5), f"Got it, {MARKER} stays with me and nobody else"),
    (SECRET, "kim@example.com", day(1, 10), f"Remember {MARKER} tomorrow at the bank"),
    (OTHER, "lee@example.com", day(0, 12), f"Dinner at {KEPT} on Friday with the team"),
    (OTHER, None, day(0, 12, 10), f"Sounds good, I will book {KEPT} for eight people"),
)


def write_thread_archive(path: Path) -> None:
    def fill(conn: Any) -> None:
        handles = {h: insert_handle(conn, h) for h in ("kim@example.com", "lee@example.com")}
        chats = {
            SECRET: insert_chat(conn, SECRET, [handles["kim@example.com"]]),
            OTHER: insert_chat(conn, OTHER, [handles["lee@example.com"]]),
        }
        for i, (thread, sender, when, text) in enumerate(MESSAGES):
            insert_message(
                conn,
                chats[thread],
                guid=f"GUID-{i}",
                date=apple_date(when),
                text=text,
                handle_id=handles[sender] if sender else 0,
                is_from_me=sender is None,
            )

    write_archive(path, fill)


def postgres_hits(url: str, needle: str) -> list[str]:
    """Every ``table.column`` of the public schema whose text holds ``needle``."""
    hits = []
    with connect(url, autocommit=True) as conn:
        columns = conn.execute(
            "SELECT table_name, column_name FROM information_schema.columns"
            " WHERE table_schema = 'public'"
            " AND data_type IN ('text', 'character varying', 'json', 'jsonb', 'ARRAY')"
        ).fetchall()
        assert columns
        for table, column in columns:
            query = sql.SQL("SELECT count(*) FROM {} WHERE {}::text LIKE %s").format(
                sql.Identifier(table), sql.Identifier(column)
            )
            row = conn.execute(query, (f"%{needle}%",)).fetchone()
            if row and row[0]:
                hits.append(f"{table}.{column}")
    return hits


def file_hits(roots: list[Path], needle: str) -> list[str]:
    """Every file under ``roots`` holding ``needle`` (raw, any case, or JSON-escaped)."""
    wanted = (needle.encode(), needle.lower().encode(), json.dumps(needle)[1:-1].encode())
    hits = []
    for root in roots:
        for path in root.rglob("*"):
            if path.is_file() and not path.is_symlink():
                data = path.read_bytes()
                if any(w in data for w in wanted):
                    hits.append(str(path))
    return sorted(set(hits))


def forget_settings(
    make_settings: SettingsFactory, pg_url: str, model_urls: dict[str, str]
) -> Settings:
    """A stack's settings with the graph on: skeleton extraction, days cut in UTC, the
    archives in ``./graph-docs``."""
    return make_settings(
        DATABASE_URL=pg_url,
        GRAPH_DOCS_PATH=Path.cwd() / "graph-docs",
        GRAPH_TIMEZONE="UTC",
        GRAPH_EXTRACTION="skeleton",
        DAGSTER_PORT=free_port(),
        **model_urls,
    )
