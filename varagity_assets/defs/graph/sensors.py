"""The graph-sources sensor: ``GRAPH_DOCS_PATH`` diffed against its cursor into partition
changes and run requests. It only reads and requests; the graph is written in runs.

The cursor is ``{"archives": {relative_path: {"stat": [[size, mtime_ns], ...],
"sha256": ..., "waiting": true?, "revision": n?}}, "skipped": {relative_path: {"stat":
..., "reason": ...}}, "generation": n}``. Each tick:

* every candidate file (an archive with its companions, :mod:`.archives`) whose stat
  signature moved is judged again: a supported archive is hashed (database, ``-wal``
  and ``-shm`` together, and the contacts files that name its handles), anything else
  is reported once, by name and reason;
* an archive new to the partition set gets its partition and a build run; one whose
  content hash changed gets a build run (the run key is the archive's content
  signature, so a re-export with the same bytes requests nothing, and the diff of a
  grown one re-extracts only its changed days);
* an archive whose exact bytes a build was launched for since it last changed (an
  upload, or the build routes, tag the run with the archive's signature, as this
  sensor does) gets no second one, whether that run is queued, running or done; one
  that failed or was canceled does not count;
* an archive whose partition already has a build run in flight without that tag (the
  Dagster UI launched it) gets no second one either. A run that has not started yet, or
  that started after the archive's files last changed (their ``ctime``, which no copy
  tool can set back), reads the archive as it is now, so that content counts as
  requested; a run that started before the change may have read the older bytes, so
  the archive is kept ``waiting`` and its build is requested once that run has ended
  (without hashing it again). An archive never seen here whose partition exists already
  (the upload route adds it just before it launches the build) is looked at again on
  the next tick, when that run is in flight;
* an archive new or changed less than ``_SETTLE_S`` ago (by its newest ``ctime``) is
  left for a later tick: an upload stores an archive's files and then launches its
  build, and a tick between the two would request a second build of the same bytes
  (the first to run extracts the days, the other waits behind it for nothing); a copy
  still in progress is not hashed half-written either;
* an archive gone from the folder loses its partition, and a ``remove_graph_sources``
  run takes its days out of the graph. One that is still there but no longer reads as
  an archive (caught mid-export, unreadable) keeps its days until it is gone or reads
  again.

The cursor also names the folder that is the graph's working directory (device and
inode, :func:`~varagity.graph.swap.workdir_identity`). A restore swaps another folder in,
whether the API, the CLI, the Dagster job or an offline ``varagity backup restore`` did
it; when the name changes, every archive is built again (the build diffs its days
against the restored manifest, so an archive unchanged since the bundle costs a read and
no extraction) and the archives the restored manifest holds that are gone from the
folder get a removal run.

Run keys carry the cursor's ``generation``, counted up with every removal, so an
archive removed and put back is built again, and the archive's ``revision``, counted up
with every change of its content, so content it had before (a contacts file added and
removed again, a name changed back) is built again too. A missing ``GRAPH_DOCS_PATH`` removes
nothing (an unmounted folder must not empty the graph), and ``GRAPH_ENABLED=false``
skips the tick, saying so, with the cursor left as it was.
"""

import hashlib
import json
import math
import time
from typing import Any

import dagster as dg

from varagity.backup.locks import corpus_restoring
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
    PARTITION_TAG,
    SOURCE_TAG,
)
from varagity_assets.defs.graph.assets import graph_removed_sources
from varagity_assets.defs.graph.jobs import build_message_graph_job, remove_graph_sources_job
from varagity_assets.defs.graph.partitions import archive_key, graph_sources_partitions
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
#: A run must have started this long after an archive's last change to count as
#: reading it (the run worker's clock against the file system's).
_CLOCK_MARGIN_S = 1.0
#: How long an archive must have been left alone before this sensor requests its build
#: (an upload launches its own within that time; a graph build takes minutes anyway).
_SETTLE_S = 10.0


