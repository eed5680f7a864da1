"""The graph-sources sensor: ``GRAPH_DOCS_PATH`` diffed against its cursor into partition
changes and run requests. It only reads and requests; the graph is written in runs.

It reads its cursor, the candidate archives (:mod:`.archives`: a database with its
``-wal``/``-shm`` and the contacts files that name its handles; their stat signature
and newest ``ctime``), the judgment of those whose signature moved once they have been
left alone ``_SETTLE_S`` (does a message source read it, and its content hash), the
``graph_sources`` partitions, the build runs in flight, the builds launched of an
archive's exact bytes (tagged ``varagity/archive_sha256``; asked only of an archive the
tick would build) and which folder is the graph's working directory (device and inode,
:func:`~varagity.graph.swap.workdir_identity`: a restore swaps another in, however it
was run; the restored manifest is read only then), and leaves the decision to
:func:`varagity.folder_diff.graph_tick`, whose docstring says what is built and removed
when, and why; its races with uploads, the build routes, builds in flight and restores
are unit tests of that function.

The cursor is ``{"archives": {relative_path: {"stat": [[size, mtime_ns], ...],
"sha256": ..., "waiting": true?, "revision": n?}}, "skipped": {relative_path: {"stat":
..., "reason": ...}}, "generation": n, "workdir": ...}``. Run keys carry the archive's
content hash, the cursor's ``generation`` (counted up with every removal, so an archive
removed and put back is built again) and the archive's ``revision`` (counted up with
every change of its content, so content it had before is built again). A missing
``GRAPH_DOCS_PATH`` removes nothing (an unmounted folder must not empty the graph), and
``GRAPH_ENABLED=false`` skips the tick, saying so, with the cursor left as it was.

``graph_staleness_sensor`` compares the chat model and the extraction settings with those
the graph was built with and requests a ``refresh_graph_staleness`` run (which sets the
stale flag) when they drift; a rebuild of every day, which clears the flag, records them.
"""

import functools
import hashlib
import json
import math
import time

import dagster as dg

from varagity.backup.locks import corpus_restoring
from varagity.folder_diff import (
    ArchiveLook,
    GraphCursor,
    GraphTick,
    Judgment,
    LazyMapping,
    LazySet,
    graph_tick,
    graph_to_judge,
)
from varagity.graph.archives import ArchiveFiles, scan_archives
from varagity.graph.manifest import read_manifest
from varagity.graph.registry import workdir_for
from varagity.graph.sources.registry import rejections
from varagity.graph.swap import workdir_identity
from varagity.pipeline import (
    ARCHIVE_TAG,
    GRAPH_BUILD_JOB,
    GRAPH_PARTITIONS,
    GRAPH_REMOVE_JOB,
    GRAPH_STALENESS_JOB,
    PARTITION_TAG,
    SOURCE_TAG,
)
from varagity.stores.corpus_state import GraphState, graph_settings
from varagity_assets import dynamic_partitions
from varagity_assets.defs.graph.assets import graph_removed_sources
from varagity_assets.defs.graph.jobs import (
    build_message_graph_job,
    refresh_graph_staleness_job,
    remove_graph_sources_job,
)
from varagity_assets.defs.graph.partitions import (
    archive_key,
    archive_path,
    graph_sources_partitions,
)
from varagity_assets.defs.ingest.partitions import IN_FLIGHT
from varagity_assets.resources import VaragityResource

#: The ``varagity/source`` of the runs this sensor requests (the builds list shows it).
SENSOR_SOURCE = "sensor"
#: Like the folder sensor: below the daemon's 5-s loop, so it ticks on every loop.
_SENSOR_INTERVAL_S = 4


def _build_request(rel: str, sha256: str, generation: int, revision: int = 0) -> dg.RunRequest:
    key = archive_key(rel)
    again = f":r{revision}" if revision else ""
    return dg.RunRequest(
        job_name=GRAPH_BUILD_JOB,
        run_key=f"graph:{key}:{sha256}:g{generation}{again}",
        partition_key=key,
        tags={SOURCE_TAG: SENSOR_SOURCE, ARCHIVE_TAG: sha256},
    )


#: In-flight statuses of a run that has not begun its work: it reads the archive later.
_NOT_STARTED = {
    dg.DagsterRunStatus.QUEUED,
    dg.DagsterRunStatus.NOT_STARTED,
    dg.DagsterRunStatus.STARTING,
}
#: How long an archive must have been left alone before this sensor requests its build
#: (an upload launches its own within that time; a graph build takes minutes anyway).
_SETTLE_S = 10.0


