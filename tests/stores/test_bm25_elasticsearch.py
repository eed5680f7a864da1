"""The Elasticsearch BM25 store.

Two groups of tests live here:

* **Wire-protocol tests (always run).**  No Elasticsearch server can be installed here, so
  a real ``elasticsearch.Elasticsearch`` client is pointed at :class:`ESProtocolRecorder`, a
  tiny ``http.server`` in a thread that *records* every HTTP request the official client
  sends and answers with canned, Elasticsearch-shaped JSON (including the
  ``X-Elastic-Product: Elasticsearch`` header the 8.x/9.x clients insist on).  It is not an
  Elasticsearch: it does no analysis and no scoring.  These tests pin what the store sends
  (the index-creation body against the data-model spec, bulk NDJSON, match, the terms
  delete_by_query) and how it reads the answers.
* **Live tests (only with a real cluster).**  They are skipped unless ``ELASTICSEARCH_URL`` is
  set; run them with e.g. ``ELASTICSEARCH_URL=http://localhost:9200 python -m pytest
  tests/stores/test_bm25_elasticsearch.py``
  (optionally ``ELASTICSEARCH_API_KEY``).  Each test uses a uniquely named index that is
  deleted afterwards.  They check the same behaviours as the Tantivy tests.
"""

from __future__ import annotations

import os
import threading
import uuid
from collections.abc import Iterator
from typing import Any

import elasticsearch
import pytest

from tests.support.bm25_corpus import CORPUS, doc
from tests.support.es_protocol import ESProtocolRecorder
from varagity.stores.bm25.analysis import search_text
from varagity.stores.bm25.base import BM25Error, BM25Store
from varagity.stores.bm25.elasticsearch import INDEX_BODY, ElasticsearchBM25Store
from varagity_stack.model_servers import free_port

# The body published in the data-model spec ("Elasticsearch index" section), verbatim.
SPEC_INDEX_BODY: dict[str, Any] = {
    "settings": {
        "analysis": {"analyzer": {"default": {"type": "english"}}},
        "similarity": {"default": {"type": "BM25"}},
    },
    "mappings": {
        "properties": {
            "content": {"type": "text", "analyzer": "english"},
            "contextualized_content": {"type": "text", "analyzer": "english"},
            "doc_id": {"type": "keyword", "index": False},
            "chunk_id": {"type": "keyword", "index": False},
            "original_index": {"type": "integer", "index": False},
        }
    },
}

ES_URL = os.environ.get("ELASTICSEARCH_URL")
ES_API_KEY = os.environ.get("ELASTICSEARCH_API_KEY")
LIVE_SKIP_REASON = (
    "live Elasticsearch tests need a cluster: set ELASTICSEARCH_URL (e.g. "
    "ELASTICSEARCH_URL=http://localhost:9200, plus ELASTICSEARCH_API_KEY if secured) and run "
    "python -m pytest tests/stores/test_bm25_elasticsearch.py"
)


@pytest.fixture
def recorder() -> Iterator[ESProtocolRecorder]:
    rec = ESProtocolRecorder().start()
    yield rec
    rec.stop()


@pytest.fixture
def client(recorder: ESProtocolRecorder) -> Iterator[elasticsearch.Elasticsearch]:
    es = elasticsearch.Elasticsearch(recorder.url, max_retries=0)
    yield es
    es.close()


@pytest.fixture
def recorded_store(
    recorder: ESProtocolRecorder, client: elasticsearch.Elasticsearch
) -> ElasticsearchBM25Store:
    return ElasticsearchBM25Store(recorder.url, index_name="chunks-test", client=client)


def test_satisfies_protocol(recorded_store: ElasticsearchBM25Store) -> None:
    assert isinstance(recorded_store, BM25Store)
    assert recorded_store.backend == "elasticsearch"


def test_constructor_sends_nothing(recorder: ESProtocolRecorder) -> None:
    ElasticsearchBM25Store(recorder.url, index_name="lazy")
    assert recorder.requests == []


def test_index_creation_body_matches_spec(
    recorder: ESProtocolRecorder, recorded_store: ElasticsearchBM25Store
) -> None:
    recorded_store.ensure_index()
    head, put = recorder.requests
    assert (head.method, head.path) == ("HEAD", "/chunks-test")
    assert (put.method, put.path) == ("PUT", "/chunks-test")
    assert "compatible-with=" in put.headers["content-type"]
    body = put.json()
    assert body["settings"] == SPEC_INDEX_BODY["settings"]
    props = body["mappings"]["properties"]
    spec_props = SPEC_INDEX_BODY["mappings"]["properties"]
    for name, definition in spec_props.items():
        assert props[name] == definition, name
    # The only addition: the one searched field (contextualized text + identifier parts).
    assert set(props) - set(spec_props) == {"search_text"}
    assert props["search_text"] == {"type": "text", "analyzer": "english"}
    assert body == INDEX_BODY


