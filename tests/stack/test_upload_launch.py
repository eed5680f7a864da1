"""Issue 12 item 2 on the real stack: an upload launches its file's ingest run at once
(no waiting for the folder sensor's tick), and the sensor, which sees the same new file
on its next ticks, does not ask for a second run."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from tests.stack.test_supervisor import _gql, _wait, search_paths
from tests.support.running_stack import varagity_up
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


@pytest.mark.timeout(900)
def test_an_upload_is_ingested_by_exactly_one_run_launched_by_the_route(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "first.md").write_text("# Kettles\n\nThe Tern K2 kettle boils a litre in 3 minutes.\n")
    with varagity_up(tmp_path / "home", docs, CONTEXTUALIZE="false") as stack:
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

        (run,) = [x for x in _ingest_runs(dagster) if x["runId"] not in before]
        assert run["tags"][SOURCE_TAG] == "upload"
        assert run["tags"][PARTITION_TAG] == partition_key_for("drones.md")

        def end_time() -> float | None:
            return next(x for x in _ingest_runs(dagster) if x["runId"] == run["runId"])["endTime"]

        _wait(lambda: end_time() is not None, 120, "the run to end", proc)
        ended = end_time()
        assert ended is not None
        # the sensor has looked at the folder (and the new file) twice since that run ended
        _wait(lambda: _ticks_after(dagster, ended) >= 2, 120, "two sensor ticks", proc)
        new_runs = [x for x in _ingest_runs(dagster) if x["runId"] not in before]
        assert [x["runId"] for x in new_runs] == [run["runId"]], new_runs
        assert search_paths(api, "Velo-9") == ["drones.md"]
