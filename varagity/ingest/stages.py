"""The per-file ingest stages the Dagster assets (and the benchmark) call.

parse -> chunk -> embed -> store rows -> BM25 entries makes a file searchable with its
raw chunks (each with its deterministic header): :func:`store_rows` writes the
Postgres rows (the documents row is the idempotency marker), then
:func:`index_stored_paths` writes the BM25 entries from those rows alone, so the BM25
index can be rebuilt from Postgres at any time with no parsing or model call. The LLM
blurbs come later and separately:
:func:`contextualize_document` reads a stored document's chunks that have no blurb
yet, writes their blurbs a few at a time and re-embeds and re-indexes each group in
place (same ``chunk_id``, both stores), so search improves while the document is being
contextualized and never waits for it. Each stage is a plain function over plain
records, so the pipeline is testable without Dagster and the assets stay thin.

Every write of one document (store, blurb re-index, purge) holds that document's
lock (:meth:`PgVectorStore.document_lock`) across its BM25 write and its Postgres
transaction; the blurb stage updates only chunk rows that still exist with the text
the blurb was written for, so a document deleted or replaced meanwhile stays gone.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from pydantic import BaseModel

from varagity.chunking.header import chunk_header
from varagity.chunking.headings import heading_index
from varagity.chunking.registry import build_chunker
from varagity.config import Settings
from varagity.context.contextual import (
    WARM_STEP_TOKENS,
    DocumentContextualizer,
    Interrupted,
    contextualized_text,
)
from varagity.ingest.parsers import ParsedDocument
from varagity.models.protocols import Completer, PassageEmbedder
from varagity.records import ChunkRecord, chunk_id_for
from varagity.stores.bm25 import BM25Document, BM25Store
from varagity.stores.ingest_failures import clear_failures
from varagity.stores.model_claims import ModelClaims, Throttled
from varagity.stores.vector_store import DocumentRow, EmbeddedChunk, PgVectorStore
from varagity.tokens import count_tokens

log = logging.getLogger(__name__)

#: Chunks the blurb stage writes blurbs for before it re-embeds and re-indexes them
#: together: small, so a document's progress moves every few seconds, large enough
#: that the per-write cost (a BM25 commit, a Postgres transaction) stays minor.
CONTEXT_GROUP_SIZE = 4
#: How often a blurb under way (or a pass waiting for chat turns) looks for turns that
#: want the model: the cut comes this long after a turn claims it, plus a few tokens.
TURN_CHECK_SECONDS = 0.2
#: A turn claim older than this is not waited for: no answer takes so long, so its
#: holder leaked it (a turn generator never closed) and blurbs would starve.
TURN_CLAIM_MAX_AGE_SECONDS = 600.0


class ChunkDraft(BaseModel):
    """A chunk before it is stored: text, offsets, page and header.

    ``header`` is the deterministic contextual header (file path, heading path,
    enclosing code symbol) written at chunk time at no model cost. The LLM blurb is
    not part of a draft: the blurb stage adds it to the stored chunk later.
    """

    chunk_index: int
    content: str
    char_start: int
    char_end: int
    n_tokens: int
    page: int | None = None
    extraction: str = "text"
    heading_path: str | None = None
    header: str | None = None

    @property
    def contextualized_content(self) -> str:
        """The text first stored and BM25-indexed: the header, then the chunk."""
        return contextualized_text(self.header, None, self.content)

    @property
    def embedding_text(self) -> str:
        """The text first embedded: the chunk alone, without the header.

        Measured on the code suite with 1200-character chunks, the header lifts BM25
        (Pass@5 +2) but costs MiniLM 6 points of Pass@5: the model reads 256 word pieces,
        a chunk already fills them, and the header's path words push its tail out. The
        blurb stage later embeds blurb + chunk, again without the header.
        """
        return self.content


@dataclass(frozen=True, slots=True)
class StoreResult:
    """What one document's store write did."""

    doc_id: str
    n_chunks: int
    replaced_doc_ids: list[str]


