"""The two sensors of the documents pipeline, and the jobs they request.

``docs_folder_sensor`` turns files in ``DOCS_PATH`` into partitions and ingest runs;
``chunk_contexts_sensor`` requests blurb runs for stored chunks that have no blurb yet.

The folder sensor: each tick compares the folder with the cursor (``{"files":
{relative_path: [mtime_ns, size, sha256]}, "skipped": {relative_path: reason}}``; a
file whose mtime and size are unchanged is not re-hashed, a skipped file is reported
once):

* new files get a partition and are ingested in batches of ``INGEST_BATCH_SIZE`` files
  per run (one run over a contiguous range of the partitions added this tick);
* changed files (new content hash) are re-requested one run each;
* removed files are purged from both stores and their partitions deleted.

Run keys are built from path + content hash (+ mtime, so a file edited back to an
earlier content is still re-ingested). A file whose exact version is already in the
store (e.g. after the instance was reset) is not requested at all.

The blurb sensor reads the stores (which documents have chunks without a blurb) and
the instance (which blurb runs are in flight) and requests runs for the difference;
like the folder sensor it writes nothing, the runs do.
"""

import hashlib
import json
from collections.abc import Sequence

import dagster as dg

from varagity.dagster_client import REINGEST_TAG
from varagity.ingest.discovery import file_sha256, partition_key_for, relative_path_for, scan
from varagity.ingest.stages import purge_path
from varagity.records import doc_id_for
from varagity.stores.corpus_state import CorpusState
from varagity_assets.documents.assets import (
    chunk_contexts,
    chunk_embeddings,
    document_chunks,
    indexed_document,
    parsed_document,
)
from varagity_assets.documents.partitions import (
    DOCUMENTS,
    RANGE_END,
    RANGE_START,
    documents_partitions,
    range_request_tags,
    run_partition_keys,
)
from varagity_assets.documents.resources import VaragityResource, remove_artifacts

BATCH_TAG = "varagity/batch"
# Which stage a run belongs to; dagster.yaml limits `contextualize` runs to one at a
# time, so blurb runs never take every run slot from the next ingest run.
STAGE_TAG = "varagity/stage"
ISOLATED_TAG = "varagity/isolated_from"
_HANDLED_FAILURES_KEPT = 200

ingest_documents_job = dg.define_asset_job(
    "ingest_documents",
    selection=[parsed_document, document_chunks, chunk_embeddings, indexed_document],
    description="Parse, chunk, embed and index corpus files: searchable with raw chunks.",
    # one process per run: a step subprocess per asset would re-import the stack for
    # every asset (measured: most of the file-to-searchable latency)
    executor_def=dg.in_process_executor,
    tags={STAGE_TAG: "ingest"},
)

contextualize_documents_job = dg.define_asset_job(
    "contextualize_documents",
    selection=[chunk_contexts],
    description="Write LLM blurbs for stored chunks and re-index them as they land.",
    executor_def=dg.in_process_executor,
    tags={STAGE_TAG: "contextualize"},
)


def _batch_request(items: Sequence[tuple[str, str]]) -> dg.RunRequest:
    """One run over a contiguous range of freshly added partitions."""
    digest = hashlib.sha256("\n".join(f"{k}:{h}" for k, h in items).encode()).hexdigest()[:20]
    first, last = items[0][0], items[-1][0]
    if len(items) == 1:
        return dg.RunRequest(run_key=f"{first}:{items[0][1]}", partition_key=first)
    return dg.RunRequest(
        run_key=f"batch:{len(items)}:{digest}",
        tags={
            **range_request_tags([first, last]),
            BATCH_TAG: "true",
            "varagity/files": str(len(items)),
        },
    )


