"""Graph settings, the engine registry and the service's kill switch (no models)."""

from __future__ import annotations

import importlib.metadata
import typing
from pathlib import Path

import pytest

from varagity.config import GraphEngineName, SettingsError, load_settings
from varagity.graph.registry import (
    ENGINES,
    UnknownGraphEngine,
    engine_class,
    running_engine_format,
    workdir_for,
)
from varagity.graph.service import GraphDisabled, GraphService, workdir_stamp
from varagity.graph.types import GraphDiff
from varagity.models.chat import ChatClient
from varagity.models.embeddings import EmbeddingClient


def test_defaults_put_the_workdir_under_home(tmp_path: Path) -> None:
    settings = load_settings(VARAGITY_HOME=tmp_path / "home")
    assert settings.GRAPH_ENABLED is True
    assert settings.GRAPH_ENGINE == "lightrag"
    assert Path("graph-docs") == settings.GRAPH_DOCS_PATH
    assert workdir_for(settings) == (tmp_path / "home" / "graph" / "lightrag").resolve()
    moved = load_settings(VARAGITY_HOME=tmp_path / "home", GRAPH_STORAGE_PATH=tmp_path / "g")
    assert workdir_for(moved) == (tmp_path / "g" / "lightrag").resolve()


def test_extraction_must_fit_the_context() -> None:
    with pytest.raises(SettingsError, match="GRAPH_CHUNK_TOKENS"):
        load_settings(
            LLM_CONTEXT_TOKENS=2048, GRAPH_CHUNK_TOKENS=1200, GRAPH_EXTRACT_MAX_TOKENS=1024
        )
    with pytest.raises(SettingsError, match="GRAPH_QUERY_MODE"):
        load_settings(GRAPH_QUERY_MODE="bypass")
    with pytest.raises(SettingsError, match="GRAPH_ENGINE"):
        load_settings(GRAPH_ENGINE="neo4j")


def test_registry_matches_the_setting_vocabulary() -> None:
    assert set(ENGINES) == set(typing.get_args(GraphEngineName))
    for name in ENGINES:
        assert engine_class(name).name == name
    with pytest.raises(UnknownGraphEngine, match="nope"):
        engine_class("nope")


def test_engine_format_is_the_installed_package(tmp_path: Path) -> None:
    fmt = running_engine_format(load_settings(VARAGITY_HOME=tmp_path))
    assert (fmt.name, fmt.package) == ("lightrag", "lightrag-hku")
    assert fmt.version == importlib.metadata.version("lightrag-hku")


def test_disabled_graph_refuses_everything(tmp_path: Path) -> None:
    settings = load_settings(VARAGITY_HOME=tmp_path / "home", GRAPH_ENABLED=False)
    service = GraphService(
        settings, ChatClient.from_settings(settings), EmbeddingClient.from_settings(settings)
    )
    for call in (
        service.reader,
        service.statuses,
        service.size,
        lambda: service.retrieve("who?"),
        lambda: service.neighbourhood("Maya"),
        lambda: service.build(GraphDiff()),
    ):
        with pytest.raises(GraphDisabled, match="GRAPH_ENABLED=false") as raised:
            call()
        assert raised.value.code == "graph_disabled"
    assert not service.workdir.exists()  # nothing was opened or created


def test_workdir_stamp_sees_saves_not_temp_files(tmp_path: Path) -> None:
    assert workdir_stamp(tmp_path / "absent") == ()
    (tmp_path / "kv_store_doc_status.json").write_text("{}")
    first = workdir_stamp(tmp_path)
    (tmp_path / "kv_store_doc_status.json.tmp.1.2.3").write_text("{partial")
    (tmp_path / "varagity_manifest.json").write_text("{}")
    assert workdir_stamp(tmp_path) == first
    (tmp_path / "kv_store_doc_status.json").write_text('{"a": 1}')
    assert workdir_stamp(tmp_path) != first