def builds_in_flight(instance: dg.DagsterInstance) -> dict[str, float]:
    """Partition key -> the latest moment an in-flight build run of it reads its archive
    from (infinity for a run yet to start, else when it started), for the partitions a
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
            busy[key] = max(busy.get(key, -math.inf), reads_from)
    return busy


#: Statuses of a run that did not (and will not) build what it was asked for.
_NOT_BUILT = {dg.DagsterRunStatus.FAILURE, dg.DagsterRunStatus.CANCELED}


def asked_for(instance: dg.DagsterInstance, key: str, sha256: str, changed_at: float) -> bool:
    """Whether a build of exactly these bytes (its ``varagity/archive_sha256`` tag) was
    launched since the archive last changed and has not failed or been canceled: an
    upload or the build routes launched it, and a second would find nothing to do."""
    records = instance.get_run_records(
        filters=dg.RunsFilter(
            job_name=GRAPH_BUILD_JOB, tags={PARTITION_TAG: key, ARCHIVE_TAG: sha256}
        ),
        limit=10,
    )
    return any(
        record.dagster_run.status not in _NOT_BUILT
        and record.create_timestamp.timestamp() >= changed_at - _CLOCK_MARGIN_S
        for record in records
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
    state: dict[str, Any] = json.loads(context.cursor) if context.cursor else {}
    previous: dict[str, dict[str, Any]] = state.get("archives", {})
    reported: dict[str, dict[str, Any]] = state.get("skipped", {})
    generation: int = state.get("generation", 0)
    if not root.is_dir():
        return dg.SkipReason(
            f"GRAPH_DOCS_PATH {root} does not exist; nothing is built or removed until it does"
        )

    # A restore put another graph in place: every archive is judged and built again (its
    # build diffs the days against the restored manifest, so only what changed since
    # the bundle is extracted), and archives the restored graph holds that are gone
    # from the folder are removed.
    workdir = workdir_for(settings)
    identity = workdir_identity(workdir)
    forced: set[str] = set()
    orphans: list[str] = []
    if None not in (identity, state.get("workdir")) and identity != state.get("workdir"):
        context.log.info(
            f"another graph was put in place at {workdir} (a restore): every archive is "
            "built again, archives it holds that are gone from the folder are removed"
        )
        forced = set(previous)
        previous = {
            rel: {"stat": [], "sha256": "", "revision": entry.get("revision", 0) + 1}
            for rel, entry in previous.items()
        }
        held = {entry.source for entry in read_manifest(workdir).values()}
        orphans = sorted(held - {c.relative_path for c in scan_archives(root)} - set(previous))

    archives: dict[str, dict[str, Any]] = {}
    skipped: dict[str, dict[str, Any]] = {}
    changed: list[str] = []
    candidates = {c.relative_path: c for c in scan_archives(root)}
    settled_before = time.time() - _SETTLE_S
    for rel, candidate in candidates.items():
        try:
            stat = candidate.stat_signature()
        except OSError as exc:  # vanished or unreadable mid-tick: next tick decides
            context.log.warning(f"cannot read {rel}: {exc}")
            if rel in previous:
                archives[rel] = previous[rel]
            continue
        before = previous.get(rel)
        if before is not None and before["stat"] == stat:
            archives[rel] = before
            continue
        if _changed_at(candidate) > settled_before:  # just landed: a later tick judges it
            if before is not None:
                archives[rel] = before
            continue
        if rel in reported and reported[rel]["stat"] == stat:  # judged already: not one
            skipped[rel] = reported[rel]
            if before is not None:
                archives[rel] = before
            continue
        reasons = rejections(candidate.path)
        if reasons:
            reason = "; ".join(f"{source}: {why}" for source, why in sorted(reasons.items()))
            if (reported.get(rel) or {}).get("reason") != reason:  # say it once
                context.log.warning(f"not building {rel} into the message graph: {reason}")
            skipped[rel] = {"stat": stat, "reason": reason}
            if before is not None:  # there, but not readable now: its days stay
                archives[rel] = before
            continue
        try:
            digest = candidate.content_sha256()
        except OSError as exc:
            context.log.warning(f"cannot read {rel}: {exc}")
            if before is not None:
                archives[rel] = before
            continue
        archives[rel] = {"stat": stat, "sha256": digest}
        if before is not None and before.get("waiting"):  # still owed a build
            archives[rel]["waiting"] = True
        revision = (before or {}).get("revision", 0)
        if before is not None and before["sha256"] not in ("", digest):
            revision += 1  # its content may be one it had before (a contacts file removed)
        if revision:
            archives[rel]["revision"] = revision
        if before is None or before["sha256"] != digest:
            changed.append(rel)

    existing = set(context.instance.get_dynamic_partitions(GRAPH_PARTITIONS))
    new = sorted(rel for rel in archives if archive_key(rel) not in existing)
    waiting = {rel for rel, entry in archives.items() if entry.get("waiting")}
    to_build = sorted(set(changed) | set(new) | waiting)
    for rel in [
        r for r in to_build if r in candidates and archives[r].get("sha256") and r not in forced
    ]:
        key, digest = archive_key(rel), archives[rel]["sha256"]
        if asked_for(context.instance, key, digest, _changed_at(candidates[rel])):
            to_build.remove(rel)
            archives[rel] = {k: v for k, v in archives[rel].items() if k != "waiting"}
            context.log.info(f"{rel}: a build of these bytes was launched already")
    busy = builds_in_flight(context.instance) if to_build else {}
    for rel in [r for r in to_build if archive_key(r) in busy]:
        to_build.remove(rel)
        entry = {k: v for k, v in archives[rel].items() if k != "waiting"}
        if busy[archive_key(rel)] > _changed_at(candidates[rel]) + _CLOCK_MARGIN_S:
            context.log.info(f"{rel}: a build of it is in flight already; not requesting another")
        else:
            entry["waiting"] = True
            if rel not in waiting:
                context.log.info(
                    f"{rel} changed while a build of it runs; its next build is requested "
                    "once that run has ended"
                )
        archives[rel] = entry
    # never seen here, yet its partition exists: the upload route adds the partition just
    # before it launches the build, so look again next tick (a placeholder entry: hashed
    # again then, built unless that run covers it)
    for rel in [r for r in to_build if r not in previous and archive_key(r) in existing]:
        to_build.remove(rel)
        archives[rel] = {"stat": [], "sha256": ""}
    for rel in to_build:
        archives[rel] = {k: v for k, v in archives[rel].items() if k != "waiting"}
    removed = sorted((set(previous) - set(archives)) | set(orphans))
    to_delete = [archive_key(rel) for rel in removed if archive_key(rel) in existing]

    run_requests = [
        _build_request(rel, archives[rel]["sha256"], generation, archives[rel].get("revision", 0))
        for rel in to_build
    ]
    if removed:
        run_requests.append(_remove_request(removed, generation))
        generation += 1
        context.log.info(f"removed from GRAPH_DOCS_PATH: {', '.join(removed)}")
    partition_requests: list[
        dg.AddDynamicPartitionsRequest | dg.DeleteDynamicPartitionsRequest
    ] = []
    if new:
        partition_requests.append(
            graph_sources_partitions.build_add_request([archive_key(r) for r in new])
        )
    if to_delete:
        partition_requests.append(graph_sources_partitions.build_delete_request(to_delete))
    if to_build:
        context.log.info(
            f"requesting graph builds of {len(to_build)} archive(s): {', '.join(to_build)}"
        )
    cursor = json.dumps(
        {
            "archives": archives,
            "skipped": skipped,
            "generation": generation,
            "workdir": identity,
        },
        sort_keys=True,
    )
    if not run_requests and not partition_requests:
        context.update_cursor(cursor)
        return dg.SkipReason(
            f"{len(archives)} archive(s), nothing changed"
            + (f"; {len(skipped)} file(s) not supported" if skipped else "")
        )
    return dg.SensorResult(
        run_requests=run_requests, dynamic_partitions_requests=partition_requests, cursor=cursor
    )
