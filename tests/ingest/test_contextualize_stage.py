"""The deferred blurb stage on real stores and model servers.

A document is stored raw first; :func:`contextualize_document` then replaces each
chunk's stored version with its contextualized one, in Postgres and in the BM25 index
(Tantivy, and Elasticsearch: a live cluster when ``ELASTICSEARCH_URL`` is set, else the
protocol recorder that keeps documents by ``_id`` as Elasticsearch does), and never
writes a document back that was deleted, replaced or re-chunked meanwhile.
"""

from __future__ import annotations

import os
import threading
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import elasticsearch
import numpy as np
import pytest

from tests.conftest import SettingsFactory
from tests.support.es_protocol import ESProtocolRecorder
from varagity.config import Settings
from varagity.context.contextual import contextualized_text
from varagity.ingest.parsing import parse_file
from varagity.ingest.stages import (
    ContextResult,
    StoreInput,
    chunk_document,
    contextualize_document,
    document_text,
    embed_drafts,
    purge_documents,
    store_documents,
)
from varagity.models.chat import ChatClient
from varagity.records import ChunkRecord
from varagity.services import Services
from varagity.stores.bm25 import BM25Document, BM25Store
from varagity.stores.bm25.elasticsearch import ElasticsearchBM25Store
from varagity.stores.bm25.tantivy_store import TantivyBM25Store

pytestmark = pytest.mark.integration

STATION = "\n\n".join(
    [
        "# Aurora Research Station",
        "The station opened in March 2019 on Brannfell Island, north of the Kessel Sea.",
        "## Power",
        "Wind turbines deliver a peak output of 4.2 megawatts to the station grid.",
        "## Water",
        "A desalination plant supplies 30 cubic metres of fresh water per day.",
        "## Crew",
        "Eleven researchers winter at the station; the summer crew reaches forty.",
    ]
)
SMALL = {"CHUNK_SIZE": 160, "CHUNK_OVERLAP": 20, "CONTEXT_MAX_TOKENS": 24}


class NoLLM:
    """A chat model that must not be called."""

    def complete(self, messages: Sequence[dict[str, str]], **_: object) -> str:
        raise AssertionError(f"unexpected LLM call: {messages[-1]['content'][:80]!r}")


class Interrupting:
    """The real model, with ``action`` run once, right before the first blurb; ``calls``
    counts the blurbs asked for (a document's warming steps, one-token requests that
    load it into the server's prompt cache, are passed on uncounted)."""

    def __init__(self, chat: object, action: object) -> None:
        self.chat = chat
        self.action = action
        self.calls = 0

    def complete(self, messages: Sequence[dict[str, str]], **kwargs: object) -> str:
        if kwargs.get("max_tokens") == 1:  # a warming step
            return self.chat.complete(messages, **kwargs)  # type: ignore[attr-defined]
        self.calls += 1
        if self.calls == 1:
            self.action()  # type: ignore[operator]
        return self.chat.complete(messages, **kwargs)  # type: ignore[attr-defined]


@pytest.fixture(params=["tantivy", "elasticsearch"])
def bm25_backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[BM25Store]:
    """Each BM25 backend, empty."""
    if request.param == "tantivy":
        store: BM25Store = TantivyBM25Store(tmp_path / "bm25-under-test")
        yield store
        store.close()
        return
    live = os.environ.get("ELASTICSEARCH_URL")
    recorder = None if live else ESProtocolRecorder().start()
    url = live or recorder.url  # type: ignore[union-attr]
    client = elasticsearch.Elasticsearch(url, api_key=os.environ.get("ELASTICSEARCH_API_KEY"))
    name = f"ctx-{uuid.uuid4().hex[:10]}"
    store = ElasticsearchBM25Store(url, index_name=name, client=client)
    store.ensure_index()
    yield store
    if live:
        client.indices.delete(index=name, ignore_unavailable=True)
    client.close()
    if recorder is not None:
        recorder.stop()


@pytest.fixture
def ctx_settings(
    make_settings: SettingsFactory, pg_url: str, model_urls: dict[str, str]
) -> Settings:
    settings = make_settings(DATABASE_URL=pg_url, CONTEXTUALIZE=True, **SMALL, **model_urls)
    (settings.docs_path / "station.md").write_text(STATION, encoding="utf-8")
    return settings


