"""One writer per corpus, across processes (the contract the API and Dagster use).

The document corpus (``rag``) is guarded by a Postgres advisory lock: store writes hold
it shared, a restore exclusive. The message graph (``graph``) by an ``flock`` in its
storage folder: builds, exports and restores hold it exclusive. Both are non-blocking
(:class:`CorpusBusy` names the holder) and die with their holder; the primitives live in
:mod:`varagity.corpus_lock`, below the stores and the graph service that take them.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from varagity.backup.bundle import Corpus
from varagity.config import Settings
from varagity.corpus_lock import (
    CorpusBusy,
    graph_restoring,
    graph_write_lock,
    rag_holders,
    rag_lock,
)
from varagity.stores.vector_store import PgVectorStore

__all__ = ["CorpusBusy", "corpus_restoring", "corpus_write_lock", "restore_holder"]

_RESTORE = "restore"


def restore_holder(what: str) -> str:
    """The holder name of a restore (what :func:`corpus_restoring` recognises)."""
    return f"{_RESTORE} of {what}"


@contextlib.contextmanager
def corpus_write_lock(
    settings: Settings, corpus: Corpus, *, exclusive: bool, holder: str
) -> Iterator[None]:
    """Hold ``corpus`` as a writer for the block, or raise :class:`CorpusBusy` at once.

    ``rag``: the advisory lock on a connection of its own, shared (writers that may run
    side by side) or exclusive (a restore). ``graph``: the single-writer ``flock``
    (exclusive whatever ``exclusive`` says). A ``holder`` made by :func:`restore_holder`
    marks the corpus as being restored (:func:`corpus_restoring`).
    """
    if corpus == "rag":
        from varagity.stores.postgres import database_url

        with rag_lock(database_url(settings), exclusive=exclusive, holder=holder):
            yield
    elif corpus == "graph":
        with graph_write_lock(settings, holder=holder, restore=holder.startswith(_RESTORE)):
            yield
    else:
        raise ValueError(f"corpus {corpus!r} is neither 'rag' nor 'graph'")


def corpus_restoring(
    settings: Settings, corpus: Corpus, *, pg: PgVectorStore | None = None
) -> str | None:
    """Who is restoring ``corpus`` right now (None when no restore runs). Cheap: one
    catalog query (rag; on ``pg``'s pool when given, which a caller asking per chat
    should) or one lock probe (graph)."""
    if corpus == "graph":
        return graph_restoring(settings)
    if pg is not None:
        with pg.connection() as conn:
            holders = rag_holders(conn, exclusive_only=True)
    else:
        from varagity.stores.postgres import connect, database_url

        with connect(database_url(settings), autocommit=True) as conn:
            holders = rag_holders(conn, exclusive_only=True)
    restoring = [h for h in holders if h.startswith(_RESTORE)]
    return restoring[0] if restoring else None