@dataclass(frozen=True, slots=True)
class StoredRows:
    """What one document's Postgres write did (its BM25 entries are written next)."""

    doc_id: str
    n_chunks: int


@dataclass(frozen=True, slots=True)
class BM25Result:
    """What writing one file's BM25 entries from its stored rows did."""

    doc_id: str
    """The stored version indexed (the newest at its path)."""
    entries: int
    replaced_doc_ids: list[str]
    """Older versions of the file, removed from both stores once this one was indexed."""
    written: bool = True
    """False when its entries were already there and were left as they are."""


@dataclass(frozen=True, slots=True)
class ContextResult:
    """What one pass of the blurb stage over a stored document did."""

    doc_id: str
    n_chunks: int
    contextualized: int
    """Chunks of the document that have their blurb now."""
    blurbs: dict[str, str] = field(default_factory=dict)
    """The blurbs this pass wrote, by ``chunk_id`` ("" where the model wrote none)."""
    superseded: bool = False
    """The document was deleted or rewritten meanwhile; the pass stopped there."""
    llm_seconds: float = 0.0
    paused: bool = False
    """The pass gave way (``should_pause``) before the document was done."""
    yielded: int = 0
    """Times the pass gave the model up to chat turns (and waited for them)."""

    @property
    def progress(self) -> str:
        """``contextualized n/m``'s ``n/m``."""
        return f"{self.contextualized}/{self.n_chunks}"


def chunk_document(
    parsed: ParsedDocument, settings: Settings, embedder: PassageEmbedder | None = None
) -> list[ChunkDraft]:
    """Split a parsed document; each chunk gets its own page, extraction and headings."""
    chunker = build_chunker(settings, embedder)
    spans = chunker.split(parsed.text, path=parsed.relative_path, markdown=parsed.markdown)
    headings = heading_index(parsed.text) if parsed.markdown else None
    drafts = []
    for i, s in enumerate(spans):
        page = parsed.span_at(s.char_start)
        heading = s.heading_path or (headings.path_at(s.char_start) if headings else None)
        header = (
            chunk_header(parsed.relative_path, heading, s.symbol_path)
            if settings.CHUNK_HEADERS
            else None
        )
        drafts.append(
            ChunkDraft(
                chunk_index=i,
                content=s.text,
                char_start=s.char_start,
                char_end=s.char_end,
                n_tokens=count_tokens(s.text),
                page=page.page if page else None,
                extraction=page.extraction if page else "text",
                heading_path=heading,
                header=header,
            )
        )
    return drafts


def embed_drafts(drafts: Sequence[ChunkDraft], embedder: PassageEmbedder) -> list[list[float]]:
    """One vector per chunk, over its embedding text (blurb and chunk, no header)."""
    if not drafts:
        return []
    return embedder.embed_passages([d.embedding_text for d in drafts])


def embed_files(
    files: Sequence[Sequence[ChunkDraft]], embedder: PassageEmbedder
) -> list[list[list[float]]]:
    """Each file's vectors, from one pass over all the files' chunks (full
    ``EMBEDDING_BATCH_SIZE`` requests rather than a short one per file)."""
    vectors = embed_drafts([d for drafts in files for d in drafts], embedder)
    out, start = [], 0
    for drafts in files:
        out.append(vectors[start : start + len(drafts)])
        start += len(drafts)
    return out


