"""Runtime settings overrides: validation, replay, storage and the Services that use them."""

from __future__ import annotations

import logging
from datetime import UTC, datetime

import pytest

from tests.conftest import SettingsFactory
from tests.support.records import document_row, stored_chunks
from varagity.config import load_settings, settings_env
from varagity.services import Services
from varagity.stores.corpus_state import CorpusState
from varagity.stores.settings_overrides import (
    OverrideRow,
    OverrideValidationError,
    SettingsOverrideStore,
    apply_overrides,
    env_string,
    validate_overrides,
)

NOW = datetime(2025, 1, 1, tzinfo=UTC)


def _rows(**values: str) -> list[OverrideRow]:
    return [OverrideRow(name, value, NOW) for name, value in values.items()]


def _errors(exc: pytest.ExceptionInfo[OverrideValidationError]) -> set[tuple[str | None, str]]:
    return {(e.field, e.code) for e in exc.value.errors}


def test_env_string_spells_values_like_the_environment() -> None:
    assert env_string(True) == "true" and env_string(False) == "false"
    assert env_string(800) == "800" and env_string(0.25) == "0.25"
    assert env_string("bm25") == "bm25"


def test_valid_overrides_apply_over_the_base_and_count_as_set() -> None:
    base = load_settings(TOP_K=3)
    effective = validate_overrides(
        base, {"CHUNK_SIZE": "400", "CONTEXTUALIZE": "false", "RETRIEVAL_METHOD": "bm25"}
    )
    assert (effective.CHUNK_SIZE, effective.CONTEXTUALIZE) == (400, False)
    assert effective.RETRIEVAL_METHOD == "bm25" and effective.TOP_K == 3
    assert base.CHUNK_SIZE == 1200  # the base is untouched
    # child processes started from the effective settings inherit the overrides
    assert settings_env(effective) == {
        "CHUNK_SIZE": "400",
        "CONTEXTUALIZE": "false",
        "RETRIEVAL_METHOD": "bm25",
        "TOP_K": "3",
    }


def test_each_invalid_override_is_named_with_a_reason() -> None:
    base = load_settings()
    with pytest.raises(OverrideValidationError) as exc:
        validate_overrides(base, {"NOT_A_SETTING": "1", "DATABASE_URL": "postgresql://x/y"})
    assert _errors(exc) == {
        ("NOT_A_SETTING", "unknown_setting"),
        ("DATABASE_URL", "not_runtime_editable"),
    }
    with pytest.raises(OverrideValidationError) as exc:
        validate_overrides(base, {"TOP_K": "0", "CHUNK_SIZE": "big", "RETRIEVAL_METHOD": "x"})
    assert _errors(exc) == {
        ("TOP_K", "invalid_value"),
        ("CHUNK_SIZE", "invalid_value"),
        ("RETRIEVAL_METHOD", "invalid_value"),
    }
    # a cross-field rule is attributed to every setting its message names
    with pytest.raises(OverrideValidationError) as exc:
        validate_overrides(base, {"SEMANTIC_WEIGHT": "0.5"})
    assert _errors(exc) == {
        ("SEMANTIC_WEIGHT", "invalid_combination"),
        ("BM25_WEIGHT", "invalid_combination"),
    }
    assert "must sum to 1.0" in exc.value.errors[0].message
    both = validate_overrides(base, {"SEMANTIC_WEIGHT": "0.5", "BM25_WEIGHT": "0.5"})
    assert (both.SEMANTIC_WEIGHT, both.BM25_WEIGHT) == (0.5, 0.5)


