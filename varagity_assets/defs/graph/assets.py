"""The message-graph build: one archive at a time, into the engine's working directory.

``graph_archive`` (a consistent read of one archive through the source registry: its
thread-day transcripts) -> ``graph_transcripts`` (those days diffed against the
manifest sidecar into new / changed / removed) -> ``graph_workdir`` (the diff applied
to the engine, the manifest updated for what was applied, the size summary written).
Extraction calls the model servers: a build that met an outage is retried after a wait
(:mod:`varagity_assets.retries`), and the retry resumes where the engine stopped.
All three are partitioned by archive (one partition per run); ``graph_removed_sources``
takes the days of archives removed from the folder out of the graph.

The two assets that write the working directory run on the ``graph`` pool of one slot
(:data:`~varagity.pipeline.GRAPH_POOL`): no two runs write the graph at once, while
readers (chat turns, the graph view) take no slot and never wait. They are not on the
``llm`` pool, although extraction calls the local LLM: a real archive's build holds its
slot for hours, and blurb runs would wait all that time; the LLM server answers one
request at a time, so a blurb run and a build running together take turns per request
and both progress (the build's engine sends one request at a time).

A killed build resumes by materializing again: the manifest is written only after the
engine applied the diff, so the next diff offers the same days again, and the engine's
own document statuses (the resume ledger) say which of them are done (skipped), left
pending or processing (finished) or failed (redone). What lands in the manifest is
what the engine holds processed after the apply (:func:`applied`), not only what this
run extracted, so the days a killed run finished are recorded too.
"""

from collections.abc import Callable, Mapping

import dagster as dg

from varagity.graph.base import FAILED, PROCESSED, ApplyReport
from varagity.graph.contacts import ContactsError, load_contacts
from varagity.graph.manifest import diff as manifest_diff
from varagity.graph.manifest import (
    read_manifest,
    summarize,
    update_after_apply,
    write_summary,
)
from varagity.graph.progress import PROGRESS_PREFIX, BuildProgress, parse_progress
from varagity.graph.service import BuildResult, GraphDisabled, GraphService
from varagity.graph.sources.base import MessageSourceError
from varagity.graph.sources.registry import read_archive
from varagity.graph.transcripts import graph_timezone
from varagity.graph.types import GraphDiff, ThreadDay
from varagity.pipeline import GRAPH_POOL
from varagity.stores.corpus_state import GraphState
from varagity_assets.defs.graph.partitions import archive_path, graph_sources_partitions
from varagity_assets.resources import VaragityResource
from varagity_assets.retries import retry_on_outage


class ArchiveDays(dict[str, tuple[ThreadDay, ...]]):
    """``graph_archive``: the archive's transcript days, by partition key (the
    ``artifacts`` IO manager stores and loads a value per partition)."""


class ArchiveDiff(dict[str, GraphDiff]):
    """``graph_transcripts``: what the build must do for the archive, by partition key."""


_LISTED = 50  # doc_keys listed in a materialization's metadata (the counts are complete)


def _keys(keys: object) -> dg.MetadataValue:
    listed = sorted(keys)  # type: ignore[call-overload]
    more = len(listed) - _LISTED
    return dg.MetadataValue.json(listed[:_LISTED] + ([f"... {more} more"] if more > 0 else []))


def _require_enabled(varagity: VaragityResource) -> None:
    """Fail the step, saying why, when the message graph is switched off."""
    if not varagity.settings.GRAPH_ENABLED:
        raise dg.Failure(str(GraphDisabled()), allow_retries=False)


def _service(varagity: VaragityResource) -> GraphService:
    """The graph of this run, refusing to write when ``GRAPH_ENABLED=false``."""
    _require_enabled(varagity)
    services = varagity.services
    return GraphService(services.settings, services.chat, services.embedder)


def applied(diff: GraphDiff, report: ApplyReport, statuses: Mapping[str, str]) -> ApplyReport:
    """What the manifest must record after an apply: the days of ``diff`` the engine now
    holds processed (inserted by this run or by a killed one before it; a day whose
    delete failed keeps its old text and is left out) and its removed doc_keys the
    engine no longer holds. Keys the engine finished outside ``diff`` (another
    archive's killed build resumed) are left to their own archive's next build."""
    failed = report.failed or {}
    ours = {day.doc_key for day in (*diff.new, *diff.changed)}
    inserted = {key for key in report.inserted if key in ours}
    inserted |= {k for k in ours if statuses.get(k) == PROCESSED and k not in failed}
    deleted = set(report.deleted) | {k for k in diff.removed if k not in statuses}
    return ApplyReport(
        inserted=tuple(sorted(inserted)),
        deleted=tuple(sorted(deleted)),
        failed={k: v for k, v in failed.items() if k in ours or k in diff.removed} or None,
    )


