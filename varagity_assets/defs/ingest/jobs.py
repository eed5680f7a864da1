"""The jobs of the ingest domain; the sensors request them, the UI launches them too.

Their steps run as ``STEP_EXECUTOR`` says (:func:`varagity_assets.executors.step_executor`):
embedded, in the run's own process (a step subprocess per asset would re-import the stack
for every asset; measured: most of the file-to-searchable latency); across hosts, as
Celery tasks any worker takes.
"""

import dagster as dg

from varagity.pipeline import (
    BM25_JOB,
    CONTEXTUALIZE_JOB,
    INGEST_ASSETS,
    INGEST_JOB,
    PURGE_JOB,
    STAGE_BM25,
    STAGE_CONTEXTUALIZE,
    STAGE_INGEST,
    STAGE_PURGE,
    STAGE_STALENESS,
    STAGE_TAG,
    STALENESS_JOB,
)
from varagity_assets.defs.ingest.assets import bm25_index, chunk_contexts
from varagity_assets.defs.ingest.upkeep import corpus_staleness, purged_documents
from varagity_assets.executors import step_executor

ingest_documents_job = dg.define_asset_job(
    INGEST_JOB,
    selection=dg.AssetSelection.assets(*INGEST_ASSETS),
    description="Parse, chunk, embed and index corpus files: searchable with raw chunks.",
    executor_def=step_executor,
    tags={STAGE_TAG: STAGE_INGEST},
)

rebuild_bm25_index_job = dg.define_asset_job(
    BM25_JOB,
    selection=[bm25_index],
    description="Rewrite the BM25 entries of the chosen files (all of them: the whole index) "
    "from their chunk rows in Postgres; nothing is parsed or embedded.",
    executor_def=step_executor,
    tags={STAGE_TAG: STAGE_BM25},
)

contextualize_documents_job = dg.define_asset_job(
    CONTEXTUALIZE_JOB,
    selection=[chunk_contexts],
    description="Write LLM blurbs for stored chunks and re-index them as they land.",
    executor_def=step_executor,
    tags={STAGE_TAG: STAGE_CONTEXTUALIZE},
)

purge_documents_job = dg.define_asset_job(
    PURGE_JOB,
    selection=[purged_documents],
    description="Remove files deleted from DOCS_PATH from both stores and their artifacts.",
    executor_def=step_executor,
    tags={STAGE_TAG: STAGE_PURGE},
)

refresh_corpus_staleness_job = dg.define_asset_job(
    STALENESS_JOB,
    selection=[corpus_staleness],
    description="Set the corpus stale flag when ingest settings changed; clear it after a "
    "completed reingest.",
    executor_def=step_executor,
    tags={STAGE_TAG: STAGE_STALENESS},
)
