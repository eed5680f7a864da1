"""Purge jobs: Dagster runs of ``purge_documents`` over files gone from ``DOCS_PATH``
(the folder sensor requests most of them; ``varagity doctor --repair`` launches its own).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from varagity.jobs.gate import BACKUPS, refuse_beside
from varagity.jobs.runs import RunJobs
from varagity.jobs.transport import RunNode
from varagity.pipeline import FILES_TAG, PURGE_JOB, SOURCE_TAG


@dataclass(frozen=True, slots=True)
class PurgeProgress:
    """How many removed files the run purges (its ``varagity/files`` tag, when set)."""

    files: int | None


class PurgeJobs(RunJobs[PurgeProgress]):
    """Launch and read purges."""

    what = "a purge"

    def _owns(self, node: RunNode) -> bool:
        return node.job == PURGE_JOB

    def _progress(self, node: RunNode, seen: PurgeProgress | None) -> PurgeProgress:
        files = node.tags.get(FILES_TAG)
        return PurgeProgress(int(files) if files and files.isdigit() else None)

    def launch(self, relative_paths: Sequence[str], *, source: str) -> str:
        """Launch a purge of files gone from ``DOCS_PATH``; its run id. Refused beside an
        export or a restore of the documents.

        Raises:
            CorpusBusy: An export or a restore of the documents is in flight.
            DagsterError: Dagster cannot be reached or refused the launch.
        """
        refuse_beside(self.client, "rag", kinds=BACKUPS)
        tags = {SOURCE_TAG: source, FILES_TAG: str(len(relative_paths))}
        config = {"ops": {"purged_documents": {"config": {"relative_paths": list(relative_paths)}}}}
        return self.client.launch_run(PURGE_JOB, tags, config)
