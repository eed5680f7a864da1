"""Idempotent SQL migration runner.

Files named ``NNN_name.sql`` in ``varagity/stores/migrations`` apply in name order, each
in one transaction together with its row in ``schema_migrations``; an applied file is
never run again, a failing one rolls back and is retried next time, and a ``.sql`` file
whose name does not match the pattern stops the run (a skipped migration is silent
drift). ``{EMBEDDING_DIM}`` in a file is replaced by the configured dimension.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path

import psycopg

log = logging.getLogger(__name__)

MIGRATIONS_DIR = Path(__file__).with_name("migrations")
NAME_PATTERN = re.compile(r"^\d{3}_[a-z0-9_]+\.sql$")
# Serialises concurrent runners (API and Dagster processes starting together).
_ADVISORY_LOCK_KEY = 0x7661726167  # "varag"


class MigrationError(RuntimeError):
    """A migration file is misnamed or failed to apply."""


def migration_files(directory: Path = MIGRATIONS_DIR) -> list[Path]:
    """The ``.sql`` files to apply, in order; raises on a badly named one."""
    files = sorted(p for p in directory.iterdir() if p.suffix == ".sql")
    bad = [p.name for p in files if not NAME_PATTERN.match(p.name)]
    if bad:
        raise MigrationError(
            f"Migration file(s) {', '.join(bad)} in {directory} do not match NNN_name.sql "
            "(three digits, underscore, lowercase letters/digits/underscores)"
        )
    return files


def apply_migrations(
    conn: psycopg.Connection, *, embedding_dim: int, directory: Path = MIGRATIONS_DIR
) -> list[str]:
    """Apply every pending migration; returns the names applied this time."""
    files = migration_files(directory)
    applied_now: list[str] = []
    conn.autocommit = True
    conn.execute("SELECT pg_advisory_lock(%s)", (_ADVISORY_LOCK_KEY,))
    try:
        conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations ("
            " name TEXT PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())"
        )
        done = {row[0] for row in conn.execute("SELECT name FROM schema_migrations")}
        for path in files:
            if path.name in done:
                continue
            sql = path.read_text(encoding="utf-8").replace("{EMBEDDING_DIM}", str(embedding_dim))
            try:
                with conn.transaction():
                    conn.execute(sql.encode())
                    conn.execute("INSERT INTO schema_migrations (name) VALUES (%s)", (path.name,))
            except psycopg.Error as exc:
                raise MigrationError(
                    f"Migration {path.name} failed and was rolled back: {exc}"
                ) from exc
            log.info("applied migration %s", path.name)
            applied_now.append(path.name)
    finally:
        conn.execute("SELECT pg_advisory_unlock(%s)", (_ADVISORY_LOCK_KEY,))
    check_embedding_dim(conn, embedding_dim)
    return applied_now


def check_embedding_dim(conn: psycopg.Connection, embedding_dim: int) -> None:
    """Refuse to run against a chunks table built for another embedding dimension."""
    row = conn.execute(
        "SELECT atttypmod FROM pg_attribute WHERE attrelid = to_regclass('chunks') "
        "AND attname = 'embedding'"
    ).fetchone()
    if row and row[0] > 0 and row[0] != embedding_dim:
        raise MigrationError(
            f"The chunks table stores {row[0]}-dimensional vectors but EMBEDDING_DIM is "
            f"{embedding_dim}. Use the embedding model the corpus was built with, or point "
            "VARAGITY_HOME/DATABASE_URL at a fresh database and re-ingest."
        )
