"""Jobs: the Dagster work the API and the command line launch, follow and stop, over
the webserver's GraphQL API (no Dagster import, no FastAPI).

* :mod:`~varagity.jobs.transport`: the GraphQL transport, the only module that speaks
  GraphQL, imported only inside this package (an import-linter contract); its client
  and errors are exported here.
* :mod:`~varagity.jobs.model`: one :class:`Run` for every kind, with its kind's typed
  progress.
* One adapter per kind: :mod:`~varagity.jobs.ingest` (backfills, and the ingest job's
  runs), :mod:`~varagity.jobs.graph` (builds, removals, rebuilds of days and resets),
  :mod:`~varagity.jobs.backup` (exports and restores), :mod:`~varagity.jobs.purge`,
  :mod:`~varagity.jobs.evaluation` (answer evaluations); each launches and reads (and
  lists, kills where it can) its jobs, over :mod:`~varagity.jobs.runs` when they are
  single runs.
* :mod:`~varagity.jobs.gate`: one writer per corpus, checked by every launch
  (:class:`CorpusBusy`).
* :mod:`~varagity.jobs.follow`: the one loop that follows a job to its end.
* :mod:`~varagity.jobs.launcher`: the ingest runs of files that just landed.
"""

from varagity.jobs.gate import CorpusBusy
from varagity.jobs.model import Run
from varagity.jobs.transport import (
    BackfillNotFound,
    DagsterClient,
    DagsterError,
    DagsterUnavailable,
    PipelineReading,
    RunEnded,
    RunNode,
    RunNotFound,
)

__all__ = [
    "BackfillNotFound",
    "CorpusBusy",
    "DagsterClient",
    "DagsterError",
    "DagsterUnavailable",
    "PipelineReading",
    "Run",
    "RunEnded",
    "RunNode",
    "RunNotFound",
]