@pytest.fixture
def services(ctx_settings: Settings) -> Iterator[Services]:
    s = Services.open(ctx_settings)
    yield s
    s.close()


def _store_raw(services: Services, bm25: BM25Store, settings: Settings, rel: str) -> str:
    parsed = parse_file(settings.docs_path, rel, settings=settings)
    drafts = chunk_document(parsed, settings, services.embedder)
    (stored,) = store_documents(
        [StoreInput(parsed, drafts, embed_drafts(drafts, services.embedder))],
        pg=services.pg,
        bm25=bm25,
        settings=settings,
        embedding_model=services.embedder.model,
    )
    return stored.doc_id


def _rows(services: Services, doc_id: str | None = None) -> dict[str, tuple]:
    """chunk_id -> (context, contextualized_content, embedding, contextualized_at)."""
    where, params = ("WHERE doc_id = %s", (doc_id,)) if doc_id else ("", ())
    with services.pg.connection() as conn:
        rows = conn.execute(
            "SELECT chunk_id, context, contextualized_content, embedding, contextualized_at"
            f" FROM chunks {where}",
            params,
        ).fetchall()
    ids = [r[0] for r in rows]
    assert len(ids) == len(set(ids))
    return {r[0]: (r[1], r[2], r[3].to_numpy(), r[4]) for r in rows}


def _bm25_by_chunk(bm25: BM25Store, query: str) -> dict[str, list[str]]:
    """chunk_id -> the contextualized texts of every BM25 hit carrying it."""
    out: dict[str, list[str]] = {}
    for hit in bm25.search(query, 100):
        out.setdefault(hit.chunk_id, []).append(hit.contextualized_content)
    return out


BROAD = "station megawatts water crew researchers island turbines aurora"


def test_raw_chunks_are_searchable_then_replaced_in_place(
    services: Services, bm25_backend: BM25Store, ctx_settings: Settings
) -> None:
    bm25 = bm25_backend
    doc_id = _store_raw(services, bm25, ctx_settings, "station.md")
    before = _rows(services, doc_id)
    n = len(before)
    assert n >= 4
    # searchable before any blurb exists, in both arms
    assert all(ctx is None and at is None for ctx, _, _, at in before.values())
    raw_hits = _bm25_by_chunk(bm25, BROAD)
    assert set(raw_hits) == set(before) and bm25.count() == n
    dense = services.pg.search(services.embedder.embed_query("wind turbine peak output"), 1)
    assert dense[0][0].doc_id == doc_id and dense[0][0].context is None

    progress: list[ContextResult] = []
    result = contextualize_document(
        doc_id,
        pg=services.pg,
        bm25=bm25,
        chat=services.chat,
        embedder=services.embedder,
        settings=ctx_settings,
        group_size=2,
        on_progress=progress.append,
    )
    # the document moved forward a group at a time
    assert [p.contextualized for p in progress] == [min(i, n) for i in range(2, n + 2, 2)]
    assert (result.contextualized, result.n_chunks, result.superseded) == (n, n, False)
    assert set(result.blurbs) == set(before)

    after = _rows(services, doc_id)
    assert set(after) == set(before)  # same chunk ids, no new rows
    records = {r.chunk_id: r for r in services.pg.chunks_of(doc_id)}
    blurbed = [cid for cid, (ctx, *_) in after.items() if ctx]
    assert blurbed, "the model wrote no blurb at all"
    for cid, (ctx, text, _, at) in after.items():
        record = records[cid]
        assert at is not None
        assert ctx == (result.blurbs[cid] or None) == record.context
        assert text == contextualized_text(record.header, ctx, record.content)
        assert record.contextualized_content == text
    for cid in blurbed:  # re-embedded over blurb + chunk; the header stays BM25-only
        assert not np.allclose(after[cid][2], before[cid][2])
        record = records[cid]
        expected = services.embedder.embed_passages(
            [contextualized_text(None, record.context, record.content)]
        )[0]
        assert np.allclose(after[cid][2], expected, atol=1e-4)

    # BM25: one entry per chunk, now holding the contextualized text
    hits = _bm25_by_chunk(bm25, BROAD)
    assert bm25.count() == n
    assert set(hits) == set(before)
    assert all(texts == [after[cid][1]] for cid, texts in hits.items())

    # nothing left to do: a second pass calls no model and changes nothing
    again = contextualize_document(
        doc_id,
        pg=services.pg,
        bm25=bm25,
        chat=NoLLM(),
        embedder=services.embedder,
        settings=ctx_settings,
    )
    assert (again.contextualized, again.blurbs) == (n, {})


