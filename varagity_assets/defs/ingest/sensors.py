"""The sensors of the ingest domain. They only read and request: every write to the
stores happens in a run they ask for, so it has its logs and lineage in the UI.

``docs_folder_sensor`` reads its cursor, the folder (hashing the files whose mtime or
size moved, but for those that just landed while the API's folder watcher is live: they
are its to launch), the ``documents`` partitions, the stored versions, and the runs in
flight and the recorded ingest failures (both asked for only when the decision looks
into them), and leaves the decision to
:func:`varagity.folder_diff.docs_tick`, whose docstring says what is asked for when,
and why; its races with the folder watcher, the upload route and runs in flight are
unit tests of that function. The sensor turns the answer into runs (new files in
batches of at most ``INGEST_BATCH_SIZE`` files and ``INGEST_BATCH_BYTES`` bytes, each
over a contiguous range of the partitions added this tick; a changed file one run; the
reconcile runs, tagged ``varagity/reconcile``; purge runs of at most
``INGEST_BATCH_SIZE`` files), partition changes and its next cursor. Run keys are built
from path + content hash (+ mtime, so a file edited back to an earlier content is
still re-ingested); a new file's key also carries the cursor's ``generation``, counted
up with every purge, so a file removed and put back is ingested again.

The files of a failed batch run are re-requested (from the instance's failed runs): one
run each when a step failed (to isolate the bad file), in batches again when the run
crashed (worker killed, the run failed by run monitoring), one run each if that
recovery run crashes too.

``chunk_contexts_sensor`` reads the stores (which documents have chunks without a blurb)
and the instance (which blurb runs are in flight) and requests runs for the difference.

``corpus_staleness_sensor`` compares the ingest settings with those the corpus was built
with, and the stale flag with the completed reingest backfills, and requests a
``refresh_corpus_staleness`` run when the flag may have to change.
"""

import hashlib
import json
import time
from collections.abc import Mapping, Sequence, Set
from dataclasses import replace
from typing import Any

import dagster as dg

from varagity.backup.locks import corpus_restoring
from varagity.corpus_lock import folder_watcher_live
from varagity.files import file_sha256
from varagity.folder_diff import (
    RECONCILE_PURGE,
    WATCHER_GRACE_NS,
    ChangedFile,
    DocsCursor,
    DocsTick,
    FileStat,
    InFlight,
    LazyMapping,
    LazySet,
    docs_tick,
    docs_to_hash,
    just_landed,
)
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
    range_request_tags,
)
from varagity.stores.corpus_state import CorpusState, ingest_settings
from varagity.stores.ingest_failures import failures_by_path
from varagity_assets import dynamic_partitions
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


def _batch_request(run: Sequence[tuple[str, str]], generation: int) -> dg.RunRequest:
    """One ingest run over a contiguous range of freshly added partitions (``run``: each
    file's path and sha256)."""
    items = [(partition_key_for(rel), sha256) for rel, sha256 in run]
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
    paths: Sequence[str], generation: int, *, reconcile: Set[str] = frozenset()
) -> dg.RunRequest:
    """One purge run over files removed from the folder (tagged a reconcile when some of
    them were found in the stores only)."""
    digest = hashlib.sha256("\n".join(paths).encode()).hexdigest()[:20]
    tags = {FILES_TAG: str(len(paths))}
    if any(path in reconcile for path in paths):
        tags[RECONCILE_TAG] = RECONCILE_PURGE
    return dg.RunRequest(
        job_name=purge_documents_job.name,
        run_key=f"purge:{digest}:g{generation}",
        run_config={"ops": {purged_documents.op.name: {"config": {"relative_paths": list(paths)}}}},
        tags=tags,
    )


def _reconcile_requests(groups: Sequence[Sequence[str]]) -> list[dg.RunRequest]:
    """Ingest runs over files the stores lack (each group: contiguous partitions)."""
    stamp = time.time_ns()  # a restore can lose the same version again: never deduplicated
    requests = []
    for paths in groups:
        group = [partition_key_for(rel) for rel in paths]
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


def _covers_present_file(request: dg.RunRequest, current: Mapping[str, object]) -> bool:
    """Whether a retry still has its file: a one-file run's file may have been removed
    since (a range run skips what is gone)."""
    key = request.partition_key
    return key is None or relative_path_for(key) in current


