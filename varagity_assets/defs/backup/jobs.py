"""The backup jobs: ``export_bundle`` (materialize ``backup_bundle`` for one corpus, its
partition) and ``restore_bundle`` (replace a corpus with one of its bundles, by name).

Both run in one process per run and are tagged with the corpus (``varagity/corpus``), so
the API and the CLI recognise a corpus's backup runs among the others and launch no
second writer beside them. A restore calls no model: it runs with the model servers
stopped.
"""

from typing import Literal

import dagster as dg

from varagity.pipeline import (
    BACKUP_JOB,
    RESTORE_JOB,
    STAGE_BACKUP,
    STAGE_TAG,
    reconcile_line,
)
from varagity_assets.defs.backup.assets import (
    ProgressLog,
    backup_bundle,
    corpus_failure,
    require_graph,
)
from varagity_assets.defs.backup.partitions import corpus_partitions
from varagity_assets.resources import VaragityResource

export_bundle_job = dg.define_asset_job(
    BACKUP_JOB,
    selection=[backup_bundle],
    partitions_def=corpus_partitions,
    description="Write one corpus (the partition: rag or graph) into a bundle in its "
    "varagity-exports/ folder, then verify it.",
    executor_def=dg.in_process_executor,
    tags={STAGE_TAG: STAGE_BACKUP},
)


class RestoreConfig(dg.Config):
    """Which corpus to replace, and with which bundle of its ``varagity-exports/``."""

    corpus: Literal["rag", "graph"]
    name: str


@dg.op(tags={STAGE_TAG: STAGE_BACKUP})
def restore_corpus(
    context: dg.OpExecutionContext, config: RestoreConfig, varagity: VaragityResource
) -> dg.Output[None]:
    """Check the bundle, then replace the corpus with it (nothing merged, no model call):
    the documents and chunks in one transaction and the BM25 index rebuilt (``rag``), or
    the graph's working directory swapped (``graph``). The library refuses an
    incompatible or damaged bundle before touching anything."""
    from varagity.backup.bundle import BundleError, resolve_bundle
    from varagity.backup.corpora import folder_diff_of, restore_corpus
    from varagity.backup.locks import CorpusBusy

    services = varagity.services
    settings = services.settings
    corpus = config.corpus
    progress = ProgressLog(context.log)
    try:
        if corpus == "graph":
            require_graph(varagity)
        path = resolve_bundle(settings, corpus, config.name)
        context.log.info(f"restoring the {corpus} corpus from {path}")
        result = restore_corpus(
            corpus, path, settings, services.pg, services.bm25, progress=progress
        )
    except FileNotFoundError as exc:
        raise dg.Failure(
            f"bundle_not_found: no bundle {config.name!r} in the {corpus} corpus's "
            "varagity-exports folder",
            allow_retries=False,
        ) from exc
    except (BundleError, CorpusBusy) as exc:
        raise corpus_failure(exc, corpus) from exc
    counts = dict(result.manifest.counts)
    chunks = counts.get("chunks")
    metadata: dict[str, dg.RawMetadataValue] = {
        "bundle": config.name,
        "counts": dg.MetadataValue.json(counts),
        "seconds": round(result.seconds, 3),
        "stale": result.stale_reason or "",
    }
    if chunks is not None and result.seconds > 0:
        metadata["chunks_per_second"] = round(chunks / result.seconds, 1)
    if result.stale_reason:
        context.log.warning(f"the restored corpus is flagged stale: {result.stale_reason}")
    context.log.info(f"{corpus} corpus restored from {config.name} in {result.seconds:.1f} s")
    diff = folder_diff_of(corpus, settings, services.pg)
    context.log.info(
        f"the folder against what was restored: {diff.summary()}; the folder sensor launches "
        "those runs next"
    )
    context.log.info(reconcile_line(diff.counts()))
    metadata["reconcile"] = dg.MetadataValue.json(diff.counts())
    return dg.Output(None, metadata=metadata)


@dg.job(
    name=RESTORE_JOB,
    description="Replace a corpus with one of its bundles (run config: corpus, name).",
    executor_def=dg.in_process_executor,
    tags={STAGE_TAG: STAGE_BACKUP},
)
def restore_bundle_job() -> None:
    """One op: :func:`restore_corpus`."""
    restore_corpus()
