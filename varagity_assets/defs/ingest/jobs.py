"""The jobs of the ingest domain; the sensors request them, the UI launches them too.

All run in one process per run: a step subprocess per asset would re-import the stack
for every asset (measured: most of the file-to-searchable latency).
"""

import dagster as dg

from varagity.pipeline import (
    CONTEXTUALIZE_JOB,
    INGEST_ASSETS,
    INGEST_JOB,
    PURGE_JOB,
    STAGE_CONTEXTUALIZE,
    STAGE_INGEST,
    STAGE_PURGE,
    STAGE_STALENESS,
    STAGE_TAG,
    STALENESS_JOB,
)
from varagity_assets.defs.ingest.assets import chunk_contexts
from varagity_assets.defs.ingest.upkeep import corpus_staleness, purged_documents

ingest_documents_job = dg.define_asset_job(
    INGEST_JOB,
    selection=dg.AssetSelection.assets(*INGEST_ASSETS),
    description="Parse, chunk, embed and index corpus files: searchable with raw chunks.",
    executor_def=dg.in_process_executor,
    tags={STAGE_TAG: STAGE_INGEST},
)

contextualize_documents_job = dg.define_asset_job(
    CONTEXTUALIZE_JOB,
    selection=[chunk_contexts],
    description="Write LLM blurbs for stored chunks and re-index them as they land.",
    executor_def=dg.in_process_executor,
    tags={STAGE_TAG: STAGE_CONTEXTUALIZE},
)

purge_documents_job = dg.define_asset_job(
    PURGE_JOB,
    selection=[purged_documents],
    description="Remove files deleted from DOCS_PATH from both stores and their artifacts.",
    executor_def=dg.in_process_executor,
    tags={STAGE_TAG: STAGE_PURGE},
)

refresh_corpus_staleness_job = dg.define_asset_job(
    STALENESS_JOB,
    selection=[corpus_staleness],
    description="Set the corpus stale flag when ingest settings changed; clear it after a "
    "completed reingest.",
    executor_def=dg.in_process_executor,
    tags={STAGE_TAG: STAGE_STALENESS},
)
