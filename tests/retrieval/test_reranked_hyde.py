"""Reranking and HyDE on real parts.

Embedded Postgres + pgvector, a Tantivy index in a temp dir, the local chat and
MiniLM servers (whose ``/v1/rerank`` is the embedding-similarity scorer, not a
cross-encoder). The only stand-in is :class:`ProtocolRecorder`, a tiny HTTP server
that answers in TEI's bare-list shape and records what the client sent.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

import pytest

from tests.conftest import SettingsFactory, free_port
from varagity.config import SettingsError, load_settings
from varagity.models.base import ModelError
from varagity.models.chat import ChatClient
from varagity.models.rerank import RerankClient
from varagity.retrieval.base import Retrieval
from varagity.retrieval.hybrid import HybridRetriever
from varagity.retrieval.hyde import HydeRetriever, clean_passage
from varagity.services import Services, ingest_file
from varagity_api.schemas.search import SearchRequest

pytestmark = pytest.mark.integration

CORPUS = {
    "volcano.md": (
        "# Volcanoes\n\nA volcano erupts when magma rises through cracks in the crust. "
        "Pressure from dissolved gases in the magma drives explosive eruptions.\n\n"
        "Lava flows, ash clouds and pyroclastic flows are the main hazards near an "
        "active volcano; basaltic lava is runny, rhyolitic magma is sticky."
    ),
    "sourdough.md": (
        "# Sourdough bread\n\nA sourdough starter is a culture of wild yeast and "
        "lactobacilli fed with flour and water. Bakers knead the dough and let it "
        "proof overnight.\n\nBake the loaf in a hot Dutch oven for a crisp crust and "
        "an open crumb."
    ),
    "taxes.md": (
        "# Filing taxes\n\nThe income tax return is due in April. Keep receipts for "
        "deductions such as charitable donations and home office expenses.\n\n"
        "Late filing leads to penalties and interest on the unpaid tax."
    ),
    "tomatoes.md": (
        "# Growing tomatoes\n\nTomato plants need full sun, deep watering and "
        "support from stakes or cages. Aphids and hornworms are common pests.\n\n"
        "Pinch off suckers to focus the plant's energy on fruit."
    ),
    "cycling.md": (
        "# Bicycle maintenance\n\nLubricate the chain every few hundred kilometres "
        "and check tyre pressure before each ride.\n\nWorn brake pads squeal and "
        "must be replaced; adjust the derailleur if gears skip."
    ),
    "coffee.md": (
        "# Brewing coffee\n\nA pour-over needs freshly ground beans, water just off "
        "the boil and a slow, even pour.\n\nEspresso forces hot water through finely "
        "ground coffee at about nine bars of pressure."
    ),
}

QUERY = "what makes a volcano erupt explosively"


@pytest.fixture
def make_services(
    make_settings: SettingsFactory, pg_url: str, model_urls: dict[str, str]
) -> Iterator[Any]:
    """Build settings (small chunks) over the corpus, ingest it, hand back Services."""
    opened: list[Services] = []

    def build(**overrides: object) -> Services:
        settings = make_settings(
            DATABASE_URL=pg_url, CHUNK_SIZE=160, CHUNK_OVERLAP=0, **model_urls, **overrides
        )
        for name, text in CORPUS.items():
            (settings.docs_path / name).write_text(text, encoding="utf-8")
        services = Services.open(settings)
        opened.append(services)
        for name in CORPUS:
            ingest_file(services, name)
        return services

    yield build
    for services in opened:
        services.close()


def _ids(retrieval: Retrieval) -> list[str]:
    return [c.record.chunk_id for c in retrieval.chunks]


class _ListHandler(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def captured() -> Iterator[_ListHandler]:
    """Records from varagity.retrieval (works under ``-p no:logging``)."""
    logger = logging.getLogger("varagity.retrieval")
    handler = _ListHandler()
    old = logger.level
    logger.setLevel(logging.DEBUG)
    logger.addHandler(handler)
    yield handler
    logger.removeHandler(handler)
    logger.setLevel(old)


# --- the protocol client ---------------------------------------------------------


def test_local_rerank_endpoint_scores_relevant_first(model_urls: dict[str, str]) -> None:
    client = RerankClient(base_url=model_urls["EMBEDDING_BASE_URL"], model="embedding-similarity")
    docs = [CORPUS["sourdough.md"], CORPUS["volcano.md"], CORPUS["taxes.md"]]
    try:
        results = client.rerank(QUERY, docs)
        assert results[0].index == 1  # indexes map back to the list sent
        assert sorted(r.index for r in results) == [0, 1, 2]
        assert results[0].score > results[1].score >= results[2].score
        assert results[0].score - max(r.score for r in results[1:]) > 0.2
        top = client.rerank(QUERY, docs, top_n=1)
        assert len(top) == 1 and top[0].index == 1
        assert client.ping() == ["all-MiniLM-L6-v2-similarity"]
    finally:
        client.close()
    wrong = RerankClient(base_url=model_urls["EMBEDDING_BASE_URL"], model="bge-reranker-v2-m3")
    with pytest.raises(ModelError, match="404"):
        wrong.rerank(QUERY, docs)
    wrong.close()


class ProtocolRecorder(BaseHTTPRequestHandler):
    """Protocol recorder: answers /rerank in TEI's bare-list shape, failing first on request."""

    bodies: ClassVar[list[dict[str, Any]]] = []
    fail_first = 0

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).bodies.append({"path": self.path, **body})
        if type(self).fail_first > 0:
            type(self).fail_first -= 1
            self.send_response(503)
            self.end_headers()
            return
        docs = body["texts"]
        payload = [{"index": i, "score": float(len(d))} for i, d in enumerate(docs)]
        raw = json.dumps(list(reversed(payload))).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def log_message(self, *args: object) -> None:
        """Quiet."""


