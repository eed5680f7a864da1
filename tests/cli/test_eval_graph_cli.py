"""``varagity eval --graph``'s refusals, which come before any model or database: a
missing or wrong suite, a bad month range, graph options without ``--graph``."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import SettingsFactory
from varagity_cli.main import main

REPO = Path(__file__).resolve().parents[2]
GRAPH = str(REPO / "eval_suites" / "graph")
SAMPLE = str(REPO / "eval_suites" / "sample")


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["eval", "--graph"], "--graph needs --suite"),
        (["eval", "--graph", "--suite", SAMPLE], "is not a graph suite"),
        (["eval", "--suite", GRAPH], "is a graph suite: add --graph"),
        (["eval", "--graph", "--suite", GRAPH, "--months", "2026-13"], "YYYY-MM"),
        (["eval", "--graph", "--suite", GRAPH, "--months", "2027-01"], "no session in 2027-01"),
        (["eval", "--graph", "--suite", GRAPH, "--limit", "0"], "limit must be positive"),
        (["eval", "--suite", SAMPLE, "--baseline"], "go with --graph"),
    ],
)
def test_eval_graph_refuses_before_building(
    make_settings: SettingsFactory,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    said: str,
) -> None:
    settings = make_settings()
    assert main(argv) == 2
    assert said in capsys.readouterr().err
    assert not (settings.home / "eval").exists()  # nothing was written


def test_graph_and_document_modes_exclude_each_other(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["eval", "--graph", "--matrix", "--suite", GRAPH])
    assert "not allowed with" in capsys.readouterr().err
