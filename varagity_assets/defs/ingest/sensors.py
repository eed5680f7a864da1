"""The sensors of the ingest domain. They only read and request: every write to the
stores happens in a run they ask for, so it has its logs and lineage in the UI.

``docs_folder_sensor`` diffs ``DOCS_PATH`` against its cursor (``{"files":
{relative_path: [mtime_ns, size, sha256]}, "purging": {...}, "skipped": {relative_path:
reason}, "generation": n, ...}``; a file whose mtime and size are unchanged is not
re-hashed, a skipped file is reported once):

* new files get a partition and are ingested in batches of ``INGEST_BATCH_SIZE`` files
  and at most ``INGEST_BATCH_BYTES`` bytes per run (one run over a contiguous range of
  the partitions added this tick; a larger file gets a run of its own);
* changed files (new content hash) are re-requested one run each, unless an ingest run
  covering the file is in flight (the upload route launches one as soon as a file is
  stored): the file is looked at again after that run, which usually indexed it; a file
  the cursor has never seen whose partition already exists (the upload route adds it
  just before launching its run) is looked at again on the next tick;
* the files of a failed batch run are re-requested: one run each when a step failed
  (to isolate the bad file), in batches again when the run crashed (worker killed, the
  run failed by run monitoring), one run each if that recovery run crashes too;
* removed files become ``purge_documents`` runs (``INGEST_BATCH_SIZE`` files each) and
  their partitions are deleted. A removed file that an ingest run is still working on
  waits in ``purging`` until that run ends, so the run cannot write it back after its
  purge (a blurb run does not hold a purge back: it writes nothing for a document
  that is gone); a
  file put back while its purge run is queued or running waits for that run, which
  keeps what is back in the folder, and is ingested after it.

While the API's folder watcher is live (it holds a Postgres advisory lock saying so,
:func:`~varagity.corpus_lock.folder_watcher_presence`), it launches each new or changed
file's run as the file lands, as the upload route does; the sensor then leaves a file
whose ctime is less than ``_WATCHER_GRACE_NS`` old to it (were both to ask, the file
could get two runs: the sensor's request and the watcher's launch may cross before
either run is in flight) and takes it as any other once the grace is over (a file the
watcher could not launch waits that long).

The cursor is only what this sensor has seen; every tick also diffs the folder against
the stores (:mod:`varagity.ingest.reconcile`: one query of paths and ``doc_id``s, the
digests from the cursor), so what moved the stores without it (a restore of last week's
bundle, a crash between a cursor and a store, a hand edit of the database) is put
right by runs tagged ``varagity/reconcile``: a file whose current version is not
stored is ingested again (unless an ingest run is on it, or its last ingest failed: an
``ingest_failures`` row says why), the documents of a file gone from the folder are
purged. The cursor's ``reconciling`` remembers what was asked for, so each version is
asked for once, not on every tick while its run waits or if it cannot be fixed.

Run keys are built from path + content hash (+ mtime, so a file edited back to an
earlier content is still re-ingested); a new file's key also carries the cursor's
``generation``, counted up with every purge, so a file removed and put back is
ingested again. A file whose exact version is already in the store (e.g. after the
instance was reset) is not requested at all.

``chunk_contexts_sensor`` reads the stores (which documents have chunks without a blurb)
and the instance (which blurb runs are in flight) and requests runs for the difference.

``corpus_staleness_sensor`` compares the ingest settings with those the corpus was built
with, and the stale flag with the completed reingest backfills, and requests a
``refresh_corpus_staleness`` run when the flag may have to change.
"""

import functools
import hashlib
import json
import time
from collections.abc import Sequence
from typing import Any

import dagster as dg

