"""The open handles one process needs: stores and model clients, built from settings.

The API's lifespan, the Dagster resources and the CLI all build one
:class:`Services` and close it when done; nothing here happens at import time.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from varagity.config import Settings
from varagity.models.clients import ChatClient, EmbeddingClient
from varagity.models.rerank import RerankClient
from varagity.retrieval import Retriever, build_retriever
from varagity.stores.bm25 import BM25Store, open_bm25_store
from varagity.stores.postgres import database_url
from varagity.stores.vector_store import PgVectorStore

log = logging.getLogger(__name__)


@dataclass
class Services:
    """Stores and model clients for one process."""

    settings: Settings
    pg: PgVectorStore
    bm25: BM25Store
    embedder: EmbeddingClient
    chat: ChatClient
    reranker: RerankClient | None = None
    _retrievers: dict[str, Retriever] = field(default_factory=dict)

    @classmethod
    def open(cls, settings: Settings) -> Services:
        """Connect to Postgres (migrating it), open the BM25 index and the model clients."""
        pg = PgVectorStore(database_url(settings), embedding_dim=settings.EMBEDDING_DIM)
        try:
            bm25 = open_bm25_store(settings)
        except Exception:
            pg.close()
            raise
        return cls(
            settings=settings,
            pg=pg,
            bm25=bm25,
            embedder=EmbeddingClient.from_settings(settings),
            chat=ChatClient.from_settings(settings),
        )

    def retriever(self, method: str | None = None) -> Retriever:
        """The retriever for ``method`` (default ``RETRIEVAL_METHOD``), built once."""
        name = method or self.settings.RETRIEVAL_METHOD
        if name not in self._retrievers:
            s = self.settings
            if name == "reranked" and self.reranker is None:
                # RERANK_BASE_URL unset: the local embedding server's similarity scorer
                self.reranker = RerankClient.from_settings(s)
            self._retrievers[name] = build_retriever(
                name,
                pg=self.pg,
                bm25=self.bm25,
                embedder=self.embedder,
                semantic_weight=s.SEMANTIC_WEIGHT,
                bm25_weight=s.BM25_WEIGHT,
                arm_candidates=s.ARM_CANDIDATES,
                chat=self.chat,
                reranker=self.reranker,
                rerank_enabled=s.RERANK_ENABLED,
                rerank_base_method=s.RERANK_BASE_METHOD,
                rerank_candidates=s.RERANK_CANDIDATES,
                rerank_top_n=s.RERANK_TOP_N,
                hyde_enabled=s.HYDE_ENABLED,
                hyde_base_method=s.HYDE_BASE_METHOD,
                hyde_max_tokens=s.HYDE_MAX_TOKENS,
            )
        return self._retrievers[name]

    def close(self) -> None:
        """Release every handle (errors are logged, not raised)."""
        for name, closer in (
            ("bm25", self.bm25.close),
            ("postgres", self.pg.close),
            ("embedder", self.embedder.close),
            ("chat", self.chat.close),
            ("reranker", self.reranker.close if self.reranker is not None else lambda: None),
        ):
            try:
                closer()
            except Exception as exc:  # closing must not mask the real outcome
                log.warning("closing %s failed: %s", name, exc)
