"""The top-level workspace.yaml (the design card's): Dagster loads the Varagity code location
from it for anyone running Dagster their own way (`dagster dev`, `dagster-webserver -w`),
offline and with no settings, model server or stack."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import yaml

from varagity_stack.supervisor import CODE_LOCATION

ROOT = Path(__file__).resolve().parents[2]
WORKSPACE = ROOT / "workspace.yaml"
COMPOSE_WORKSPACE = ROOT / "deploy" / "workspace.compose.yaml"
DG_TOML = ROOT / "varagity_assets" / "dg.toml"


def _entry(path: Path, kind: str) -> dict[str, str]:
    (entry,) = yaml.safe_load(path.read_text(encoding="utf-8"))["load_from"]
    location: dict[str, str] = entry[kind]
    return location


def test_workspace_names_the_code_location_every_other_way_names() -> None:
    location = _entry(WORKSPACE, "python_module")
    project = tomllib.loads(DG_TOML.read_text(encoding="utf-8"))["project"]
    assert location["module_name"] == "varagity_assets.definitions"
    assert location["module_name"].split(".")[0] == project["root_module"]
    # the UI, run origins and the GraphQL selectors the API sends use this name
    assert location["location_name"] == CODE_LOCATION == project["code_location_name"]
    assert _entry(COMPOSE_WORKSPACE, "grpc_server")["location_name"] == CODE_LOCATION


def test_dagster_loads_the_workspace(tmp_path: Path) -> None:
    """`dagster definitions validate -w workspace.yaml` from the repository root, as a
    user would run it: a bare environment (no .env, no DATABASE_URL, no model server)."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp_path),
        "DAGSTER_HOME": str(tmp_path),  # an instance of its own, not a temporary one in ROOT
    }
    dagster = Path(sys.executable).parent / "dagster"
    result = subprocess.run(
        [str(dagster), "definitions", "validate", "-w", "workspace.yaml"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert f"Validation successful for code location {CODE_LOCATION}" in output, output
