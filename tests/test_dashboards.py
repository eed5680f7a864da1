"""Dashboards as code: the committed Grafana JSON is what deploy/grafana/generate.py
builds, and every panel and alert names only metrics the app exports (the live proof,
every expression through a real Prometheus, is tests/stack/test_live_stack.py)."""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path
from types import ModuleType

import yaml

ROOT = Path(__file__).resolve().parents[1]
GENERATOR = ROOT / "deploy" / "grafana" / "generate.py"
ALERTS = ROOT / "deploy" / "prometheus" / "alerts.yml"
METRICS_SOURCE = ROOT / "varagity" / "observability" / "metrics.py"


def load_generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("grafana_generate", GENERATOR)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def panel_queries() -> dict[str, list[str]]:
    """Every committed panel's title -> its PromQL expressions."""
    out: dict[str, list[str]] = {}
    for path in sorted((ROOT / "deploy" / "grafana" / "dashboards").glob("*.json")):
        for panel in json.loads(path.read_text(encoding="utf-8"))["panels"]:
            if panel.get("targets"):
                out[f"{path.stem}: {panel['title']}"] = [t["expr"] for t in panel["targets"]]
    return out


def alert_rules() -> dict[str, str]:
    """Every alert's name -> its expression."""
    groups = yaml.safe_load(ALERTS.read_text(encoding="utf-8"))["groups"]
    return {r["alert"]: r["expr"] for g in groups for r in g["rules"]}


def test_the_committed_dashboards_are_what_the_code_generates() -> None:
    generate = load_generator()
    assert set(generate.DASHBOARDS) == {"query", "ingestion", "infra"}
    for name in generate.DASHBOARDS:
        committed = (generate.OUT / f"{name}.json").read_text(encoding="utf-8")
        assert committed == generate.render(name), f"{name}.json is stale: run `make dashboards`"
    assert generate.main(["--check"]) == 0


def test_every_panel_uses_the_provisioned_datasource_and_has_a_unique_id() -> None:
    datasource = yaml.safe_load(
        (ROOT / "deploy/grafana/provisioning/datasources/prometheus.yaml").read_text()
    )["datasources"][0]
    for path in sorted((ROOT / "deploy" / "grafana" / "dashboards").glob("*.json")):
        panels = json.loads(path.read_text(encoding="utf-8"))["panels"]
        ids = [p["id"] for p in panels]
        assert len(set(ids)) == len(ids), path
        for panel in panels:
            for target in panel.get("targets", []):
                assert target["datasource"]["uid"] == datasource["uid"], (path, panel["title"])


def test_panels_and_alerts_name_only_exported_metrics() -> None:
    exported = set(re.findall(r'"(varagity_[a-z0-9_]+)"', METRICS_SOURCE.read_text()))
    expressions = [e for exprs in panel_queries().values() for e in exprs]
    expressions += list(alert_rules().values())
    for expr in expressions:
        for name in re.findall(r"\bvaragity_[a-z0-9_]+", expr):
            base = re.sub(r"_(bucket|count|sum)$", "", name)
            assert base in exported, f"{expr!r} names {name}, which /metrics does not export"


def test_each_alert_has_a_runbook_section() -> None:
    operations = (ROOT / "docs" / "operations.md").read_text(encoding="utf-8")
    for name in alert_rules():
        assert re.search(rf"^#+ .*\b{name}\b", operations, re.MULTILINE), name
