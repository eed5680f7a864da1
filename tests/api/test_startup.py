"""API startup against the database: a migration whose SQL fails stops it, naming the
file; a Postgres that cannot be reached yet is tolerated (health says why, routes 503)."""

from __future__ import annotations

import asyncio

import httpx
import pytest
from fastapi import FastAPI

from tests.conftest import SettingsFactory, free_port
from tests.support.api_server import serve
from varagity.stores.migrate import MigrationError
from varagity.stores.postgres import connect
from varagity_api.main import create_app

pytestmark = pytest.mark.integration


async def _start_and_stop(app: FastAPI) -> None:
    async with app.router.lifespan_context(app):
        pass


def test_a_failing_migration_stops_startup_naming_the_file(
    make_settings: SettingsFactory, pg_url: str
) -> None:
    # `chunks` exists as a view: 001_chunks.sql's CREATE TABLE IF NOT EXISTS skips it and
    # its HNSW index on it fails
    with connect(pg_url, autocommit=True) as conn:
        conn.execute("CREATE VIEW chunks AS SELECT 1 AS embedding")
    app = create_app(make_settings(DATABASE_URL=pg_url))
    with pytest.raises(MigrationError, match=r"Migration 001_chunks\.sql failed"):
        asyncio.run(_start_and_stop(app))


def test_an_unreachable_postgres_is_tolerated(make_settings: SettingsFactory) -> None:
    settings = make_settings(DATABASE_URL=f"postgresql://nobody@127.0.0.1:{free_port()}/none")
    with serve(settings) as base:
        health = httpx.get(f"{base}/api/health", timeout=30).json()
        listing = httpx.get(f"{base}/api/documents", timeout=30)
    assert health["status"] == "degraded"
    assert "Cannot connect to Postgres" in health["components"]["postgres"]["detail"]
    assert listing.status_code == 503
