"""The graph-sources sensor ticked and its runs executed like the daemon would (the
documents :class:`~tests.support.pipeline.Harness`, on the graph's sensor), and what a
run of the graph build left in its events."""

from __future__ import annotations

from typing import Any, cast
from unittest import mock

import dagster as dg

from tests.support.pipeline import Harness, SensorOutcome
from varagity import pipeline
from varagity_assets.defs.graph import sensors as graph_sensors
from varagity_assets.defs.graph.sensors import graph_sources_sensor, graph_staleness_sensor
from varagity_assets.resources import VaragityResource


class GraphHarness(Harness):
    """Ticks ``graph_sources_sensor``; partition requests are applied, a run key already
    launched is not launched again. An archive is judged as soon as it is written unless
    ``settle_s`` gives the sensor's settling time back."""

    def __init__(
        self, instance: dg.DagsterInstance | None = None, *, settle_s: float = 0.0
    ) -> None:
        super().__init__()
        if instance is not None:
            self.instance = instance
        self.settle_s = settle_s

    def tick(self) -> dg.SensorResult | dg.SkipReason:
        with (
            mock.patch.object(graph_sensors, "_SETTLE_S", self.settle_s),
            dg.build_sensor_context(
                instance=self.instance,
                cursor=self.cursor,
                resources={"varagity": VaragityResource()},
            ) as ctx,
        ):
            result = cast(dg.SensorResult | dg.SkipReason, graph_sources_sensor(ctx))
        self._apply(result, ctx)
        return result

    def tick_graph_staleness(self) -> dg.RunRequest | dg.SkipReason:
        """One tick of the graph-staleness sensor (it keeps no cursor)."""
        with dg.build_sensor_context(
            instance=self.instance, resources={"varagity": VaragityResource()}
        ) as ctx:
            return cast(dg.RunRequest | dg.SkipReason, graph_staleness_sensor(ctx))

    def run_graph(self, result: SensorOutcome) -> list[dg.ExecuteInProcessResult]:
        """Execute each requested run (a build, or a removal)."""
        return self.run_requests(result, pipeline.GRAPH_BUILD_JOB)

    def partitions(self) -> set[str]:
        return set(self.instance.get_dynamic_partitions(pipeline.GRAPH_PARTITIONS))


def requests(result: SensorOutcome) -> list[dg.RunRequest]:
    """The run requests of a tick (none for a skip)."""
    if isinstance(result, dg.SensorResult):
        return list(result.run_requests or [])
    return [result] if isinstance(result, dg.RunRequest) else []


def materialization(run: dg.ExecuteInProcessResult, asset: str) -> dict[str, Any]:
    """The metadata of ``asset``'s one materialization in ``run``."""
    [event] = [
        e for e in run.get_asset_materialization_events() if e.asset_key == dg.AssetKey(asset)
    ]
    return {k: v.value for k, v in event.materialization.metadata.items()}


def check_results(run: dg.ExecuteInProcessResult) -> dict[str, dg.AssetCheckEvaluation]:
    """Each asset check's evaluation in ``run``, by check name."""
    return {e.check_name: e for e in run.get_asset_check_evaluations()}