from varagity.backup.locks import corpus_restoring
from varagity.corpus_lock import folder_watcher_live
from varagity.files import file_sha256
from varagity.folder_diff import FolderDiff, diff_versions
from varagity.ingest.discovery import partition_key_for, relative_path_for, scan
from varagity.pipeline import (
    BATCH_TAG,
    DOCUMENTS_PARTITIONS,
    FILES_TAG,
    INGEST_JOB,
    ISOLATED_TAG,
    RANGE_END_TAG,
    RANGE_START_TAG,
    RECONCILE_TAG,
    RECOVERED_TAG,
    STALENESS_JOB,
    contiguous_groups,
    ingest_batches,
    range_request_tags,
)
from varagity.records import doc_id_for
from varagity.stores.corpus_state import CorpusState, ingest_settings
from varagity.stores.ingest_failures import failures_by_path
from varagity_assets.defs.ingest.jobs import (
    contextualize_documents_job,
    ingest_documents_job,
    purge_documents_job,
    refresh_corpus_staleness_job,
)
from varagity_assets.defs.ingest.partitions import (
    IN_FLIGHT,
    documents_partitions,
    ingest_runs_in_flight,
    run_partition_keys,
)
from varagity_assets.defs.ingest.upkeep import completed_reingest_after, purged_documents
from varagity_assets.resources import VaragityResource

_HANDLED_FAILURES_KEPT = 200


def _in_flight_partitions(context: dg.SensorEvaluationContext, job_name: str | None) -> set[str]:
    """Partitions a run (of ``job_name``, or of any job) is queued for or working on."""
    runs = context.instance.get_runs(filters=dg.RunsFilter(job_name=job_name, statuses=IN_FLIGHT))
    busy: set[str] = set()
    for run in runs:
        busy.update(run_partition_keys(run.tags, context.instance) or [])
    return busy


def _paths_being_purged(context: dg.SensorEvaluationContext) -> set[str]:
    """The relative paths a purge run is queued for or working on."""
    runs = context.instance.get_runs(
        filters=dg.RunsFilter(job_name=purge_documents_job.name, statuses=IN_FLIGHT)
    )
    paths: set[str] = set()
    for run in runs:
        run_config: dict[str, Any] = dict(run.run_config or {})
        ops = run_config.get("ops") or {}
        config = (ops.get(purged_documents.op.name) or {}).get("config") or {}
        paths.update(config.get("relative_paths") or [])
    return paths


def _batch_request(items: Sequence[tuple[str, str]], generation: int) -> dg.RunRequest:
    """One ingest run over a contiguous range of freshly added partitions."""
    digest = hashlib.sha256("\n".join(f"{k}:{h}" for k, h in items).encode()).hexdigest()[:20]
    first, last = items[0][0], items[-1][0]
    if len(items) == 1:
        return dg.RunRequest(
            job_name=INGEST_JOB,
            run_key=f"{first}:{items[0][1]}:g{generation}",
            partition_key=first,
        )
    return dg.RunRequest(
        job_name=INGEST_JOB,
        run_key=f"batch:{len(items)}:{digest}:g{generation}",
        tags={**range_request_tags([first, last]), BATCH_TAG: "true", FILES_TAG: str(len(items))},
    )


def _purge_request(
    paths: Sequence[str], generation: int, *, reconcile: Sequence[str] = ()
) -> dg.RunRequest:
    """One purge run over files removed from the folder (tagged a reconcile when some of
    them were found in the stores only)."""
    digest = hashlib.sha256("\n".join(paths).encode()).hexdigest()[:20]
    tags = {FILES_TAG: str(len(paths))}
    if set(paths) & set(reconcile):
        tags[RECONCILE_TAG] = _PURGE
    return dg.RunRequest(
        job_name=purge_documents_job.name,
        run_key=f"purge:{digest}:g{generation}",
        run_config={"ops": {purged_documents.op.name: {"config": {"relative_paths": list(paths)}}}},
        tags=tags,
    )


#: The ``reconciling`` mark of a path whose stored documents are being purged (a path
#: being ingested again is marked with the ``doc_id`` asked for).
_PURGE = "purge"


def _store_diff(
    varagity: VaragityResource, current: dict[str, list], present: set[str]
) -> FolderDiff:
    """The folder (as this tick read it) against the stores. A file whose digest is not
    known this tick (just landed, deferred) counts as present, neither missing nor gone."""
    pg = varagity.services.pg
    known = {rel: doc_id_for(rel, entry[2]) for rel, entry in current.items() if entry[2]}
    unknown = present | {rel for rel, entry in current.items() if not entry[2]}
    stored = pg.stored_versions()
    found = diff_versions(known, stored, {}, present=unknown)
    if found.to_ingest:  # a file whose last ingest failed is not asked for again
        failures = {rel: row.summary for rel, row in failures_by_path(pg).items()}
        found = diff_versions(known, stored, failures, present=unknown)
    return found