def test_identity_fields_are_not_indexed_and_keep_doc_values() -> None:
    props = INDEX_BODY["mappings"]["properties"]
    for name in ("doc_id", "chunk_id", "original_index"):
        assert props[name]["index"] is False
        assert props[name].get("doc_values", True) is True  # the terms delete relies on it


def test_ensure_index_is_idempotent_and_respects_existing(
    recorder: ESProtocolRecorder, client: elasticsearch.Elasticsearch
) -> None:
    recorder.indices["existing"] = {}
    store = ElasticsearchBM25Store(recorder.url, index_name="existing", client=client)
    store.ensure_index()
    store.ensure_index()
    assert [(r.method, r.path) for r in recorder.requests] == [("HEAD", "/existing")]


def test_concurrent_creation_race_is_not_an_error(
    recorder: ESProtocolRecorder, recorded_store: ElasticsearchBM25Store
) -> None:
    recorder.create_race = True
    recorded_store.ensure_index()
    assert recorder.calls("PUT")


def test_bulk_index_wire_format(
    recorder: ESProtocolRecorder, recorded_store: ElasticsearchBM25Store
) -> None:
    recorded_store.index(CORPUS)
    (bulk,) = recorder.calls("POST", "/_bulk") or recorder.calls("PUT", "/_bulk")
    assert bulk.params.get("refresh") == ["wait_for"]
    assert "x-ndjson" in bulk.headers["content-type"]
    lines = bulk.ndjson()
    actions, sources = lines[::2], lines[1::2]
    assert [a["index"]["_id"] for a in actions] == [d.chunk_id for d in CORPUS]
    assert {a["index"]["_index"] for a in actions} == {"chunks-test"}
    first = sources[0]
    assert first == {
        "chunk_id": "pg-0",
        "doc_id": "pgvector.md",
        "original_index": 0,
        "content": CORPUS[0].content,
        "contextualized_content": CORPUS[0].contextualized_content,
        "search_text": search_text(CORPUS[0].content, CORPUS[0].contextualized_content),
    }
    by_id = {a["index"]["_id"]: s for a, s in zip(actions, sources, strict=True)}
    fz1 = by_id["fz-1"]["search_text"]
    assert fz1.startswith("Fuzzing harness API.\n\nConstruct a DiffExecutor")
    assert fz1.endswith("Diff Executor run target")
    # Upsert by _id: indexing again overwrites in place.
    recorded_store.index(CORPUS[:1])
    assert recorded_store.count() == len(CORPUS)


def test_large_batches_are_chunked(
    recorder: ESProtocolRecorder, recorded_store: ElasticsearchBM25Store
) -> None:
    docs = [doc(f"c{i}", "big", i, f"text {i}") for i in range(1201)]
    recorded_store.index(docs)
    assert len(recorder.calls(suffix="/_bulk")) == 3
    assert len(recorder.indices["chunks-test"]) == 1201


def test_rejected_bulk_items_raise(
    recorder: ESProtocolRecorder, recorded_store: ElasticsearchBM25Store
) -> None:
    recorder.reject_bulk_items = True
    with pytest.raises(BM25Error, match="rejected") as info:
        recorded_store.index(CORPUS[:2])
    assert "chunks-test" in str(info.value)


def test_search_wire_format_and_hit_parsing(
    recorder: ESProtocolRecorder, recorded_store: ElasticsearchBM25Store
) -> None:
    recorded_store.index(CORPUS)
    hits = recorded_store.search('DiffExecutor AND "run(', 3)
    (search,) = recorder.calls("POST", "/_search")
    assert search.path == "/chunks-test/_search"
    body = search.json()
    assert body["size"] == 3
    match = body["query"]["match"]
    assert list(match) == ["search_text"]
    assert match["search_text"]["query"] == "DiffExecutor and run Diff Executor"
    assert match["search_text"].get("operator", "or") == "or"
    requested_source = search.params.get("_source_includes", [""])[0].split(",")
    assert "search_text" not in requested_source
    assert set(requested_source) == {
        "chunk_id",
        "doc_id",
        "original_index",
        "content",
        "contextualized_content",
    }
    assert [h.chunk_id for h in hits] == ["pg-0", "pg-1", "fz-0"]
    assert hits[0].doc_id == "pgvector.md"
    assert hits[0].original_index == 0
    assert hits[0].score == 10.0
    assert hits[0].contextualized_content == CORPUS[0].contextualized_content