def build_graph(
    context: dg.AssetExecutionContext,
    service: GraphService,
    diff: GraphDiff,
    *,
    restate: Callable[[BuildProgress], BuildProgress | None] | None = None,
) -> tuple[BuildResult, ApplyReport, dict[str, object]]:
    """Apply ``diff`` as the single writer, record it in the manifest, write the size
    summary; returns the build, what was recorded, and the materialization's metadata.
    ``restate`` rewrites each progress line the engine reports (``None``: not logged),
    for a run that applies several diffs and reports them as one."""

    def progress(line: str) -> None:
        found = parse_progress(PROGRESS_PREFIX + line) if restate is not None else None
        if restate is not None and found is not None:
            shown = restate(found)
            if shown is None:
                return
            line = shown.line()
        context.log.info(PROGRESS_PREFIX + line)

    context.log.info(
        f"applying {len(diff.new)} new, {len(diff.changed)} changed and "
        f"{len(diff.removed)} removed transcript day(s) to {service.workdir}"
    )
    with service.writing():  # the build and its sidecars: one write for a backup
        result = service.build(diff, progress=progress)
        statuses = service.statuses()
        recorded = applied(diff, result.report, statuses)
        manifest = update_after_apply(service.workdir, diff, recorded)
        size = result.size
        write_summary(
            service.workdir,
            summarize(
                manifest, entities=size.entities, relations=size.relations, statuses=size.statuses
            ),
        )
    failed = recorded.failed or {}
    extracted = len(result.report.inserted)
    metadata: dict[str, object] = {
        "given_new": _keys(d.doc_key for d in diff.new),
        "given_changed": _keys(d.doc_key for d in diff.changed),
        "given_removed": _keys(diff.removed),
        "inserted": len(recorded.inserted),
        "extracted_this_run": extracted,
        "deleted": len(recorded.deleted),
        "failed": len(failed),
        "entities": size.entities,
        "relations": size.relations,
        "documents": size.docs,
        "documents_failed": sum(1 for s in statuses.values() if s == FAILED),
        "manifest_days": len(manifest),
        "seconds": round(result.seconds, 2),
        "days_per_minute": round(60 * extracted / result.seconds, 3) if result.seconds else 0.0,
        "workdir": str(service.workdir),
    }
    if failed:
        metadata["failed_days"] = dg.MetadataValue.json(failed)
    context.log.info(
        f"graph build done in {result.seconds:.1f} s: {len(recorded.inserted)} day(s) in, "
        f"{len(recorded.deleted)} out, {len(failed)} failed; {size.entities} entities, "
        f"{size.relations} relations"
    )
    return result, recorded, metadata


def _fail_on_failures(
    failed: Mapping[str, str], metadata: Mapping[str, object], result: BuildResult
) -> None:
    """Fail the step naming the days that failed. When a model server failed
    transiently during the build, the failure is raised from that error: an outage,
    so the step is retried (:mod:`varagity_assets.retries`) and the retry redoes only
    the failed days."""
    if failed:
        listed = "; ".join(f"{k}: {why}" for k, why in sorted(failed.items())[:10])
        raise dg.Failure(
            f"{len(failed)} transcript day(s) failed (the next build retries them): {listed}",
            metadata=dict(metadata),  # type: ignore[arg-type]
        ) from result.report.model_outage


@dg.asset(
    group_name="graph",
    kinds={"sqlite"},
    partitions_def=graph_sources_partitions,
    io_manager_key="artifacts",
    backfill_policy=dg.BackfillPolicy.multi_run(max_partitions_per_run=1),
)
def graph_archive(context: dg.AssetExecutionContext, varagity: VaragityResource) -> ArchiveDays:
    """One archive's thread-day transcripts, read from a consistent snapshot of it and
    its ``-wal``/``-shm`` (the archive itself is never written), with the names its
    contacts files give its handles."""
    _require_enabled(varagity)
    settings = varagity.settings
    key = context.partition_key
    rel = archive_path(key)
    root = settings.graph_docs_path
    try:
        contacts = load_contacts(root, rel, owner=settings.GRAPH_OWNER_NAME)
    except ContactsError as exc:
        raise dg.Failure(f"cannot name the handles of {rel}: {exc}", allow_retries=False) from exc
    try:
        days = tuple(read_archive(root, rel, tz=graph_timezone(settings), contacts=contacts))
    except MessageSourceError as exc:
        raise dg.Failure(f"cannot read {rel}: {exc.reason}", allow_retries=False) from exc
    messages = sum(len(d.message_guids) for d in days)
    threads = len({d.thread_id for d in days})
    named, unnamed = contacts.named(), contacts.unnamed()
    context.add_output_metadata(
        {
            "relative_path": rel,
            "messages": messages,
            "threads": threads,
            "days": len(days),
            "first_day": min((d.span for d in days), default=""),
            "last_day": max((d.span for d in days), default=""),
            "contacts_files": dg.MetadataValue.json(list(contacts.files)),
            "named_handles": len(named),
            "unnamed_handles": _keys(unnamed),
        }
    )
    context.log.info(f"{rel}: {messages} message(s) in {threads} thread(s), {len(days)} day(s)")
    if contacts.files:
        context.log.info(
            f"{rel}: {len(named)} of {len(named) + len(unnamed)} handle(s) named from "
            f"{', '.join(contacts.files)}"
        )
    return ArchiveDays({key: days})