def test_contextualize_off_makes_no_llm_call(
    services: Services, bm25_backend: BM25Store, ctx_settings: Settings
) -> None:
    doc_id = _store_raw(services, bm25_backend, ctx_settings, "station.md")
    off = ctx_settings.model_copy(update={"CONTEXTUALIZE": False})
    result = contextualize_document(
        doc_id,
        pg=services.pg,
        bm25=bm25_backend,
        chat=NoLLM(),
        embedder=services.embedder,
        settings=off,
    )
    assert result.contextualized == 0 and result.n_chunks > 0 and result.blurbs == {}
    assert all(ctx is None and at is None for ctx, _, _, at in _rows(services, doc_id).values())


def test_pause_keeps_written_blurbs_and_a_later_pass_finishes(
    services: Services, bm25_backend: BM25Store, ctx_settings: Settings
) -> None:
    """Ingest arriving mid-pass: the pass stops before its next LLM call, stores every
    blurb already written (also half a group), and the next pass does only the rest."""
    doc_id = _store_raw(services, bm25_backend, ctx_settings, "station.md")
    _, total = services.pg.context_progress(doc_id)
    assert total >= 4, "the test needs a document of at least four chunks"
    asked: list[int] = []
    chat = Interrupting(services.chat, lambda: None)

    def pause_after_three() -> bool:
        asked.append(chat.calls)
        return chat.calls >= 3

    kwargs = {"pg": services.pg, "bm25": bm25_backend, "embedder": services.embedder}
    first = contextualize_document(
        doc_id,
        chat=chat,
        settings=ctx_settings,
        group_size=2,
        should_pause=pause_after_three,
        **kwargs,
    )
    assert first.paused and not first.superseded
    assert chat.calls == 3 and first.contextualized == 3 and len(first.blurbs) == 3
    assert asked[0] == 0, "asked before the pass, before any LLM call"
    stored = {cid for cid, (ctx, _, _, at) in _rows(services, doc_id).items() if at is not None}
    assert stored == set(first.blurbs), "the half-written second group was stored too"
    assert services.pg.context_progress(doc_id) == (3, total)

    # paused before the pass: no LLM call, nothing changes
    idle = contextualize_document(
        doc_id, chat=NoLLM(), settings=ctx_settings, should_pause=lambda: True, **kwargs
    )
    assert idle.paused and idle.contextualized == 3 and idle.blurbs == {}

    rest = contextualize_document(doc_id, chat=services.chat, settings=ctx_settings, **kwargs)
    assert not rest.paused and rest.contextualized == total
    assert set(rest.blurbs).isdisjoint(first.blurbs), "no chunk was situated twice"
    assert all(at is not None for _, _, _, at in _rows(services, doc_id).values())


class CountingStream:
    """The real model, counting the replies it streams and their pieces."""

    def __init__(self, chat: ChatClient) -> None:
        self.chat = chat
        self.streams = 0
        self.pieces = 0

    def complete(self, messages: Sequence[dict[str, str]], **kwargs: object) -> str:
        raise AssertionError("a pass that can be paused streams its blurbs")

    def count_tokens(self, text: str) -> int | None:
        return self.chat.count_tokens(text)

    def stream(self, messages: list[dict[str, str]], **kwargs: Any) -> Iterator[str]:
        self.streams += 1
        for piece in self.chat.stream(messages, **kwargs):
            self.pieces += 1
            yield piece


