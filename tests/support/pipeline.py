"""Driving the Dagster code location in a test like the daemon would: sensor ticks and
in-process runs on an ephemeral instance."""

from __future__ import annotations

import json
from pathlib import Path

import dagster as dg

from varagity.config import Settings
from varagity.services import Services
from varagity_assets.definitions import defs
from varagity_assets.documents.partitions import documents_partitions
from varagity_assets.documents.resources import VaragityResource
from varagity_assets.documents.sensors import chunk_contexts_sensor, docs_folder_sensor

# every asset of the code location, as the UI lists them
ALL_ASSETS = {
    "parsed_document",
    "document_chunks",
    "chunk_embeddings",
    "indexed_document",
    "chunk_contexts",
    "eval_results",
    "answer_eval_results",
    "search_index_release",
}


class Harness:
    """Ticks the sensor and executes what it requests, like the daemon would."""

    def __init__(self) -> None:
        self.instance = dg.DagsterInstance.ephemeral()
        self.cursor: str | None = None
        self.results: list[dg.ExecuteInProcessResult] = []

    def tick(self) -> dg.SensorResult | dg.SkipReason:
        with dg.build_sensor_context(
            instance=self.instance,
            cursor=self.cursor,
            resources={"varagity": VaragityResource()},
        ) as ctx:
            result = docs_folder_sensor(ctx)
        if isinstance(result, dg.SensorResult):
            self.cursor = result.cursor
            for req in result.dynamic_partitions_requests or []:
                if isinstance(req, dg.AddDynamicPartitionsRequest):
                    self.instance.add_dynamic_partitions(
                        req.partitions_def_name, list(req.partition_keys)
                    )
                else:
                    for key in req.partition_keys:
                        self.instance.delete_dynamic_partition(req.partitions_def_name, key)
        else:
            self.cursor = ctx.cursor
        return result

    def tick_contexts(self) -> dg.SensorResult | dg.SkipReason:
        """One tick of the blurb sensor (it keeps no cursor)."""
        with dg.build_sensor_context(
            instance=self.instance, resources={"varagity": VaragityResource()}
        ) as ctx:
            return chunk_contexts_sensor(ctx)

    def run_requests(
        self, result: dg.SensorResult | dg.SkipReason, job_name: str = "ingest_documents"
    ) -> list[dg.ExecuteInProcessResult]:
        runs = []
        if not isinstance(result, dg.SensorResult):
            return runs
        job = defs.resolve_job_def(job_name)
        for req in result.run_requests or []:
            runs.append(
                job.execute_in_process(
                    instance=self.instance,
                    partition_key=req.partition_key,
                    tags=dict(req.tags),
                    raise_on_error=False,
                )
            )
        self.results.extend(runs)
        return runs

    def reported_skips(self) -> dict[str, str]:
        return dict(json.loads(self.cursor or "{}").get("skipped", {}))

    def partitions(self) -> set[str]:
        return set(self.instance.get_dynamic_partitions(documents_partitions.name))


def write_file(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def search_paths(settings: Settings, query: str, method: str = "hybrid") -> list[str]:
    services = Services.open(settings)
    try:
        return [
            c.record.relative_path for c in services.retriever(method).retrieve(query, 5).chunks
        ]
    finally:
        services.close()
