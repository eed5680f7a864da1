"""The settings-chosen step executor (``varagity_assets/executors.py``) and the Postgres
backend of the artifacts IO manager: which jobs may spread their steps, which queue each
step goes to, and what one step hands the next through the database."""

from __future__ import annotations

from collections.abc import Mapping

import dagster as dg
import pytest
from dagster._core.definitions.dependency import NodeHandle

from tests.conftest import SettingsFactory
from varagity.config import SettingsError, load_settings
from varagity.pipeline import BM25_JOB, CONTEXTUALIZE_JOB, INGEST_JOB, PURGE_JOB, STALENESS_JOB
from varagity_assets.definitions import build
from varagity_assets.executors import _step_kinds, celery_app_args, step_queue
from varagity_assets.resources import ArtifactIOManager


def test_the_documents_pipeline_jobs_get_the_step_executor_and_the_rest_keep_theirs() -> None:
    defs = build()
    for name in (INGEST_JOB, BM25_JOB, CONTEXTUALIZE_JOB, PURGE_JOB, STALENESS_JOB):
        assert defs.resolve_job_def(name).executor_def.name == "varagity_steps", name
    # the message graph's jobs run where its working directory is: in the run's process
    assert defs.resolve_job_def("build_message_graph").executor_def is dg.in_process_executor
    assert defs.resolve_job_def("refresh_graph_staleness").executor_def is dg.in_process_executor
    # the sensors that request those jobs target the same jobs
    spread = {INGEST_JOB, BM25_JOB, CONTEXTUALIZE_JOB, PURGE_JOB, STALENESS_JOB}
    for sensor in defs.sensors or []:
        if sensor.has_jobs:
            for job in sensor.jobs:
                if job.name in spread:
                    assert job.executor_def.name == "varagity_steps", (sensor.name, job.name)


class _Plan:
    """What :func:`_step_kinds` reads of a plan context: its job."""

    def __init__(self, job: dg.JobDefinition) -> None:
        self._job = job

    @property
    def job(self) -> _Plan:
        return self

    def get_definition(self) -> dg.JobDefinition:
        return self._job


class _Step:
    def __init__(self, name: str, tags: dict[str, str]) -> None:
        self.node_handle = NodeHandle(name, None)
        self.tags = tags


def _queues(job_name: str, **overrides: object) -> dict[str, str]:
    settings = load_settings(**overrides)
    job = build().resolve_job_def(job_name)
    plan = _Plan(job)
    out = {}
    for node in job.graph.node_dict.values():
        step = _Step(node.name, dict(node.tags))
        out[node.name] = step_queue(step.tags, _step_kinds(plan, step), settings)
    return out


def test_ingest_steps_go_to_any_worker_but_the_bm25_write_to_the_index_host() -> None:
    queues = _queues(INGEST_JOB)
    assert queues.pop("bm25_index") == "varagity-index"
    assert set(queues) >= {"parsed_document", "document_chunks", "chunk_embeddings"}
    assert set(queues.values()) == {"varagity"}
    assert _queues(PURGE_JOB) == {"purged_documents": "varagity-index"}
    assert _queues(CONTEXTUALIZE_JOB) == {"chunk_contexts": "varagity-index"}


def test_queue_names_come_from_settings_and_elasticsearch_frees_the_index_steps() -> None:
    settings = load_settings(CELERY_QUEUE="general", CELERY_INDEX_QUEUE="tantivy-host")
    assert step_queue({}, {"postgres", "tantivy"}, settings) == "tantivy-host"
    assert step_queue(None, {"python"}, settings) == "general"
    assert step_queue({"dagster-celery/queue": "gpu"}, {"python"}, settings) == "gpu"
    with_es = load_settings(ELASTICSEARCH_URL="http://es:9200")
    assert step_queue({}, {"postgres", "tantivy"}, with_es) == with_es.CELERY_QUEUE


def test_celery_settings_are_checked_and_shape_the_app() -> None:
    with pytest.raises(SettingsError, match="CELERY_BROKER_URL"):
        load_settings(STEP_EXECUTOR="celery", ARTIFACT_STORE="postgres")
    with pytest.raises(SettingsError, match="ARTIFACT_STORE=postgres"):
        load_settings(STEP_EXECUTOR="celery", CELERY_BROKER_URL="redis://h:6379/0")
    settings = load_settings(
        STEP_EXECUTOR="celery",
        CELERY_BROKER_URL="redis://h:6379/0",
        ARTIFACT_STORE="postgres",
        CELERY_VISIBILITY_TIMEOUT_S=42,
    )
    args = celery_app_args(settings)
    assert args["broker"] == args["backend"] == "redis://h:6379/0"
    conf = args["config_source"]
    assert conf["task_acks_late"] and conf["task_reject_on_worker_lost"]
    assert conf["broker_transport_options"]["visibility_timeout"] == 42.0
    assert conf["task_default_queue"] == settings.CELERY_QUEUE


@pytest.mark.integration
def test_postgres_artifacts_round_trip_by_partition(
    make_settings: SettingsFactory, pg_url: str
) -> None:
    from varagity.stores.vector_store import PgVectorStore

    settings = make_settings(DATABASE_URL=pg_url, ARTIFACT_STORE="postgres")
    PgVectorStore(pg_url, embedding_dim=settings.EMBEDDING_DIM).close()  # migrations
    io = ArtifactIOManager()
    key = dg.AssetKey("parsed_document")
    partitions = dg.DynamicPartitionsDefinition(name="documents")
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions("documents", ["a.md", "b.md"])

        def output(partition: str) -> dg.OutputContext:
            return dg.build_output_context(
                asset_key=key,
                partition_key=partition,
                asset_partitions_def=partitions,
                instance=instance,
            )

        def load(partition: str) -> Mapping[str, object]:
            return io.load_input(
                dg.build_input_context(
                    asset_key=key,
                    partition_key=partition,
                    asset_partitions_def=partitions,
                    instance=instance,
                    dagster_type=dg.PythonObjectDagsterType(dict),
                )
            )

        # one partition's value per call here; a run's several partitions go in one
        io.handle_output(output("a.md"), {"a.md": {"text": "alpha"}})
        io.handle_output(output("b.md"), {"b.md": ["beta"]})
        assert dict(load("a.md")) == {"a.md": {"text": "alpha"}}
        assert not (settings.home / "artifacts").exists()  # nothing on this host's disk
        assert io.remove_partition("a.md") == 1
        with pytest.raises(FileNotFoundError, match=r"a\.md"):
            load("a.md")
