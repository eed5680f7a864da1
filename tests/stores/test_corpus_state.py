"""The stale-corpus flag on a real Postgres."""

from __future__ import annotations

import pytest

from tests.support.records import document_row, stored_chunks
from varagity.config import load_settings
from varagity.stores.corpus_state import CorpusState, GraphState, graph_settings, ingest_settings
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


def test_the_graph_flag_follows_the_chat_model_and_only_a_full_rebuild_clears_it(
    pg_url: str,
) -> None:
    store = PgVectorStore(pg_url, embedding_dim=8)
    try:
        graph = GraphState(store)
        base = load_settings(LLM_MODEL="qwen2.5-coder-0.5b-instruct")
        assert graph.observe(base, empty=True) is None  # an empty graph adopts the settings
        assert graph.built_with() == graph_settings(base)
        assert graph.observe(base, empty=False) is None

        moved = load_settings(LLM_MODEL="another-chat-model")
        flag = graph.observe(moved, empty=False)
        assert flag is not None
        assert "LLM_MODEL qwen2.5-coder-0.5b-instruct->another-chat-model" in flag.reason
        # the model set back does not clear it: some days were extracted meanwhile
        assert graph.observe(base, empty=False) is not None
        graph.rebuilt_with(moved)
        assert graph.stale() is None and graph.observe(moved, empty=False) is None
        # an extraction setting flags it too; the documents' flag is another one
        flag = graph.observe(
            load_settings(LLM_MODEL="another-chat-model", GRAPH_EXTRACTION="model"), empty=False
        )
        assert flag is not None and "GRAPH_EXTRACTION skeleton->model" in flag.reason
        assert CorpusState(store).stale() is None
        # a reset forgets both; the next build adopts what it is built with
        graph.forget()
        assert graph.stale() is None and graph.built_with() is None
        assert graph.observe(base, empty=False) is None  # a graph from before it was recorded
        assert graph.built_with() == graph_settings(base)
    finally:
        store.close()
