"""How the documents pipeline's runs execute their steps, chosen by settings at run start.

``STEP_EXECUTOR=in_process`` (the embedded default): Dagster's in-process executor, each
run's steps one after another in the run's own process (a step subprocess per asset would
re-import the stack for every asset).

``STEP_EXECUTOR=celery`` (several hosts): dagster-celery's executor. The run's process
only orchestrates; every step is a Celery task that a worker on some host picks up from
the broker (``CELERY_BROKER_URL``) and executes against the same Dagster instance
(Postgres). Each step goes to one of two queues (:func:`step_queue`):

* ``CELERY_QUEUE``: parsing, chunking, embedding, the Postgres writes: any worker;
* ``CELERY_INDEX_QUEUE``: steps of assets declared with a kind naming a store that lives
  in one host's folder (``tantivy``: the BM25 index, written by one process at a time),
  consumed by that host's worker alone; with ``ELASTICSEARCH_URL`` the BM25 arm is a
  server every host reaches, and such steps go to ``CELERY_QUEUE`` too.

A step tagged ``dagster-celery/queue`` keeps its own queue (dagster-celery's tag).

What survives a worker that vanishes (:func:`celery_app_args`): tasks are acknowledged
after they ran (``task_acks_late``), so a worker host cut off or killed mid-step leaves its
task unacknowledged on the broker, which hands it to another worker once
``CELERY_VISIBILITY_TIMEOUT_S`` has passed (a killed pool child is requeued at once).
Steps are idempotent per file (a store write replaces a document's rows under its
``doc_id``; a retry skips what an earlier attempt stored), so a step run twice writes the
same rows. Publishing and reading results retry while the broker restarts (redis with
an append-only file keeps queued and unacknowledged tasks across the restart).

Model-calling steps keep their retry policy (:mod:`varagity_assets.retries`: an outage
raises ``RetryRequested``, which the worker reports and the orchestrating process
schedules again, on whichever worker takes it) and their pools (granularity ``run`` in
``dagster.yaml``: the run holds the slot, wherever its steps execute).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

import dagster as dg
from dagster._core.execution.retries import RetryMode
from dagster_celery import core_execution_loop
from dagster_celery.core_execution_loop import core_celery_execution_loop
from dagster_celery.executor import CeleryExecutor, _submit_task

from varagity.config import Settings, get_settings
from varagity.pipeline import CELERY_QUEUE_TAG

STEP_POLL_S = 0.1
"""How often the run's process asks the broker which steps finished and submits the
steps that became ready. dagster-celery's loop sleeps a module constant between rounds
(``TICK_SECONDS``, 1 s), which it offers no setting for; an ingest run is six short steps
in a row, so a second per round was most of a small run's time (measured: 12 files
to searchable in 13.7 s with one worker host, 5.0 s embedded). A round is one GET per
step under way on redis."""

LOCAL_STORE_KINDS = frozenset({"tantivy"})
"""Asset kinds whose store is a folder of one host: their steps run on that host."""


def celery_app_args(settings: Settings) -> dict[str, Any]:
    """The Celery app of the executor and of every worker (both must agree), from
    settings: broker, result backend and the delivery guarantees described above."""
    broker = settings.CELERY_BROKER_URL
    if not broker:
        raise ValueError("STEP_EXECUTOR=celery needs CELERY_BROKER_URL")
    visibility = float(settings.CELERY_VISIBILITY_TIMEOUT_S)
    retry = {"max_retries": 120, "interval_start": 0, "interval_step": 0.5, "interval_max": 1}
    return {
        "broker": broker,
        "backend": settings.CELERY_RESULT_BACKEND or broker,
        "include": [],
        "config_source": {
            "task_default_queue": settings.CELERY_QUEUE,
            "task_acks_late": True,
            "task_reject_on_worker_lost": True,
            "worker_prefetch_multiplier": 1,
            # every worker looks for vanished workers' tasks every 5 s (kombu's default,
            # 10 s x a throttle of 10, would add up to 100 s to the visibility timeout)
            "broker_transport_options": {
                "visibility_timeout": visibility,
                "unacked_restore_interval": 5,
                "unacked_restore_throttle": 1,
                **retry,
            },
            "result_backend_transport_options": {"visibility_timeout": visibility},
            "broker_connection_retry_on_startup": True,
            "broker_connection_max_retries": None,
            "task_publish_retry": True,
            "task_publish_retry_policy": retry,
            "result_backend_always_retry": True,
            "result_backend_max_retries": 120,
            "redis_socket_timeout": 10.0,
            "redis_socket_connect_timeout": 5.0,
            "redis_retry_on_timeout": True,
            "worker_hijack_root_logger": False,
            "worker_send_task_events": False,
        },
    }


def step_queue(tags: Mapping[str, str] | None, kinds: Collection[str], settings: Settings) -> str:
    """The queue of a step: its ``dagster-celery/queue`` tag, else ``CELERY_INDEX_QUEUE``
    when its asset lives in a host's folder (:data:`LOCAL_STORE_KINDS`, Tantivy unless
    ``ELASTICSEARCH_URL`` is set), else ``CELERY_QUEUE``."""
    explicit = (tags or {}).get(CELERY_QUEUE_TAG)
    if explicit:
        return explicit
    if settings.ELASTICSEARCH_URL is None and LOCAL_STORE_KINDS & set(kinds):
        return settings.CELERY_INDEX_QUEUE
    return settings.CELERY_QUEUE


def _step_kinds(plan_context: Any, step: Any) -> set[str]:
    """The kinds of the assets a step materializes (none for an asset check's step: the
    checks read Postgres)."""
    layer = plan_context.job.get_definition().asset_layer
    assets_def = layer.get_assets_def_for_node(step.node_handle)
    if assets_def is None:
        return set()
    return {kind for spec in assets_def.specs for kind in spec.kinds}


class RoutedCeleryExecutor(CeleryExecutor):
    """dagster-celery's executor, each step sent to :func:`step_queue`'s queue."""

    def __init__(self, settings: Settings, retries: RetryMode) -> None:
        """Celery app arguments from :func:`celery_app_args`."""
        args = celery_app_args(settings)
        super().__init__(
            retries=retries,
            broker=args["broker"],
            backend=args["backend"],
            include=args["include"],
            config_source=args["config_source"],
        )
        self.settings = settings

    def _submit(
        self, app: Any, plan_context: Any, step: Any, queue: str, priority: int, known: Any
    ) -> Any:
        routed = step_queue(step.tags, _step_kinds(plan_context, step), self.settings)
        if routed != queue:
            plan_context.log.debug(f"step {step.key} routed to Celery queue {routed!r}")
        return _submit_task(app, plan_context, step, routed, priority, known)

    def execute(self, plan_context: Any, execution_plan: Any) -> Any:
        """The Celery execution loop with :meth:`_submit` as the step submitter, polling
        every :data:`STEP_POLL_S` seconds."""
        core_execution_loop.TICK_SECONDS = STEP_POLL_S  # type: ignore[assignment]
        return core_celery_execution_loop(
            plan_context, execution_plan, step_execution_fn=self._submit
        )


@dg.executor(
    name="varagity_steps",
    config_schema=dg.in_process_executor.config_schema,  # type: ignore[call-overload]
)
def step_executor(init_context: dg.InitExecutorContext) -> dg.Executor:
    """In-process or Celery, by ``STEP_EXECUTOR`` (read in the run's process when it
    starts); the run config is the in-process executor's (its ``retries`` apply to both)."""
    settings = get_settings()
    if settings.STEP_EXECUTOR == "in_process":
        return dg.in_process_executor.executor_creation_fn(init_context)  # type: ignore[misc]
    retries = RetryMode.from_config(init_context.executor_config["retries"])  # type: ignore[arg-type]
    return RoutedCeleryExecutor(settings, retries or RetryMode.ENABLED)
