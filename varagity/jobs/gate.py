"""One writer per corpus, before a run is launched: the runs in flight that write,
export or restore a corpus (:func:`~varagity.pipeline.corpus_of_run`), and
:func:`refuse_beside`, which every launcher of a writer calls first (the kinds'
``launch``: an ingest, a graph build, an export, a restore, a purge; the API, the
command line and ``varagity doctor --repair`` alike; a graph reset is refused beside any
other run of the graph, and builds and rebuilds beside a reset). It raises :class:`CorpusBusy`
naming the holder; the API answers that ``409 corpus_busy`` in one exception handler and
the command line prints it.

The cross-process half is the library's lock (:mod:`varagity.corpus_lock`), which every
writer takes in its run, so a run launched past this check (by a sensor, the Dagster UI)
still fails saying who holds the corpus instead of writing beside it. The two corpora's
operations run side by side.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import get_args

from varagity import corpus_lock
from varagity.jobs.model import Kind, Run
from varagity.jobs.runs import run_of
from varagity.jobs.transport import DagsterClient

#: The kinds of a backup's runs: an ingest, a build or a purge is refused only beside one.
BACKUPS: tuple[Kind, ...] = ("export", "restore")

#: The kinds that write their corpus (an answer evaluation only reads the documents: a
#: restore waits for it, an export or an ingest does not).
WRITERS: tuple[Kind, ...] = tuple(k for k in get_args(Kind) if k != "evaluation")

#: What each kind's run is, as a holder of its corpus is named (:func:`holder`).
_WHAT: dict[Kind, str] = {
    "export": "an export",
    "restore": "a restore",
    "build": "a graph build",
    "remove": "a graph source removal",
    "reset": "a graph reset",
    "rebuild": "a graph rebuild",
    "ingest": "an ingest",
    "blurbs": "a blurb run",
    "purge": "a purge",
    "evaluation": "an answer evaluation",
}


class CorpusBusy(corpus_lock.CorpusBusy):
    """A run in flight holds the corpus (``holder`` names it): no other writer is
    launched beside it."""

    def __init__(self, corpus: str, holder: str) -> None:
        super().__init__(corpus, holder)
        self.args = (
            f"the {corpus} corpus is busy: {holder} is in flight; try again once it has finished",
        )


def holder(run: Run[object]) -> str:
    """The run as a refusal names it: ``an ingest (run 1a2b...)``."""
    what = _WHAT.get(run.kind)
    if what is None and run.corpus == "rag":
        what = "an ingest" if "dagster/backfill" in run.tags else "a documents run"
    return f"{what or 'a graph run'} (run {run.id})"


def writers(client: DagsterClient, corpus: str) -> list[Run[None]]:
    """The runs queued, starting or started now that write, export or restore
    ``corpus``, newest first."""
    runs = [run_of(node, client.url, None) for node in client.in_flight_runs()]
    runs.sort(key=lambda run: run.created_at, reverse=True)
    return [run for run in runs if run.corpus == corpus]


def refuse_beside(
    client: DagsterClient, corpus: str, kinds: Collection[Kind] | None = None
) -> None:
    """Refuse when a run of ``corpus`` is in flight (only one of ``kinds`` when given).

    Raises:
        CorpusBusy: Naming the newest such run.
        DagsterError: Dagster cannot be reached or refused the request.
    """
    holders = [run for run in writers(client, corpus) if kinds is None or run.kind in kinds]
    if holders:
        raise CorpusBusy(corpus, holder(holders[0]))
