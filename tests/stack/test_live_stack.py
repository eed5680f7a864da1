"""One ``varagity up`` shared by the module's tests, in order:

1. an upload launches its file's ingest run at once (no waiting for the folder
   sensor's tick), and the sensor, which sees the same new file on its next ticks, does
   not ask for a second run;
2. Debian's ``prometheus`` scrapes the stack's ``/metrics`` with the rules of
   deploy/prometheus/alerts.yml, and every Grafana panel expression
   (deploy/grafana/dashboards) and alert expression parses through its query API; the
   key panels return data.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import yaml

from tests.conftest import free_port
from tests.stack.test_supervisor import REPO, _gql, _wait, search_paths
from tests.support.running_stack import RunningStack, varagity_up
from tests.test_dashboards import alert_rules, panel_queries
from varagity.ingest.discovery import partition_key_for
from varagity.pipeline import INGEST_JOB, PARTITION_TAG, SOURCE_TAG

pytestmark = [pytest.mark.slow, pytest.mark.integration]

_SENSOR_TICKS = (
    '{ sensorOrError(sensorSelector: {repositoryLocationName: "varagity", '
    'repositoryName: "__repository__", sensorName: "docs_folder_sensor"}) '
    "{ ... on Sensor { sensorState { ticks(limit: 20) { timestamp status } } } } }"
)


def _ingest_runs(dagster: str) -> list[dict]:
    data = _gql(
        dagster,
        f'{{ runsOrError(filter: {{pipelineName: "{INGEST_JOB}"}}) {{ ... on Runs {{ results '
        "{ runId status endTime tags { key value } } } } }",
    )
    runs: list[dict] = data["runsOrError"]["results"]
    for run in runs:
        run["tags"] = {t["key"]: t["value"] for t in run["tags"]}
    return runs


def _ticks_after(dagster: str, timestamp: float) -> int:
    ticks = _gql(dagster, _SENSOR_TICKS)["sensorOrError"]["sensorState"]["ticks"]
    return sum(1 for t in ticks if t["timestamp"] > timestamp)


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningStack]:
    root = tmp_path_factory.mktemp("live")
    docs = root / "docs"
    docs.mkdir()
    (docs / "first.md").write_text("# Kettles\n\nThe Tern K2 kettle boils a litre in 3 minutes.\n")
    with varagity_up(root / "home", docs, CONTEXTUALIZE="false") as running:
        yield running


@pytest.mark.timeout(900)
def test_an_upload_is_ingested_by_exactly_one_run_launched_by_the_route(
    stack: RunningStack,
) -> None:
    api, dagster, proc = stack.api, stack.dagster, stack.proc
    before = {r["runId"] for r in _ingest_runs(dagster)}
    r = httpx.post(
        f"{api}/api/documents/upload",
        files={"files": ("drones.md", b"# Drones\n\nThe Velo-9 battery lasts 47 minutes.\n")},
        timeout=60,
    )
    assert r.status_code == 200, r.text
    assert r.json()["counts"] == {"stored": 1}
    _wait(lambda: "drones.md" in search_paths(api, "Velo-9"), 300, "drones.md", proc)

    run = _only_run_since(stack, before)
    assert run["tags"][SOURCE_TAG] == "upload"
    assert run["tags"][PARTITION_TAG] == partition_key_for("drones.md")
    assert search_paths(api, "Velo-9") == ["drones.md"]


def _only_run_since(stack: RunningStack, before: set[str]) -> dict:
    """The one ingest run launched since ``before``, once it has ended and the folder
    sensor has looked at the folder (and the new file) twice more without asking for
    another."""
    dagster, proc = stack.dagster, stack.proc
    (run,) = [x for x in _ingest_runs(dagster) if x["runId"] not in before]

    def end_time() -> float | None:
        return next(x for x in _ingest_runs(dagster) if x["runId"] == run["runId"])["endTime"]

    _wait(lambda: end_time() is not None, 120, "the run to end", proc)
    ended = end_time()
    assert ended is not None
    _wait(lambda: _ticks_after(dagster, ended) >= 2, 120, "two sensor ticks", proc)
    new_runs = [x for x in _ingest_runs(dagster) if x["runId"] not in before]
    assert [x["runId"] for x in new_runs] == [run["runId"]], new_runs
    return run


@pytest.mark.timeout(900)
def test_a_file_moved_into_the_folder_is_launched_by_the_watcher_in_one_run(
    stack: RunningStack, tmp_path: Path
) -> None:
    before = {r["runId"] for r in _ingest_runs(stack.dagster)}
    written = tmp_path / "boats.md"
    written.write_text("# Boats\n\nThe Skerry-4 dinghy carries 3 sailors.\n")
    docs = Path(stack.env["DOCS_PATH"])
    os.rename(written, docs / "boats.md")  # moved in whole: no write in the folder
    _wait(lambda: "boats.md" in search_paths(stack.api, "Skerry-4"), 300, "boats.md", stack.proc)

    run = _only_run_since(stack, before)
    assert run["tags"][SOURCE_TAG] == "folder"
    assert run["tags"][PARTITION_TAG] == partition_key_for("boats.md")


def _doctor_clean(stack: RunningStack) -> bool:
    """Whether ``varagity doctor`` finds every corpus invariant holding."""
    done = subprocess.run(
        [sys.executable, "-m", "varagity_cli", "doctor", "--settle", "0", "--no-runs"],
        env=stack.env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    return done.returncode == 0


def _backup_run(stack: RunningStack, launched: httpx.Response) -> dict:
    """The export or restore run ``launched`` started, once it has ended."""
    assert launched.status_code == 202, launched.text
    url = f"{stack.api}/api/backups/rag/runs/{launched.json()['run_id']}"
    _wait(lambda: httpx.get(url, timeout=30).json()["done"], 300, "the backup run", stack.proc)
    run: dict = httpx.get(url, timeout=30).json()
    assert run["state"] == "succeeded", run
    return run


@pytest.mark.timeout(1200)
def test_a_restore_is_reconciled_with_the_folder_without_any_other_action(
    stack: RunningStack,
) -> None:
    """Restoring last week's bundle keeps this week's files: what was added or changed
    since is ingested, what was deleted is purged, by the folder sensor alone."""
    api, proc = stack.api, stack.proc
    docs = Path(stack.env["DOCS_PATH"])
    (docs / "recipes").mkdir(exist_ok=True)
    (docs / "recipes/oat-flatbread.md").write_text("# Flatbread\n\nRest the Kvarn dough 20 min.\n")
    _wait(
        lambda: search_paths(api, "Kvarn dough") == ["recipes/oat-flatbread.md"],
        300,
        "ingest",
        proc,
    )
    _wait(lambda: _doctor_clean(stack), 300, "a clean corpus", proc)
    bundle = _backup_run(stack, httpx.post(f"{api}/api/backups/rag/export", timeout=60))["bundle"]

    # the week after: a file added, one deleted, one changed
    (docs / "quokka.md").write_text("# Quokkas\n\nA Rottnest quokka weighs 3 kilograms.\n")
    (docs / "recipes/oat-flatbread.md").unlink()
    (docs / "first.md").write_text("# Kettles\n\nThe Tern K2 kettle boils a litre in 2 minutes.\n")
    _wait(lambda: search_paths(api, "Rottnest quokka") == ["quokka.md"], 300, "quokka.md", proc)
    _wait(lambda: _doctor_clean(stack), 300, "the stores to follow the folder", proc)

    restore = httpx.post(f"{api}/api/backups/rag/restore", json={"name": bundle}, timeout=60)
    restored = _backup_run(stack, restore)
    assert restored["reconcile"] == {"to_ingest": 2, "to_purge": 1, "failed": 0}
    _wait(lambda: _doctor_clean(stack), 300, "the folder sensor to reconcile", proc)
    assert search_paths(api, "Rottnest quokka") == ["quokka.md"]
    assert search_paths(api, "Kvarn dough") == []
    [hit] = httpx.post(
        f"{api}/api/search", json={"query": "Tern K2 kettle litre", "k": 1}, timeout=30
    ).json()["results"]
    assert "2 minutes" in hit["content"]


# Grafana's built-in interval variables, as Grafana would fill them in for a short range
GRAFANA_VARIABLES = {"$__rate_interval": "1m", "$__interval": "15s", "$__range": "1h"}
# panels that must show data on a stack that has indexed files and answered searches
KEY_PANELS = (
    "query: Search latency per stage (p50)",
    "query: Searches by retrieval method",
    "ingestion: Files by status",
    "ingestion: Step durations",
    "ingestion: Queue depth",
    "infra: API memory",
    "infra: API CPU",
    "infra: Model servers up",
    "infra: Store sizes",
    "infra: State folder disk used",
)


def _prometheus_config(stack: RunningStack, rules: Path) -> dict:
    """deploy/prometheus/prometheus.yml pointed at the live API (the compose-only model
    server jobs left out), scraping every second, with the real alert rules."""
    config = yaml.safe_load((REPO / "deploy" / "prometheus" / "prometheus.yml").read_text())
    config["global"] = {"scrape_interval": "1s", "evaluation_interval": "1s"}
    config["rule_files"] = [str(rules)]
    jobs = {job["job_name"]: job for job in config["scrape_configs"]}
    api = jobs["varagity-api"]
    api["static_configs"] = [{"targets": [stack.api.removeprefix("http://")]}]
    api["scrape_timeout"] = "1s"
    config["scrape_configs"] = [api]
    return config


@pytest.fixture(scope="module")
def prometheus(stack: RunningStack, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Debian's prometheus (installed by `make install`) scraping the live stack."""
    binary = shutil.which("prometheus")
    assert binary, "prometheus is not installed: `make install` installs it (Debian package)"
    folder = tmp_path_factory.mktemp("prometheus")
    rules = folder / "alerts.yml"
    shutil.copy(REPO / "deploy" / "prometheus" / "alerts.yml", rules)
    (folder / "prometheus.yml").write_text(yaml.safe_dump(_prometheus_config(stack, rules)))
    port = free_port()
    with (folder / "prometheus.log").open("w") as log:
        proc = subprocess.Popen(
            [
                binary,
                f"--config.file={folder / 'prometheus.yml'}",
                f"--storage.tsdb.path={folder / 'data'}",
                f"--web.listen-address=127.0.0.1:{port}",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, "HOME": str(folder)},
        )
    url = f"http://127.0.0.1:{port}"
    try:
        _wait(
            lambda: httpx.get(f"{url}/-/ready", timeout=2).status_code == 200,
            60,
            "prometheus to start",
            proc,
        )
        yield url
    finally:
        proc.terminate()
        proc.wait(30)


