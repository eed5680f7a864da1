"""One dynamic partition per corpus file, keyed by its path relative to ``DOCS_PATH``,
how a run names the partitions it covers, and which runs are still at work."""

from collections.abc import Mapping

import dagster as dg

from varagity.pipeline import (
    DOCUMENTS_PARTITIONS,
    INGEST_JOB,
    PARTITION_TAG,
    RANGE_START_TAG,
    run_partitions,
)

documents_partitions = dg.DynamicPartitionsDefinition(name=DOCUMENTS_PARTITIONS)


def run_partition_keys(tags: Mapping[str, str], instance: dg.DagsterInstance) -> list[str] | None:
    """The partition keys a run targeted, from its tags (:func:`~varagity.pipeline.run_partitions`
    over the instance's partition set); ``None`` when it names none."""
    if not (tags.get(PARTITION_TAG) or tags.get(RANGE_START_TAG)):
        return None
    return run_partitions(tags, list(instance.get_dynamic_partitions(DOCUMENTS_PARTITIONS)))


IN_FLIGHT = [
    dg.DagsterRunStatus.QUEUED,
    dg.DagsterRunStatus.NOT_STARTED,
    dg.DagsterRunStatus.STARTING,
    dg.DagsterRunStatus.STARTED,
    dg.DagsterRunStatus.CANCELING,
]
"""Run statuses that still count as doing (or about to do) their partitions."""


def ingest_runs_in_flight(instance: dg.DagsterInstance) -> int:
    """Ingest runs queued or under way: while there are any, blurbs wait (the LLM would
    take the cores new files need to become searchable)."""
    return instance.get_runs_count(filters=dg.RunsFilter(job_name=INGEST_JOB, statuses=IN_FLIGHT))