def _reconcile_requests(
    context: dg.SensorEvaluationContext, paths: Sequence[str], batch_size: int
) -> list[dg.RunRequest]:
    """Ingest runs over files the stores lack: contiguous partitions share a run."""
    if not paths:
        return []
    keys = documents_partitions.get_partition_keys(dynamic_partitions_store=context.instance)
    position = {key: i for i, key in enumerate(keys)}
    stamp = time.time_ns()  # a restore can lose the same version again: never deduplicated
    requests = []
    keys_wanted = sorted((partition_key_for(rel) for rel in paths), key=position.__getitem__)
    for group in contiguous_groups(keys_wanted, position, batch_size):
        tags = {RECONCILE_TAG: "ingest", FILES_TAG: str(len(group))}
        digest = hashlib.sha256("\n".join(group).encode()).hexdigest()[:20]
        run_key = f"reconcile:{digest}:{stamp}"
        if len(group) == 1:
            requests.append(
                dg.RunRequest(
                    job_name=INGEST_JOB, run_key=run_key, partition_key=group[0], tags=tags
                )
            )
        else:
            requests.append(
                dg.RunRequest(
                    job_name=INGEST_JOB,
                    run_key=run_key,
                    tags={**range_request_tags(group), BATCH_TAG: "true", **tags},
                )
            )
    return requests


def _crashed(context: dg.SensorEvaluationContext, run: dg.DagsterRun) -> bool:
    """Whether ``run`` failed without a step failing: its worker died (killed, out of
    memory) and run monitoring failed the run, so no file is known to be bad."""
    return not context.instance.get_records_for_run(
        run.run_id, of_type=dg.DagsterEventType.STEP_FAILURE, limit=1
    ).records


def _requests_for_failed_batches(
    context: dg.SensorEvaluationContext, handled: list[str], batch_size: int
) -> tuple[list[dg.RunRequest], list[str]]:
    """Re-run the files of each newly failed batch run.

    A batch run whose step failed names its bad files (the good ones are stored anyway):
    each file is re-run alone, which gives every partition its own outcome in the UI;
    the good ones materialize (cheaply: already indexed), the bad one fails by itself.
    A batch run that crashed (its worker died, nothing failed by name) is re-run in
    batches of ``batch_size`` again; if such a recovery run crashes too, its files are
    re-run one per run, so a file that kills its worker is found and only it fails.
    """
    failed = context.instance.get_runs(
        filters=dg.RunsFilter(
            job_name=ingest_documents_job.name, statuses=[dg.DagsterRunStatus.FAILURE]
        ),
        limit=100,
    )
    fresh = [
        run
        for run in failed
        if run.run_id not in handled
        and (run.tags.get(BATCH_TAG) == "true" or RECOVERED_TAG in run.tags)
    ]
    if not fresh:
        return [], handled
    keys = documents_partitions.get_partition_keys(dynamic_partitions_store=context.instance)
    position = {key: i for i, key in enumerate(keys)}
    requests = []
    for run in fresh:
        start, end = run.tags.get(RANGE_START_TAG), run.tags.get(RANGE_END_TAG)
        if start not in position or end not in position:
            continue
        files = keys[position[start] : position[end] + 1]
        if _crashed(context, run) and RECOVERED_TAG not in run.tags:
            context.log.info(
                f"batch run {run.run_id} crashed: re-running its {len(files)} file(s) in batches"
            )
            for i in range(0, len(files), batch_size):
                part = files[i : i + batch_size]
                requests.append(
                    dg.RunRequest(
                        job_name=INGEST_JOB,
                        run_key=f"recover:{run.run_id}:{i}",
                        tags={
                            **range_request_tags([part[0], part[-1]]),
                            RECOVERED_TAG: run.run_id,
                            FILES_TAG: str(len(part)),
                        },
                    )
                )
            continue
        for key in files:
            requests.append(
                dg.RunRequest(
                    job_name=INGEST_JOB,
                    run_key=f"solo:{run.run_id}:{key}",
                    partition_key=key,
                    tags={ISOLATED_TAG: run.run_id},
                )
            )
        context.log.info(
            f"batch run {run.run_id} failed: re-running its files one per run to isolate "
            "the failing one"
        )
    kept = [*handled, *(run.run_id for run in fresh)][-_HANDLED_FAILURES_KEPT:]
    return requests, kept


