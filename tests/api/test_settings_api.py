"""``/api/settings`` on a real uvicorn: the form description, patches, persistence."""

from __future__ import annotations

import logging
from typing import Any

import httpx
import pytest

from tests.support.api_server import index_files, serve
from varagity.config import RUNTIME_EDITABLE, Settings
from varagity.services import Services
from varagity.stores.settings_overrides import SettingsOverrideStore

pytestmark = pytest.mark.integration


def _by_name(body: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {f["name"]: f for f in body["settings"]}


def _patch(base: str, values: dict[str, Any]) -> httpx.Response:
    return httpx.patch(f"{base}/api/settings", json={"values": values}, timeout=30)


def _search_method(base: str) -> str:
    r = httpx.post(f"{base}/api/search", json={"query": "kettle warranty"}, timeout=60)
    assert r.status_code == 200, r.text
    method: str = r.json()["method"]
    return method


def test_get_describes_every_setting_for_a_form(stack_settings: Settings) -> None:
    with serve(stack_settings) as base:
        r = httpx.get(f"{base}/api/settings", timeout=30)
    assert r.status_code == 200, r.text
    body = r.json()
    fields = _by_name(body)
    assert set(fields) == set(Settings.model_fields)
    assert body["stale"] is None and body["skipped_overrides"] == []
    assert {n for n, f in fields.items() if f["runtime_editable"]} == set(RUNTIME_EDITABLE)

    chunk = fields["CHUNK_SIZE"]
    assert chunk["type"] == "integer" and chunk["value"] == 1200 and chunk["default"] == 1200
    assert (chunk["minimum"], chunk["maximum"]) == (16, 20000)
    assert chunk["reingest_affecting"] and not chunk["overridden"]
    assert "characters" in chunk["description"]
    method = fields["RETRIEVAL_METHOD"]
    assert method["type"] == "enum" and method["value"] == "hybrid"
    assert method["choices"] == ["semantic", "bm25", "hybrid", "reranked", "hyde"]
    assert not method["reingest_affecting"]
    percentile = fields["SEMANTIC_BREAKPOINT_PERCENTILE"]
    assert percentile["type"] == "number"
    assert (percentile["exclusive_minimum"], percentile["exclusive_maximum"]) == (0, 100)
    assert fields["CONTEXTUALIZE"]["type"] == "boolean"
    # CONTEXTUALIZE=false comes from the environment, over a default of true
    assert fields["CONTEXTUALIZE"]["environment_value"] is False
    assert fields["CONTEXTUALIZE"]["default"] is True
    assert fields["DOCS_PATH"]["type"] == "path" and not fields["DOCS_PATH"]["runtime_editable"]
    assert fields["DATABASE_URL"]["nullable"] and fields["DATABASE_URL"]["type"] == "string"
    assert fields["LLM_API_KEY"]["secret"] and fields["LLM_API_KEY"]["value"] == "********"


def test_patch_applies_at_once_and_null_removes(stack_settings: Settings) -> None:
    index_files(stack_settings, {"kettle.md": "# Kettle\n\nThe kettle has a 27 month warranty.\n"})
    with serve(stack_settings) as base:
        assert _search_method(base) == "hybrid"
        r = _patch(base, {"RETRIEVAL_METHOD": "bm25", "TOP_K": 8})
        assert r.status_code == 200, r.text
        body = r.json()
        assert body["changed"] == ["RETRIEVAL_METHOD", "TOP_K"]
        fields = _by_name(body)
        assert fields["RETRIEVAL_METHOD"]["value"] == "bm25"
        assert fields["RETRIEVAL_METHOD"]["overridden"]
        assert fields["RETRIEVAL_METHOD"]["environment_value"] == "hybrid"
        assert fields["TOP_K"]["value"] == 8
        assert _search_method(base) == "bm25"  # the next search uses the new default

        r = _patch(base, {"RETRIEVAL_METHOD": None})
        assert r.status_code == 200, r.text
        fields = _by_name(r.json())
        assert fields["RETRIEVAL_METHOD"]["value"] == "hybrid"
        assert not fields["RETRIEVAL_METHOD"]["overridden"]
        assert fields["TOP_K"]["overridden"]
        assert _search_method(base) == "hybrid"


def test_invalid_patches_change_nothing_and_say_why(stack_settings: Settings) -> None:
    with serve(stack_settings) as base:
        before = httpx.get(f"{base}/api/settings", timeout=30).json()
        cases: list[tuple[dict[str, Any], str, set[tuple[str | None, str]]]] = [
            (
                {"TOP_K": 7, "NO_SUCH_SETTING": 1},
                "unknown_setting",
                {("NO_SUCH_SETTING", "unknown_setting")},
            ),
            (
                {"TOP_K": 7, "DOCS_PATH": "/tmp/elsewhere"},
                "not_runtime_editable",
                {("DOCS_PATH", "not_runtime_editable")},
            ),
            (
                {"SEMANTIC_WEIGHT": 0.5, "TOP_K": 7},
                "invalid_settings",
                {
                    ("SEMANTIC_WEIGHT", "invalid_combination"),
                    ("BM25_WEIGHT", "invalid_combination"),
                },
            ),
            (
                {"TOP_K": 0, "CHUNK_SIZE": "big", "RERANK_ENABLED": "perhaps"},
                "invalid_settings",
                {
                    ("TOP_K", "invalid_value"),
                    ("CHUNK_SIZE", "invalid_value"),
                    ("RERANK_ENABLED", "invalid_value"),
                },
            ),
            (
                {"RERANK_TOP_N": 100},  # over RERANK_CANDIDATES (40)
                "invalid_settings",
                {
                    ("RERANK_TOP_N", "invalid_combination"),
                    ("RERANK_CANDIDATES", "invalid_combination"),
                },
            ),
        ]
        for values, code, errors in cases:
            r = _patch(base, values)
            assert r.status_code == 422, (values, r.text)
            body = r.json()
            assert body["code"] == code, body
            assert body["message"].startswith("Settings not changed")
            assert {(e["field"], e["code"]) for e in body["errors"]} == errors, body
            assert all(e["message"] for e in body["errors"])
        r = httpx.patch(f"{base}/api/settings", json={"values": {"TOP_K": [1]}}, timeout=30)
        assert r.status_code == 422 and r.json()["code"] == "invalid_request"
        after = httpx.get(f"{base}/api/settings", timeout=30).json()
    assert after == before
    services = Services.open(stack_settings)
    try:
        assert SettingsOverrideStore(services.pg).rows() == []
    finally:
        services.close()


def test_stale_flag_only_when_a_reingest_setting_changes_on_a_non_empty_corpus(
    stack_settings: Settings,
) -> None:
    with serve(stack_settings) as base:
        r = _patch(base, {"CHUNK_SIZE": 600})
        assert r.status_code == 200 and r.json()["stale"] is None  # nothing indexed yet
    index_files(stack_settings, {"soup.txt": "Red lentil soup simmers for 25 minutes.\n"})
    with serve(stack_settings) as base:
        r = _patch(base, {"TOP_K": 4})
        assert r.status_code == 200 and r.json()["stale"] is None
        r = _patch(base, {"CHUNK_SIZE": 300, "CHUNK_OVERLAP": 30})
        assert r.status_code == 200, r.text
        stale = r.json()["stale"]
        assert stale is not None
        assert "CHUNK_SIZE 600->300" in stale["reason"]
        assert "CHUNK_OVERLAP 200->30" in stale["reason"]
        assert httpx.get(f"{base}/api/settings", timeout=30).json()["stale"] == stale


def test_overrides_survive_a_restart_and_a_bad_row_is_skipped(
    stack_settings: Settings, caplog: pytest.LogCaptureFixture
) -> None:
    with serve(stack_settings) as base:
        assert _patch(base, {"RETRIEVAL_METHOD": "bm25", "OCR_DPI": 300}).status_code == 200
    # a row that stopped validating (written by an older version, edited by hand)
    services = Services.open(stack_settings)
    try:
        with services.pg.connection() as conn:
            conn.execute("UPDATE app_settings SET value = 'lots' WHERE key = 'OCR_DPI'")
    finally:
        services.close()
    with (
        caplog.at_level(logging.ERROR, logger="varagity.stores.settings_overrides"),
        serve(stack_settings) as base,
    ):
        body = httpx.get(f"{base}/api/settings", timeout=30).json()
        assert _search_method(base) == "bm25"
        fields = _by_name(body)
        assert fields["RETRIEVAL_METHOD"]["value"] == "bm25"
        assert fields["RETRIEVAL_METHOD"]["overridden"]
        assert fields["OCR_DPI"]["value"] == 200 and not fields["OCR_DPI"]["overridden"]
        [skipped] = body["skipped_overrides"]
        assert (skipped["name"], skipped["value"]) == ("OCR_DPI", "lots")
        assert "integer" in skipped["reason"]
        # setting it again replaces the bad row
        r = _patch(base, {"OCR_DPI": 150})
        assert r.status_code == 200 and r.json()["skipped_overrides"] == []
    assert any(
        "OCR_DPI='lots'" in rec.getMessage() for rec in caplog.records if rec.levelname == "ERROR"
    )
