"""A person signs in to the Dagster UI behind its guarded front when API_KEY is set.

A real ``dagster-webserver`` serves a small code location (one asset partitioned like
``backup_bundle``; no daemon, so what is launched stays queued) on loopback, behind
``python -m varagity_stack.dagster_front`` with an API key, as ``varagity up`` runs it.
``web/e2e/dagster.mjs`` in Debian's chromium opens the UI, lands on the front's sign-in
page, is refused a wrong key and signed in with the right one (an HttpOnly,
SameSite=Strict cookie that does not hold the key); the UI then works on the cookie
alone: its GraphQL subscriptions over the websocket, a run of one partition and a
backfill of all launched from the asset page. Both are read back through the front
with the key as a bearer token, as the API and the CLI do. Screenshots in
``tests/.artifacts/web/dagster-sign-in/``. The whole stack's version (no key, runs and
backfill followed to their end) is ``test_the_dagster_ui_through_its_guarded_front`` in
``tests/web/test_app_e2e.py``.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.web.harness import ARTIFACTS, missing_toolchain, run_script, screenshot_names
from varagity.jobs import DagsterClient, DagsterUnavailable
from varagity_stack.dagster_front import SESSION_COOKIE
from varagity_stack.model_servers import ManagedProcess, free_port

pytestmark = [pytest.mark.slow, pytest.mark.integration]

REPO = Path(__file__).resolve().parents[2]
OUT = ARTIFACTS / "dagster-sign-in"
KEY = "sign-in-k3y-for-the-tests-only"
DEFINITIONS = """
import dagster as dg

corpora = dg.StaticPartitionsDefinition(["rag", "graph"])


@dg.asset(partitions_def=corpora, group_name="backup")
def backup_bundle(context: dg.AssetExecutionContext) -> dg.MaterializeResult:
    return dg.MaterializeResult(metadata={"corpus": context.partition_key})


defs = dg.Definitions(assets=[backup_bundle])
"""


@pytest.fixture(scope="module")
def keyed_dagster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The base URL of the front of a real webserver, with API_KEY set."""
    missing = missing_toolchain()
    assert not missing, f"run `make install` first; missing: {', '.join(missing)}"
    root = tmp_path_factory.mktemp("dagster-sign-in")
    (root / "defs.py").write_text(DEFINITIONS, encoding="utf-8")
    (root / "dagster-home").mkdir()
    web_port, front_port = free_port(), free_port()
    web = ManagedProcess(
        "dagster-webserver",
        [
            Path(sys.executable).with_name("dagster-webserver"),
            *("-h", "127.0.0.1", "-p", str(web_port), "-f", root / "defs.py"),
        ],
        log_dir=root / "logs",
        env={"DAGSTER_HOME": str(root / "dagster-home")},
        cwd=root,
    )
    front = ManagedProcess(
        "dagster-front",
        [
            sys.executable,
            *("-m", "varagity_stack.dagster_front", "--upstream", f"http://127.0.0.1:{web_port}"),
            *("--host", "127.0.0.1", "--port", str(front_port)),
        ],
        log_dir=root / "logs",
        env={"API_KEY": KEY, "VARAGITY_HOME": str(root / "home"), "ALLOWED_HOSTS": ""},
        cwd=REPO,
    )
    base = f"http://127.0.0.1:{front_port}"
    try:
        web.start()
        front.start()
        web.wait_ready(f"http://127.0.0.1:{web_port}/server_info", timeout=180)
        front.wait_ready(
            f"{base}/server_info", timeout=60, headers={"Authorization": f"Bearer {KEY}"}
        )
        yield base
    finally:
        front.stop()
        web.stop()


def test_a_person_signs_in_and_uses_the_dagster_ui(keyed_dagster: str) -> None:
    base = keyed_dagster
    # without the key nothing of the UI answers, not even its start page
    assert httpx.get(f"{base}/server_info", timeout=30).status_code == 401
    with pytest.raises(DagsterUnavailable, match="api_key_required"):
        DagsterClient(base).query("{ version }")

    report = run_script(
        "dagster.mjs",
        OUT,
        {
            "DAGSTER_URL": base,
            "E2E_ASSET": "backup_bundle",
            "E2E_PARTITION": "rag",
            "E2E_API_KEY": KEY,
            "E2E_AWAIT": "false",  # no daemon here: launched, then queued
        },
        timeout=600,
    )
    assert report["signInUrl"] == "/varagity-login?next=%2Fassets%2Fbackup_bundle"
    assert report["wrongKey"] == "That is not this stack's API key."
    assert report["cookies"] == [
        {"name": SESSION_COOKIE, "httpOnly": True, "sameSite": "Strict", "holdsKey": False}
    ]
    # the only refusal the browser met was the wrong key
    assert len(report["refused"]) == 1 and report["refused"][0].startswith("401 POST")
    assert any(w["framesReceived"] > 0 for w in report["websockets"]), report["websockets"]
    assert report["runPartition"] == "rag"
    assert sorted(report["backfillPartitions"]) == ["graph", "rag"]

    client = DagsterClient(base, api_key=KEY)  # as the API and the CLI reach it
    run = client.query(
        "query R($id: ID!) { runOrError(runId: $id) { __typename ... on Run { status } } }",
        {"id": report["runId"]},
    )["runOrError"]
    assert run["__typename"] == "Run", run
    backfill = client.query(
        "query B($id: String!) { partitionBackfillOrError(backfillId: $id) "
        "{ __typename ... on PartitionBackfill { partitionNames } } }",
        {"id": report["backfillId"]},
    )["partitionBackfillOrError"]
    assert sorted(backfill["partitionNames"]) == ["graph", "rag"], backfill
    assert screenshot_names(report) == {
        "01-sign-in.png",
        "02-asset.png",
        "03-partition-dialog.png",
        "04-run.png",
        "05-backfill-dialog.png",
        "06-backfill.png",
    }
