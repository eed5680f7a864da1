"""API test fixtures that need more than the session's Postgres and model servers.

``dagster_stack`` runs the real Dagster webserver, its guarded front and the daemon
(started by the same ``varagity_stack.supervisor.dagster_processes`` as ``varagity up``)
for one test module, against a fresh database, a temporary home, corpus folder and
message folder, and the session's model servers. The folder, graph-sources and
staleness sensors are stopped before the daemon starts, so every run the tests see was
launched through the API, and only the API clears the stale flags. A module that needs
other settings starts its own with :func:`running_dagster_stack`.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from varagity.config import Settings, load_settings
from varagity.jobs import DagsterClient
from varagity.stores.postgres import connect, ensure_database
from varagity.stores.vector_store import PgVectorStore
from varagity_stack.model_servers import free_port
from varagity_stack.supervisor import dagster_processes, dagster_ready_url

STOPPED_SENSORS = (
    "docs_folder_sensor",
    "corpus_staleness_sensor",
    "graph_sources_sensor",
    "graph_staleness_sensor",
)


def stop_sensor(client: DagsterClient, name: str) -> None:
    """Stop a sensor (they start RUNNING by default) and check it stopped."""
    selector = {**client.repository_selector(), "sensorName": name}
    sensor = client.query(
        "query Sensor($s: SensorSelector!) { sensorOrError(sensorSelector: $s) "
        "{ __typename ... on Sensor { jobOriginId sensorState { selectorId } } "
        "... on PythonError { message } ... on SensorNotFoundError { message } } }",
        {"s": selector},
    )["sensorOrError"]
    assert sensor["__typename"] == "Sensor", sensor
    stopped = client.query(
        "mutation Stop($origin: String!, $selector: String!) "
        "{ stopSensor(jobOriginId: $origin, jobSelectorId: $selector) { __typename "
        "... on StopSensorMutationResult { instigationState { status } } "
        "... on PythonError { message } ... on UnauthorizedError { message } } }",
        {"origin": sensor["jobOriginId"], "selector": sensor["sensorState"]["selectorId"]},
    )["stopSensor"]
    assert stopped.get("instigationState", {}).get("status") == "STOPPED", stopped


@contextmanager
def running_dagster_stack(
    tmp_path_factory: pytest.TempPathFactory,
    pg_server_url: str,
    model_urls: dict[str, str],
    **overrides: Any,
) -> Iterator[Settings]:
    """Settings of a running Dagster webserver + daemon with an empty corpus folder;
    ``overrides`` change the module's settings."""
    root = tmp_path_factory.mktemp("dg")
    name = f"t_{uuid.uuid4().hex[:12]}"
    db_url = ensure_database(pg_server_url, name)
    values: dict[str, Any] = {
        "VARAGITY_HOME": root / "home",
        "DOCS_PATH": root / "docs",
        "GRAPH_DOCS_PATH": root / "graph-docs",
        "GRAPH_TIMEZONE": "UTC",
        "MODEL_TIMEOUT_S": 600,  # one graph extraction takes minutes on two shared cores
        # the model's extraction: the builds' tests kill one mid-extraction and resume it
        "GRAPH_EXTRACTION": "model",
        "DATABASE_URL": db_url,
        "DAGSTER_PORT": free_port(),
        "CONTEXTUALIZE": False,
        "FOLDER_WATCH": False,  # as the folder sensor is stopped: runs come from the API only
        "LLM_MAX_TOKENS": 32,
        "LOG_LEVEL": "INFO",
        **model_urls,
        **overrides,
    }
    settings = load_settings(**values)
    settings.docs_path.mkdir(parents=True)
    settings.home.mkdir(parents=True)
    PgVectorStore(db_url, embedding_dim=settings.EMBEDDING_DIM).close()  # migrate up front
    dagster = dagster_processes(settings, db_url, settings.home / "logs")
    code, web, front, daemon = dagster.code, dagster.web, dagster.front, dagster.daemon
    try:
        dagster.start_code_server()
        web.start()
        web.wait_ready(f"{dagster.webserver_url}/server_info", timeout=300)
        front.start()  # DAGSTER_URL: the guarded front, as in `varagity up`
        front.wait_ready(dagster_ready_url(settings), timeout=120)
        for sensor in STOPPED_SENSORS:
            stop_sensor(DagsterClient(settings.dagster_url), sensor)
        daemon.start()
        yield settings
    finally:
        daemon.stop()
        front.stop()
        web.stop()
        code.stop()
        with connect(pg_server_url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(scope="module")
def dagster_stack(
    tmp_path_factory: pytest.TempPathFactory, pg_server_url: str, model_urls: dict[str, str]
) -> Iterator[Settings]:
    """Settings of a running Dagster webserver + daemon with an empty corpus folder."""
    with running_dagster_stack(tmp_path_factory, pg_server_url, model_urls) as settings:
        yield settings
