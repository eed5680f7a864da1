"""The stale-corpus flag on a real Postgres."""

from __future__ import annotations

import pytest

from tests.support.records import document_row, stored_chunks
from varagity.config import load_settings
from varagity.stores.corpus_state import CorpusState, ingest_settings
from varagity.stores.vector_store import PgVectorStore

pytestmark = pytest.mark.integration


def test_flag_follows_settings_and_only_a_reingest_clears_it(pg_url: str) -> None:
    store = PgVectorStore(pg_url, embedding_dim=8)
    try:
        corpus = CorpusState(store)
        base = load_settings(CHUNK_SIZE=800)
        assert corpus.observe(base) is None  # empty corpus adopts the settings
        assert corpus.built_with() == ingest_settings(base)
        store.write_document(document_row("d1", 1), stored_chunks("d1", 1, 0))

        smaller = load_settings(CHUNK_SIZE=400)
        flag = corpus.observe(smaller)
        assert flag is not None and "CHUNK_SIZE 800->400" in flag.reason
        # setting it back does not clear the flag: the corpus may hold 400-char chunks
        assert corpus.observe(base) is not None
        corpus.rebuilt_with(base)
        assert corpus.stale() is None and corpus.observe(base) is None
        assert corpus.observe(load_settings(CONTEXTUALIZE=False)) is not None
    finally:
        store.close()


def test_an_emptied_corpus_is_never_stale(pg_url: str) -> None:
    store = PgVectorStore(pg_url, embedding_dim=8)
    try:
        corpus = CorpusState(store)
        store.write_document(document_row("d1", 1), stored_chunks("d1", 1, 0))
        corpus.observe(load_settings(CHUNK_SIZE=800))
        assert corpus.observe(load_settings(CHUNK_SIZE=500)) is not None
        store.delete_documents(["d1"])
        assert corpus.observe(load_settings(CHUNK_SIZE=500)) is None
    finally:
        store.close()