def build_records(
    parsed: ParsedDocument,
    drafts: Sequence[ChunkDraft],
    original_indexes: Sequence[int],
    *,
    settings: Settings,
    embedding_model: str,
) -> list[ChunkRecord]:
    """Full chunk records for a document, with allocated corpus-wide indexes."""
    return [
        ChunkRecord(
            doc_id=parsed.doc_id,
            chunk_id=chunk_id_for(parsed.doc_id, d.chunk_index),
            original_index=idx,
            chunk_index=d.chunk_index,
            source=parsed.source,
            relative_path=parsed.relative_path,
            file_name=parsed.file_name,
            file_type=parsed.file_type,
            page=d.page,
            char_start=d.char_start,
            char_end=d.char_end,
            content=d.content,
            contextualized_content=d.contextualized_content,
            chunk_size=settings.CHUNK_SIZE,
            chunk_overlap=settings.CHUNK_OVERLAP,
            chunking_strategy=settings.CHUNKING_STRATEGY,
            embedding_model=embedding_model,
            n_tokens=d.n_tokens,
            content_hash=parsed.content_hash,
            file_created_at=parsed.file_created_at,
            file_modified_at=parsed.file_modified_at,
            extraction=d.extraction,
            heading_path=d.heading_path,
            header=d.header,
        )
        for d, idx in zip(drafts, original_indexes, strict=True)
    ]


@dataclass(frozen=True, slots=True)
class StoreInput:
    """One document ready to store: its parse, its chunks and one vector per chunk."""

    parsed: ParsedDocument
    drafts: Sequence[ChunkDraft]
    vectors: Sequence[Sequence[float]]


def store_rows(
    documents: Sequence[StoreInput],
    *,
    pg: PgVectorStore,
    settings: Settings,
    embedding_model: str,
) -> list[StoredRows]:
    """Write documents' Postgres rows together, in one transaction under their locks: each
    documents row (the marker) and its chunks with their vectors, each marked as waiting
    for its BM25 entries (:func:`index_stored_paths` writes them from these rows).

    Chunks a rewrite of the same ``doc_id`` no longer has (a reingest with other chunk
    settings) leave Postgres here and the BM25 index when its entries are rewritten.
    Older versions of the same paths stay until then, so the file stays searchable in
    both arms throughout. All or nothing: one failing row fails them all (the ingest
    step then stores its files one by one to name the bad one).
    """
    for doc in documents:
        if len(doc.vectors) != len(doc.drafts):
            raise ValueError(
                f"{doc.parsed.relative_path}: {len(doc.drafts)} chunks but "
                f"{len(doc.vectors)} embeddings"
            )
    indexes = iter(pg.allocate_original_indexes(sum(len(d.drafts) for d in documents)))
    records = [
        build_records(
            doc.parsed,
            doc.drafts,
            [next(indexes) for _ in doc.drafts],
            settings=settings,
            embedding_model=embedding_model,
        )
        for doc in documents
    ]
    with pg.document_lock([d.parsed.doc_id for d in documents]) as conn:
        for doc, rows in zip(documents, records, strict=True):
            parsed = doc.parsed
            pg.write_document(
                DocumentRow(
                    doc_id=parsed.doc_id,
                    source=parsed.source,
                    relative_path=parsed.relative_path,
                    file_type=parsed.file_type,
                    content_hash=parsed.content_hash,
                    n_chunks=len(rows),
                ),
                [EmbeddedChunk(r, v) for r, v in zip(rows, doc.vectors, strict=True)],
                conn=conn,
                awaiting_bm25=True,
            )
    return [
        StoredRows(doc.parsed.doc_id, len(rows))
        for doc, rows in zip(documents, records, strict=True)
    ]


def write_bm25_entries(
    doc_ids: Sequence[str], *, pg: PgVectorStore, bm25: BM25Store
) -> dict[str, int]:
    """Make each document's BM25 entries exactly its chunk rows in Postgres, in one BM25
    commit, and clear their waiting marks; the entries written, by ``doc_id``.

    Everything is read from Postgres under the documents' write locks (every writer of a
    document holds its lock across its BM25 write and its Postgres transaction), so no
    blurb or purge lands between the read and the write. Every other entry of those
    documents leaves the index (chunks a rewrite dropped, a crashed write's leftovers);
    a ``doc_id`` no longer stored (purged meanwhile) keeps no entry at all.
    """
    ids = list(dict.fromkeys(doc_ids))
    if not ids:
        return {}
    with pg.document_lock(ids) as conn:
        rows = pg.chunks_of_documents(ids, conn=conn)
        bm25.replace_documents(ids, [BM25Document.of(r) for doc in rows.values() for r in doc])
        pg.bm25_written(ids, conn=conn)
    return {doc_id: len(records) for doc_id, records in rows.items()}


