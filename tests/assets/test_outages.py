"""What counts as an outage (the step waits and retries) and what as a bad file (that
file fails alone): :func:`varagity_assets.retries.is_outage`, and the waits of the
step retry policy. The step retry itself runs for real in
``test_documents_pipeline.py::test_a_model_server_outage_retries_the_step_not_the_files``."""

from __future__ import annotations

import dagster as dg
import psycopg
import pytest

from tests.conftest import SettingsFactory, free_port
from varagity.corpus_lock import CorpusBusy
from varagity.models.base import ModelError
from varagity.models.embeddings import EmbeddingClient
from varagity_assets.retries import is_outage, step_retry_policy


def test_a_model_server_nobody_listens_on_is_an_outage() -> None:
    client = EmbeddingClient(
        base_url=f"http://127.0.0.1:{free_port()}/v1", model="m", dim=8, max_retries=0
    )
    with pytest.raises(ModelError) as info:
        client.embed_passages(["hello"])
    assert is_outage(info.value)


def test_a_model_server_that_refused_the_input_is_not() -> None:
    refused = ModelError("HTTP 400: input too long", url="http://x/v1", model="m")
    assert not is_outage(refused)


def test_a_server_error_or_timeout_after_the_clients_retries_is_an_outage() -> None:
    busy = ModelError("HTTP 503: loading model", url="http://x/v1", model="m", transient=True)
    assert is_outage(busy)
    # what a step raises from it (the answer evaluation's Failure) still counts
    try:
        try:
            raise busy
        except ModelError as exc:
            raise dg.Failure("answer evaluation could not run") from exc
    except dg.Failure as failure:
        assert is_outage(failure)
    assert not is_outage(dg.Failure("3 transcript day(s) failed"))


def test_step_retries_back_off_exponentially_with_jitter(make_settings: SettingsFactory) -> None:
    settings = make_settings(MODEL_STEP_RETRIES=4, MODEL_STEP_RETRY_DELAY_S=2.0)
    policy = step_retry_policy(settings)
    assert policy.max_retries == 4
    for attempt, centre in ((1, 2.0), (2, 6.0), (3, 14.0), (4, 30.0)):
        waits = {float(policy.calculate_delay(attempt)) for _ in range(50)}
        assert all(centre - 2.0 <= w <= centre + 2.0 for w in waits)
        assert len(waits) > 1  # jittered, so steps hit by one outage come back apart


def test_postgres_gone_is_an_outage_a_cancelled_statement_is_not() -> None:
    with pytest.raises(psycopg.OperationalError) as info:
        psycopg.connect(f"host=127.0.0.1 port={free_port()} connect_timeout=2")
    assert is_outage(info.value)
    assert not is_outage(psycopg.errors.QueryCanceled("canceling statement due to timeout"))
    assert not is_outage(psycopg.errors.UniqueViolation("duplicate key"))
    assert not is_outage(ValueError("not a text file"))


def test_a_corpus_held_by_a_backup_is_an_outage_for_the_step() -> None:
    # a graph build meeting an export waits and retries instead of failing for good (the
    # sensor would not ask for that archive again until it changes)
    busy = CorpusBusy("graph", "backup export run 1234 (pid 9)")
    assert is_outage(busy)
    assert not is_outage(RuntimeError("graph_workdir failed"))
    try:
        raise RuntimeError("apply failed") from busy
    except RuntimeError as wrapped:
        assert is_outage(wrapped)