def test_tei_bare_list_shape_and_retry() -> None:
    ProtocolRecorder.bodies = []
    ProtocolRecorder.fail_first = 1
    server = ThreadingHTTPServer(("127.0.0.1", free_port()), ProtocolRecorder)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    client = RerankClient(
        base_url=f"http://127.0.0.1:{server.server_address[1]}",
        model="BAAI/bge-reranker-base",
        backoff_s=0.01,
    )
    try:
        results = client.rerank("q", ["aa", "a", "aaaa"])
    finally:
        client.close()
        server.shutdown()
    assert [(r.index, r.score) for r in results] == [(2, 4.0), (0, 2.0), (1, 1.0)]
    assert len(ProtocolRecorder.bodies) == 2  # the 503 was retried
    sent = ProtocolRecorder.bodies[-1]
    assert sent["path"] == "/rerank"
    assert sent["documents"] == sent["texts"] == ["aa", "a", "aaaa"]
    assert sent["query"] == "q" and sent["model"] == "BAAI/bge-reranker-base"
    assert sent["return_documents"] is False


# --- the reranked retriever --------------------------------------------------------


@pytest.mark.parametrize("base_method", ["hybrid", "bm25"])
def test_reranked_traces(make_services: Any, base_method: str) -> None:
    services = make_services(RERANK_CANDIDATES=10, RERANK_TOP_N=3, RERANK_BASE_METHOD=base_method)
    reranked = services.retriever("reranked")
    result = reranked.retrieve(QUERY, 5)
    base = services.retriever(base_method).retrieve(QUERY, 10)
    pre = {cid: i for i, cid in enumerate(_ids(base), start=1)}
    base_traces = {c.record.chunk_id: c.trace for c in base.chunks}
    assert result.method == "reranked"
    assert len(result.chunks) == min(3, len(base.chunks))  # min(k=5, RERANK_TOP_N=3, found)
    assert len(result.chunks) >= 2
    assert "rerank" in result.timings_ms and "bm25" in result.timings_ms
    assert result.chunks[0].record.relative_path == "volcano.md"
    scores = [c.score for c in result.chunks]
    assert scores == sorted(scores, reverse=True)
    for post, chunk in enumerate(result.chunks, start=1):
        trace = chunk.trace
        assert trace is not None and trace.final_rank == post
        assert trace.rerank_score == chunk.score
        assert trace.rerank_delta == pre[chunk.record.chunk_id] - post
        old = base_traces[chunk.record.chunk_id]
        assert old is not None
        assert (trace.semantic_rank, trace.bm25_rank, trace.fused_rank, trace.fused_score) == (
            old.semantic_rank,
            old.bm25_rank,
            old.fused_rank,
            old.fused_score,
        )
    if base_method == "bm25":  # stop words ("what", "a") no longer match sourdough/coffee
        assert {c.record.relative_path for c in base.chunks} == {"volcano.md"}
    # the score is the reranker's judgement of the ORIGINAL content
    direct = services.reranker.rerank(QUERY, [result.chunks[0].record.content])
    assert direct[0].score == pytest.approx(result.chunks[0].score, abs=1e-5)


def test_rerank_disabled_returns_base_ranking(make_services: Any, captured: _ListHandler) -> None:
    services = make_services(RERANK_ENABLED=False, RERANK_BASE_METHOD="hybrid")
    result = services.retriever("reranked").retrieve(QUERY, 5)
    base = services.retriever("hybrid").retrieve(QUERY, 5)
    assert result.method == "reranked"
    assert _ids(result) == _ids(base)
    assert [c.trace for c in result.chunks] == [c.trace for c in base.chunks]
    assert all(c.trace and c.trace.rerank_score is None for c in result.chunks)
    assert all(c.trace and c.trace.rerank_delta is None for c in result.chunks)
    assert "rerank" not in result.timings_ms
    notes = [r for r in captured.records if "RERANK_ENABLED=false" in r.getMessage()]
    assert len(notes) == 1 and notes[0].levelno == logging.INFO


# --- HyDE --------------------------------------------------------------------------


