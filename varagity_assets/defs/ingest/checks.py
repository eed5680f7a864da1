"""Data-quality checks on the chunks ``indexed_document`` wrote (great-expectations).

Two non-blocking, ERROR-severity checks run after ``indexed_document`` in every
``ingest_documents`` run:

* ``chunk_quality`` - content not blank, ``n_tokens`` in range, unique
  ``(doc_id, original_index)``, valid ``page`` and ``extraction``;
* ``embedding_quality`` - every vector has ``EMBEDDING_DIM`` dimensions and unit norm.

The checks are not partitioned: they find the run's files from its tags
(``dagster/partition`` for a one-file run, the ``dagster/asset_partition_range_start``/
``_end`` pair for a batch, expanded over the dynamic partition set in its order), turn
each partition key into a relative path, and check every chunk of the documents stored
at those paths. A run without partition tags (the check launched alone from the UI, or
invoked directly) checks the whole corpus. The rules live in :mod:`varagity.quality`.
"""

from collections.abc import Sequence
from typing import Any

import dagster as dg

from varagity import quality
from varagity.ingest.discovery import relative_path_for
from varagity.stores.corpus_queries import doc_ids_at_paths
from varagity_assets.defs.ingest.assets import indexed_document
from varagity_assets.defs.ingest.partitions import run_partition_keys
from varagity_assets.resources import VaragityResource


def _scope(keys: Sequence[str] | None) -> str:
    if keys is None:
        return "whole corpus (the run names no partitions)"
    if len(keys) == 1:
        return f"1 file: {relative_path_for(keys[0])}"
    return f"{len(keys)} files: {relative_path_for(keys[0])} … {relative_path_for(keys[-1])}"


def evaluate(
    context: dg.AssetCheckExecutionContext,
    varagity: VaragityResource,
    group: quality.Group,
) -> dg.AssetCheckResult:
    """Validate the chunks of the run's files (or the corpus) against one group of rules.

    Args:
        context: The check's context (run tags, instance, log).
        varagity: Stores and settings.
        group: ``content`` or ``embedding`` expectations.
    """
    keys = run_partition_keys(context.op_execution_context.run_tags, context.instance)
    pg = varagity.services.pg
    doc_ids: list[str] | None = None
    unstored: list[str] = []
    if keys is not None:
        found = doc_ids_at_paths(pg, [relative_path_for(k) for k in keys])
        doc_ids = [d for ids in found.values() for d in ids]
        unstored = [path for path, ids in found.items() if not ids]
        if unstored:
            context.log.warning(f"no stored document for {', '.join(unstored)}")
    report = quality.check_chunks(pg, varagity.settings, doc_ids, groups=(group,))
    failed = report.failed
    metadata: dict[str, Any] = {
        "scope": _scope(keys),
        "chunks_checked": report.n_chunks,
        "documents_checked": report.n_documents,
        "expectations_checked": len(report.outcomes),
        "failed_expectations": len(failed),
        "unexpected_values": report.unexpected_values,
        "expectations": dg.MetadataValue.md(report.expectations_markdown()),
        "failing_examples": dg.MetadataValue.md(report.examples_markdown()),
        "failing_chunk_ids": dg.MetadataValue.json(report.failing_chunk_ids),
    }
    if unstored:
        metadata["files_without_document"] = dg.MetadataValue.json(unstored)
    description = (
        f"{len(report.outcomes)} expectation(s) hold over {report.n_chunks} chunk(s)"
        if report.success
        else f"failed: {', '.join(o.name for o in failed)} ({report.n_chunks} chunk(s) checked)"
    )
    return dg.AssetCheckResult(
        passed=report.success,
        severity=dg.AssetCheckSeverity.ERROR,
        description=description,
        metadata=metadata,
    )


@dg.asset_check(
    asset=indexed_document,
    blocking=False,
    description="Chunks of the run's files: content not blank, 1 <= n_tokens <= "
    "2 x CHUNK_SIZE, (doc_id, original_index) unique, page null or >= 1, extraction known.",
)
def chunk_quality(
    context: dg.AssetCheckExecutionContext, varagity: VaragityResource
) -> dg.AssetCheckResult:
    """Great-expectations rules on the stored chunk rows of the run's files."""
    return evaluate(context, varagity, "content")


@dg.asset_check(
    asset=indexed_document,
    blocking=False,
    description="Embeddings of the run's chunks: EMBEDDING_DIM dimensions, unit L2 norm "
    "(within 1e-3).",
)
def embedding_quality(
    context: dg.AssetCheckExecutionContext, varagity: VaragityResource
) -> dg.AssetCheckResult:
    """Great-expectations rules on the stored vectors of the run's chunks."""
    return evaluate(context, varagity, "embedding")
