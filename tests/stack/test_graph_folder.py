"""The message folder in the stack's environment: the Dagster processes (the graph-sources
sensor, build runs) and the API get ``GRAPH_DOCS_PATH`` as an absolute path, whatever
directory they start in."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import SettingsFactory
from varagity_stack.supervisor import dagster_env


def test_children_get_the_absolute_message_folder(
    make_settings: SettingsFactory, tmp_path: Path
) -> None:
    # relative, as the default is; an external DATABASE_URL, so no embedded Postgres starts
    url = "postgresql://127.0.0.1:1/varagity"
    settings = make_settings(GRAPH_DOCS_PATH="graph-docs", DATABASE_URL=url)
    env = dagster_env(settings, url)
    assert env["GRAPH_DOCS_PATH"] == str(tmp_path / "graph-docs")
    assert Path(env["GRAPH_DOCS_PATH"]).is_absolute()
    assert env["DOCS_PATH"] == str(settings.docs_path)