def index_stored_paths(
    relative_paths: Sequence[str], *, pg: PgVectorStore, bm25: BM25Store, force: bool = True
) -> dict[str, BM25Result | None]:
    """The BM25 entries of the files at ``relative_paths``, written from Postgres alone:
    the newest stored version of each gets its entries (:func:`write_bm25_entries`, one
    commit for all), then the older versions leave both stores (BM25 first, the Postgres
    markers last, so a crash in between leaves something retryable, never a half-visible
    document). ``None`` for a path with no stored version.

    Without ``force`` a file whose only stored version already has its entries (no
    waiting mark) is left as it is (:attr:`BM25Result.written` false): what an ingest of
    unchanged files does. With it every file's entries are rewritten: a rebuild.
    """
    versions = {rel: pg.documents_at_path(rel) for rel in dict.fromkeys(relative_paths)}
    newest = {rel: found[-1] for rel, found in versions.items() if found}  # by ingest time
    older = {rel: [v.doc_id for v in versions[rel][:-1]] for rel in newest}
    waiting = set() if force or not newest else pg.awaiting_bm25()
    kept = {
        rel
        for rel, doc in newest.items()
        if not force and doc.doc_id not in waiting and not older[rel]
    }
    written = write_bm25_entries(
        [doc.doc_id for rel, doc in newest.items() if rel not in kept], pg=pg, bm25=bm25
    )
    purge_documents([d for ids in older.values() for d in ids], pg=pg, bm25=bm25)
    out: dict[str, BM25Result | None] = {}
    for rel in relative_paths:
        doc = newest.get(rel)
        if doc is None:
            out[rel] = None
        elif rel in kept:
            out[rel] = BM25Result(doc.doc_id, doc.n_chunks, [], written=False)
        else:
            out[rel] = BM25Result(doc.doc_id, written[doc.doc_id], older[rel])
    return out


def store_documents(
    documents: Sequence[StoreInput],
    *,
    pg: PgVectorStore,
    bm25: BM25Store,
    settings: Settings,
    embedding_model: str,
) -> list[StoreResult]:
    """Make documents searchable in one go, as an ingest run's two last steps do: their
    Postgres rows (:func:`store_rows`), then their BM25 entries written from those rows
    and the older versions of their paths removed (:func:`index_stored_paths`); one
    result per document, in order. For callers outside Dagster (``ingest_file``, the
    benchmarks)."""
    stored = store_rows(documents, pg=pg, settings=settings, embedding_model=embedding_model)
    indexed = index_stored_paths([d.parsed.relative_path for d in documents], pg=pg, bm25=bm25)
    results = []
    for doc, rows in zip(documents, stored, strict=True):
        entries = indexed[doc.parsed.relative_path]
        results.append(
            StoreResult(rows.doc_id, rows.n_chunks, entries.replaced_doc_ids if entries else [])
        )
    return results


def purge_documents(doc_ids: Sequence[str], *, pg: PgVectorStore, bm25: BM25Store) -> list[str]:
    """Remove documents from both stores under their locks: BM25 first, Postgres last."""
    if not doc_ids:
        return []
    with pg.document_lock(doc_ids) as conn:
        bm25.delete_documents(list(doc_ids))
        return pg.delete_documents(doc_ids, conn=conn)