def test_ingest_arriving_mid_blurb_cuts_that_blurb_off(
    services: Services, bm25_backend: BM25Store, ctx_settings: Settings
) -> None:
    """A blurb under way when ingest starts is cut off within a few tokens (not left to
    run to its end, which took 78 s beside an ingest): nothing of it is stored, the
    chunk still waits, and a later pass writes it."""
    doc_id = _store_raw(services, bm25_backend, ctx_settings, "station.md")
    before, total = services.pg.context_progress(doc_id)
    chat = CountingStream(services.chat)
    asked: list[int] = []

    def ingest_started_once_streaming() -> bool:
        asked.append(chat.pieces)
        return chat.pieces > 0

    kwargs = {"pg": services.pg, "bm25": bm25_backend, "embedder": services.embedder}
    cut = contextualize_document(
        doc_id,
        chat=chat,
        settings=ctx_settings,
        should_pause=ingest_started_once_streaming,
        **kwargs,
    )
    assert cut.paused and cut.blurbs == {} and cut.contextualized == before
    assert chat.streams == 1, "no blurb after the cut one"
    assert asked[0] == 0 and asked[-1] == chat.pieces, "asked before the pass, then mid-stream"
    assert 0 < chat.pieces <= 4, f"cut off after {chat.pieces} pieces"
    assert services.pg.context_progress(doc_id) == (before, total)
    assert all(at is None for _, _, _, at in _rows(services, doc_id).values())

    rest = contextualize_document(doc_id, chat=services.chat, settings=ctx_settings, **kwargs)
    assert not rest.paused and rest.contextualized == total


def test_document_deleted_while_blurbing_stays_deleted(
    services: Services, bm25_backend: BM25Store, ctx_settings: Settings
) -> None:
    bm25 = bm25_backend
    doc_id = _store_raw(services, bm25, ctx_settings, "station.md")
    chat = Interrupting(services.chat, lambda: purge_documents([doc_id], pg=services.pg, bm25=bm25))
    result = contextualize_document(
        doc_id,
        pg=services.pg,
        bm25=bm25,
        chat=chat,
        embedder=services.embedder,
        settings=ctx_settings,
        group_size=2,
    )
    assert result.superseded and result.blurbs == {}
    assert chat.calls == 1  # no LLM call after the deletion, even within a group
    assert services.pg.get_document(doc_id) is None and _rows(services) == {}
    assert bm25.count() == 0 and _bm25_by_chunk(bm25, BROAD) == {}


def test_document_replaced_while_blurbing_keeps_only_the_new_version(
    services: Services, bm25_backend: BM25Store, ctx_settings: Settings
) -> None:
    bm25 = bm25_backend
    old = _store_raw(services, bm25, ctx_settings, "station.md")
    new_ids: list[str] = []

    def replace() -> None:
        path = ctx_settings.docs_path / "station.md"
        path.write_text(STATION.replace("4.2 megawatts", "5.0 megawatts"), encoding="utf-8")
        new_ids.append(_store_raw(services, bm25, ctx_settings, "station.md"))

    chat = Interrupting(services.chat, replace)
    result = contextualize_document(
        old,
        pg=services.pg,
        bm25=bm25,
        chat=chat,
        embedder=services.embedder,
        settings=ctx_settings,
        group_size=2,
    )
    assert result.superseded and result.blurbs == {}
    assert chat.calls == 1  # the old version's blurbs stop with its replacement
    [new] = new_ids
    assert [d.doc_id for d in services.pg.documents_at_path("station.md")] == [new]
    rows = _rows(services)
    assert rows and all(cid.startswith(f"{new}::") for cid in rows)
    # the new version's chunks wait for their own blurbs: none was written onto them
    assert all(ctx is None and at is None for ctx, _, _, at in rows.values())
    assert set(_bm25_by_chunk(bm25, BROAD)) == set(rows) and bm25.count() == len(rows)


def test_document_rechunked_while_blurbing_gets_no_stale_blurb(
    services: Services, bm25_backend: BM25Store, ctx_settings: Settings
) -> None:
    bm25 = bm25_backend
    doc_id = _store_raw(services, bm25, ctx_settings, "station.md")
    wider = ctx_settings.model_copy(update={"CHUNK_SIZE": 300})

    def rechunk() -> None:  # a reingest of the same file under other chunk settings
        assert _store_raw(services, bm25, wider, "station.md") == doc_id

    result = contextualize_document(
        doc_id,
        pg=services.pg,
        bm25=bm25,
        chat=Interrupting(services.chat, rechunk),
        embedder=services.embedder,
        settings=ctx_settings,
        group_size=2,
    )
    assert result.superseded and result.blurbs == {}
    rows = _rows(services, doc_id)
    assert all(ctx is None and at is None for ctx, _, _, at in rows.values())
    records = services.pg.chunks_of(doc_id)
    assert all(
        r.contextualized_content == contextualized_text(r.header, None, r.content) for r in records
    )
    # the wider chunks replaced the narrow ones in both stores: fewer, none left behind
    assert 0 < len(rows) < result.n_chunks
    assert set(_bm25_by_chunk(bm25, BROAD)) == set(rows) and bm25.count() == len(rows)


