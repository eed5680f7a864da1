"""The message-graph build of an evaluation, through the real graph assets.

``varagity eval --graph`` and the graph answer gate build a suite's archive into a graph
of its own (:mod:`varagity.eval.graph_eval`: its folder, settings and archive). This
materializes the same three assets the graph-sources sensor's runs do
(``graph_archive`` -> ``graph_transcripts`` -> ``graph_workdir``, their IO manager,
retries and writer lock included) on a Dagster instance of its own, with the
``varagity`` resource opened on the evaluation's settings instead of the environment's
and the stage values kept in the evaluation's folder. No sensor, no partition of the
live location and no daemon are involved, so an evaluation never touches the live
graph or its runs list.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import dagster as dg

from varagity.config import Settings, load_settings
from varagity.pipeline import GRAPH_PARTITIONS, GRAPH_WORKDIR_ASSET, SOURCE_TAG
from varagity.services import Services
from varagity_assets.defs.graph.assets import graph_archive, graph_transcripts, graph_workdir
from varagity_assets.defs.graph.partitions import archive_key
from varagity_assets.resources import ArtifactIOManager, VaragityResource


class GraphBuildFailed(RuntimeError):
    """The evaluation's graph build run failed; says which step and why."""


class PinnedVaragityResource(VaragityResource):
    """The ``varagity`` resource on given settings (an evaluation's location) rather
    than on the environment's."""

    settings_json: str

    @property
    def services(self) -> Services:
        """Handles opened on the pinned settings, created on first use."""
        if self._services is None:
            self._services = Services.open(load_settings(**json.loads(self.settings_json)))
        return self._services


def materialize_graph(settings: Settings, archive: str, scratch: Path) -> Mapping[str, Any]:
    """Build ``archive`` (relative to ``settings``' ``GRAPH_DOCS_PATH``) into the graph
    at ``settings``' ``GRAPH_STORAGE_PATH`` by materializing the graph assets for its
    partition (:data:`varagity.eval.graph_eval.Builder`).

    Args:
        settings: The evaluation's settings.
        archive: The archive's path under ``GRAPH_DOCS_PATH``.
        scratch: A folder of the evaluation's; the assets' stage values go in
            ``scratch/artifacts``.

    Returns:
        The metadata of the ``graph_workdir`` materialization (``seconds``,
        ``extracted_this_run``, ``entities``, ``relations`` ...).

    Raises:
        GraphBuildFailed: A step failed (the failed days are retried by the next build).
    """
    key = archive_key(archive)
    with dg.DagsterInstance.ephemeral() as instance:
        instance.add_dynamic_partitions(GRAPH_PARTITIONS, [key])
        result = dg.materialize(
            [graph_archive, graph_transcripts, graph_workdir],
            partition_key=key,
            instance=instance,
            resources={
                "varagity": PinnedVaragityResource(settings_json=settings.model_dump_json()),
                "artifacts": ArtifactIOManager(base_dir=str(scratch / "artifacts")),
            },
            tags={SOURCE_TAG: "eval"},
            raise_on_error=False,
        )
        if not result.success:
            failures = [
                f"{event.step_key}: {event.step_failure_data.error.message.strip()}"
                if event.step_failure_data.error is not None
                else f"{event.step_key}: failed"
                for event in result.get_step_failure_events()
            ]
            raise GraphBuildFailed(
                f"the graph build of {archive} failed: " + ("; ".join(failures) or "see the log")
            )
        [event] = [
            e
            for e in result.get_asset_materialization_events()
            if e.asset_key == dg.AssetKey(GRAPH_WORKDIR_ASSET)
        ]
        return {k: v.value for k, v in event.materialization.metadata.items()}
