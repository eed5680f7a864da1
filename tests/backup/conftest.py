"""Fixtures of the backup tests: a generated document corpus in a real Postgres and a
real Tantivy index (random unit vectors: a backup calls no model either way)."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from varagity.config import Settings
from varagity.stores.bm25.tantivy_store import TantivyBM25Store
from varagity.stores.postgres import connect, ensure_database
from varagity.stores.vector_store import PgVectorStore
from varagity_bench.backup import generate_corpus

DIM = 16


@dataclass
class Stack:
    """One stack's stores and settings."""

    settings: Settings
    pg: PgVectorStore
    bm25: TantivyBM25Store


@pytest.fixture
def backup_settings(
    make_settings: Callable[..., Settings], pg_url: str, tmp_path: Path
) -> Settings:
    return make_settings(
        DATABASE_URL=pg_url,
        EMBEDDING_DIM=DIM,
        GRAPH_DOCS_PATH=tmp_path / "graph-docs",
        GRAPH_STORAGE_PATH=tmp_path / "graph",
    )


@pytest.fixture
def stack(backup_settings: Settings) -> Iterator[Stack]:
    """A stack holding a generated corpus of 12 documents x 7 chunks."""
    pg = PgVectorStore(backup_settings.DATABASE_URL or "", embedding_dim=DIM)
    bm25 = TantivyBM25Store(backup_settings.bm25_path)
    generate_corpus(backup_settings, pg, bm25, documents=12, chunks_per_document=7)
    yield Stack(backup_settings, pg, bm25)
    pg.close()
    bm25.close()


@pytest.fixture
def other_stack(
    pg_server_url: str, make_settings: Callable[..., Settings], tmp_path: Path
) -> Iterator[Stack]:
    """A second, empty stack (its own database, corpus folder and index) to restore into."""
    name = f"o_{uuid.uuid4().hex[:12]}"
    url = ensure_database(pg_server_url, name)
    settings = make_settings(
        DATABASE_URL=url,
        EMBEDDING_DIM=DIM,
        VARAGITY_HOME=tmp_path / "home2",
        DOCS_PATH=tmp_path / "docs2",
    )
    pg = PgVectorStore(url, embedding_dim=DIM)
    bm25 = TantivyBM25Store(settings.bm25_path)
    yield Stack(settings, pg, bm25)
    pg.close()
    bm25.close()
    with connect(pg_server_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
