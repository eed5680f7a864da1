"""While a restore runs, the API refuses to serve or change that corpus: chat against
it answers ``503 corpus_restoring``, its deletes ``409 corpus_busy`` (the answer of
:class:`~varagity.jobs.CorpusBusy`, which also refuses a launch beside another writer:
:mod:`varagity.jobs.gate`).

The restore is seen through the library's lock (:mod:`varagity.backup.locks`), which
the restore's run holds.
"""

from __future__ import annotations

from varagity.backup.locks import corpus_restoring
from varagity.config import Settings
from varagity.jobs import CorpusBusy
from varagity.stores.vector_store import PgVectorStore
from varagity_api.errors import CORPUS_NAMES, ApiError


def refuse_while_restoring(
    settings: Settings, corpus: str, *, status: int, pg: PgVectorStore | None = None
) -> None:
    """Refuse while a restore of ``corpus`` runs: ``503 corpus_restoring`` (chat) or
    ``409 corpus_busy`` (deletes). Blocking (one cheap lock lookup, on ``pg``'s pool
    when given: a route asking per chat should give its own).

    Raises:
        ApiError: 503 corpus_restoring, naming the restore.
        CorpusBusy: The 409, naming the restore.
    """
    holder = corpus_restoring(settings, corpus, pg=pg)  # type: ignore[arg-type]
    if holder is None:
        return
    if status == 503:
        raise ApiError(
            503,
            "corpus_restoring",
            f"the {CORPUS_NAMES.get(corpus, corpus)} corpus is being restored ({holder}); "
            "ask again once the restore has finished",
        )
    raise CorpusBusy(corpus, holder)