def _covers_present_file(request: dg.RunRequest, current: dict[str, list]) -> bool:
    """Whether a retry still has its file: a one-file run's file may have been removed
    since (a range run skips what is gone)."""
    key = request.partition_key
    return key is None or relative_path_for(key) in current


#: How long a file that landed (its ctime) is left to the API's folder watcher, while one
#: is live, before the sensor takes it as any other: the watcher launches within a second
#: or two of a landing (a thousand files at once take it a few seconds); a file it did not
#: launch (Dagster unreachable, a backup running) waits this long for the sensor.
_WATCHER_GRACE_NS = 15 * 1_000_000_000


def _watcher_live(varagity: VaragityResource) -> bool:
    """Whether the API's folder watcher is watching (it holds a lock saying so)."""
    with varagity.services.pg.connection() as conn:
        return folder_watcher_live(conn)


#: The sensor daemon evaluates sensors once per 5-s loop, and only those whose last tick
#: began at least ``minimum_interval_seconds`` ago. Asking for exactly 5 s skipped every
#: other loop whenever the tick began a little later in its loop than the one before
#: (measured: ticks 10 s apart); asking for less than the loop ticks on every loop.
_FOLDER_SENSOR_INTERVAL_S = 4


@dg.sensor(
    jobs=[ingest_documents_job, purge_documents_job],
    minimum_interval_seconds=_FOLDER_SENSOR_INTERVAL_S,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Watches DOCS_PATH: requests ingest runs for new and changed files and "
    "purge runs for removed ones.",
)
def docs_folder_sensor(
    context: dg.SensorEvaluationContext, varagity: VaragityResource
) -> dg.SensorResult | dg.SkipReason:
    """Turn folder changes into partition changes and run requests."""
    settings = varagity.settings
    restoring = corpus_restoring(settings, "rag")
    if restoring is not None:  # its runs would only fail on the corpus lock
        return dg.SkipReason(
            f"the documents are being restored ({restoring}): the folder is looked at again "
            "once the restore has finished"
        )
    state = json.loads(context.cursor) if context.cursor else {}
    waiting: dict[str, list] = state.get("purging", {})
    previous: dict[str, list] = {**waiting, **state.get("files", {})}
    reported: dict[str, str] = state.get("skipped", {})
    generation: int = state.get("generation", 0)
    retry_requests, handled = _requests_for_failed_batches(
        context, state.get("failed_batches", []), settings.INGEST_BATCH_SIZE
    )
    files, skipped = scan(settings.docs_path)
    for item in skipped:
        if reported.get(item.relative_path) != item.reason:  # say it once, not every tick
            context.log.warning(f"not ingesting {item.relative_path}: {item.reason}")

    current: dict[str, list] = {}
    candidates: list[tuple[str, str, int]] = []  # (relative_path, sha256, mtime_ns)
    # while the API's folder watcher is live it launches each file as it lands: a file
    # that landed moments ago is its to launch (asked for here too, it could get a second
    # run before the watcher's is in flight); it is looked at once the grace is over
    # (asked of Postgres only once a file needs a look, not on every idle tick)
    watcher_live = functools.cache(lambda: _watcher_live(varagity))
    fresh_after = time.time_ns() - _WATCHER_GRACE_NS
    fresh: set[str] = set()
    for f in files:
        before = previous.get(f.relative_path)
        if before and before[0] == f.mtime_ns and before[1] == f.size:
            digest = before[2]
        elif f.ctime_ns > fresh_after and watcher_live():
            # kept in the cursor (unhashed if new), so its removal is still a removal
            current[f.relative_path] = before or [0, 0, ""]
            fresh.add(f.relative_path)
            continue
        else:
            try:
                digest = file_sha256(f.path)
            except OSError as exc:  # vanished or unreadable mid-tick: next tick decides
                context.log.warning(f"cannot read {f.relative_path}: {exc}")
                if before:
                    current[f.relative_path] = before
                continue
        current[f.relative_path] = [f.mtime_ns, f.size, digest]
        if before is None or before[2] != digest:
            candidates.append((f.relative_path, digest, f.mtime_ns))
    # a file that is there but now skipped (unreadable, link turned outside) keeps its
    # indexed version: only a file gone from the folder is purged
    for item in skipped:
        if item.relative_path in previous and item.relative_path not in current:
            current[item.relative_path] = previous[item.relative_path]
    existing = set(context.instance.get_dynamic_partitions(DOCUMENTS_PARTITIONS))
    # Removed: a file the cursor had that is gone, and a file with a partition that is
    # gone though this sensor never saw it (the watcher or an upload launched its run
    # and it went again between two ticks). A file seen only while it was the watcher's
    # that is gone without a partition was never ingested: nothing to purge.
    there = current.keys() | {item.relative_path for item in skipped}
    gone = {rel for rel in previous.keys() - there if previous[rel][2]} | {
        rel for rel in map(relative_path_for, existing) if rel not in there
    }
    # The stores' side (what this cursor cannot see: a restore, a crash between the
    # cursor and a store, a hand edit of the database): documents of files that are
    # gone are purged, files whose current version is not stored are ingested again.
    # Each is asked for once per version (``reconciling``), so a run that cannot fix it
    # is not requested on every tick; `varagity doctor` names what is left.
    reconciling: dict[str, str] = state.get("reconciling", {})
    store_diff = _store_diff(varagity, current, there - current.keys())
    orphans = [
        rel for rel in store_diff.to_purge if rel not in gone and reconciling.get(rel) != _PURGE
    ]
    if orphans:
        orphans = [rel for rel in orphans if rel not in _paths_being_purged(context)]
    if orphans:
        context.log.info(
            f"the stores hold {len(orphans)} file(s) that are gone from the folder: "
            f"{', '.join(orphans)}; purging them"
        )
    removed = sorted(gone | set(orphans))
    # the partitions in-flight ingest runs cover: looked up once a tick, and only if needed
    ingesting = functools.cache(lambda: _in_flight_partitions(context, ingest_documents_job.name))
    # a removed file an ingest run still works on is purged once that run ends (a blurb
    # run cannot write a purged document back: it re-checks the document before every
    # write, so it does not hold a purge back)
    busy = ingesting() if removed else set()
    purging = {
        rel: previous.get(rel, [0, 0, ""]) for rel in removed if partition_key_for(rel) in busy
    }
    for rel in purging.keys() - waiting.keys():
        context.log.info(f"{rel} was removed; it is purged once the ingest run on it ends")
    purge_now = [rel for rel in removed if rel not in purging]

    # every file gets a partition; files new to the instance are ingested in batches
    new_items = [
        (partition_key_for(rel), file_state[2])
        for rel, file_state in current.items()
        if partition_key_for(rel) not in existing and rel not in fresh
    ]
    # a file put back while its purge run is queued or running waits for that run
    held = _paths_being_purged(context) if new_items else set()
    for rel in sorted(held & {relative_path_for(k) for k, _ in new_items}):
        context.log.info(f"{rel} is back; it is ingested once its purge run has ended")
    new_items = [(k, h) for k, h in new_items if relative_path_for(k) not in held]
    changed = [
        (partition_key_for(rel), digest, mtime)
        for rel, digest, mtime in candidates
        if partition_key_for(rel) in existing
    ]
    to_delete = [k for k in (partition_key_for(r) for r in purge_now) if k in existing]
    # a changed file whose new version is stored already (the upload route's run, or a
    # restore) is not asked for again
    unstored = {*store_diff.to_ingest, *store_diff.failed}
    changed = [c for c in changed if relative_path_for(c[0]) in unstored]
    deferred: set[str] = set()
    if changed:
        # A file a run already works on (the upload route launches one right away) is
        # looked at again once that run has ended: asked for now, it would run twice.
        # A file this sensor has never seen whose partition exists is looked at again
        # next tick: the upload route adds the partition just before it launches the run.
        deferred = {key for key, _, _ in changed if key in ingesting()}
        deferred |= {key for key, _, _ in changed if relative_path_for(key) not in previous}
        for key in deferred:
            rel = relative_path_for(key)
            # no digest: the next tick hashes the file again and decides
            current[rel] = previous.get(rel) or [0, 0, ""]
        changed = [c for c in changed if c[0] not in deferred]

    # files the stores lack a current version of, that nothing this tick asks for
    requested = {k for k, _ in new_items} | {k for k, _, _ in changed} | deferred
    missing = {
        rel: doc_id_for(rel, current[rel][2])
        for rel in store_diff.to_ingest
        if rel not in fresh
        and partition_key_for(rel) in existing
        and partition_key_for(rel) not in requested
        and reconciling.get(rel) != doc_id_for(rel, current[rel][2])
    }
    if retry_requests:  # a failed batch's files are re-run first
        missing = {}
    elif missing:
        busy_keys = ingesting()
        missing = {r: d for r, d in missing.items() if partition_key_for(r) not in busy_keys}
    reconcile_requests = _reconcile_requests(context, sorted(missing), settings.INGEST_BATCH_SIZE)
    if missing:
        context.log.info(
            f"the stores lack the current version of {len(missing)} file(s): "
            f"{', '.join(sorted(missing))}; ingesting them"
        )
    kept = {
        rel: mark
        for rel, mark in reconciling.items()
        if (mark == _PURGE and rel in store_diff.to_purge)
        or (mark != _PURGE and rel in store_diff.to_ingest)
    }
    reconciling = {**kept, **missing, **dict.fromkeys(orphans, _PURGE)}

    size = settings.INGEST_BATCH_SIZE
    run_requests = [
        _batch_request(batch, generation)
        for batch in ingest_batches(
            new_items,
            size,
            weight=lambda item: current[relative_path_for(item[0])][1],
            max_weight=settings.INGEST_BATCH_BYTES,
        )
    ]
    run_requests += [
        dg.RunRequest(job_name=INGEST_JOB, run_key=f"{key}:{digest}:{mtime}", partition_key=key)
        for key, digest, mtime in changed
    ]
    run_requests += [r for r in retry_requests if _covers_present_file(r, current)]
    run_requests += reconcile_requests
    if purge_now:
        run_requests += [
            _purge_request(purge_now[i : i + size], generation, reconcile=orphans)
            for i in range(0, len(purge_now), size)
        ]
        generation += 1
    partition_requests: list[
        dg.AddDynamicPartitionsRequest | dg.DeleteDynamicPartitionsRequest
    ] = []
    if new_items:
        partition_requests.append(documents_partitions.build_add_request([k for k, _ in new_items]))
    if to_delete:
        partition_requests.append(documents_partitions.build_delete_request(to_delete))
    if purge_now:
        context.log.info(f"removed from the folder, to purge: {', '.join(purge_now)}")
    if new_items or changed:
        context.log.info(
            f"requesting ingest of {len(new_items)} new and {len(changed)} changed file(s)"
        )
    cursor = json.dumps(
        {
            "files": current,
            "purging": purging,
            "skipped": {s.relative_path: s.reason for s in skipped},
            "failed_batches": handled,
            "generation": generation,
            "reconciling": reconciling,
        },
        sort_keys=True,
    )
    if not run_requests and not partition_requests:
        context.update_cursor(cursor)
        return dg.SkipReason(
            f"{len(current)} file(s), nothing changed"
            + (f"; {len(purging)} removed file(s) wait for their runs" if purging else "")
            + (f"; {len(fresh)} file(s) that just landed are the folder watcher's" if fresh else "")
        )
    return dg.SensorResult(
        run_requests=run_requests,
        dynamic_partitions_requests=partition_requests,
        cursor=cursor,
    )