def builds_in_flight(instance: dg.DagsterInstance) -> dict[str, float]:
    """Archive path -> the latest moment an in-flight build run of it reads its archive
    from (infinity for a run yet to start, else when it started), for the archives a
    build run is queued for or running."""
    records = instance.get_run_records(
        filters=dg.RunsFilter(job_name=GRAPH_BUILD_JOB, statuses=IN_FLIGHT)
    )
    busy: dict[str, float] = {}
    for record in records:
        run = record.dagster_run
        key = run.tags.get(PARTITION_TAG)
        if key:
            reads_from = math.inf if run.status in _NOT_STARTED else record.start_time or 0.0
            rel = archive_path(key)
            busy[rel] = max(busy.get(rel, -math.inf), reads_from)
    return busy


#: Statuses of a run that did not (and will not) build what it was asked for.
_NOT_BUILT = {dg.DagsterRunStatus.FAILURE, dg.DagsterRunStatus.CANCELED}


def launched_at(instance: dg.DagsterInstance, rel: str, sha256: str) -> float | None:
    """When the newest build of exactly these bytes of the archive at ``rel`` (its
    ``varagity/archive_sha256`` tag) that has not failed or been canceled was launched
    (an upload, the build routes or this sensor tag theirs); ``None`` if none was."""
    records = instance.get_run_records(
        filters=dg.RunsFilter(
            job_name=GRAPH_BUILD_JOB, tags={PARTITION_TAG: archive_key(rel), ARCHIVE_TAG: sha256}
        ),
        limit=10,
    )
    return max(
        (
            record.create_timestamp.timestamp()
            for record in records
            if record.dagster_run.status not in _NOT_BUILT
        ),
        default=None,
    )


def _changed_at(candidate: ArchiveFiles) -> float:
    """When any file of the archive, or a contacts file it is read with, last changed
    (the newest ``ctime``); infinity when one cannot be read."""
    try:
        return max(path.stat().st_ctime for path in candidate.inputs)
    except OSError:
        return math.inf


def _remove_request(paths: list[str], generation: int) -> dg.RunRequest:
    digest = hashlib.sha256("\n".join(paths).encode()).hexdigest()[:20]
    return dg.RunRequest(
        job_name=GRAPH_REMOVE_JOB,
        run_key=f"graph-remove:{digest}:g{generation}",
        tags={SOURCE_TAG: SENSOR_SOURCE},
        run_config={"ops": {graph_removed_sources.op.name: {"config": {"relative_paths": paths}}}},
    )


@dg.sensor(
    jobs=[build_message_graph_job, remove_graph_sources_job],
    minimum_interval_seconds=_SENSOR_INTERVAL_S,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Watches GRAPH_DOCS_PATH: requests a graph build for each new or changed "
    "message archive and a removal run for each archive removed.",
)
def graph_sources_sensor(
    context: dg.SensorEvaluationContext, varagity: VaragityResource
) -> dg.SensorResult | dg.SkipReason:
    """Turn archive changes under ``GRAPH_DOCS_PATH`` into partitions and run requests."""
    settings = varagity.settings
    if not settings.GRAPH_ENABLED:
        return dg.SkipReason(
            "GRAPH_ENABLED is false: the message graph is off, no archive is built "
            "(set GRAPH_ENABLED=true to build it)"
        )
    restoring = corpus_restoring(settings, "graph")
    if restoring is not None:  # its runs would only fail on the graph's write lock
        return dg.SkipReason(
            f"the message graph is being restored ({restoring}): the folder is looked at "
            "again once the restore has finished"
        )
    root = settings.graph_docs_path
    if not root.is_dir():
        return dg.SkipReason(
            f"GRAPH_DOCS_PATH {root} does not exist; nothing is built or removed until it does"
        )
    tick = _graph_tick(context, varagity, GraphCursor.loads(context.cursor))
    for line in tick.warnings:
        context.log.warning(line)
    for line in tick.notes:
        context.log.info(line)
    run_requests = [
        _build_request(b.path, b.sha256, tick.generation, b.revision) for b in tick.builds
    ]
    if tick.removed:
        run_requests.append(_remove_request(list(tick.removed), tick.generation))
    partition_requests = dynamic_partitions.partition_requests(
        graph_sources_partitions, archive_key, tick.add_partitions, tick.delete_partitions
    )
    cursor = tick.cursor.dumps()
    if not run_requests and not partition_requests:
        context.update_cursor(cursor)
        return dg.SkipReason(tick.summary())
    return dg.SensorResult(
        run_requests=run_requests, dynamic_partitions_requests=partition_requests, cursor=cursor
    )