def purge_path(relative_path: str, *, pg: PgVectorStore, bm25: BM25Store) -> list[str]:
    """Remove every stored version of the file at ``relative_path`` (and its recorded
    ingest failure)."""
    removed = purge_documents(
        [d.doc_id for d in pg.documents_at_path(relative_path)], pg=pg, bm25=bm25
    )
    clear_failures(pg, [relative_path])
    return removed


def document_text(records: Sequence[ChunkRecord]) -> str:
    """A stored document's text, rebuilt from its chunks' offsets into the parsed text.

    Chunks are exact slices of the parsed text (``text[char_start:char_end]``), so
    overlaps are cut where they start; what no chunk covers (the whitespace a splitter
    drops between two chunks) becomes a line break. The blurb stage works from the
    stores alone: the text it situates chunks in is the text that was indexed.
    """
    ordered = sorted(
        records,
        key=lambda r: (r.char_start if r.char_start is not None else 1 << 62, r.chunk_index),
    )
    parts: list[str] = []
    end = 0
    for r in ordered:
        if r.char_start is None or r.char_end is None:
            parts.append(("\n" if parts else "") + r.content)
            continue
        if r.char_end <= end:
            continue
        if r.char_start >= end:
            parts.append(("\n" if parts and r.char_start > end else "") + r.content)
        else:
            parts.append(r.content[end - r.char_start :])
        end = r.char_end
    return "".join(parts)


def store_contexts(
    doc_id: str,
    records: Sequence[ChunkRecord],
    vectors: Sequence[Sequence[float]],
    *,
    pg: PgVectorStore,
    bm25: BM25Store,
) -> list[str]:
    """Replace chunks' stored versions with their contextualized ones, in both stores.

    ``records`` carry the new ``context``; each replaces the stored chunk of the same
    ``chunk_id`` only if that chunk still exists with the same content (the document
    was not deleted, replaced or re-chunked meanwhile). Under the document's lock:
    BM25 first (an upsert by ``chunk_id``), then a Postgres ``UPDATE`` (never an
    insert) that also marks the chunks contextualized.

    Returns:
        The ``chunk_id`` values written.
    """
    if len(vectors) != len(records):
        raise ValueError(f"{len(records)} chunks but {len(vectors)} embeddings")
    with pg.document_lock([doc_id]) as conn:
        current = pg.lock_chunks(conn, doc_id, [r.chunk_id for r in records])
        fresh = []
        for record, vector in zip(records, vectors, strict=True):
            stored = current.get(record.chunk_id)
            if stored is None or stored.content != record.content:
                continue
            updated = stored.model_copy(
                update={
                    "context": record.context,
                    "contextualized_content": contextualized_text(
                        stored.header, record.context, stored.content
                    ),
                }
            )
            fresh.append(EmbeddedChunk(updated, vector))
        if fresh:
            bm25.index([BM25Document.of(c.record) for c in fresh])
            pg.update_contexts(conn, fresh)
    return [c.record.chunk_id for c in fresh]


