"""What every kind whose jobs are single Dagster runs shares (graph builds, backups,
purges, and the writers the gate looks at): a :class:`~varagity.jobs.transport.RunNode`
read into a :class:`~varagity.jobs.model.Run`, and :class:`RunJobs`, the base of their
adapters: read one run of the kind, list some, kill one, and read each run's log on
from where the last read stopped.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from typing import Any, ClassVar, Generic, TypeVar

from varagity.jobs.model import (
    CANCELING_RUN_STATUS,
    ENDED_RUN_STATUSES,
    Run,
    run_kind,
    run_url,
)
from varagity.jobs.transport import (
    DagsterClient,
    RunEnded,
    RunNode,
    RunNotFound,
    TerminateFailed,
)
from varagity.pipeline import SOURCE_TAG, corpus_of_run

P = TypeVar("P")

# An ended run's progress and error never change: read them once per process.
_ENDED_KEPT = 500
_ended: OrderedDict[tuple[str, str, str], tuple[Any, str | None]] = OrderedDict()
_ended_lock = threading.Lock()


def run_of(node: RunNode, dagster_url: str, progress: P, error: str | None = None) -> Run[P]:
    """The :class:`Run` of a Dagster run, with its kind's ``progress``."""
    return Run(
        id=node.run_id,
        kind=run_kind(node.job, node.assets),
        corpus=corpus_of_run(node.job, node.tags, node.assets),
        job=node.job,
        status=node.status,
        done=node.status in ENDED_RUN_STATUSES,
        succeeded=node.status == "SUCCESS",
        created_at=node.created_at,
        started_at=node.started_at,
        ended_at=node.ended_at,
        source=node.tags.get(SOURCE_TAG),
        error=error,
        url=run_url(dagster_url, node.run_id),
        progress=progress,
        tags=node.tags,
    )


#: How long a kill waits for a run that Dagster is still starting (it cannot be
#: interrupted until its worker runs), and how often it asks again.
STARTING_WAIT = 60.0
STARTING_POLL = 0.5


class RunJobs(Generic[P]):
    """The adapter of a kind of single-run jobs over one client: :meth:`read`,
    :meth:`kill` and the listing helper. A subclass says which runs are its own
    (:meth:`_owns`), what a read calls one (:attr:`what`) and reads its progress
    (:meth:`_progress`, from the one it read before and :meth:`_new_log_messages`). An
    adapter keeps where it stopped reading each run's log: follow a run with one."""

    what: ClassVar[str]
    """The kind's run as an error names it (``a backup``)."""

    def __init__(self, client: DagsterClient) -> None:
        """Read and launch through ``client``."""
        self.client = client
        self._log_cursors: dict[str, str | None] = {}
        self._seen: dict[str, P] = {}

    def _owns(self, node: RunNode) -> bool:
        """Whether ``node`` is a run of this kind."""
        raise NotImplementedError

    def _progress(self, node: RunNode, seen: P | None) -> P:
        """The run's progress as its tags and log say it now (``seen``: what the last
        read of it said, None at the first)."""
        raise NotImplementedError

    def _new_log_messages(self, run_id: str) -> list[str]:
        """The run's log messages this adapter has not read yet."""
        messages, cursor = self.client.log_messages(run_id, self._log_cursors.get(run_id))
        self._log_cursors[run_id] = cursor
        return messages

    def _node(self, run_id: str) -> RunNode:
        node = self.client.run(run_id)
        if not self._owns(node):
            raise RunNotFound(f"run {run_id!r} is a {node.job} run, not {self.what}")
        return node

    def _run(self, node: RunNode) -> Run[P]:
        """``node`` as a :class:`Run`, its progress read and, when it failed, why (both
        kept per process once it has ended). Blocking (it reads the run's log)."""
        key = (type(self).__name__, self.client.url, node.run_id)
        with _ended_lock:
            cached = _ended.get(key)
        if cached is not None:
            progress, error = cached
        else:
            progress = self._progress(node, self._seen.get(node.run_id))
            self._seen[node.run_id] = progress
            error = self.client.run_error(node.run_id) if node.status == "FAILURE" else None
            if node.status in ENDED_RUN_STATUSES:
                with _ended_lock:
                    _ended[key] = (progress, error)
                    while len(_ended) > _ENDED_KEPT:
                        _ended.popitem(last=False)
        return run_of(node, self.client.url, progress, error)

    def _recent(self, run_filter: dict[str, Any], limit: int) -> list[Run[P]]:
        """The newest ``limit`` runs of this kind that ``run_filter`` matches, newest
        first (what each kind's listing asks of Dagster)."""
        if limit < 1:
            raise ValueError(f"limit must be at least 1, got {limit}")
        nodes = self.client.runs(run_filter, limit)
        mine = sorted((n for n in nodes if self._owns(n)), key=lambda n: -n.created_at)
        return [self._run(node) for node in mine[:limit]]

    def read(self, run_id: str) -> Run[P]:
        """One run of this kind.

        Raises:
            RunNotFound: No run has this id, or it is not of this kind.
        """
        return self._run(self._node(run_id))

    def kill(self, run_id: str) -> Run[P]:
        """Stop a run of this kind: a started one is terminated (its worker is
        interrupted), a queued one is canceled before it starts. Returns the run as it
        stands after the request; a run already being terminated (a second request, or
        one racing this) is returned as it stands, with nothing more asked of Dagster.

        Raises:
            RunNotFound: No run of this kind has this id.
            RunEnded: The run had already ended.
        """
        node = self._node(run_id)
        if node.status in ENDED_RUN_STATUSES:
            raise RunEnded(f"run {run_id} has already ended ({node.status})")
        if node.status == CANCELING_RUN_STATUS:
            return self._run(node)
        deadline = time.monotonic() + STARTING_WAIT
        while True:
            try:
                self.client.terminate(run_id)
                break
            except TerminateFailed as exc:
                was, node = node, self._node(run_id)
                if node.status in ENDED_RUN_STATUSES:
                    raise RunEnded(f"run {run_id} has already ended ({node.status})") from exc
                if node.status == CANCELING_RUN_STATUS:  # another request got there first
                    return self._run(node)
                # Dagster cannot interrupt a run whose worker is being started: ask again
                # once it has started
                starting = "STARTING" in (was.status, node.status)
                if not starting or time.monotonic() >= deadline:
                    raise
                if node.status == "STARTING":
                    time.sleep(STARTING_POLL)
        return self.read(run_id)
