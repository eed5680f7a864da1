"""The embedded Tantivy BM25 store, on real index directories under tmp_path."""

from __future__ import annotations

import fcntl
import json
import multiprocessing
import os
import re
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
import tantivy

from tests.support.bm25_corpus import CORPUS, doc
from varagity.stores.bm25.base import BM25Error, BM25Store
from varagity.stores.bm25.tantivy_store import LOCK_FILE_NAME, TantivyBM25Store, _analyzer


@pytest.fixture
def store(tmp_path: Path) -> Iterator[TantivyBM25Store]:
    s = TantivyBM25Store(tmp_path / "bm25", lock_timeout_s=30)
    yield s
    s.close()


@pytest.fixture
def loaded(store: TantivyBM25Store) -> TantivyBM25Store:
    store.index(CORPUS)
    return store


def ids(hits: list) -> list[str]:
    return [h.chunk_id for h in hits]


def test_satisfies_protocol_and_creates_dir(tmp_path: Path) -> None:
    path = tmp_path / "nested" / "bm25"
    s = TantivyBM25Store(path)
    assert isinstance(s, BM25Store)
    assert s.backend == "tantivy"
    assert path.is_dir() and (path / "meta.json").is_file()
    assert s.count() == 0
    assert "0 chunks" in s.ping()
    s.close()


def test_index_is_visible_and_hits_carry_identity(loaded: TantivyBM25Store) -> None:
    assert loaded.count() == len(CORPUS)
    hits = loaded.search("cosine", 3)
    assert hits[0].chunk_id == "pg-0"
    top = hits[0]
    assert top.doc_id == "pgvector.md"
    assert top.original_index == 0
    assert top.content == CORPUS[0].content
    assert top.contextualized_content == CORPUS[0].contextualized_content
    assert top.score > 0


def test_ranking_pgvector_cosine_first(loaded: TantivyBM25Store) -> None:
    hits = loaded.search("cosine", 5)
    assert ids(hits) == ["pg-0"]  # only that chunk mentions it
    hits = loaded.search("pgvector cosine index", 5)
    assert hits[0].chunk_id == "pg-0"
    assert "cook-0" not in ids(hits)


def test_scores_are_descending_and_k_is_respected(loaded: TantivyBM25Store) -> None:
    hits = loaded.search("index DiffExecutor eggs", 10)
    scores = [h.score for h in hits]
    assert scores == sorted(scores, reverse=True)
    assert len(loaded.search("index DiffExecutor eggs", 2)) == 2
    assert loaded.search("cosine", 0) == []


def test_searches_contextualized_content_too(loaded: TantivyBM25Store) -> None:
    assert ids(loaded.search("recipe sponge", 5)) == ["cook-0"]


def test_stemming(loaded: TantivyBM25Store) -> None:
    # "indexing" -> "index" matches "indexes" (pg-1) and "index" (pg-0).
    found = ids(loaded.search("indexing", 5))
    assert "pg-1" in found and "pg-0" in found
    assert "cook-0" not in found
    assert ids(loaded.search("whisking", 5)) == ["cook-0"]


def test_camel_case_query_finds_split_and_exact(loaded: TantivyBM25Store) -> None:
    found = ids(loaded.search("DiffExecutor", 5))
    assert set(found) == {"fz-0", "fz-1"}


def test_natural_words_find_camel_case_identifier(store: TantivyBM25Store) -> None:
    store.index(
        [
            doc("only-ident", "a.py", 0, "class DiffExecutor: pass"),
            doc("other", "b.py", 0, "something unrelated entirely"),
        ]
    )
    assert ids(store.search("diff executor", 5)) == ["only-ident"]
    assert ids(store.search("executor", 5)) == ["only-ident"]


def test_snake_case(loaded: TantivyBM25Store) -> None:
    assert ids(loaded.search("run target", 5))[0] == "fz-1"
    assert ids(loaded.search("run_target", 5))[0] == "fz-1"


def test_acronym_and_digits(store: TantivyBM25Store) -> None:
    store.index([doc("srv", "s.py", 0, "start the HTTPServer2 on port 80"), doc("x", "x", 0, "no")])
    assert ids(store.search("http server", 5)) == ["srv"]
    assert ids(store.search("HTTPServer2", 5)) == ["srv"]


def test_upsert_by_chunk_id_does_not_duplicate(loaded: TantivyBM25Store) -> None:
    before = loaded.count()
    loaded.index([doc("cook-0", "cooking.md", 0, "Knead the bread dough for ten minutes.")])
    assert loaded.count() == before
    assert ids(loaded.search("eggs", 5)) == []
    assert ids(loaded.search("dough", 5)) == ["cook-0"]
    # Re-indexing the whole corpus again still does not duplicate.
    loaded.index(CORPUS)
    loaded.index(CORPUS)
    assert loaded.count() == before


