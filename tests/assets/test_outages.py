"""What counts as an outage (the step waits and retries) and what as a bad file (that
file fails alone): :func:`varagity_assets.defs.ingest.per_file.is_outage`. The step
retry itself runs for real in
``test_documents_pipeline.py::test_an_embedding_server_that_is_restarting_retries_the_step_not_the_files``."""

from __future__ import annotations

import psycopg
import pytest

from tests.conftest import free_port
from varagity.models.base import ModelError
from varagity.models.embeddings import EmbeddingClient
from varagity_assets.defs.ingest.per_file import is_outage


def test_a_model_server_nobody_listens_on_is_an_outage() -> None:
    client = EmbeddingClient(
        base_url=f"http://127.0.0.1:{free_port()}/v1", model="m", dim=8, max_retries=0
    )
    with pytest.raises(ModelError) as info:
        client.embed_passages(["hello"])
    assert is_outage(info.value)


def test_a_model_server_that_answered_is_not() -> None:
    refused = ModelError("HTTP 400: input too long", url="http://x/v1", model="m")
    assert not is_outage(refused)


def test_postgres_gone_is_an_outage_a_cancelled_statement_is_not() -> None:
    with pytest.raises(psycopg.OperationalError) as info:
        psycopg.connect(f"host=127.0.0.1 port={free_port()} connect_timeout=2")
    assert is_outage(info.value)
    assert not is_outage(psycopg.errors.QueryCanceled("canceling statement due to timeout"))
    assert not is_outage(psycopg.errors.UniqueViolation("duplicate key"))
    assert not is_outage(ValueError("not a text file"))
