"""One writer per corpus, as the API keeps it: before launching an ingest, a graph
build, an export or a restore, the routes look at the runs in flight for the same
corpus and answer ``409 corpus_busy`` naming the holder; while a restore runs, chat
against that corpus answers ``503 corpus_restoring`` and its deletes ``409 corpus_busy``.

The runs are Dagster's (:meth:`~varagity.dagster_client.DagsterClient.in_flight_corpus_runs`);
the cross-process half is the library's lock (:mod:`varagity.backup.locks`), which every
writer takes in its run, so a run launched past this check (by a sensor, the Dagster UI)
still fails saying who holds the corpus instead of writing beside it. The two corpora's
operations run side by side.
"""

from __future__ import annotations

from collections.abc import Collection

from varagity.backup.locks import corpus_restoring
from varagity.config import Settings
from varagity.dagster_client import CorpusRun
from varagity.stores.vector_store import PgVectorStore
from varagity_api.deps import dagster_client
from varagity_api.errors import ApiError

_NAMES = {"rag": "documents", "graph": "message graph"}


def corpus_busy(corpus: str, holder: str) -> ApiError:
    """The ``409 corpus_busy`` naming who holds ``corpus``."""
    return ApiError(
        409,
        "corpus_busy",
        f"the {_NAMES.get(corpus, corpus)} corpus is busy: {holder} is in flight; try again "
        "once it has finished",
    )


def refuse_beside(settings: Settings, corpus: str, kinds: Collection[str] | None = None) -> None:
    """Refuse with :func:`corpus_busy` when a run of ``corpus`` is in flight (only those
    of ``kinds`` — ``export``, ``restore``, ``other`` — when given). Blocking.

    Raises:
        ApiError: 409 corpus_busy, naming the newest such run.
        DagsterError: Dagster cannot be reached or refused the request.
    """
    runs: list[CorpusRun] = dagster_client(settings).in_flight_corpus_runs(corpus)
    holders = [run for run in runs if kinds is None or run.kind in kinds]
    if holders:
        raise corpus_busy(corpus, holders[0].holder())


def refuse_while_restoring(
    settings: Settings, corpus: str, *, status: int, pg: PgVectorStore | None = None
) -> None:
    """Refuse while a restore of ``corpus`` runs: ``503 corpus_restoring`` (chat) or
    ``409 corpus_busy`` (deletes). Blocking (one cheap lock lookup, on ``pg``'s pool
    when given: a route asking per chat should give its own).

    Raises:
        ApiError: the refusal, naming the restore.
    """
    holder = corpus_restoring(settings, corpus, pg=pg)  # type: ignore[arg-type]
    if holder is None:
        return
    if status == 503:
        raise ApiError(
            503,
            "corpus_restoring",
            f"the {_NAMES.get(corpus, corpus)} corpus is being restored ({holder}); ask again "
            "once the restore has finished",
        )
    raise corpus_busy(corpus, holder)