def test_duplicate_chunk_ids_in_one_batch_keep_the_last(store: TantivyBM25Store) -> None:
    store.index([doc("c", "d", 0, "first version apples"), doc("c", "d", 0, "second pears")])
    assert store.count() == 1
    assert ids(store.search("pears", 5)) == ["c"]
    assert store.search("apples", 5) == []


def test_delete_documents(loaded: TantivyBM25Store) -> None:
    loaded.delete_documents(["fuzzing.md", "never-indexed.md"])
    assert loaded.count() == len(CORPUS) - 2
    assert loaded.search("DiffExecutor", 5) == []
    assert ids(loaded.search("cosine", 5)) == ["pg-0"]
    loaded.delete_documents([])  # no-op
    loaded.delete_documents(["never-indexed.md"])
    assert loaded.count() == len(CORPUS) - 2


def test_replace_documents_leaves_no_orphan(loaded: TantivyBM25Store) -> None:
    # pgvector.md had two chunks (pg-0, pg-1); its rewrite has one, under a new id
    loaded.replace_documents(
        ["pgvector.md"], [doc("pg-9", "pgvector.md", 9, "Vectors live in HNSW graphs.")]
    )
    assert loaded.chunk_ids(["pgvector.md"]) == {"pg-9": "pgvector.md"}
    assert loaded.count() == len(CORPUS) - 1
    assert ids(loaded.search("REINDEX", 5)) == []
    # a document rewritten with no chunks at all loses every entry
    loaded.replace_documents(["fuzzing.md"], [])
    assert loaded.chunk_ids(["fuzzing.md"]) == {}
    with pytest.raises(ValueError, match="not among the replaced"):
        loaded.replace_documents(["a.md"], [doc("b-0", "b.md", 0, "stray")])
    loaded.replace_documents([], [])  # no-op


def test_empty_inputs(store: TantivyBM25Store) -> None:
    store.index([])
    assert store.count() == 0
    assert store.search("", 5) == []
    assert store.search("   \n", 5) == []
    assert store.search("anything", 5) == []


def test_second_instance_sees_commits(tmp_path: Path) -> None:
    path = tmp_path / "shared"
    reader = TantivyBM25Store(path)
    writer = TantivyBM25Store(path)
    assert reader.count() == 0
    assert reader.search("cosine", 5) == []  # reader opened before any write
    writer.index(CORPUS[:1])
    assert reader.count() == 1
    assert ids(reader.search("cosine", 5)) == ["pg-0"]
    # ...and the other way round, including deletes.
    reader.index(CORPUS[1:])
    assert writer.count() == len(CORPUS)
    writer.delete_documents(["pgvector.md"])
    assert reader.count() == len(CORPUS) - 2
    assert reader.search("cosine", 5) == []
    reader.close()
    writer.close()


def test_reopen_after_close_keeps_data(tmp_path: Path) -> None:
    path = tmp_path / "persist"
    s = TantivyBM25Store(path)
    s.index(CORPUS)
    s.close()
    s.close()  # idempotent
    with pytest.raises(BM25Error, match="closed"):
        s.search("cosine", 5)
    again = TantivyBM25Store(path)
    assert again.count() == len(CORPUS)
    again.close()


def test_writer_lock_times_out_with_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "locked"
    s = TantivyBM25Store(path, lock_timeout_s=0.3)
    fd = os.open(path / LOCK_FILE_NAME, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # what another process's write holds
        with pytest.raises(BM25Error, match="timed out") as info:
            s.index(CORPUS[:1])
        assert str(path) in str(info.value)
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)
    s.index(CORPUS[:1])  # fine once released
    assert s.count() == 1
    s.close()


def test_raw_second_tantivy_writer_is_refused_premise(tmp_path: Path) -> None:
    """The premise for the lock: Tantivy refuses a second concurrent writer."""
    s = TantivyBM25Store(tmp_path / "premise")
    foreign = tantivy.Index.open(str(tmp_path / "premise"))
    w1 = foreign.writer(heap_size=15_000_000, num_threads=1)
    try:
        with pytest.raises(ValueError, match="LockBusy"):
            foreign.writer(heap_size=15_000_000, num_threads=1)
    finally:
        w1.wait_merging_threads()
    s.close()


def test_unopenable_index_raises_bm25error(tmp_path: Path) -> None:
    path = tmp_path / "other-schema"
    builder = tantivy.SchemaBuilder()
    builder.add_text_field("title", stored=True)
    path.mkdir()
    tantivy.Index(builder.build(), path=str(path))
    with pytest.raises(BM25Error, match=str(path)):
        TantivyBM25Store(path)


def test_ping_failures(tmp_path: Path) -> None:
    path = tmp_path / "gone"
    s = TantivyBM25Store(path)
    assert "tantivy index at" in s.ping()
    for child in path.iterdir():
        child.unlink()
    path.rmdir()
    with pytest.raises(BM25Error, match="does not exist"):
        s.ping()
    s.close()