@dg.asset(
    group_name="graph",
    kinds={"python"},
    partitions_def=graph_sources_partitions,
    io_manager_key="artifacts",
    backfill_policy=dg.BackfillPolicy.multi_run(max_partitions_per_run=1),
)
def graph_transcripts(
    context: dg.AssetExecutionContext,
    varagity: VaragityResource,
    graph_archive: ArchiveDays,
) -> ArchiveDiff:
    """The archive's days diffed against the manifest: new, changed (content hash
    differs) and removed (in the manifest for this archive, no longer rendered)."""
    key = context.partition_key
    rel = archive_path(key)
    workdir = _service(varagity).workdir
    diff = manifest_diff(graph_archive[key], read_manifest(workdir), source=rel)
    context.add_output_metadata(
        {
            "new": len(diff.new),
            "changed": len(diff.changed),
            "removed": len(diff.removed),
            "unchanged": len(graph_archive[key]) - len(diff.new) - len(diff.changed),
            "new_days": _keys(d.doc_key for d in diff.new),
            "changed_days": _keys(d.doc_key for d in diff.changed),
            "removed_days": _keys(diff.removed),
        }
    )
    return ArchiveDiff({key: diff})


@dg.asset(
    group_name="graph",
    kinds={"lightrag"},
    partitions_def=graph_sources_partitions,
    pool=GRAPH_POOL,
    backfill_policy=dg.BackfillPolicy.multi_run(max_partitions_per_run=1),
)
@retry_on_outage
def graph_workdir(
    context: dg.AssetExecutionContext,
    varagity: VaragityResource,
    graph_transcripts: ArchiveDiff,
) -> dg.MaterializeResult:
    """The archive's diff applied to the engine's working directory (insert new,
    delete then reinsert changed, delete removed), the manifest updated for what was
    applied, the size summary written. Materializing again after a killed run resumes
    it; days that failed fail the step, and the next build retries them."""
    diff = graph_transcripts[context.partition_key]
    service = _service(varagity)
    # a graph built from nothing records the settings it is built with; one built before
    # under others is flagged stale (its older days keep what the old settings made)
    manifest = read_manifest(service.workdir)
    flag = GraphState(varagity.services.pg).observe(service.settings, empty=not manifest)
    if flag is not None:
        context.log.warning(f"the message graph is stale: {flag.reason}")
    try:
        result, recorded, metadata = build_graph(context, service, diff)
    finally:
        service.close()
    _fail_on_failures(recorded.failed or {}, metadata, result)
    return dg.MaterializeResult(metadata=metadata)  # type: ignore[arg-type]


class RemoveConfig(dg.Config):
    """The archives removed from ``GRAPH_DOCS_PATH``, by relative path."""

    relative_paths: list[str]


@dg.asset(
    group_name="graph",
    kinds={"lightrag"},
    pool=GRAPH_POOL,
    deps=[graph_workdir],
)
@retry_on_outage
def graph_removed_sources(
    context: dg.AssetExecutionContext, config: RemoveConfig, varagity: VaragityResource
) -> dg.MaterializeResult:
    """Archives removed from the folder, and the transcript days they take out of the
    graph. An archive back in the folder by the time the run starts keeps its days."""
    service = _service(varagity)
    root = service.settings.graph_docs_path
    manifest = read_manifest(service.workdir)
    removed: list[str] = []
    kept: list[str] = []
    for rel in config.relative_paths:
        if (root / rel).is_file():
            context.log.info(f"{rel} is back in the folder: its days stay in the graph")
            kept.append(rel)
            continue
        days = manifest_diff((), manifest, source=rel).removed
        context.log.info(f"{rel} was removed: {len(days)} transcript day(s) leave the graph")
        removed.extend(days)
    try:
        result, recorded, metadata = build_graph(
            context, service, GraphDiff(removed=tuple(removed))
        )
    finally:
        service.close()
    metadata["archives_removed"] = len(config.relative_paths) - len(kept)
    metadata["archives_kept"] = dg.MetadataValue.json(kept)
    _fail_on_failures(recorded.failed or {}, metadata, result)
    return dg.MaterializeResult(metadata=metadata)  # type: ignore[arg-type]
