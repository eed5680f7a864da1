"""The API contract: the committed OpenAPI document, one error shape, no server errors.

* The committed ``varagity_api/openapi.json`` (which the web client's types are
  generated from) must equal what the app serves: run ``make openapi`` after an API
  change.
* Every documented error is the ``{"code", "message"}`` shape (the OpenAI-compatible
  routes use OpenAI's error shape, which its client libraries read).
* schemathesis generates requests for every operation of the committed document and
  sends them to the real app (real stores, model servers and Dagster); none may get
  a 5xx answer.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.api_server import serve
from varagity.config import Settings
from varagity_api.openapi import COMMITTED, dumps, render_openapi

OPENAI_ERROR = "#/components/schemas/OpenAIErrorBody"


def test_committed_openapi_matches_the_app() -> None:
    assert COMMITTED.read_text(encoding="utf-8") == dumps(render_openapi()), (
        "varagity_api/openapi.json is out of date: run `make openapi` and commit it"
    )


def test_every_documented_error_has_the_one_shape() -> None:
    document = render_openapi()
    schemas = document["components"]["schemas"]
    assert "HTTPValidationError" not in schemas
    checked = 0
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            for status, response in operation["responses"].items():
                if int(status) < 400:
                    continue
                schema = response["content"]["application/json"]["schema"]
                name = schema["$ref"].rsplit("/", 1)[-1]
                props = schemas[name].get("properties", {})
                if path.startswith("/v1/") and status != "401":
                    # (a 401 comes from the request guard, before any route: the one shape)
                    assert schema["$ref"] == OPENAI_ERROR, (method, path, status)
                else:
                    assert {"code", "message"} <= set(props), (method, path, status, name)
                checked += 1
    assert checked > 20


@pytest.mark.integration
@pytest.mark.slow
def test_no_operation_answers_with_a_server_error(dagster_stack: Settings) -> None:
    """schemathesis's own runner (its pytest plugin does not support pytest 9)."""
    (dagster_stack.docs_path / "notes.md").write_text(
        "# Pumps\n\nThe Orca pump moves 12 litres a minute.\n", encoding="utf-8"
    )
    report = dagster_stack.home / "schemathesis.json"
    with serve(dagster_stack) as base:
        run = subprocess.run(
            [
                str(Path(sys.executable).with_name("schemathesis")),
                "run",
                str(COMMITTED),
                "--url",
                base,
                "--checks",
                "not_a_server_error",
                "--max-examples",
                "5",
                "--seed",
                "20261130",
                "--request-timeout",
                "120",
                "--report",
                "ndjson",
                "--report-ndjson-path",
                str(report),
            ],
            capture_output=True,
            text=True,
            timeout=1200,
            cwd=dagster_stack.home,  # its report folder lands there, not in the checkout
        )
    output = run.stdout + run.stderr
    (dagster_stack.home / "schemathesis.out").write_text(output, encoding="utf-8")
    assert run.returncode == 0, output[-6000:]
    # every documented operation was really exercised, none errored
    operations = sum(len(ops) for ops in json.loads(COMMITTED.read_text())["paths"].values())
    tested = re.search(r"Tested: (\d+)", output)
    assert tested and int(tested.group(1)) == operations, output[-3000:]
    assert "Errored:" not in output, output[-3000:]
