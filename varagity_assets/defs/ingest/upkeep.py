"""Corpus-wide upkeep, each write in a run of its own so the UI shows it with its logs.

* ``purged_documents`` - files removed from ``DOCS_PATH``: every stored version leaves
  both stores (BM25 first, Postgres last) and the file's artifacts are deleted. The
  folder sensor requests it with the removed paths as config, once no run is working
  on those files any more.
* ``corpus_staleness`` - the stale flag: set when the ingest settings changed since the
  corpus was built, cleared when a reingest backfill completed after it was set. The
  staleness sensor requests it whenever the flag may have to change.

Each materialization records what the run did, so the asset's page lists every purge
and every stale-flag change.
"""

import dagster as dg

from varagity.ingest.discovery import partition_key_for
from varagity.ingest.stages import purge_path
from varagity.pipeline import REINGEST_TAG
from varagity.stores.corpus_state import CorpusState, ingest_settings
from varagity_assets.resources import ArtifactIOManager, VaragityResource


class PurgeConfig(dg.Config):
    """The files to purge, by path relative to ``DOCS_PATH``."""

    relative_paths: list[str]


@dg.asset(
    group_name="ingest",
    kinds={"postgres", "tantivy"},
    retry_policy=dg.RetryPolicy(max_retries=2, delay=5),
)
def purged_documents(
    context: dg.AssetExecutionContext,
    config: PurgeConfig,
    varagity: VaragityResource,
    artifacts: dg.ResourceParam[ArtifactIOManager],
) -> dg.MaterializeResult:
    """Files removed from the folder, and the stored versions and artifacts they took.

    A file that is back in the folder by the time the run starts is kept: the folder
    sensor ingests it as a new file.
    """
    services = varagity.services
    docs = services.settings.docs_path
    rows, kept, total = [], [], 0
    for rel in config.relative_paths:
        if (docs / rel).is_file():
            context.log.info(f"{rel} is back in the folder: its stored versions are kept")
            kept.append(rel)
            continue
        doc_ids = purge_path(rel, pg=services.pg, bm25=services.bm25)
        removed = artifacts.remove_partition(partition_key_for(rel))
        total += len(doc_ids)
        context.log.info(
            f"purged {rel}: {len(doc_ids)} stored version(s) "
            f"({', '.join(doc_ids) or 'none'}), {removed} artifact file(s)"
        )
        rows.append(f"| {rel.replace('|', '/')} | {len(doc_ids)} | {removed} |")
    return dg.MaterializeResult(
        metadata={
            "files_purged": len(rows),
            "documents_purged": total,
            "files_kept": dg.MetadataValue.json(kept),
            "purged": dg.MetadataValue.md(
                "| file | stored versions | artifact files |\n|---|---|---|\n" + "\n".join(rows)
                if rows
                else "nothing"
            ),
        }
    )


def completed_reingest_after(instance: dg.DagsterInstance, since: float) -> str | None:
    """The id of the newest reingest backfill launched after ``since`` that completed."""
    for backfill in instance.get_backfills(limit=20):
        if (
            backfill.tags.get(REINGEST_TAG) == "true"
            and backfill.status.value in ("COMPLETED_SUCCESS", "COMPLETED")
            and backfill.backfill_timestamp > since
        ):
            return backfill.backfill_id
    return None


@dg.asset(group_name="ingest", kinds={"postgres"})
def corpus_staleness(
    context: dg.AssetExecutionContext, varagity: VaragityResource
) -> dg.MaterializeResult:
    """Whether the stored corpus still matches the ingest settings (the stale flag).

    Sets the flag when a reingest-affecting setting changed on a non-empty corpus (an
    empty one adopts the settings), clears it when a reingest backfill launched after
    the flag completed; setting a value back does not clear it.
    """
    settings = varagity.settings
    corpus = CorpusState(varagity.services.pg)
    before = corpus.stale()
    rebuilt = (
        completed_reingest_after(context.instance, before.since.timestamp()) if before else None
    )
    if rebuilt is not None:
        corpus.rebuilt_with(settings)
        flag = None
        context.log.info(
            f"reingest backfill {rebuilt} completed: corpus up to date, stale flag cleared"
        )
    else:
        flag = corpus.observe(settings)
        if flag is not None:
            context.log.warning(
                f"corpus is stale ({flag.reason}); re-ingest with `varagity reingest` or a "
                f"backfill of the ingest assets tagged {REINGEST_TAG}=true"
            )
        else:
            context.log.info("the corpus matches the ingest settings")
    return dg.MaterializeResult(
        metadata={
            "stale": flag is not None,
            "reason": flag.reason if flag else "",
            "was_stale": before is not None,
            "rebuilt_by": rebuilt or "",
            "built_with": dg.MetadataValue.json(corpus.built_with() or {}),
            "current": dg.MetadataValue.json(ingest_settings(settings)),
        }
    )