@pytest.mark.parametrize("query", ["", "   ", "***", "(:)", '"', "~^"])
def test_empty_queries_send_nothing(
    recorder: ESProtocolRecorder, recorded_store: ElasticsearchBM25Store, query: str
) -> None:
    assert recorded_store.search(query, 5) == []
    assert recorder.requests == []


def test_delete_by_terms_on_doc_id(
    recorder: ESProtocolRecorder, recorded_store: ElasticsearchBM25Store
) -> None:
    recorded_store.index(CORPUS)
    recorded_store.delete_documents(["fuzzing.md", "fuzzing.md", "missing.md"])
    (delete,) = recorder.calls("POST", "/_delete_by_query")
    assert delete.path == "/chunks-test/_delete_by_query"
    assert delete.json() == {"query": {"terms": {"doc_id": ["fuzzing.md", "missing.md"]}}}
    assert delete.params["refresh"] == ["true"]
    assert delete.params["conflicts"] == ["proceed"]
    assert recorded_store.count() == len(CORPUS) - 2
    recorded_store.delete_documents([])
    assert len(recorder.calls("POST", "/_delete_by_query")) == 1


def test_replace_documents_upserts_then_deletes_the_rest(
    recorder: ESProtocolRecorder, recorded_store: ElasticsearchBM25Store
) -> None:
    recorded_store.index(CORPUS)
    recorded_store.replace_documents(
        ["pgvector.md"], [doc("pg-9", "pgvector.md", 9, "Vectors live in HNSW graphs.")]
    )
    (delete,) = recorder.calls("POST", "/_delete_by_query")
    assert delete.json() == {
        "query": {
            "bool": {
                "filter": [{"terms": {"doc_id": ["pgvector.md"]}}],
                "must_not": [{"ids": {"values": ["pg-9"]}}],
            }
        }
    }
    assert delete.params["refresh"] == ["true"]
    # the new entry was written before anything was deleted
    order = [r.path for r in recorder.requests if r.method in ("POST", "PUT")]
    assert order.index("/_bulk") < order.index("/chunks-test/_delete_by_query")
    stored = recorder.indices["chunks-test"]  # the recorder's _search ignores queries
    assert sorted(i for i, s in stored.items() if s["doc_id"] == "pgvector.md") == ["pg-9"]
    assert recorded_store.count() == len(CORPUS) - 1
    with pytest.raises(ValueError, match="not among the replaced"):
        recorded_store.replace_documents(["a.md"], [doc("b-0", "b.md", 0, "stray")])


def test_delete_batches_many_ids(
    recorder: ESProtocolRecorder, recorded_store: ElasticsearchBM25Store
) -> None:
    recorded_store.delete_documents([f"d{i}" for i in range(2500)])
    sizes = [
        len(r.json()["query"]["terms"]["doc_id"])
        for r in recorder.calls("POST", "/_delete_by_query")
    ]
    assert sizes == [1000, 1000, 500]


def test_count(recorder: ESProtocolRecorder, recorded_store: ElasticsearchBM25Store) -> None:
    assert recorded_store.count() == 0
    recorded_store.index(CORPUS)
    assert recorded_store.count() == len(CORPUS)
    assert recorder.calls(suffix="/_count")[-1].path == "/chunks-test/_count"


def test_ping(recorder: ESProtocolRecorder, recorded_store: ElasticsearchBM25Store) -> None:
    line = recorded_store.ping()
    assert "protocol-recorder" in line and "green" in line and "chunks-test" in line
    recorder.health_status = "red"
    with pytest.raises(BM25Error, match="red"):
        recorded_store.ping()


def test_api_key_is_sent(recorder: ESProtocolRecorder) -> None:
    store = ElasticsearchBM25Store(recorder.url, index_name="keyed", api_key="c2VjcmV0")
    store.ping()
    store.close()
    assert recorder.requests[0].headers["authorization"] == "ApiKey c2VjcmV0"


def _closed_port() -> int:
    return free_port()


def test_unreachable_cluster_raises_bm25error_without_credentials() -> None:
    url = f"http://elastic:hunter2@127.0.0.1:{_closed_port()}"
    store = ElasticsearchBM25Store(url, index_name="nowhere")
    for call in (store.ping, store.count, lambda: store.search("cosine", 3)):
        with pytest.raises(BM25Error) as info:
            call()
        message = str(info.value)
        assert "127.0.0.1" in message
        assert "hunter2" not in message
    store.close()


def test_close_leaves_an_injected_client_open(
    recorder: ESProtocolRecorder, client: elasticsearch.Elasticsearch
) -> None:
    store = ElasticsearchBM25Store(recorder.url, index_name="shared", client=client)
    store.close()
    assert client.ping()  # still usable by its owner


