"""The web client in Debian's chromium against the real API, stores and model servers.

``web/e2e/chat.mjs`` (playwright-core) drives the built client: it asks a question,
follows the streamed answer, its evidence and a citation, stops and retries an answer,
checks the narrow layout and an in-band model error, and saves a screenshot of each
screen under ``tests/.artifacts/web/chat/``.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.conftest import SettingsFactory, free_port
from tests.support.api_server import index_files, serve
from tests.web.harness import ARTIFACTS, missing_toolchain, run_script, screenshot_names
from varagity.config import Settings

pytestmark = pytest.mark.integration

OUT = ARTIFACTS / "chat"
# A plain question with no "[n]" to echo: the citation the answer carries comes from the
# answer stream (the model's own marker, or the one attribution adds for the sentence
# the kettle passage supports), so the citation link is exercised on real output.
QUESTION = "How long is the warranty on the Tern K2 kettle?"


@pytest.fixture
def web_settings(
    make_settings: SettingsFactory, pg_url: str, model_urls: dict[str, str]
) -> Iterator[Settings]:
    """The small corpus indexed into fresh stores; short answers keep the run quick."""
    missing = missing_toolchain()
    assert not missing, f"run `make install` first; missing: {', '.join(missing)}"
    settings = make_settings(
        DATABASE_URL=pg_url,
        LLM_MAX_TOKENS=48,
        LLM_TEMPERATURE=0,
        CONTEXTUALIZE=True,
        CONTEXT_MAX_TOKENS=40,
        **model_urls,
    )
    index_files(settings)
    yield settings


def test_chat_in_a_real_browser(web_settings: Settings) -> None:
    dead_llm = web_settings.model_copy(
        update={"LLM_BASE_URL": f"http://127.0.0.1:{free_port()}/v1", "MODEL_MAX_RETRIES": 0}
    )
    with serve(web_settings) as base, serve(dead_llm) as failing:
        report = run_script(
            "chat.mjs",
            OUT,
            {
                "VARAGITY_URL": base,
                "VARAGITY_FAILING_URL": failing,
                "E2E_QUESTION": QUESTION,
                "E2E_EXPECT_FILE": "kettle.md",
                "E2E_DAGSTER_URL": web_settings.dagster_url,
            },
            timeout=600,
        )

    assert report["sources"][0]["title"].startswith("[1] kettle.md")
    assert report["sources"][0]["lineage"] == (
        f"{web_settings.dagster_url}/assets/indexed_document?view=partitions&partition=kettle.md"
    )
    assert "[" not in QUESTION
    assert report["citations"], report["answer"]
    assert "27" in report["answer"]
    assert "model_unavailable" in report["error"]
    assert screenshot_names(report) == {
        "01-chat-empty.png",
        "02-chat-answer.png",
        "03-chat-stopped.png",
        "04-chat-narrow.png",
        "05-chat-error.png",
    }
