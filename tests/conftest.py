"""Shared fixtures: a real embedded Postgres, real local model servers, real settings.

* ``pg_server_url`` - one embedded PostgreSQL + pgvector for the session;
* ``pg_url`` - a fresh, empty database on it for each test;
* ``model_urls`` - the local chat server (llama.cpp serving the default ``LOCAL_LLM``,
  Qwen2.5-Coder-0.5B-Instruct) and the MiniLM server, started once;
* ``stack_settings`` - settings for a temporary corpus and home wired to all of the
  above, exported to the environment so ``get_settings()`` (Dagster resources, the
  API) sees exactly what the test built.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from varagity.config import Settings, load_settings, reset_settings
from varagity_stack.model_servers import free_port

__all__ = ["free_port"]


@pytest.fixture(scope="session")
def session_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A short path for the session's shared state (unix socket paths are length-limited)."""
    return tmp_path_factory.mktemp("vh")


@pytest.fixture(scope="session")
def pg_server_url(session_home: Path) -> Iterator[str]:
    """One embedded Postgres for the whole session (or TEST_DATABASE_URL when set)."""
    external = os.environ.get("TEST_DATABASE_URL")
    if external:
        yield external
        return
    from varagity.stores.postgres import ensure_embedded_postgres, stop_embedded_postgres

    settings = load_settings(VARAGITY_HOME=session_home, DATABASE_URL=None)
    yield ensure_embedded_postgres(settings)
    stop_embedded_postgres(settings)


@pytest.fixture
def pg_url(pg_server_url: str) -> Iterator[str]:
    """A new empty database for one test, dropped afterwards."""
    from varagity.stores.postgres import connect, ensure_database

    name = f"t_{uuid.uuid4().hex[:12]}"
    url = ensure_database(pg_server_url, name)
    yield url
    with connect(pg_server_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(scope="session")
def model_urls(session_home: Path) -> Iterator[dict[str, str]]:
    """The packaged chat, graph reader and embedding servers, started once for the
    session (their URLs, as settings)."""
    from varagity_stack.model_servers import (
        embedding_server_process,
        llm_server_process,
        reader_server_process,
    )

    settings = load_settings(
        VARAGITY_HOME=session_home,
        LLM_BASE_URL=None,
        GRAPH_READER_BASE_URL=None,
        LLM_PORT=free_port(),
        EMBEDDING_PORT=free_port(),
        GRAPH_READER_PORT=free_port(),
    )
    log_dir = session_home / "logs"
    servers = [
        (llm_server_process(settings, log_dir), settings.llm_url),
        (reader_server_process(settings, log_dir), settings.reader_url),
        (embedding_server_process(settings, log_dir), settings.embedding_url),
    ]
    for proc, _ in servers:
        proc.start()
    try:
        for proc, url in servers:
            proc.wait_ready(f"{url}/models", timeout=300)
        yield {
            "LLM_BASE_URL": settings.llm_url,
            "GRAPH_READER_BASE_URL": str(settings.reader_url),
            "EMBEDDING_BASE_URL": settings.embedding_url,
        }
    finally:
        for proc, _ in servers:
            proc.stop()


SettingsFactory = Callable[..., Settings]


@pytest.fixture
def make_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[SettingsFactory]:
    """Build settings from keyword overrides and export them to the environment."""

    def build(**overrides: object) -> Settings:
        values: dict[str, object] = {
            "VARAGITY_HOME": tmp_path / "home",
            "DOCS_PATH": tmp_path / "docs",
            "CONTEXTUALIZE": False,
            "LOG_LEVEL": "INFO",
        }
        values.update(overrides)
        for key, value in values.items():
            if value is None:
                monkeypatch.delenv(key, raising=False)
            else:
                monkeypatch.setenv(key, str(value))
        reset_settings()
        settings = load_settings()
        settings.docs_path.mkdir(parents=True, exist_ok=True)
        settings.home.mkdir(parents=True, exist_ok=True)
        return settings

    monkeypatch.chdir(tmp_path)  # no stray .env from the repository
    yield build
    reset_settings()


@pytest.fixture
def stack_settings(
    make_settings: SettingsFactory, pg_url: str, model_urls: dict[str, str]
) -> Settings:
    """Settings wired to a fresh database and the session's model servers."""
    return make_settings(DATABASE_URL=pg_url, **model_urls)
