"""Checks on the whole message graph after each build (``graph_workdir``).

Non-blocking, ERROR severity, not partitioned: each looks at the working directory as
the build left it, whichever archive the run built.

* ``graph_manifest_agrees`` - the manifest's doc_keys are exactly the documents the
  engine holds processed, and none is pending or processing (a killed build leaves
  some; the next build of that archive finishes them);
* ``graph_documents_not_failed`` - no document is left failed (the next build retries
  them);
* ``graph_size`` - entities, relations and documents, recorded as numbers the UI
  plots over the materializations; a WARN when documents are processed but nothing
  was extracted from them (a model too weak for the transcripts, see docs/graph.md).
"""

from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import dagster as dg

from varagity.graph.base import FAILED, PENDING, PROCESSED, PROCESSING
from varagity.graph.manifest import read_manifest
from varagity.graph.service import GraphService
from varagity_assets.defs.graph.assets import graph_workdir
from varagity_assets.resources import VaragityResource

_LISTED = 20
T = TypeVar("T")


def _read(varagity: VaragityResource, call: Callable[[GraphService], T]) -> tuple[T, Path]:
    """``call`` on a graph service opened for this check, closed after; and its workdir."""
    services = varagity.services
    service = GraphService(services.settings, services.chat, services.embedder)
    try:
        return call(service), service.workdir
    finally:
        service.close()


def _listed(keys: set[str]) -> dg.MetadataValue:
    return dg.MetadataValue.json(sorted(keys)[:_LISTED])


@dg.asset_check(
    asset=graph_workdir,
    blocking=False,
    description="The manifest's days are exactly the engine's processed documents; none "
    "is pending or processing.",
)
def graph_manifest_agrees(varagity: VaragityResource) -> dg.AssetCheckResult:
    """Compare the manifest sidecar with the engine's document statuses."""
    statuses, workdir = _read(varagity, GraphService.statuses)
    manifest = set(read_manifest(workdir))
    processed = {k for k, s in statuses.items() if s == PROCESSED}
    unfinished = {k for k, s in statuses.items() if s in (PENDING, PROCESSING)}
    only_manifest, only_engine = manifest - processed, processed - manifest
    passed = not (only_manifest or only_engine or unfinished)
    return dg.AssetCheckResult(
        passed=passed,
        severity=dg.AssetCheckSeverity.ERROR,
        description=(
            f"{len(manifest)} day(s) in the manifest, all processed by the engine"
            if passed
            else f"{len(only_manifest)} day(s) only in the manifest, {len(only_engine)} "
            f"processed but not in it, {len(unfinished)} unfinished"
        ),
        metadata={
            "manifest_days": len(manifest),
            "engine_processed": len(processed),
            "unfinished": len(unfinished),
            "only_in_manifest": _listed(only_manifest),
            "only_in_engine": _listed(only_engine),
            "unfinished_days": _listed(unfinished),
        },
    )


@dg.asset_check(asset=graph_workdir, blocking=False, description="No document is left failed.")
def graph_documents_not_failed(varagity: VaragityResource) -> dg.AssetCheckResult:
    """Documents the engine holds as failed."""
    statuses, _ = _read(varagity, GraphService.statuses)
    failed = {k for k, s in statuses.items() if s == FAILED}
    return dg.AssetCheckResult(
        passed=not failed,
        severity=dg.AssetCheckSeverity.ERROR,
        description=f"{len(failed)} of {len(statuses)} document(s) failed",
        metadata={
            "documents": len(statuses),
            "failed": len(failed),
            "failed_days": _listed(failed),
        },
    )


@dg.asset_check(
    asset=graph_workdir,
    blocking=False,
    description="Entities, relations and documents of the graph (plotted in the UI); "
    "warns when documents are processed but no entity was extracted.",
)
def graph_size(varagity: VaragityResource) -> dg.AssetCheckResult:
    """The graph's size as the engine reports it."""
    size, _ = _read(varagity, GraphService.size)
    passed = size.entities > 0 or size.docs == 0
    return dg.AssetCheckResult(
        passed=passed,
        severity=dg.AssetCheckSeverity.WARN,
        description=f"{size.entities} entities, {size.relations} relations from {size.docs} "
        "processed document(s)",
        metadata={
            "entities": dg.MetadataValue.int(size.entities),
            "relations": dg.MetadataValue.int(size.relations),
            "documents": dg.MetadataValue.int(size.docs),
            **{f"documents_{k}": dg.MetadataValue.int(v) for k, v in sorted(size.statuses.items())},
        },
    )
