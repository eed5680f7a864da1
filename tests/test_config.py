"""Settings validation: bad values fail fast, naming the field and the fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from varagity.config import Settings, SettingsError, load_settings


def test_defaults_are_the_embedded_stack(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    s = load_settings()
    assert s.DATABASE_URL is None and s.ELASTICSEARCH_URL is None
    assert s.RETRIEVAL_METHOD == "hybrid"
    assert s.llm_url == f"http://127.0.0.1:{s.LLM_PORT}/v1"
    assert s.bm25_path == (tmp_path / ".varagity" / "bm25").resolve()


@pytest.mark.parametrize(
    ("overrides", "reader_url"),
    [
        # the embedded stack serves the packaged reader beside the chat model
        ({}, "http://127.0.0.1:8093/v1"),
        ({"GRAPH_READER_PORT": 9100}, "http://127.0.0.1:9100/v1"),
        ({"GRAPH_READER_BASE_URL": "http://gpu-1:8000/v1/"}, "http://gpu-1:8000/v1"),
        # the chat model reads: named so, the same model, or the operator's chat server
        ({"GRAPH_READER_LLM": "chat"}, None),
        ({"LOCAL_LLM": "qwen2.5-coder-1.5b"}, None),
        ({"LLM_BASE_URL": "http://vllm:8000/v1"}, None),
        (
            {"LLM_BASE_URL": "http://vllm:8000/v1", "GRAPH_READER_BASE_URL": "http://r:1/v1"},
            "http://r:1/v1",
        ),
    ],
)
def test_the_graph_reader_is_its_own_server_unless_the_chat_model_reads(
    overrides: dict[str, object],
    reader_url: str | None,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    s = load_settings(**overrides)
    assert s.reader_url == reader_url
    assert s.local_reader == (reader_url is not None and "GRAPH_READER_BASE_URL" not in overrides)


def test_the_chat_model_reading_frees_the_readers_port(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    s = load_settings(GRAPH_READER_LLM="chat", GRAPH_READER_PORT=8091, LLM_PORT=8091)
    assert s.reader_url is None and not s.local_reader


@pytest.mark.parametrize(
    ("overrides", "fragment"),
    [
        ({"SEMANTIC_WEIGHT": 0.7, "BM25_WEIGHT": 0.2}, "must sum to 1.0"),
        ({"RETRIEVAL_METHOD": "magic"}, "RETRIEVAL_METHOD"),
        ({"CHUNK_SIZE": 100, "CHUNK_OVERLAP": 100}, "CHUNK_OVERLAP (100) must be smaller"),
        ({"DATABASE_URL": "mysql://x"}, "postgresql://"),
        ({"LLM_BASE_URL": "localhost:8080"}, "not an http(s):// URL"),
        ({"API_PORT": 3000, "DAGSTER_PORT": 3000}, "must all differ"),
        ({"GRAPH_READER_PORT": 8091, "LLM_PORT": 8091}, "and GRAPH_READER_PORT must all differ"),
        ({"GRAPH_READER_LLM": "llama-70b"}, "GRAPH_READER_LLM"),
        ({"GRAPH_READER_BASE_URL": "reader:8093"}, "not an http(s):// URL"),
        ({"TOP_K": 0}, "TOP_K"),
    ],
)
def test_invalid_settings_fail_with_a_clear_message(
    overrides: dict[str, object], fragment: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SettingsError) as err:
        load_settings(**overrides)
    assert fragment in str(err.value)
    assert str(err.value).startswith("Invalid Varagity settings")


def test_docs_path_that_is_a_file_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "file").write_text("x")
    with pytest.raises(SettingsError, match="is not a directory"):
        load_settings(DOCS_PATH=tmp_path / "file")


def test_env_and_dotenv_are_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".env").write_text("CHUNK_SIZE=1234\nTOP_K=7\n")
    monkeypatch.setenv("TOP_K", "9")
    s = load_settings()
    assert s.CHUNK_SIZE == 1234  # from .env
    assert s.TOP_K == 9  # environment beats .env


def test_blank_urls_mean_unset(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DATABASE_URL", "  ")
    assert load_settings().DATABASE_URL is None


def test_every_setting_says_what_it_does() -> None:
    """One description per setting feeds .env.example, the settings route and the web
    drawer: none may be left without (a runtime-editable one would show no help)."""
    from varagity.config import Settings

    bare = [name for name, field in Settings.model_fields.items() if not field.description]
    assert bare == [], f"settings without a description: {', '.join(bare)}"


def test_env_example_lists_every_setting() -> None:
    from varagity.config import render_env_example

    text = (Path(__file__).parents[1] / ".env.example").read_text()
    for name in Settings.model_fields:
        assert f"# {name}=" in text, f"{name} missing from .env.example"
    assert text == render_env_example(), "run `make env-example`"


def test_settings_env_round_trips(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from varagity.config import settings_env

    monkeypatch.chdir(tmp_path)
    s = load_settings(CONTEXTUALIZE=False, CHUNK_SIZE=321, DOCS_PATH=tmp_path)
    env = settings_env(s)
    assert env == {"CONTEXTUALIZE": "false", "CHUNK_SIZE": "321", "DOCS_PATH": str(tmp_path)}
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    again = load_settings()
    assert (False, 321, tmp_path) == (again.CONTEXTUALIZE, again.CHUNK_SIZE, again.DOCS_PATH)


def test_backup_schedule_is_a_cron_or_blank(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert load_settings().BACKUP_SCHEDULE == ""  # no schedule by default
    assert load_settings(BACKUP_SCHEDULE="  0 3 * *  1-5 ").BACKUP_SCHEDULE == "0 3 * * 1-5"
    for bad in ("every night", "0 3 * *", "0 3 * * * *", "0 3 * * mon;rm"):
        with pytest.raises(SettingsError, match=r"BACKUP_SCHEDULE .* is not a 5-field cron"):
            load_settings(BACKUP_SCHEDULE=bad)