# ====================================================================== live cluster

live = pytest.mark.skipif(not ES_URL, reason=LIVE_SKIP_REASON)


@pytest.fixture
def live_store() -> Iterator[ElasticsearchBM25Store]:
    assert ES_URL
    name = f"varagity-test-{uuid.uuid4().hex[:12]}"
    store = ElasticsearchBM25Store(ES_URL, index_name=name, api_key=ES_API_KEY)
    yield store
    store.close()
    admin = elasticsearch.Elasticsearch(ES_URL, api_key=ES_API_KEY)
    try:
        admin.indices.delete(index=name, ignore_unavailable=True)
    finally:
        admin.close()


def _ids(hits: list[Any]) -> list[str]:
    return [h.chunk_id for h in hits]


@live
def test_live_mapping_is_applied(live_store: ElasticsearchBM25Store) -> None:
    assert ES_URL
    live_store.ensure_index()
    admin = elasticsearch.Elasticsearch(ES_URL, api_key=ES_API_KEY)
    try:
        mapping = admin.indices.get_mapping(index=live_store.index_name)
    finally:
        admin.close()
    props = mapping[live_store.index_name]["mappings"]["properties"]
    assert props["doc_id"] == {"type": "keyword", "index": False}
    assert props["content"]["analyzer"] == "english"


@live
def test_live_ranking_stemming_identifiers(live_store: ElasticsearchBM25Store) -> None:
    live_store.index(CORPUS)
    assert live_store.count() == len(CORPUS)
    assert live_store.search("cosine", 5)[0].chunk_id == "pg-0"
    found = _ids(live_store.search("indexing", 5))
    assert "pg-1" in found and "pg-0" in found
    assert set(_ids(live_store.search("DiffExecutor", 5))) >= {"fz-0", "fz-1"}
    assert _ids(live_store.search("run target", 5))[0] == "fz-1"
    assert _ids(live_store.search("recipe sponge", 5))[0] == "cook-0"


@live
def test_live_camel_case_only_chunk(live_store: ElasticsearchBM25Store) -> None:
    live_store.index([doc("only", "a.py", 0, "class DiffExecutor: pass"), doc("x", "b", 0, "no")])
    assert _ids(live_store.search("diff executor", 5)) == ["only"]


@live
def test_live_upsert_and_delete(live_store: ElasticsearchBM25Store) -> None:
    live_store.index(CORPUS)
    live_store.index(CORPUS)
    assert live_store.count() == len(CORPUS)
    live_store.index([doc("cook-0", "cooking.md", 0, "Knead the bread dough.")])
    assert live_store.count() == len(CORPUS)
    assert _ids(live_store.search("dough", 5)) == ["cook-0"]
    live_store.delete_documents(["fuzzing.md", "missing.md"])
    assert live_store.count() == len(CORPUS) - 2
    assert live_store.search("DiffExecutor", 5) == []
    assert _ids(live_store.search("cosine", 5)) == ["pg-0"]
    live_store.replace_documents(["pgvector.md"], [doc("pg-9", "pgvector.md", 9, "HNSW.")])
    assert live_store.chunk_ids(["pgvector.md"]) == {"pg-9": "pgvector.md"}
    assert live_store.search("cosine", 5) == []


@live
def test_live_second_instance_and_concurrent_writers(
    live_store: ElasticsearchBM25Store,
) -> None:
    assert ES_URL
    other = ElasticsearchBM25Store(ES_URL, index_name=live_store.index_name, api_key=ES_API_KEY)
    try:
        live_store.ensure_index()

        def write(tag: str) -> None:
            other_writer = ElasticsearchBM25Store(
                ES_URL or "", index_name=live_store.index_name, api_key=ES_API_KEY
            )
            for batch in range(3):
                other_writer.index(
                    [
                        doc(f"{tag}-{batch}-{i}", f"{tag}{batch}", i, f"marker{tag}")
                        for i in range(10)
                    ]
                )
            other_writer.close()

        threads = [threading.Thread(target=write, args=(t,)) for t in ("a", "b")]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        assert other.count() == 60
        assert len(other.search("markera", 100)) == 30
    finally:
        other.close()


@live
@pytest.mark.parametrize(
    "query", ['"', "content:cosine", "(((cosine", "[1 TO", "AND OR", "*", "cos*", "cosine~2^3"]
)
def test_live_special_character_queries(live_store: ElasticsearchBM25Store, query: str) -> None:
    live_store.index(CORPUS)
    hits = live_store.search(query, 5)
    if "cosine" in query:
        assert hits[0].chunk_id == "pg-0"
