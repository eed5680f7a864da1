"""One dynamic partition per message archive, keyed by its path relative to
``GRAPH_DOCS_PATH`` (encoded as the documents partitions are: reversible, Dagster-safe),
and one daily partition per conversation day for the rebuilds."""

import dagster as dg

from varagity.ingest.discovery import partition_key_for, relative_path_for
from varagity.pipeline import GRAPH_DAYS_END_OFFSET, GRAPH_FIRST_DAY, GRAPH_PARTITIONS

graph_sources_partitions = dg.DynamicPartitionsDefinition(name=GRAPH_PARTITIONS)


def archive_key(relative_path: str) -> str:
    """The partition key of the archive at ``relative_path``."""
    return partition_key_for(relative_path)


def archive_path(partition_key: str) -> str:
    """The relative path of the archive a partition stands for."""
    return relative_path_for(partition_key)


#: One partition per conversation day (``YYYY-MM-DD``, UTC dates as the doc_keys write
#: them) from GRAPH_FIRST_DAY to a day past today: the days ``graph_rebuilt_days``
#: extracts again. A backfill over some of them (the Dagster UI's partition picker)
#: rebuilds those days only, in one run per contiguous range.
graph_days_partitions = dg.DailyPartitionsDefinition(
    start_date=GRAPH_FIRST_DAY, end_offset=GRAPH_DAYS_END_OFFSET
)
