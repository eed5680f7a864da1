"""What the code-location tests share: the loaded definitions, a harness that ticks the
sensors and executes what they request like the daemon would, and small helpers."""

from __future__ import annotations

import json
from pathlib import Path

import dagster as dg

from varagity import pipeline
from varagity.config import Settings
from varagity.services import Services
from varagity_assets.definitions import defs
from varagity_assets.defs.ingest.partitions import documents_partitions
from varagity_assets.defs.ingest.sensors import (
    chunk_contexts_sensor,
    corpus_staleness_sensor,
    docs_folder_sensor,
)
from varagity_assets.resources import VaragityResource

DEFS = defs()

# every asset of the code location, as the UI lists them
ALL_ASSETS = {
    *pipeline.INGEST_ASSETS,
    "chunk_contexts",
    "purged_documents",
    "corpus_staleness",
    "eval_results",
    "answer_eval_results",
    "search_index_release",
    "graph_eval_results",
    "graph_answers_release",
    *pipeline.GRAPH_ASSETS,
    pipeline.GRAPH_REMOVED_ASSET,
    pipeline.GRAPH_RESET_ASSET,
    pipeline.GRAPH_REBUILD_ASSET,
    pipeline.GRAPH_STALENESS_ASSET,
    pipeline.BACKUP_ASSET,
}

SensorOutcome = dg.SensorResult | dg.RunRequest | dg.SkipReason


class Harness:
    """Ticks the sensors and executes what they request, like the daemon would: partition
    requests are applied, and a run key already launched is not launched again."""

    def __init__(self) -> None:
        self.instance = dg.DagsterInstance.ephemeral()
        self.cursor: str | None = None
        self.results: list[dg.ExecuteInProcessResult] = []
        self.launched_keys: set[str] = set()

    def tick(self) -> dg.SensorResult | dg.SkipReason:
        """One tick of the folder sensor (its cursor carried to the next)."""
        with dg.build_sensor_context(
            instance=self.instance,
            cursor=self.cursor,
            resources={"varagity": VaragityResource()},
        ) as ctx:
            result = docs_folder_sensor(ctx)
        self._apply(result, ctx)
        return result

    def _apply(self, result: SensorOutcome, ctx: dg.SensorEvaluationContext) -> None:
        """Carry the tick's cursor and apply its partition requests, as the daemon does."""
        if not isinstance(result, dg.SensorResult):
            self.cursor = ctx.cursor
            return
        self.cursor = result.cursor
        for req in result.dynamic_partitions_requests or []:
            if isinstance(req, dg.AddDynamicPartitionsRequest):
                self.instance.add_dynamic_partitions(
                    req.partitions_def_name, list(req.partition_keys)
                )
            else:
                for key in req.partition_keys:
                    self.instance.delete_dynamic_partition(req.partitions_def_name, key)

    def tick_contexts(self) -> dg.SensorResult | dg.SkipReason:
        """One tick of the blurb sensor (it keeps no cursor)."""
        with dg.build_sensor_context(
            instance=self.instance, resources={"varagity": VaragityResource()}
        ) as ctx:
            return chunk_contexts_sensor(ctx)

    def tick_staleness(self) -> dg.RunRequest | dg.SkipReason:
        """One tick of the staleness sensor (it keeps no cursor)."""
        with dg.build_sensor_context(
            instance=self.instance, resources={"varagity": VaragityResource()}
        ) as ctx:
            return corpus_staleness_sensor(ctx)

    def run_requests(
        self, result: SensorOutcome, job_name: str = pipeline.INGEST_JOB
    ) -> list[dg.ExecuteInProcessResult]:
        """Execute each requested run (of its own job, else ``job_name``) in process."""
        if isinstance(result, dg.SkipReason):
            return []
        requests = [result] if isinstance(result, dg.RunRequest) else result.run_requests or []
        runs = []
        for req in requests:
            if req.run_key is not None:
                if req.run_key in self.launched_keys:
                    continue
                self.launched_keys.add(req.run_key)
            runs.append(
                DEFS.resolve_job_def(req.job_name or job_name).execute_in_process(
                    instance=self.instance,
                    partition_key=req.partition_key,
                    run_config=req.run_config,
                    tags=dict(req.tags),
                    raise_on_error=False,
                )
            )
        self.results.extend(runs)
        return runs

    def logs(self, run: dg.ExecuteInProcessResult) -> list[str]:
        """The messages the run's steps logged (what its page in the UI lists)."""
        return [
            e.user_message
            for e in self.instance.all_logs(run.run_id)
            if e.user_message and not e.is_dagster_event
        ]

    def reported_skips(self) -> dict[str, str]:
        return dict(json.loads(self.cursor or "{}").get("skipped", {}))

    def partitions(self) -> set[str]:
        return set(self.instance.get_dynamic_partitions(documents_partitions.name or ""))


def write_file(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def search_paths(settings: Settings, query: str, method: str = "hybrid") -> list[str]:
    """The relative paths of the top hits of a live query."""
    services = Services.open(settings)
    try:
        return [
            c.record.relative_path for c in services.retriever(method).retrieve(query, 5).chunks
        ]
    finally:
        services.close()
