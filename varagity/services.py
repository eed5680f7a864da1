"""The open handles one process needs: stores and model clients, built from settings.

The API's lifespan, the Dagster resources and the CLI all build one
:class:`Services` and close it when done; nothing here happens at import time.

:meth:`Services.open` replays the runtime overrides stored in Postgres onto the
settings it is given, so every process works with the same *effective* settings;
``base_settings`` keeps what the environment said. The API changes overrides at run
time through :meth:`Services.update_settings`.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from functools import partial
from typing import TYPE_CHECKING

from varagity.backup.rag import heal_rag_index
from varagity.config import REINGEST_AFFECTING, RUNTIME_EDITABLE, Settings
from varagity.graph.manifest import provenance
from varagity.graph.registry import workdir_for
from varagity.graph.service import GraphService
from varagity.models.chat import ChatClient
from varagity.models.embeddings import EmbeddingClient
from varagity.models.rerank import RerankClient
from varagity.retrieval import RetrievalConfig, Retriever, build_retriever
from varagity.stores.bm25 import BM25Store, open_bm25_store
from varagity.stores.corpus_state import CorpusState
from varagity.stores.model_claims import ModelClaims
from varagity.stores.postgres import database_url
from varagity.stores.settings_overrides import (
    OverrideProblem,
    SettingsOverrideStore,
    apply_overrides,
    check_names,
    validate_overrides,
)
from varagity.stores.vector_store import PgVectorStore

if TYPE_CHECKING:
    from varagity.ingest.stages import StoreResult

log = logging.getLogger(__name__)

# Runtime-editable settings the chat client captures when it is built.
_CHAT_CLIENT_SETTINGS = ("LLM_MAX_TOKENS", "LLM_TEMPERATURE")


@dataclass
class Services:
    """Stores and model clients for one process, and the settings they run with."""

    settings: Settings
    """The effective settings: ``base_settings`` with the stored overrides applied."""
    base_settings: Settings
    """The settings from the environment (and ``.env``), before overrides."""
    pg: PgVectorStore
    bm25: BM25Store
    embedder: EmbeddingClient
    chat: ChatClient
    reader: ChatClient | None = None
    """The graph reader's client (``GRAPH_READER_*``); None when the chat model reads."""
    reranker: RerankClient | None = None
    overrides: dict[str, str] = field(default_factory=dict)
    """The overrides in effect, by name, in environment-string form."""
    override_problems: list[OverrideProblem] = field(default_factory=list)
    """Stored overrides that were skipped because they no longer validate."""
    _retrievers: dict[str, Retriever] = field(default_factory=dict)
    _graph: GraphService | None = None
    _retired_chat: list[ChatClient] = field(default_factory=list)
    _model_claims: dict[str, ModelClaims] = field(default_factory=dict)
    _lock: threading.RLock = field(default_factory=threading.RLock)

    @classmethod
    def open(cls, settings: Settings) -> Services:
        """Connect to Postgres (migrating it), apply the stored overrides to ``settings``,
        then open the BM25 index (finishing the rebuild of a killed restore) and the
        model clients with the effective settings."""
        pg = PgVectorStore(database_url(settings), embedding_dim=settings.EMBEDDING_DIM)
        try:
            rows = SettingsOverrideStore(pg).rows()
            effective, problems = apply_overrides(settings, rows)
            bm25 = open_bm25_store(effective)
            heal_rag_index(pg, bm25)  # a restore killed during its BM25 rebuild
        except Exception:
            pg.close()
            raise
        skipped = {p.name for p in problems}
        return cls(
            settings=effective,
            base_settings=settings,
            pg=pg,
            bm25=bm25,
            embedder=EmbeddingClient.from_settings(effective),
            chat=ChatClient.from_settings(effective),
            reader=ChatClient.reader_from_settings(effective),
            overrides={r.name: r.value for r in rows if r.name not in skipped},
            override_problems=problems,
        )

    def retriever(self, method: str | None = None) -> Retriever:
        """The retriever for ``method`` (default ``RETRIEVAL_METHOD``), built once."""
        with self._lock:
            s = self.settings
            name = method or s.RETRIEVAL_METHOD
            if name not in self._retrievers:
                if name == "reranked" and self.reranker is None:
                    # RERANK_BASE_URL unset: the local embedding server's similarity scorer
                    self.reranker = RerankClient.from_settings(s)
                self._retrievers[name] = build_retriever(
                    name,
                    RetrievalConfig.from_settings(s),
                    pg=self.pg,
                    bm25=self.bm25,
                    embedder=self.embedder,
                    chat=self.chat,
                    reranker=self.reranker,
                )
            return self._retrievers[name]

    def index_as_of(self) -> datetime | None:
        """When the document index last changed (the newest ``ingested_at``; None when
        empty): what a chat turn says its answer was given from."""
        return self.pg.index_as_of()

    @property
    def model_claims(self) -> ModelClaims:
        """The claims on the chat model (``LLM_BASE_URL``) shared with every process
        and host through Postgres: turns claim it, blurb passes yield to them."""
        with self._lock:
            url = self.settings.llm_url
            if url not in self._model_claims:
                self._model_claims[url] = ModelClaims(self.pg.connection, url)
            return self._model_claims[url]

    @property
    def graph(self) -> GraphService:
        """The message graph's reader (nothing opens until a graph turn reads it); its
        day cards name their thread, span and messages from the build manifest."""
        with self._lock:
            if self._graph is None:
                workdir = workdir_for(self.settings)
                self._graph = GraphService(
                    self.settings,
                    self.chat,
                    self.embedder,
                    describe=partial(provenance, workdir),
                    reader=self.reader,
                )
            return self._graph

    def apply_settings(self, new: Settings) -> None:
        """Switch this process to ``new`` settings without reopening the stores.

        Cached retrievers are dropped (the next request builds them with the new
        values) and the chat client is rebuilt when a setting it captured changed. The
        replaced client stays open until :meth:`close`, so answers streaming through it
        finish.

        Raises:
            ValueError: ``new`` differs in a setting that is not runtime-editable.
        """
        with self._lock:
            old = self.settings
            fixed = [
                n
                for n in Settings.model_fields
                if n not in RUNTIME_EDITABLE and getattr(new, n) != getattr(old, n)
            ]
            if fixed:
                raise ValueError(
                    f"{', '.join(fixed)} cannot change while the process runs; restart it"
                )
            self.settings = new
            self._retrievers = {}
            if any(getattr(old, n) != getattr(new, n) for n in _CHAT_CLIENT_SETTINGS):
                self._retired_chat.append(self.chat)
                self.chat = ChatClient.from_settings(new)

    def update_settings(self, changes: Mapping[str, str | None]) -> list[str]:
        """Change the stored overrides and apply the result to this process.

        ``changes`` maps setting names to environment-string values, None removing the
        override. The overrides in effect with the changes merged in are validated as a
        whole before anything is stored; then the rows change in one transaction and the
        new settings apply at once. When a reingest-affecting setting changed value on
        a non-empty corpus, the corpus is flagged stale.

        Returns:
            The names of the settings whose effective value changed.

        Raises:
            OverrideValidationError: Nothing was stored; ``errors`` says why, per setting.
        """
        check_names(changes)
        with self._lock:
            merged = dict(self.overrides)
            for name, value in changes.items():
                if value is None:
                    merged.pop(name, None)
                else:
                    merged[name] = value
            new = validate_overrides(self.base_settings, merged)
            SettingsOverrideStore(self.pg).save(
                {n: v for n, v in changes.items() if v is not None},
                remove=[n for n, v in changes.items() if v is None],
            )
            old = self.settings
            self.apply_settings(new)
            self.overrides = merged
            self.override_problems = [p for p in self.override_problems if p.name not in changes]
        changed = [n for n in Settings.model_fields if getattr(old, n) != getattr(new, n)]
        if any(n in REINGEST_AFFECTING for n in changed):
            corpus = CorpusState(self.pg)
            corpus.observe(old)  # records what the corpus was built with, if nothing did yet
            corpus.observe(new)
        log.info("settings changed at runtime: %s", ", ".join(changed) or "nothing")
        return changed

    def close(self) -> None:
        """Release every handle (errors are logged, not raised)."""
        closers = [
            ("bm25", self.bm25.close),
            ("postgres", self.pg.close),
            ("embedder", self.embedder.close),
            ("chat", self.chat.close),
            *(("replaced chat", c.close) for c in self._retired_chat),
        ]
        if self.reader is not None:
            closers.append(("reader", self.reader.close))
        if self.reranker is not None:
            closers.append(("reranker", self.reranker.close))
        if self._graph is not None:
            closers.insert(0, ("graph", self._graph.close))
        for name, closer in closers:
            try:
                closer()
            except Exception as exc:  # closing must not mask the real outcome
                log.warning("closing %s failed: %s", name, exc)


def ingest_file(services: Services, relative_path: str) -> StoreResult:
    """Every stage for one file, in-process and in order: the ingest job's stages, then
    the blurb stage (what the two Dagster jobs do for one partition)."""
    from varagity.ingest.parsing import parse_file
    from varagity.ingest.stages import (
        StoreInput,
        chunk_document,
        contextualize_document,
        embed_drafts,
        store_documents,
    )

    settings = services.settings
    parsed = parse_file(settings.docs_path, relative_path, settings=settings)
    drafts = chunk_document(parsed, settings, services.embedder)
    vectors = embed_drafts(drafts, services.embedder)
    (result,) = store_documents(
        [StoreInput(parsed, drafts, vectors)],
        pg=services.pg,
        bm25=services.bm25,
        settings=settings,
        embedding_model=services.embedder.model,
    )
    contextualize_document(
        result.doc_id,
        pg=services.pg,
        bm25=services.bm25,
        chat=services.chat,
        embedder=services.embedder,
        settings=settings,
        claims=services.model_claims,
    )
    return result