def test_clean_passage() -> None:
    assert clean_passage("<think>hmm</think>\nPassage: Magma rises.", 50) == "Magma rises."
    assert clean_passage('**Hypothetical passage:** "Lava."', 50) == "Lava."
    assert clean_passage("<think>never closed", 50) == ""
    long = clean_passage("word " * 500, 20)
    assert 0 < len(long.split()) <= 20


def test_hyde_replaces_only_the_dense_arm(make_services: Any) -> None:
    services = make_services(HYDE_BASE_METHOD="hybrid", HYDE_MAX_TOKENS=48)
    hyde = services.retriever("hyde")
    result = hyde.retrieve(QUERY, 5)
    raw = services.retriever("hybrid").retrieve(QUERY, 5)
    assert result.method == "hyde"
    assert result.hypothetical, "the model wrote no passage"
    assert {"hyde_generate", "hyde_embed", "semantic", "bm25", "fusion"} <= set(result.timings_ms)
    assert "embed" not in result.timings_ms  # the raw query was never embedded
    # the BM25 arm kept the raw query: identical ranks to the raw-query hybrid's arm
    assert isinstance(hyde, HydeRetriever) and isinstance(hyde.base, HybridRetriever)
    fetch = max(5, services.settings.ARM_CANDIDATES)
    bm = hyde.base.bm25.ranked_identities(QUERY, fetch, {})
    bm_rank = {key: i for i, (key, _) in enumerate(bm, start=1)}
    raw_bm = {c.record.chunk_id: c.trace.bm25_rank for c in raw.chunks if c.trace}
    for chunk in result.chunks:
        assert chunk.trace is not None
        assert chunk.trace.bm25_rank == bm_rank.get(chunk.identity)
        if chunk.record.chunk_id in raw_bm:
            assert chunk.trace.bm25_rank == raw_bm[chunk.record.chunk_id]
    # the dense arm searched the passage's passage-mode vector
    vector = services.embedder.embed_passages([result.hypothetical])[0]
    dense = services.pg.search(vector, fetch)
    dense_rank = {(r.doc_id, r.original_index): i for i, (r, _) in enumerate(dense, start=1)}
    for chunk in result.chunks:
        assert chunk.trace is not None
        assert chunk.trace.semantic_rank == dense_rank.get(chunk.identity)


def test_hyde_disabled_and_dead_llm_degrade_to_raw_query(
    make_services: Any, captured: _ListHandler
) -> None:
    services = make_services(HYDE_ENABLED=False, HYDE_BASE_METHOD="hybrid")
    base = services.retriever("hybrid").retrieve(QUERY, 5)
    off = services.retriever("hyde").retrieve(QUERY, 5)
    assert off.hypothetical is None
    assert _ids(off) == _ids(base)
    assert [c.trace for c in off.chunks] == [c.trace for c in base.chunks]

    dead_chat = ChatClient(
        base_url=f"http://127.0.0.1:{free_port()}/v1", model="nobody", max_retries=0, timeout=5
    )
    hybrid = services.retriever("hybrid")
    assert isinstance(hybrid, HybridRetriever)
    dead = HydeRetriever(hybrid, dead_chat, services.embedder).retrieve(QUERY, 5)
    dead_chat.close()
    assert dead.hypothetical is None
    assert _ids(dead) == _ids(base)
    assert [c.trace for c in dead.chunks] == [c.trace for c in base.chunks]
    assert "hyde_generate" in dead.timings_ms and "hyde_embed" not in dead.timings_ms
    warnings = [r for r in captured.records if r.levelno == logging.WARNING]
    assert any("HYDE_ENABLED=false" in r.getMessage() for r in warnings)
    assert any("degraded to the raw query" in r.getMessage() for r in warnings)


def test_reranked_over_hyde(make_services: Any) -> None:
    services = make_services(
        RERANK_BASE_METHOD="hyde",
        HYDE_BASE_METHOD="semantic",
        HYDE_MAX_TOKENS=32,
        RERANK_CANDIDATES=8,
        RERANK_TOP_N=4,
    )
    result = services.retriever("reranked").retrieve(QUERY, 4)
    assert result.method == "reranked" and result.hypothetical
    assert {"hyde_generate", "hyde_embed", "rerank"} <= set(result.timings_ms)
    assert [c.trace.final_rank for c in result.chunks if c.trace] == [1, 2, 3, 4]


# --- configuration -----------------------------------------------------------------


@pytest.mark.parametrize(
    "overrides",
    [
        {"HYDE_BASE_METHOD": "bm25"},
        {"HYDE_BASE_METHOD": "hyde"},
        {"RERANK_BASE_METHOD": "reranked"},
        {"RERANK_TOP_N": 50, "RERANK_CANDIDATES": 40},
        {"RETRIEVAL_METHOD": "colbert"},
    ],
)
def test_config_rejections(
    overrides: dict[str, object], tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SettingsError):
        load_settings(**overrides)


def test_api_accepts_the_five_methods() -> None:
    for method in ("semantic", "bm25", "hybrid", "reranked", "hyde"):
        assert SearchRequest(query="q", method=method).method == method
