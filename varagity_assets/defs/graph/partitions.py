"""One dynamic partition per message archive, keyed by its path relative to
``GRAPH_DOCS_PATH`` (encoded as the documents partitions are: reversible, Dagster-safe)."""

import dagster as dg

from varagity.ingest.discovery import partition_key_for, relative_path_for
from varagity.pipeline import GRAPH_PARTITIONS

graph_sources_partitions = dg.DynamicPartitionsDefinition(name=GRAPH_PARTITIONS)


def archive_key(relative_path: str) -> str:
    """The partition key of the archive at ``relative_path``."""
    return partition_key_for(relative_path)


def archive_path(partition_key: str) -> str:
    """The relative path of the archive a partition stands for."""
    return relative_path_for(partition_key)