def contextualize_document(
    doc_id: str,
    *,
    pg: PgVectorStore,
    bm25: BM25Store,
    chat: Completer,
    embedder: PassageEmbedder,
    settings: Settings,
    group_size: int = CONTEXT_GROUP_SIZE,
    on_progress: Callable[[ContextResult], None] | None = None,
    should_pause: Callable[[], bool] | None = None,
    claims: ModelClaims | None = None,
    warm_step_tokens: int = WARM_STEP_TOKENS,
) -> ContextResult:
    """Write the missing blurbs of a stored document, re-indexing each group as it lands.

    The chunks still waiting for a blurb are situated one after another in the whole
    document (rebuilt from its stored chunks); every ``group_size`` of them are
    embedded again over blurb + chunk (the header stays BM25-only) and replace their stored
    versions (:func:`store_contexts`), then ``on_progress`` hears the running total.
    With ``CONTEXTUALIZE=false`` nothing is called. Before each LLM call the document
    must still be stored: one deleted or replaced meanwhile stops the pass before its
    next chunk (``superseded``; the LLM is not asked for blurbs nobody will keep). The
    pass also stops at the first group that could not be written in full (re-chunked
    meanwhile), and what still waits is for a later pass to find. ``should_pause`` is
    asked before the pass, before each LLM call and every few tokens of a blurb being
    written (the reply is then streamed); when it says so, the blurb under way is cut
    off and dropped, the blurbs already written are stored and the pass ends
    ``paused`` (new files are being ingested: the LLM would take the cores they need;
    one blurb left to finish took 78 s beside an ingest on two cores).

    With ``claims`` (:class:`~varagity.stores.model_claims.ModelClaims`, shared by every
    process through Postgres) the pass yields the model to chat turns: each LLM request
    holds a ``"blurb"`` claim; while any ``"turn"`` claim is live, the request under way
    is cut within a few tokens and the pass *waits* (its run goes on) until no turn
    wants the model, then redoes that chunk (:attr:`ContextResult.yielded` counts the
    times). So a turn waits for at most one short request: before a document's first
    blurb, and again after each yield, the document is loaded into the server's prompt
    cache in steps of ``warm_step_tokens`` (:meth:`DocumentContextualizer.warm`; 0 sends
    the whole document with the first blurb).
    """
    if group_size < 1:
        raise ValueError(f"group_size must be at least 1, got {group_size}")
    done, total = pg.context_progress(doc_id)
    if not settings.CONTEXTUALIZE:
        return ContextResult(doc_id, total, done)

    def pause() -> bool:
        return should_pause is not None and should_pause()

    waiting = pg.chunks_awaiting_context(doc_id)
    if not waiting:
        return ContextResult(doc_id, total, done)
    if pause():
        return ContextResult(doc_id, total, done, paused=True)
    records = pg.chunks_of(doc_id)
    contextualizer = DocumentContextualizer(
        chat,
        document_text(records),
        longest_chunk=max((r.content for r in records), key=len),
        context_tokens=settings.LLM_CONTEXT_TOKENS,
        max_tokens=settings.CONTEXT_MAX_TOKENS,
    )
    gate = _TurnGate(claims) if claims is not None else None
    cold = True  # the server's cache may not hold the document: warm before asking

    def ask(content: str) -> str:
        """One blurb, given up to chat turns (and redone after them) as often as needed;
        raises :class:`Interrupted` only when the pass must pause for ingest."""
        nonlocal cold
        cut = False  # the last request was cut for a turn (already counted)
        while True:
            if gate is not None and gate.wait_for_turns(pause):
                cold = True  # the turns' prompts went through the server meanwhile
                gate.yielded += 0 if cut else 1
                if pause():  # ingest began while the turns were answered
                    raise Interrupted("asked after waiting for chat turns")
            cut = False
            if gate is None:
                blurb = _situate(contextualizer, content, should_pause, warm_step_tokens, cold)
                cold = False
                return blurb
            stop = gate.stop_when(pause)
            try:
                with gate.claims.holding("blurb"):
                    if gate.turn_waiting(fresh=True):  # came in as the claim was made
                        continue
                    blurb = _situate(contextualizer, content, stop, warm_step_tokens, cold)
                    cold = False
                    return blurb
            except Interrupted:
                if pause():
                    raise
                gate.yielded += 1
                cold = cut = True
                log.info("%s: a blurb gave the model up to a chat turn; redone after it", doc_id)

    blurbs: dict[str, str] = {}
    llm_seconds = 0.0
    result = ContextResult(doc_id, total, done)
    paused = False
    for first in range(0, len(waiting), group_size):
        group = waiting[first : first + group_size]
        started = time.perf_counter()
        written_blurbs: list[str] = []
        for record in group:
            if pg.get_document(doc_id) is None:  # deleted or replaced: no more LLM calls
                break
            try:  # asked before the call or mid-blurb: keep what is written, give way
                if (first or written_blurbs) and pause():
                    raise Interrupted("asked before the LLM call")
                blurb = ask(record.content)
            except Interrupted:  # a blurb cut off mid-way is dropped
                paused = True
                group = group[: len(written_blurbs)]
                break
            written_blurbs.append(blurb)
        waited = gate.take_waited() if gate is not None else 0.0  # for turns, not the LLM
        llm_seconds += time.perf_counter() - started - waited
        if not group:  # paused before this group's first blurb
            result = ContextResult(
                doc_id,
                total,
                done,
                dict(blurbs),
                llm_seconds=llm_seconds,
                paused=True,
                yielded=gate.yielded if gate is not None else 0,
            )
            break
        written: list[str] = []
        if len(written_blurbs) == len(group):
            situated = [
                r.model_copy(update={"context": b or None})
                for r, b in zip(group, written_blurbs, strict=True)
            ]
            vectors = embedder.embed_passages(
                [contextualized_text(None, r.context, r.content) for r in situated]
            )
            written = store_contexts(doc_id, situated, vectors, pg=pg, bm25=bm25)
            blurbs.update(
                (r.chunk_id, b)
                for r, b in zip(group, written_blurbs, strict=True)
                if r.chunk_id in written
            )
        done += len(written)
        superseded = len(written) < len(group)
        result = ContextResult(
            doc_id,
            total,
            done,
            dict(blurbs),
            superseded=superseded,
            llm_seconds=llm_seconds,
            paused=paused and not superseded,
            yielded=gate.yielded if gate is not None else 0,
        )
        if on_progress is not None:
            on_progress(result)
        if result.paused:
            log.info(
                "%s: blurbs paused at %s while new files are ingested", doc_id, result.progress
            )
            break
        if superseded:
            log.info(
                "%s changed while its blurbs were written (deleted, replaced or re-chunked): "
                "stopped after %s",
                doc_id,
                result.progress,
            )
            break
    return result


