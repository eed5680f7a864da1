"""The message graph's upkeep, each write in a run of its own so the UI shows it with
its logs:

* ``graph_reset`` - the graph emptied (the engine's working directory with its LLM
  response cache, the build manifest, the size summary; the stale flag and the settings
  it was built with), the archives kept: building them again gives the graph back.
* ``graph_rebuilt_days`` - partitioned by day: the days of its partitions extracted
  again from the archives (:mod:`varagity.graph.rebuild`), the other days left as they
  are. A backfill of some of its partitions in the Dagster UI rebuilds those days (one
  run per contiguous range); the API and the command line launch one run over a range.
  A run that extracted every day again clears the stale flag.
* ``graph_staleness`` - the stale flag: set when the chat model or an extraction
  setting (:data:`~varagity.config.GRAPH_AFFECTING`) changed since the graph was built.
  The graph-staleness sensor requests it when the settings drift from those recorded.

The two that write the working directory run on the ``graph`` pool, as the single
writer, and hold the graph's write lock (a run launched beside an export or a restore,
past the API's gate, fails naming it).
"""

from dataclasses import dataclass, field
from datetime import UTC, datetime

import dagster as dg

from varagity.graph.folder import count_supported
from varagity.graph.manifest import read_manifest
from varagity.graph.progress import BuildProgress
from varagity.graph.rebuild import RebuildPlan, empty_workdir, plan_rebuild
from varagity.graph.registry import workdir_for
from varagity.graph.service import BuildResult, GraphService
from varagity.graph.status import read_graph
from varagity.graph.types import GraphDiff
from varagity.pipeline import GRAPH_POOL, REBUILD_ALL_TAG, graph_rebuild_bounds
from varagity.stores.corpus_state import GraphState, graph_settings
from varagity_assets.defs.graph.assets import (
    _fail_on_failures,
    _keys,
    _service,
    build_graph,
    graph_workdir,
)
from varagity_assets.defs.graph.partitions import graph_days_partitions
from varagity_assets.resources import VaragityResource
from varagity_assets.retries import retry_on_outage

#: What the logs say to do about a stale graph.
REBUILD_HINT = (
    "rebuild every day: the Graph screen's Rebuild, `varagity graph build --rebuild` or "
    'POST /api/graph/builds {"rebuild": true}'
)


@dg.asset(
    group_name="graph",
    kinds={"lightrag"},
    pool=GRAPH_POOL,
    deps=[graph_workdir],
)
def graph_reset(
    context: dg.AssetExecutionContext, varagity: VaragityResource
) -> dg.MaterializeResult:
    """The graph emptied: its working directory (the engine's files and LLM response
    cache, the build manifest, the size summary) and its stale flag; the archives in
    ``GRAPH_DOCS_PATH`` are kept, and building them again gives the graph back."""
    service = _service(varagity)
    settings = service.settings
    try:
        with service.writing(holder="a graph reset"):
            before = read_graph(service.workdir)
            emptied = empty_workdir(service.workdir)
            GraphState(varagity.services.pg).forget()
    finally:
        service.close()
    archives = count_supported(settings.graph_docs_path)
    context.log.info(
        f"graph reset: {before.days} day(s), {before.entities} entities and "
        f"{before.relations} relations dropped; {emptied.files} file(s) "
        f"({emptied.bytes} bytes) removed from {service.workdir}; {archives} archive(s) kept "
        f"in {settings.graph_docs_path} (build them to get the graph back)"
    )
    return dg.MaterializeResult(
        metadata={
            "days_dropped": before.days,
            "messages_dropped": before.messages,
            "entities_dropped": before.entities,
            "relations_dropped": before.relations,
            "files_removed": emptied.files,
            "bytes_removed": emptied.bytes,
            "removed": dg.MetadataValue.json(list(emptied.names)),
            "archives_kept": archives,
            "workdir": str(service.workdir),
        }
    )


