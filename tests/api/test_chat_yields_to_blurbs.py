"""A chat turn never waits behind a contextualization pass (issue 28, #4).

Real parts: the embedded Postgres, the packaged chat and embedding servers, the API on
a real uvicorn. A document's blurb pass runs in a thread with its own services (its
own pool, its own :class:`~varagity.stores.model_claims.ModelClaims`: all it shares
with the API is the database, as a Dagster run worker on another host would); a chat
asked while a blurb is being written is told ``queued`` (reason ``context``) or gets
its first token before the pass ends, and the pass, which gave the model up to it,
waits and then finishes every chunk.
"""

from __future__ import annotations

import threading
import time

import pytest

from tests.api.test_chat_queue_and_caps import _chat_events
from tests.conftest import SettingsFactory
from tests.support.api_server import index_files, serve
from varagity.ingest.stages import ContextResult, contextualize_document
from varagity.services import Services

pytestmark = pytest.mark.integration

# Many short sections: many chunks, so the pass is still writing blurbs when the chat
# comes, whatever the machine's speed.
LOGBOOK = "# Harbour logbook\n\n" + "\n\n".join(
    f"## Day {d}\n\nThe pilot boat Kestrel {d} moved {d * 3} containers past buoy "
    f"{d % 7} while the tide gauge read {d * 0.1:.1f} metres."
    for d in range(1, 25)
)
SMALL = {"CHUNK_SIZE": 160, "CHUNK_OVERLAP": 0, "CONTEXT_MAX_TOKENS": 40, "LLM_MAX_TOKENS": 16}


def test_a_chat_asked_during_a_blurb_pass_is_served_before_the_pass_ends(
    make_settings: SettingsFactory, pg_url: str, model_urls: dict[str, str]
) -> None:
    common = {"DATABASE_URL": pg_url, "CHAT_ENGINE": "simple", **SMALL, **model_urls}
    # indexed with raw chunks only; the blurbs are the pass under test
    [doc_id] = index_files(
        make_settings(CONTEXTUALIZE=False, **common), {"logbook.md": LOGBOOK}
    ).values()
    settings = make_settings(CONTEXTUALIZE=True, **common)
    log: list[tuple[str, str, dict[str, object]]] = []
    outcome: list[ContextResult | BaseException] = []
    worker = Services.open(settings)  # the run worker's own pool and claims
    try:
        n_chunks = len(worker.pg.chunks_of(doc_id))
        assert n_chunks >= 8

        def blurb_pass() -> None:
            try:
                outcome.append(
                    contextualize_document(
                        doc_id,
                        pg=worker.pg,
                        bm25=worker.bm25,
                        chat=worker.chat,
                        embedder=worker.embedder,
                        settings=worker.settings,
                        claims=worker.model_claims,
                    )
                )
            except BaseException as exc:
                outcome.append(exc)
            finally:
                log.append(("pass", "ended", {}))

        with serve(settings) as base:
            passing = threading.Thread(target=blurb_pass)
            passing.start()
            # ask while a blurb request holds the model
            deadline = time.monotonic() + 300
            while worker.model_claims.live("blurb") == 0 and not outcome:
                assert time.monotonic() < deadline, "the pass never asked the model"
                time.sleep(0.05)
            assert not outcome, "the pass ended before the chat could be asked"
            _chat_events(base, "How many containers did Kestrel 5 move?", log, "chat")
            passing.join(900)
        assert not passing.is_alive()
        [result] = outcome
        assert isinstance(result, ContextResult), result
        done_after = worker.pg.context_progress(doc_id)
    finally:
        worker.close()

    order = [(who, event) for who, event, _ in log]
    chat = [(event, data) for who, event, data in log if who == "chat"]
    names = [e for e, _ in chat]
    assert names[0] == "retrieval" and names[-1] == "done", names
    served = min(names.index(e) for e in ("queued", "token") if e in names)
    # the chat was told it waits, or answered, while the pass was still going
    assert order.index(("chat", names[served])) < order.index(("pass", "ended")), order
    for event, data in chat:
        if event == "queued":
            assert data["reason"] == "context" and data["position"] == 1, data
            assert "search context" in str(data["message"])
    # the pass gave way, waited (its run did not end) and then wrote every blurb
    assert result.yielded >= 1
    assert not result.paused and not result.superseded
    assert result.contextualized == n_chunks and done_after == (n_chunks, n_chunks)
