"""Backup jobs: Dagster runs of ``export_bundle`` (a ``backup_bundle`` partition, the
corpus) and ``restore_bundle``, one corpus each. Progress is read from the run's log:
its ``backup progress:`` reports, the bundle an export wrote and, once a restore has
committed, what its folder holds that the restored corpus does not.
"""

from __future__ import annotations

from dataclasses import dataclass

from varagity.jobs.gate import WRITERS, refuse_beside
from varagity.jobs.model import Run, run_kind
from varagity.jobs.runs import RunJobs
from varagity.jobs.transport import RunNode, RunNotFound
from varagity.pipeline import (
    BACKUP_BUNDLE_PREFIX,
    BACKUP_JOB,
    BUNDLE_TAG,
    CORPUS_TAG,
    PARTITION_TAG,
    RESTORE_JOB,
    SOURCE_TAG,
    corpus_of_run,
    parse_backup_progress,
    parse_reconcile_line,
)


@dataclass(frozen=True, slots=True)
class BackupProgress:
    """What a backup run's tags and log say so far: the bundle (a restore's, or the one
    an export wrote once it is in place), its latest progress report (``phase``,
    ``done`` of ``total``) and latest message."""

    bundle: str | None
    phase: str | None
    done: int
    total: int
    message: str | None
    reconcile: dict[str, int] | None = None
    """Once a restore has committed: what its folder holds that it does not
    (:func:`~varagity.pipeline.reconcile_line`)."""


class BackupJobs(RunJobs[BackupProgress]):
    """Launch, read and list a corpus's exports and restores."""

    what = "a backup"

    def _owns(self, node: RunNode) -> bool:
        return run_kind(node.job, node.assets) in ("export", "restore") and (
            corpus_of_run(node.job, node.tags, node.assets) is not None
        )

    def _progress(self, node: RunNode, seen: BackupProgress | None) -> BackupProgress:
        seen = seen or BackupProgress(None, None, 0, 0, None)
        bundle, phase, done, total, message, reconcile = (
            seen.bundle,
            seen.phase,
            seen.done,
            seen.total,
            seen.message,
            seen.reconcile,
        )
        for message in self._new_log_messages(node.run_id):
            progress = parse_backup_progress(message)
            if progress is not None:
                phase, done, total = progress
            elif message.startswith(BACKUP_BUNDLE_PREFIX):
                bundle = message[len(BACKUP_BUNDLE_PREFIX) :].strip()
            else:
                reconcile = parse_reconcile_line(message) or reconcile
        bundle = node.tags.get(BUNDLE_TAG) or bundle
        return BackupProgress(bundle, phase, done, total, message, reconcile)

    def read(self, run_id: str, corpus: str | None = None) -> Run[BackupProgress]:
        """One export or restore run (of ``corpus``, when given).

        Raises:
            RunNotFound: No run has this id, or it is not an export or a restore (of
                ``corpus``).
        """
        node = self._node(run_id)
        of = corpus_of_run(node.job, node.tags, node.assets)
        if corpus is not None and of != corpus:
            raise RunNotFound(f"run {run_id!r} is a backup run of the {of} corpus")
        return self._run(node)

    def recent(self, corpus: str, limit: int = 20) -> list[Run[BackupProgress]]:
        """The newest export and restore runs of ``corpus``, newest first (exports
        launched from the Dagster UI carry no corpus tag and are not listed)."""
        return self._recent({"tags": [{"key": CORPUS_TAG, "value": corpus}]}, limit)

    def launch(self, corpus: str, name: str | None = None, *, source: str) -> str:
        """Launch an export of ``corpus`` (``name`` None: a run of its ``backup_bundle``
        partition) or a restore replacing it with its bundle ``name``; its run id.
        Refused beside any other writer of the corpus; an export, which only reads, not
        beside a reader (an answer evaluation), which a restore would pull the corpus
        from under.

        Raises:
            CorpusBusy: Another writer of the corpus is in flight.
            DagsterError: Dagster cannot be reached or refused the launch.
        """
        refuse_beside(self.client, corpus, kinds=WRITERS if name is None else None)
        if name is None:
            tags = {SOURCE_TAG: source, PARTITION_TAG: corpus, CORPUS_TAG: corpus}
            return self.client.launch_run(BACKUP_JOB, tags)
        tags = {SOURCE_TAG: source, CORPUS_TAG: corpus, BUNDLE_TAG: name}
        config = {"ops": {"restore_corpus": {"config": {"corpus": corpus, "name": name}}}}
        return self.client.launch_run(RESTORE_JOB, tags, config)