@dg.sensor(
    job=contextualize_documents_job,
    minimum_interval_seconds=10,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Requests blurb runs for stored chunks that have no LLM blurb yet.",
)
def chunk_contexts_sensor(
    context: dg.SensorEvaluationContext, varagity: VaragityResource
) -> dg.SensorResult | dg.SkipReason:
    """Diff the stores' waiting chunks against the runs in flight; request the rest.

    Level-triggered: whatever is stored without a blurb is requested, whichever way it
    got there (a new file, a reingest, CONTEXTUALIZE switched on, a blurb run that
    failed part-way). Documents become runs over contiguous ranges of partitions (at
    most ``INGEST_BATCH_SIZE`` each); a partition with a blurb run in flight waits for
    it. The run key names each document's version, how many chunks wait and the newest
    ingest run, so a run that failed without progress is not requested again until
    something changes (its own page in the UI says why), while one that made progress,
    or gave way to ingest, is resumed. Nothing is requested while an ingest run is in
    flight: blurbs never compete with new files for the cores.
    """
    settings = varagity.settings
    if not settings.CONTEXTUALIZE:
        return dg.SkipReason("CONTEXTUALIZE is off: no blurbs are written")
    if ingesting := ingest_runs_in_flight(context.instance):
        return dg.SkipReason(f"{ingesting} ingest run(s) in flight: blurbs wait for them")
    waiting = varagity.services.pg.documents_awaiting_context()
    if not waiting:
        return dg.SkipReason("every stored chunk has its blurb")
    keys = documents_partitions.get_partition_keys(dynamic_partitions_store=context.instance)
    position = {key: i for i, key in enumerate(keys)}
    busy = _in_flight_partitions(context, contextualize_documents_job.name)
    todo = sorted(
        (position[key], key, f"{doc.doc_id}@{doc.ingested_at.isoformat()}:{doc.n_waiting}")
        for doc in waiting
        if (key := partition_key_for(doc.relative_path)) in position and key not in busy
    )
    if not todo:
        return dg.SkipReason(
            f"{len(waiting)} document(s) wait for blurbs: all in flight or without a partition"
        )
    state = {key: version for _, key, version in todo}
    # the newest ingest run: a blurb run that gave way to ingest before writing anything
    # is requested again once ingest has run, while one that failed is not
    last_ingest = context.instance.get_runs(
        filters=dg.RunsFilter(job_name=ingest_documents_job.name), limit=1
    )
    after = last_ingest[0].run_id if last_ingest else ""
    requests = []
    for run in contiguous_groups([key for _, key, _ in todo], position, settings.INGEST_BATCH_SIZE):
        digest = hashlib.sha256(
            "\n".join([after, *(state[key] for key in run)]).encode()
        ).hexdigest()
        run_key = f"contexts:{digest[:24]}"
        if len(run) == 1:
            requests.append(dg.RunRequest(run_key=run_key, partition_key=run[0]))
        else:
            requests.append(dg.RunRequest(run_key=run_key, tags=range_request_tags(run)))
    context.log.info(
        f"requesting {len(requests)} blurb run(s) for {len(todo)} document(s) "
        f"({sum(d.n_waiting for d in waiting)} chunk(s) without a blurb)"
    )
    return dg.SensorResult(run_requests=requests)


