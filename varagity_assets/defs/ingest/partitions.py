"""One dynamic partition per corpus file, keyed by its path relative to ``DOCS_PATH``,
how a run names the partitions it covers, and which runs are still at work."""

from collections.abc import Mapping

import dagster as dg

from varagity.pipeline import (
    DOCUMENTS_PARTITIONS,
    INGEST_JOB,
    PARTITION_TAG,
    RANGE_END_TAG,
    RANGE_START_TAG,
)

documents_partitions = dg.DynamicPartitionsDefinition(name=DOCUMENTS_PARTITIONS)


def run_partition_keys(tags: Mapping[str, str], instance: dg.DagsterInstance) -> list[str] | None:
    """The partition keys a run targeted, from its tags; ``None`` when it names none.

    Args:
        tags: The run's tags.
        instance: Holds the dynamic partition set a range is expanded over.

    Returns:
        The single partition, every partition of the range (in the set's order), or
        ``None`` for a run without partition tags.
    """
    if tags.get(PARTITION_TAG):
        return [tags[PARTITION_TAG]]
    start, end = tags.get(RANGE_START_TAG), tags.get(RANGE_END_TAG)
    if not (start and end):
        return None
    keys = list(instance.get_dynamic_partitions(DOCUMENTS_PARTITIONS))
    if start in keys and end in keys:
        first, last = sorted((keys.index(start), keys.index(end)))
        return keys[first : last + 1]
    # an end of the range was deleted since the run: name what can still be named
    return list(dict.fromkeys([start, end]))


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