@pytest.mark.parametrize(
    "query",
    [
        '"',
        '"unterminated',
        "content:cosine",
        "chunk_id:pg-0",
        "(((cosine",
        "cosine)))",
        "[1 TO",
        "{x",
        "AND",
        "OR",
        "cosine AND OR NOT",
        "*",
        "cos*",
        "cosine~2",
        "cosine^10",
        "+cosine -index",
        "\\",
        "/regex.*/",
        "???",
        "emoji 🚀 cosine",
        "x" * 3000,
    ],
)
def test_special_character_queries_never_raise(loaded: TantivyBM25Store, query: str) -> None:
    hits = loaded.search(query, 5)
    assert isinstance(hits, list)
    if "cosine" in query:
        assert hits and hits[0].chunk_id == "pg-0"


# ----------------------------------------------------------------- two OS processes

WORKER_BATCHES = 6
WORKER_BATCH_SIZE = 15


def _write_in_process(path: str, tag: str) -> None:
    """Child process body (module-level so ``spawn`` can import it)."""
    store = TantivyBM25Store(Path(path), lock_timeout_s=120)
    for batch in range(WORKER_BATCHES):
        store.index(
            [
                doc(
                    f"{tag}-{batch}-{i}",
                    f"{tag}-doc-{batch}",
                    i,
                    f"process {tag} batch {batch} item {i} marker{tag}",
                )
                for i in range(WORKER_BATCH_SIZE)
            ]
        )
        store.search(f"marker{tag}", 3)  # interleave reads with the other writer
    store.close()


@pytest.mark.timeout(240)
def test_two_processes_write_concurrently(tmp_path: Path) -> None:
    path = tmp_path / "concurrent"
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_write_in_process, args=(str(path), tag)) for tag in ("a", "b")]
    for p in procs:
        p.start()
    for p in procs:
        p.join(200)
    assert [p.exitcode for p in procs] == [0, 0]
    store = TantivyBM25Store(path)
    per_proc = WORKER_BATCHES * WORKER_BATCH_SIZE
    assert store.count() == 2 * per_proc
    for tag in ("a", "b"):
        hits = store.search(f"marker{tag}", per_proc + 10)
        assert len(hits) == per_proc
        assert {h.chunk_id.split("-")[0] for h in hits} == {tag}
    store.close()


def test_stop_words_neither_match_nor_score(store: TantivyBM25Store) -> None:
    store.index(
        [
            doc("a", "a.md", 0, "the pump of the harbour is the one that is on"),
            doc("b", "b.md", 0, "pump"),
        ]
    )
    assert store.search("the of is", 5) == []
    # with stop words out, the short chunk is the better match for "the pump"
    assert ids(store.search("the pump", 5)) == ["b", "a"]


def _unreferenced_segment_files(path: Path) -> list[str]:
    """Segment files of ``path`` whose segment ``meta.json`` does not list."""
    meta = json.loads((path / "meta.json").read_text())
    live = {segment["segment_id"].replace("-", "") for segment in meta["segments"]}
    return sorted(
        f.name
        for f in path.iterdir()
        if re.fullmatch(r"[0-9a-f]{32}\..+", f.name) and f.name[:32] not in live
    )


def _write_until_killed(path: str) -> None:
    """Child body: a raw writer adding documents without ever committing (small heap, so
    Tantivy flushes uncommitted segment files to disk), as a run worker killed mid-write."""
    index = tantivy.Index.open(path)
    index.register_tokenizer("varagity_en", _analyzer())
    writer = index.writer(heap_size=15_000_000, num_threads=1)
    i = 0
    while True:
        writer.add_document(
            tantivy.Document(
                chunk_id=f"orphan-{i}",
                doc_id="orphan",
                search_text=f"uncommitted words {i} " * 50,
            )
        )
        i += 1


@pytest.mark.timeout(240)
def test_files_of_a_killed_writer_are_swept_and_the_folder_does_not_grow(
    tmp_path: Path,
) -> None:
    """Issue 12 #7: Tantivy's own GC forgets files written by another process's writer
    (each process rewrites ``.managed.json`` from its own list), so a writer killed -9
    before its commit leaked its segment files forever."""
    path = tmp_path / "bm25"
    store = TantivyBM25Store(path)
    store.index(CORPUS)
    child = multiprocessing.get_context("spawn").Process(
        target=_write_until_killed, args=(str(path),)
    )
    child.start()
    try:
        while not _unreferenced_segment_files(path):  # bounded by the test's timeout
            assert child.is_alive(), "the writer child died before writing a segment"
            child.join(0.2)
    finally:
        if child.is_alive():
            os.kill(child.pid or 0, signal.SIGKILL)
        child.join(30)
    leaked = _unreferenced_segment_files(path)
    assert leaked
    sizes = []
    for _ in range(5):  # re-ingest the same corpus, as the pipeline's upserts do
        store.index(CORPUS)
        assert _unreferenced_segment_files(path) == []
        sizes.append(sum(f.stat().st_size for f in path.iterdir()))
    assert max(sizes[1:]) <= sizes[0]
    assert store.count() == len(CORPUS)
    assert not (set(os.listdir(path)) & set(leaked))
    store.close()