def test_a_reingest_with_fewer_chunks_leaves_no_orphan_bm25_entry(
    services: Services, bm25_backend: BM25Store, ctx_settings: Settings
) -> None:
    bm25 = bm25_backend
    doc_id = _store_raw(services, bm25, ctx_settings, "station.md")
    # an entry of the document Postgres never recorded: a write that crashed between
    # the BM25 commit and the Postgres transaction leaves one
    bm25.index([BM25Document(f"{doc_id}::orphan", doc_id, 10_000, "island turbines", "island")])
    narrow = len(_rows(services, doc_id))
    wider = ctx_settings.model_copy(update={"CHUNK_SIZE": 300})
    assert _store_raw(services, bm25, wider, "station.md") == doc_id
    rows = _rows(services, doc_id)
    assert 0 < len(rows) < narrow
    assert bm25.chunk_ids([doc_id]) == dict.fromkeys(rows, doc_id)
    assert bm25.count() == len(rows)


class RacingPurge:
    """A BM25 store whose first ``index`` lets a concurrent purge of ``doc_id`` try first.

    The purge runs in another thread and is given a second to finish before this write
    goes on. With the document lock it cannot start before the write commits, so it
    removes the contextualized chunks afterwards; without the lock its BM25 delete
    would run first and this upsert would leave orphans in the index.
    """

    def __init__(self, inner: BM25Store, services: Services) -> None:
        self.inner = inner
        self.services = services
        self.backend = inner.backend
        self.doc_id = ""
        self.thread: threading.Thread | None = None

    def index(self, documents: Sequence[BM25Document]) -> None:
        if self.thread is None and self.doc_id:
            self.thread = threading.Thread(
                target=purge_documents,
                args=([self.doc_id],),
                kwargs={"pg": self.services.pg, "bm25": self.inner},
            )
            self.thread.start()
            self.thread.join(timeout=1.0)
        self.inner.index(documents)

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)


def test_purge_racing_a_blurb_write_leaves_no_orphan(
    services: Services, bm25_backend: BM25Store, ctx_settings: Settings
) -> None:
    racing = RacingPurge(bm25_backend, services)
    doc_id = _store_raw(services, racing, ctx_settings, "station.md")  # type: ignore[arg-type]
    racing.doc_id = doc_id
    contextualize_document(
        doc_id,
        pg=services.pg,
        bm25=racing,  # type: ignore[arg-type]
        chat=services.chat,
        embedder=services.embedder,
        settings=ctx_settings,
        group_size=2,
    )
    assert racing.thread is not None
    racing.thread.join(timeout=60)
    assert not racing.thread.is_alive()
    assert services.pg.get_document(doc_id) is None and _rows(services) == {}
    assert bm25_backend.count() == 0 and _bm25_by_chunk(bm25_backend, BROAD) == {}


def _record(i: int, start: int | None, text: str) -> ChunkRecord:
    return ChunkRecord(
        doc_id="d",
        chunk_id=f"d::{i}",
        original_index=i,
        chunk_index=i,
        source="/x/a.md",
        relative_path="a.md",
        file_name="a.md",
        file_type="md",
        char_start=start,
        char_end=None if start is None else start + len(text),
        content=text,
        contextualized_content=text,
        chunk_size=10,
        chunk_overlap=3,
        chunking_strategy="recursive_character",
        embedding_model="m",
        n_tokens=1,
        content_hash="h",
    )


def test_document_text_is_rebuilt_from_chunk_offsets() -> None:
    text = "alpha beta gamma\n\ndelta epsilon"
    chunks = [
        _record(1, 6, text[6:16]),  # "beta gamma", overlapping the first
        _record(0, 0, text[0:10]),  # "alpha beta"
        _record(2, 18, text[18:]),  # after a dropped blank line
        _record(3, 20, text[20:25]),  # inside what is already covered
    ]
    assert document_text(chunks) == "alpha beta gamma\ndelta epsilon"
    assert document_text([_record(0, None, "one"), _record(1, None, "two")]) == "one\ntwo"
