"""The jobs of the message graph; the graph-sources sensor requests them, the UI (and
the API) launch them too. One process per run, like the ingest jobs."""

import dagster as dg

from varagity.pipeline import (
    GRAPH_ASSETS,
    GRAPH_BUILD_JOB,
    GRAPH_REMOVE_JOB,
    STAGE_GRAPH,
    STAGE_TAG,
)
from varagity_assets.defs.graph.assets import graph_removed_sources
from varagity_assets.defs.graph.partitions import graph_sources_partitions

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