def _query(prometheus: str, expr: str) -> list[dict]:
    for name, value in GRAFANA_VARIABLES.items():
        expr = expr.replace(name, value)
    r = httpx.get(f"{prometheus}/api/v1/query", params={"query": expr}, timeout=30)
    body = r.json()
    assert r.status_code == 200 and body["status"] == "success", (expr, body)
    result: list[dict] = body["data"]["result"]
    return result


@pytest.mark.timeout(600)
def test_every_panel_and_alert_expression_runs_on_a_real_prometheus(
    stack: RunningStack, prometheus: str
) -> None:
    # a search a second for a few seconds, so the latency histograms have rates
    for _ in range(5):
        assert search_paths(stack.api, "Tern K2 kettle", method="hybrid")
        time.sleep(1)

    def scraped_twice_since_searches() -> bool:
        up = _query(prometheus, 'count_over_time(up{job="varagity-api"}[5s])')
        return bool(up) and float(up[0]["value"][1]) >= 3

    _wait(scraped_twice_since_searches, 60, "scrapes of the API", stack.proc)
    _wait(
        lambda: bool(_query(prometheus, "varagity_pipeline_step_seconds")),
        60,
        "Dagster's step durations",
        stack.proc,
    )

    panels = panel_queries()
    assert set(KEY_PANELS) <= set(panels)
    empty = []
    for title, expressions in panels.items():
        results = [_query(prometheus, expr) for expr in expressions]  # each must parse
        if title in KEY_PANELS and not any(results):
            empty.append(title)
    assert not empty, f"key panels without data: {empty}"

    files = {
        r["metric"]["status"]: float(r["value"][1])
        for r in _query(prometheus, "varagity_corpus_files")
    }
    assert files["indexed"] >= 1 and files["failed"] == 0, files
    up = {
        r["metric"]["server"]: float(r["value"][1])
        for r in _query(prometheus, "varagity_model_server_up")
    }
    assert up == {"llm": 1.0, "reader": 1.0, "embedding": 1.0}, up

    for name, expr in alert_rules().items():
        firing = _query(prometheus, expr)  # each must parse
        assert not firing, f"{name} fires on a healthy stack: {firing}"

    # Prometheus loaded the rule file itself and evaluates every rule without error
    def evaluated() -> list[dict]:
        groups = httpx.get(f"{prometheus}/api/v1/rules", timeout=10).json()["data"]["groups"]
        return [r for g in groups for r in g["rules"]]

    _wait(
        lambda: (
            bool(evaluated())
            and all(not r["lastEvaluation"].startswith("0001") for r in evaluated())
        ),
        30,
        "the rules' first evaluation",
        stack.proc,
    )
    rules = evaluated()
    assert {r["name"] for r in rules} == set(alert_rules())
    assert all(r["health"] == "ok" for r in rules), rules