class _TurnGate:
    """A blurb pass's view of the chat turns that want the model (``"turn"`` claims)."""

    def __init__(self, claims: ModelClaims) -> None:
        self.claims = claims
        self.yielded = 0
        self._waited = 0.0
        self._cached = Throttled(self._ask, TURN_CHECK_SECONDS)

    def _ask(self) -> bool:
        return self.claims.live("turn", max_age=TURN_CLAIM_MAX_AGE_SECONDS) > 0

    def turn_waiting(self, *, fresh: bool = False) -> bool:
        """Whether a chat turn wants the model (``fresh``: asked now, not throttled)."""
        if not fresh:
            return self._cached()
        answer = self._ask()
        self._cached.set(answer)
        return answer

    def stop_when(self, pause: Callable[[], bool]) -> Callable[[], bool]:
        """What a blurb under way asks every few tokens: pause for ingest, or a turn."""
        return lambda: self._cached() or pause()

    def wait_for_turns(self, pause: Callable[[], bool]) -> bool:
        """Block while a chat turn wants the model (or until ``pause`` says to stop);
        True when it waited."""
        if not self.turn_waiting(fresh=True):
            return False
        began = time.perf_counter()
        log.info("a chat turn wants the model: blurbs wait for it")
        while self.turn_waiting(fresh=True) and not pause():
            time.sleep(TURN_CHECK_SECONDS)
        self._waited += time.perf_counter() - began
        return True

    def take_waited(self) -> float:
        """Seconds spent waiting for turns since the last call."""
        waited, self._waited = self._waited, 0.0
        return waited


def _situate(
    contextualizer: DocumentContextualizer,
    content: str,
    should_stop: Callable[[], bool] | None,
    warm_step_tokens: int,
    cold: bool,
) -> str:
    """One blurb; first, when the server may not hold the document, warm it in steps."""
    if cold and warm_step_tokens > 0:
        contextualizer.warm(step_tokens=warm_step_tokens, should_stop=should_stop)
    return contextualizer.situate(content, should_stop=should_stop)
