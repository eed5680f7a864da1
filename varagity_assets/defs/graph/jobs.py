"""The jobs of the message graph; the graph-sources and graph-staleness sensors request
some, the UI (and the API, the command line) launch them too. One process per run, like
the ingest jobs."""

import dagster as dg

from varagity.pipeline import (
    GRAPH_ASSETS,
    GRAPH_BUILD_JOB,
    GRAPH_REBUILD_JOB,
    GRAPH_REMOVE_JOB,
    GRAPH_RESET_JOB,
    GRAPH_STALENESS_JOB,
    STAGE_GRAPH,
    STAGE_STALENESS,
    STAGE_TAG,
)
from varagity_assets.defs.graph.assets import graph_removed_sources
from varagity_assets.defs.graph.partitions import graph_days_partitions, graph_sources_partitions
from varagity_assets.defs.graph.upkeep import graph_rebuilt_days, graph_reset, graph_staleness

build_message_graph_job = dg.define_asset_job(
    GRAPH_BUILD_JOB,
    selection=dg.AssetSelection.assets(*GRAPH_ASSETS),
    partitions_def=graph_sources_partitions,
    description="Read one message archive, diff its thread-day transcripts against the "
    "manifest and apply the diff to the message graph (the single writer).",
    executor_def=dg.in_process_executor,
    tags={STAGE_TAG: STAGE_GRAPH},
)

remove_graph_sources_job = dg.define_asset_job(
    GRAPH_REMOVE_JOB,
    selection=[graph_removed_sources],
    description="Take the transcript days of archives removed from GRAPH_DOCS_PATH out of "
    "the message graph.",
    executor_def=dg.in_process_executor,
    tags={STAGE_TAG: STAGE_GRAPH},
)

reset_message_graph_job = dg.define_asset_job(
    GRAPH_RESET_JOB,
    selection=[graph_reset],
    description="Empty the message graph (its working directory, manifest, caches and stale "
    "flag), keeping the archives in GRAPH_DOCS_PATH: building them again gives it back.",
    executor_def=dg.in_process_executor,
    tags={STAGE_TAG: STAGE_GRAPH},
)

rebuild_message_graph_job = dg.define_asset_job(
    GRAPH_REBUILD_JOB,
    selection=[graph_rebuilt_days],
    partitions_def=graph_days_partitions,
    description="Extract the days of a range again from every archive (one run over a range "
    "of day partitions), leaving the other days as they are; a rebuild of every day clears "
    "the graph's stale flag.",
    executor_def=dg.in_process_executor,
    tags={STAGE_TAG: STAGE_GRAPH},
)

refresh_graph_staleness_job = dg.define_asset_job(
    GRAPH_STALENESS_JOB,
    selection=[graph_staleness],
    description="Set the message graph's stale flag when the chat model or an extraction "
    "setting changed since it was built.",
    executor_def=dg.in_process_executor,
    tags={STAGE_TAG: STAGE_STALENESS},
)