@dg.asset(
    group_name="graph",
    kinds={"lightrag"},
    partitions_def=graph_days_partitions,
    pool=GRAPH_POOL,
    backfill_policy=dg.BackfillPolicy.single_run(),
    deps=[dg.AssetDep(graph_workdir, partition_mapping=dg.AllPartitionMapping())],
)
@retry_on_outage
def graph_rebuilt_days(
    context: dg.AssetExecutionContext, varagity: VaragityResource
) -> dg.MaterializeResult:
    """The days of this run's partitions extracted again from the archives (deleted from
    the engine, inserted again), whatever the manifest says of them; days outside them
    are left as they are. The first partition stands for every day before it too, a
    range reaching today for every day after it, and a run tagged
    ``varagity/rebuild_all=true`` rebuilds every day. A run that extracted every day
    again clears the graph's stale flag."""
    keys = context.partition_key_range
    every = context.run.tags.get(REBUILD_ALL_TAG) == "true"
    today = datetime.now(UTC).date()
    low, high = (None, None) if every else graph_rebuild_bounds(keys.start, keys.end, today=today)
    service = _service(varagity)
    settings = service.settings
    state = GraphState(varagity.services.pg)
    try:
        with service.writing(holder="a graph rebuild"):
            manifest = read_manifest(service.workdir)
            state.observe(settings, empty=not manifest)
            plan = plan_rebuild(settings, manifest, low, high)
            context.log.info(
                f"rebuilding {plan.described} (partitions {keys.start}..{keys.end}): "
                f"{len(plan.days)} day(s) extracted again ({len(plan.held)} held now), "
                f"{len(plan.removed)} removed, {plan.outside} outside the range left as "
                "they are"
            )
            for rel, why in sorted(plan.unreadable.items()):
                context.log.warning(f"cannot read {rel}: {why}; its days are left as they are")
            if plan.left:
                context.log.warning(
                    f"{len(plan.left)} day(s) in range belong to archives not read here "
                    "(removed, or not readable): left as they are"
                )
            applied = _rebuild(context, service, plan)
    finally:
        service.close()
    metadata = applied.metadata
    every_day = plan.every_day and not applied.failed
    metadata.update(
        {
            "rebuilt": plan.described,
            "first_day": plan.low or "",
            "last_day": plan.high or "",
            "inserted": len(applied.inserted),
            "extracted_this_run": applied.extracted,
            "deleted": applied.deleted,
            "seconds": round(applied.seconds, 2),
            "days_per_minute": round(60 * applied.extracted / applied.seconds, 3)
            if applied.seconds
            else 0.0,
            "given_new": _keys(d.doc_key for d in plan.days),
            "given_removed": _keys(plan.removed),
            "days_rebuilt": len(applied.inserted),
            "rebuilt_days": _keys(applied.inserted),
            "days_removed": len(plan.removed),
            "days_outside_range": plan.outside,
            "days_left": len(plan.left),
            "unreadable_archives": dg.MetadataValue.json(plan.unreadable),
            "failed": len(applied.failed),
            "every_day": every_day,
        }
    )
    if applied.failed:
        metadata["failed_days"] = dg.MetadataValue.json(applied.failed)
    if every_day:
        state.rebuilt_with(settings)
        context.log.info(
            "every day of the graph was extracted again: it matches the current settings "
            f"({graph_settings(settings)}); stale flag cleared"
        )
    elif state.stale() is not None:
        context.log.info(
            f"the graph stays stale: only a rebuild of every day clears it ({REBUILD_HINT})"
        )
    _fail_on_failures(applied.failed, metadata, applied.result)
    if plan.unreadable:
        listed = "; ".join(f"{rel}: {why}" for rel, why in sorted(plan.unreadable.items()))
        raise dg.Failure(
            f"rebuilt {len(applied.inserted)} day(s), but {len(plan.unreadable)} archive(s) "
            f"could not be read (their days are left as they are): {listed}",
            metadata=dict(metadata),  # type: ignore[arg-type]
            allow_retries=False,
        )
    return dg.MaterializeResult(metadata=metadata)  # type: ignore[arg-type]