def _isolate_failed_batches(
    context: dg.SensorEvaluationContext, handled: list[str]
) -> tuple[list[dg.RunRequest], list[str]]:
    """One run per file of each newly failed batch run.

    A batch run fails when any of its files fails; the good files are stored anyway.
    Re-running each file alone gives every partition its own outcome in the UI: the
    good ones materialize (cheaply: already indexed), the bad one fails by itself.
    """
    failed = context.instance.get_runs(
        filters=dg.RunsFilter(
            job_name=ingest_documents_job.name,
            statuses=[dg.DagsterRunStatus.FAILURE],
            tags={BATCH_TAG: "true"},
        ),
        limit=50,
    )
    fresh = [run for run in failed if run.run_id not in handled]
    if not fresh:
        return [], handled
    keys = documents_partitions.get_partition_keys(dynamic_partitions_store=context.instance)
    position = {key: i for i, key in enumerate(keys)}
    requests = []
    for run in fresh:
        start, end = run.tags.get(RANGE_START), run.tags.get(RANGE_END)
        if start in position and end in position:
            for key in keys[position[start] : position[end] + 1]:
                requests.append(
                    dg.RunRequest(
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


def _watch_staleness(
    context: dg.SensorEvaluationContext, varagity: VaragityResource, reported: str | None
) -> str | None:
    """Flag the corpus stale when ingest settings changed; clear it after a reingest.

    Returns the reason already reported, so each new reason is logged once.
    """
    settings = varagity.settings
    corpus = CorpusState(varagity.services.pg)
    flag = corpus.observe(settings)
    if flag is None:
        return None
    done = [
        b
        for b in context.instance.get_backfills(limit=20)
        if b.tags.get(REINGEST_TAG) == "true"
        and b.status.value in ("COMPLETED_SUCCESS", "COMPLETED")
        and b.backfill_timestamp > flag.since.timestamp()
    ]
    if done:
        corpus.rebuilt_with(settings)
        context.log.info(f"reingest backfill {done[0].backfill_id} completed: corpus up to date")
        return None
    if flag.reason != reported:
        context.log.warning(
            f"corpus is stale ({flag.reason}); re-ingest with `varagity reingest` or a "
            f"backfill of the ingest assets tagged {REINGEST_TAG}=true"
        )
    return flag.reason


@dg.sensor(
    job=ingest_documents_job,
    minimum_interval_seconds=5,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Watches DOCS_PATH: ingests new and changed files, purges removed ones.",
)
def docs_folder_sensor(
    context: dg.SensorEvaluationContext, varagity: VaragityResource
) -> dg.SensorResult | dg.SkipReason:
    """Turn folder changes into partition changes, run requests and purges."""
    settings = varagity.settings
    state = json.loads(context.cursor) if context.cursor else {}
    previous: dict[str, list] = state.get("files", {})
    reported: dict[str, str] = state.get("skipped", {})
    isolation_requests, handled = _isolate_failed_batches(context, state.get("failed_batches", []))
    stale_reported = _watch_staleness(context, varagity, state.get("stale_reported"))
    files, skipped = scan(settings.docs_path)
    for item in skipped:
        if reported.get(item.relative_path) != item.reason:  # say it once, not every tick
            context.log.warning(f"not ingesting {item.relative_path}: {item.reason}")

    current: dict[str, list] = {}
    candidates: list[tuple[str, str, int]] = []  # (relative_path, sha256, mtime_ns)
    for f in files:
        before = previous.get(f.relative_path)
        if before and before[0] == f.mtime_ns and before[1] == f.size:
            digest = before[2]
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
    removed = sorted(set(previous) - set(current))

    existing = set(context.instance.get_dynamic_partitions(DOCUMENTS))
    # every file gets a partition; files new to the instance are ingested in batches
    new_items = [
        (partition_key_for(rel), state[2])
        for rel, state in current.items()
        if partition_key_for(rel) not in existing
    ]
    new_keys = {k for k, _ in new_items}
    changed = [
        (partition_key_for(rel), digest, mtime)
        for rel, digest, mtime in candidates
        if partition_key_for(rel) not in new_keys
    ]
    to_delete = [k for k in (partition_key_for(r) for r in removed) if k in existing]
    purged: list[str] = []
    if removed or changed:
        services = varagity.services
        for rel in removed:
            purged.extend(purge_path(rel, pg=services.pg, bm25=services.bm25))
            remove_artifacts(settings.home / "artifacts", partition_key_for(rel))
        if changed:
            indexed = {d.doc_id for d in services.pg.list_documents()}
            changed = [
                (key, digest, mtime)
                for key, digest, mtime in changed
                if doc_id_for(relative_path_for(key), digest) not in indexed
            ]

    size = settings.INGEST_BATCH_SIZE
    run_requests = [_batch_request(new_items[i : i + size]) for i in range(0, len(new_items), size)]
    run_requests += [
        dg.RunRequest(run_key=f"{key}:{digest}:{mtime}", partition_key=key)
        for key, digest, mtime in changed
    ]
    run_requests += isolation_requests
    partition_requests: list[
        dg.AddDynamicPartitionsRequest | dg.DeleteDynamicPartitionsRequest
    ] = []
    if new_items:
        partition_requests.append(documents_partitions.build_add_request([k for k, _ in new_items]))
    if to_delete:
        partition_requests.append(documents_partitions.build_delete_request(to_delete))
    if removed:
        context.log.info(
            f"removed from the folder: {', '.join(removed)}; purged {len(purged)} document(s)"
        )
    if new_items or changed:
        context.log.info(
            f"requesting {len(run_requests)} run(s): {len(new_items)} new, {len(changed)} changed"
        )
    cursor = json.dumps(
        {
            "files": current,
            "skipped": {s.relative_path: s.reason for s in skipped},
            "failed_batches": handled,
            "stale_reported": stale_reported,
        },
        sort_keys=True,
    )
    if not run_requests and not partition_requests:
        context.update_cursor(cursor)
        return dg.SkipReason(f"{len(current)} file(s), nothing changed")
    return dg.SensorResult(
        run_requests=run_requests,
        dynamic_partitions_requests=partition_requests,
        cursor=cursor,
    )


# Runs of the blurb job that still count as doing (or about to do) their partitions.
_IN_FLIGHT = [
    dg.DagsterRunStatus.QUEUED,
    dg.DagsterRunStatus.NOT_STARTED,
    dg.DagsterRunStatus.STARTING,
    dg.DagsterRunStatus.STARTED,
    dg.DagsterRunStatus.CANCELING,
]


def _in_flight_partitions(context: dg.SensorEvaluationContext) -> set[str]:
    """Partitions a blurb run is queued for or working on right now."""
    runs = context.instance.get_runs(
        filters=dg.RunsFilter(job_name=contextualize_documents_job.name, statuses=_IN_FLIGHT)
    )
    busy: set[str] = set()
    for run in runs:
        busy.update(run_partition_keys(run.tags, context.instance) or [])
    return busy


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
    it. The run key names each document's version and how many chunks wait, so a run
    that failed without progress is not requested again until something changes (its
    own page in the UI says why), while one that made progress is resumed.
    """
    settings = varagity.settings
    if not settings.CONTEXTUALIZE:
        return dg.SkipReason("CONTEXTUALIZE is off: no blurbs are written")
    waiting = varagity.services.pg.documents_awaiting_context()
    if not waiting:
        return dg.SkipReason("every stored chunk has its blurb")
    keys = documents_partitions.get_partition_keys(dynamic_partitions_store=context.instance)
    position = {key: i for i, key in enumerate(keys)}
    busy = _in_flight_partitions(context)
    todo = sorted(
        (position[key], key, f"{doc.doc_id}@{doc.ingested_at.isoformat()}:{doc.n_waiting}")
        for doc in waiting
        if (key := partition_key_for(doc.relative_path)) in position and key not in busy
    )
    if not todo:
        return dg.SkipReason(
            f"{len(waiting)} document(s) wait for blurbs: all in flight or without a partition"
        )
    runs: list[list[tuple[int, str, str]]] = []
    for item in todo:
        last = runs[-1] if runs else None
        if last and item[0] == last[-1][0] + 1 and len(last) < settings.INGEST_BATCH_SIZE:
            last.append(item)
        else:
            runs.append([item])
    requests = []
    for run in runs:
        digest = hashlib.sha256("\n".join(state for _, _, state in run).encode()).hexdigest()
        run_key = f"contexts:{digest[:24]}"
        if len(run) == 1:
            requests.append(dg.RunRequest(run_key=run_key, partition_key=run[0][1]))
        else:
            requests.append(
                dg.RunRequest(run_key=run_key, tags=range_request_tags([run[0][1], run[-1][1]]))
            )
    context.log.info(
        f"requesting {len(requests)} blurb run(s) for {len(todo)} document(s) "
        f"({sum(d.n_waiting for d in waiting)} chunk(s) without a blurb)"
    )
    return dg.SensorResult(run_requests=requests)
