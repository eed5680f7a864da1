"""What a folder sensor asks of its dynamic partitions after a tick: the keys to add and
to delete, as Dagster's requests (each sensor names its paths' keys its own way)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import dagster as dg

PartitionRequest = dg.AddDynamicPartitionsRequest | dg.DeleteDynamicPartitionsRequest


def partition_requests(
    partitions: dg.DynamicPartitionsDefinition,
    key_of: Callable[[str], str],
    add: Sequence[str],
    delete: Sequence[str],
) -> list[PartitionRequest]:
    """The requests adding the partitions of the paths ``add`` and deleting those of
    ``delete`` (``key_of`` turns a path into its key); none for an empty side."""
    requests: list[PartitionRequest] = []
    if add:
        requests.append(partitions.build_add_request([key_of(rel) for rel in add]))
    if delete:
        requests.append(partitions.build_delete_request([key_of(rel) for rel in delete]))
    return requests