def _graph_tick(
    context: dg.SensorEvaluationContext, varagity: VaragityResource, previous: GraphCursor
) -> GraphTick:
    """Read what :func:`~varagity.folder_diff.graph_tick` decides from, and call it."""
    settings = varagity.settings
    root = settings.graph_docs_path
    workdir = workdir_for(settings)
    identity = workdir_identity(workdir)
    if previous.swapped(identity):
        context.log.info(
            f"another graph was put in place at {workdir} (a restore): every archive is "
            "built again, archives it holds that are gone from the folder are removed"
        )
    candidates = {c.relative_path: c for c in scan_archives(root)}
    scan = {rel: _look(context, candidate) for rel, candidate in candidates.items()}
    settled_before = time.time() - _SETTLE_S
    todo = graph_to_judge(previous, scan, workdir=identity, settled_before=settled_before)
    judged = {rel: _judge(context, candidates[rel]) for rel in todo}
    keys = context.instance.get_dynamic_partitions(GRAPH_PARTITIONS)
    return graph_tick(
        previous,
        scan,
        judged,
        {archive_path(key) for key in keys},
        LazyMapping(lambda: builds_in_flight(context.instance)),
        functools.partial(launched_at, context.instance),
        workdir=identity,
        held=LazySet(lambda: {entry.source for entry in read_manifest(workdir).values()}),
        settled_before=settled_before,
    )


def _look(context: dg.SensorEvaluationContext, candidate: ArchiveFiles) -> ArchiveLook:
    """A candidate's stat signature and newest ctime (no signature: unreadable now)."""
    try:
        stat = candidate.stat_signature()
    except OSError as exc:  # vanished or unreadable mid-tick: the next tick decides
        context.log.warning(f"cannot read {candidate.relative_path}: {exc}")
        return ArchiveLook(None, math.inf)
    return ArchiveLook(tuple((size, mtime) for size, mtime in stat), _changed_at(candidate))


def _judge(context: dg.SensorEvaluationContext, candidate: ArchiveFiles) -> Judgment:
    """Why no message source reads a candidate, or its content hash."""
    reasons = rejections(candidate.path)
    if reasons:
        return Judgment(
            reason="; ".join(f"{source}: {why}" for source, why in sorted(reasons.items()))
        )
    try:
        return Judgment(sha256=candidate.content_sha256())
    except OSError as exc:
        context.log.warning(f"cannot read {candidate.relative_path}: {exc}")
        return Judgment()


@dg.sensor(
    job=refresh_graph_staleness_job,
    minimum_interval_seconds=10,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Requests a graph staleness run when the chat model or an extraction "
    "setting drifts from those the message graph was built with.",
)
def graph_staleness_sensor(
    context: dg.SensorEvaluationContext, varagity: VaragityResource
) -> dg.RunRequest | dg.SkipReason:
    """Diff the graph-affecting settings against those the graph was built with.

    The run key names the (current, recorded) pair, so each drift becomes one run; a
    graph already flagged, or one nothing was built into yet, asks for none.
    """
    settings = varagity.settings
    if not settings.GRAPH_ENABLED:
        return dg.SkipReason("GRAPH_ENABLED is false: the message graph is off")
    state = GraphState(varagity.services.pg)
    current, recorded = graph_settings(settings), state.built_with()
    if recorded == current:
        return dg.SkipReason("the message graph matches the chat model and extraction settings")
    if state.stale() is not None:
        return dg.SkipReason("the message graph is flagged stale already (a rebuild clears it)")
    if recorded is None and not read_manifest(workdir_for(settings)):
        return dg.SkipReason("nothing is built into the message graph yet")
    pair = json.dumps([current, recorded], sort_keys=True)
    digest = hashlib.sha256(pair.encode()).hexdigest()[:24]
    return dg.RunRequest(job_name=GRAPH_STALENESS_JOB, run_key=f"graph-settings:{digest}")