@dg.sensor(
    job=refresh_corpus_staleness_job,
    minimum_interval_seconds=10,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Requests a staleness run when the ingest settings drift from the corpus's "
    "or a reingest completed after the corpus was flagged stale.",
)
def corpus_staleness_sensor(
    context: dg.SensorEvaluationContext, varagity: VaragityResource
) -> dg.RunRequest | dg.SkipReason:
    """Diff the ingest settings and the stale flag against the corpus; request the rest.

    The run key names the (current, recorded) settings pair, so each drift (and a flag
    set outside a run, by the API) becomes one run, and a completed reingest one more.
    """
    corpus = CorpusState(varagity.services.pg)
    current, recorded = ingest_settings(varagity.settings), corpus.built_with()
    flag = corpus.stale()
    if flag is not None:
        rebuilt = completed_reingest_after(context.instance, flag.since.timestamp())
        if rebuilt is not None:
            return dg.RunRequest(job_name=STALENESS_JOB, run_key=f"rebuilt:{rebuilt}")
    elif recorded == current:
        return dg.SkipReason("the corpus matches the ingest settings")
    pair = json.dumps([current, recorded], sort_keys=True)
    digest = hashlib.sha256(pair.encode()).hexdigest()[:24]
    return dg.RunRequest(job_name=STALENESS_JOB, run_key=f"settings:{digest}")
