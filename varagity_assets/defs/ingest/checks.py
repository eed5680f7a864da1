"""Data-quality checks on the chunks ``indexed_document`` wrote (great-expectations).

Two non-blocking, ERROR-severity checks run after ``indexed_document`` in every
``ingest_documents`` run:

* ``chunk_quality`` - content not blank, ``n_tokens`` in range, unique
  ``(doc_id, original_index)``, valid ``page`` and ``extraction``;
* ``embedding_quality`` - every vector has ``EMBEDDING_DIM`` dimensions and unit norm.

Both are evaluated by one step (:func:`chunk_checks`): the run's chunks are read from
Postgres once and validated in one great-expectations pass, then split into the two
results. As two steps they read and set up everything twice, about 0.6 CPU-seconds of
a 1,000-file ingest in runs of 200 on the 2-core machine. Either can still be run
alone (the step subsets itself to the selected checks).

The checks are not partitioned: they find the run's files from its tags
(``dagster/partition`` for a one-file run, the ``dagster/asset_partition_range_start``/
``_end`` pair for a batch, expanded over the dynamic partition set in its order), turn
each partition key into a relative path, and check every chunk of the documents stored
at those paths. A run without partition tags (the checks launched alone from the UI, or
invoked directly) checks the whole corpus. The rules live in :mod:`varagity.quality`.
"""

import dataclasses
from collections.abc import Iterator, Sequence
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


# check name -> (expectation group, description)
_CHECKS: dict[str, tuple[quality.Group, str]] = {
    "chunk_quality": (
        "content",
        "Chunks of the run's files: content not blank, 1 <= n_tokens <= 2 x CHUNK_SIZE, "
        "(doc_id, original_index) unique, page null or >= 1, extraction known.",
    ),
    "embedding_quality": (
        "embedding",
        "Embeddings of the run's chunks: EMBEDDING_DIM dimensions, unit L2 norm (within 1e-3).",
    ),
}


def _result(
    name: str,
    report: quality.QualityReport,
    keys: Sequence[str] | None,
    unstored: list[str],
) -> dg.AssetCheckResult:
    """One check's result over the outcomes of its own expectations."""
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
        check_name=name,
        passed=report.success,
        severity=dg.AssetCheckSeverity.ERROR,
        description=description,
        metadata=metadata,
    )


@dg.multi_asset_check(
    specs=[
        dg.AssetCheckSpec(name, asset=indexed_document, blocking=False, description=text)
        for name, (_, text) in _CHECKS.items()
    ],
    can_subset=True,
)
def chunk_checks(
    context: dg.AssetCheckExecutionContext, varagity: VaragityResource
) -> Iterator[dg.AssetCheckResult]:
    """Great-expectations rules on the stored chunk rows and vectors of the run's files
    (or the corpus), one result per selected check."""
    selected = [
        name
        for name in _CHECKS
        if dg.AssetCheckKey(indexed_document.key, name) in context.selected_asset_check_keys
    ]
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
    groups = [_CHECKS[name][0] for name in selected]
    report = quality.check_chunks(pg, varagity.settings, doc_ids, groups=groups)
    group_of = {s.name: s.group for s in quality.expectations_for(varagity.settings, groups)}
    for name in selected:
        own = tuple(o for o in report.outcomes if group_of[o.name] == _CHECKS[name][0])
        yield _result(name, dataclasses.replace(report, outcomes=own), keys, unstored)