def test_replay_skips_rows_that_no_longer_validate_and_logs_them(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # the environment now allows fewer rerank candidates than a stored RERANK_TOP_N
    base = load_settings(RERANK_CANDIDATES=10, RERANK_TOP_N=5)
    rows = _rows(
        TOP_K="9",
        RERANK_TOP_N="20",
        OCR_DPI="lots",
        DATABASE_URL="postgresql://elsewhere/db",
        SEMANTIC_WEIGHT="0.6",
        BM25_WEIGHT="0.4",
    )
    with caplog.at_level(logging.ERROR, logger="varagity.stores.settings_overrides"):
        effective, problems = apply_overrides(base, rows)
    assert (effective.TOP_K, effective.SEMANTIC_WEIGHT, effective.BM25_WEIGHT) == (9, 0.6, 0.4)
    assert (effective.RERANK_TOP_N, effective.OCR_DPI, effective.DATABASE_URL) == (5, 200, None)
    skipped = {p.name: p for p in problems}
    assert set(skipped) == {"RERANK_TOP_N", "OCR_DPI", "DATABASE_URL"}
    assert "cannot exceed RERANK_CANDIDATES" in skipped["RERANK_TOP_N"].reason
    assert skipped["OCR_DPI"].value == "lots"
    logged = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert len(logged) == 3
    assert any("OCR_DPI='lots'" in m and "valid integer" in m for m in logged)


@pytest.mark.integration
def test_rows_round_trip_in_one_transaction_without_metadata_keys(
    make_settings: SettingsFactory, pg_url: str
) -> None:
    services = Services.open(make_settings(DATABASE_URL=pg_url))
    try:
        store = SettingsOverrideStore(services.pg)
        CorpusState(services.pg).rebuilt_with(services.settings)  # writes a "_" metadata row
        store.save({"TOP_K": "8", "CHUNK_SIZE": "400"})
        store.save({"RETRIEVAL_METHOD": "bm25"}, remove=["CHUNK_SIZE"])
        assert [(r.name, r.value) for r in store.rows()] == [
            ("RETRIEVAL_METHOD", "bm25"),
            ("TOP_K", "8"),
        ]
        with pytest.raises(OverrideValidationError) as exc:
            store.save({"TOP_K": "9", "LLM_BASE_URL": "http://x"})
        assert _errors(exc) == {("LLM_BASE_URL", "not_runtime_editable")}
        assert [r.value for r in store.rows() if r.name == "TOP_K"] == ["8"]  # nothing written
    finally:
        services.close()


@pytest.mark.integration
def test_services_open_with_the_stored_overrides_and_switch_at_runtime(
    make_settings: SettingsFactory, pg_url: str
) -> None:
    settings = make_settings(DATABASE_URL=pg_url)
    first = Services.open(settings)
    try:
        assert first.settings == first.base_settings and first.overrides == {}
        changed = first.update_settings({"RETRIEVAL_METHOD": "bm25", "LLM_MAX_TOKENS": "32"})
        assert changed == ["LLM_MAX_TOKENS", "RETRIEVAL_METHOD"]
        # the running process switched: new retrievers, a chat client with the new cap
        assert first.retriever().method == "bm25"
        assert first.chat.max_tokens == 32
        assert first.base_settings.RETRIEVAL_METHOD == "hybrid"
        with pytest.raises(ValueError, match="DOCS_PATH cannot change"):
            first.apply_settings(first.settings.model_copy(update={"DOCS_PATH": "/elsewhere"}))
        with pytest.raises(OverrideValidationError):
            first.update_settings({"RETRIEVAL_METHOD": "hybrid", "RERANK_TOP_N": "5000"})
        assert first.retriever().method == "bm25"  # a refused change changes nothing
    finally:
        first.close()

    # a second process (a Dagster run, the CLI) opens with the same effective settings
    second = Services.open(settings)
    try:
        assert second.settings.RETRIEVAL_METHOD == "bm25"
        assert second.settings.LLM_MAX_TOKENS == 32
        assert second.overrides == {"LLM_MAX_TOKENS": "32", "RETRIEVAL_METHOD": "bm25"}
        assert second.update_settings({"LLM_MAX_TOKENS": None}) == ["LLM_MAX_TOKENS"]
        assert second.settings.LLM_MAX_TOKENS == settings.LLM_MAX_TOKENS
        assert second.update_settings({"LLM_MAX_TOKENS": None}) == []  # already gone
    finally:
        second.close()


@pytest.mark.integration
def test_a_reingest_setting_change_flags_only_a_non_empty_corpus(
    make_settings: SettingsFactory, pg_url: str
) -> None:
    services = Services.open(make_settings(DATABASE_URL=pg_url))
    try:
        corpus = CorpusState(services.pg)
        services.update_settings({"CHUNK_SIZE": "500"})
        assert corpus.stale() is None  # empty corpus: nothing to rebuild
        services.pg.write_document(document_row("d1", 0), stored_chunks("d1", 0, 0))
        services.update_settings({"TOP_K": "7"})
        assert corpus.stale() is None  # not a reingest-affecting setting
        services.update_settings({"CHUNK_SIZE": "500"})
        assert corpus.stale() is None  # same value: nothing changed
        services.update_settings({"CHUNK_SIZE": "300"})
        flag = corpus.stale()
        assert flag is not None and "CHUNK_SIZE 500->300" in flag.reason
    finally:
        services.close()