#: Days a rebuild takes out of the engine and extracts again at a time: the rest of the
#: graph answers meanwhile, and a killed rebuild leaves at most this many days to the
#: archives' next build (which finds them missing from the manifest, and extracts them).
REBUILD_BATCH_DAYS = 25


@dataclass
class _Rebuilt:
    """What the batches of a rebuild applied, together."""

    result: BuildResult
    metadata: dict[str, object]
    inserted: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    extracted: int = 0
    deleted: int = 0
    seconds: float = 0.0


def _rebuild(
    context: dg.AssetExecutionContext, service: GraphService, plan: RebuildPlan
) -> _Rebuilt:
    """Apply ``plan`` as the graph's writer, :data:`REBUILD_BATCH_DAYS` days at a time:
    a batch's days deleted from the engine (and, with the first, the days no archive
    renders any more), then inserted again; the progress lines count the whole plan."""
    total = len(plan.days)
    held = set(plan.held)
    done = BuildProgress(total=total, processed=0, processing=0, pending=total, failed=0)

    def restate(batch: BuildProgress) -> BuildProgress | None:
        if batch.total == 0:
            return None  # a delete: nothing extracted
        processed, failed = done.processed + batch.processed, done.failed + batch.failed
        pending = total - processed - failed - batch.processing
        return BuildProgress(total, processed, batch.processing, pending, failed)

    batches = [plan.days[i : i + REBUILD_BATCH_DAYS] for i in range(0, total, REBUILD_BATCH_DAYS)]
    applied: _Rebuilt | None = None
    for index, batch in enumerate(batches or [()]):
        gone = tuple(d.doc_key for d in batch if d.doc_key in held)
        drop = GraphDiff(removed=(*gone, *(plan.removed if index == 0 else ())))
        cut, dropped, _ = build_graph(context, service, drop, restate=restate)
        result, recorded, metadata = build_graph(
            context, service, GraphDiff(new=tuple(batch)), restate=restate
        )
        if applied is None:
            applied = _Rebuilt(result, metadata)
        applied.result, applied.metadata = result, metadata
        applied.inserted.extend(recorded.inserted)
        applied.failed.update(dropped.failed or {})
        applied.failed.update(recorded.failed or {})
        applied.extracted += len(result.report.inserted)
        applied.deleted += len(dropped.deleted)
        applied.seconds += cut.seconds + result.seconds
        failed = len(recorded.failed or {})
        done = BuildProgress(
            total, done.processed + len(recorded.inserted), 0, 0, done.failed + failed
        )
    assert applied is not None  # one batch at least
    return applied


@dg.asset(group_name="graph", kinds={"postgres"})
def graph_staleness(
    context: dg.AssetExecutionContext, varagity: VaragityResource
) -> dg.MaterializeResult:
    """Whether the message graph still matches the chat model and the extraction
    settings (its stale flag): set when one changed since the graph was built (an empty
    graph adopts them); only a rebuild of every day, or a reset, clears it."""
    settings = varagity.settings
    state = GraphState(varagity.services.pg)
    before = state.stale()
    manifest = read_manifest(workdir_for(settings))
    flag = state.observe(settings, empty=not manifest)
    if flag is not None:
        context.log.warning(f"the message graph is stale ({flag.reason}); {REBUILD_HINT}")
    else:
        context.log.info("the message graph matches the chat model and extraction settings")
    return dg.MaterializeResult(
        metadata={
            "stale": flag is not None,
            "reason": flag.reason if flag else "",
            "was_stale": before is not None,
            "days": len(manifest),
            "built_with": dg.MetadataValue.json(state.built_with() or {}),
            "current": dg.MetadataValue.json(graph_settings(settings)),
        }
    )