#: How long a file that landed (its ctime) is left to the API's folder watcher while one
#: is live (:data:`~varagity.folder_diff.WATCHER_GRACE_NS`).
_WATCHER_GRACE_NS = WATCHER_GRACE_NS


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
    """Read the folder, the instance and the stores; :func:`~varagity.folder_diff.docs_tick`
    decides; turn its answer into run requests, partition changes and the cursor."""
    settings = varagity.settings
    restoring = corpus_restoring(settings, "rag")
    if restoring is not None:  # its runs would only fail on the corpus lock
        return dg.SkipReason(
            f"the documents are being restored ({restoring}): the folder is looked at again "
            "once the restore has finished"
        )
    previous = DocsCursor.loads(context.cursor)
    retry_requests, handled = _requests_for_failed_batches(
        context, list(previous.failed_batches), settings.INGEST_BATCH_SIZE
    )
    tick = _docs_tick(context, varagity, previous, retrying=bool(retry_requests))
    for line in tick.warnings:
        context.log.warning(line)
    for line in tick.notes:
        context.log.info(line)
    run_requests = [_batch_request(run, tick.generation) for run in tick.new]
    run_requests += [_changed_request(c) for c in tick.changed]
    run_requests += [r for r in retry_requests if _covers_present_file(r, tick.cursor.files)]
    run_requests += _reconcile_requests(tick.reconcile)
    run_requests += [
        _purge_request(run, tick.generation, reconcile=tick.orphans) for run in tick.purges
    ]
    partition_requests = dynamic_partitions.partition_requests(
        documents_partitions, partition_key_for, tick.add_partitions, tick.delete_partitions
    )
    cursor = replace(tick.cursor, failed_batches=tuple(handled)).dumps()
    if not run_requests and not partition_requests:
        context.update_cursor(cursor)
        return dg.SkipReason(tick.summary())
    return dg.SensorResult(
        run_requests=run_requests,
        dynamic_partitions_requests=partition_requests,
        cursor=cursor,
    )


def _docs_tick(
    context: dg.SensorEvaluationContext,
    varagity: VaragityResource,
    previous: DocsCursor,
    *,
    retrying: bool,
) -> DocsTick:
    """Read what :func:`~varagity.folder_diff.docs_tick` decides from, and call it."""
    settings = varagity.settings
    found, skipped = scan(settings.docs_path)
    files = {f.relative_path: FileStat(f.mtime_ns, f.size, f.ctime_ns) for f in found}
    # while the API's folder watcher is live it launches each file as it lands: a file
    # that landed moments ago is its to launch (Postgres is asked whether one is live
    # only when such a file is there, not on every idle tick)
    since = time.time_ns() - _WATCHER_GRACE_NS
    live = bool(just_landed(previous, files, since_ns=since)) and _watcher_live(varagity)
    watcher_since = since if live else None
    paths = {f.relative_path: f.path for f in found}
    digests: dict[str, str] = {}
    for rel in docs_to_hash(previous, files, watcher_since_ns=watcher_since):
        try:
            digests[rel] = file_sha256(paths[rel])
        except OSError as exc:  # vanished or unreadable mid-tick: the next tick decides
            context.log.warning(f"cannot read {rel}: {exc}")
    keys = context.instance.get_dynamic_partitions(DOCUMENTS_PARTITIONS)
    pg = varagity.services.pg
    in_flight = InFlight(
        ingesting=LazySet(
            lambda: map(relative_path_for, _in_flight_partitions(context, INGEST_JOB))
        ),
        purging=LazySet(lambda: _paths_being_purged(context)),
    )
    return docs_tick(
        previous,
        files,
        {item.relative_path: item.reason for item in skipped},
        digests,
        [relative_path_for(key) for key in keys],
        in_flight,
        pg.stored_versions(),
        LazyMapping(lambda: {rel: row.summary for rel, row in failures_by_path(pg).items()}),
        batch_size=settings.INGEST_BATCH_SIZE,
        batch_bytes=settings.INGEST_BATCH_BYTES,
        watcher_since_ns=watcher_since,
        retrying=retrying,
    )


def _changed_request(changed: ChangedFile) -> dg.RunRequest:
    """A changed file's run (keyed by content and mtime: edited back, it runs again)."""
    key = partition_key_for(changed.path)
    return dg.RunRequest(
        job_name=INGEST_JOB,
        run_key=f"{key}:{changed.sha256}:{changed.mtime_ns}",
        partition_key=key,
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
