"""Per-file assets, in two stages that run as separate jobs.

Ingest (``ingest_documents``): parsed document -> chunks -> embeddings -> Postgres rows
(``indexed_document``) -> BM25 entries (``bm25_index``, written from those rows alone).
The file is searchable with its raw chunks (and their deterministic headers) as soon as
``bm25_index`` commits; no LLM call stands in the way. ``bm25_index`` also runs on its
own (``rebuild_bm25_index``, or a materialization or backfill from the Dagster UI): it
rebuilds a file's BM25 entries, or the whole index, from Postgres, parsing and embedding
nothing; its steps carry the Celery queue of the host that owns the Tantivy index.

Contextualize (``contextualize_documents``, requested by the blurb sensor once chunks
are stored): ``chunk_contexts`` writes each stored chunk's LLM blurb and, a few chunks
at a time, re-embeds and re-indexes them in place, so search improves while the
document is contextualized and the next batch's ingest never waits for it.

Each asset is partitioned by corpus file and declared with
:func:`~varagity_assets.defs.ingest.per_file.file_asset`; one run may target several
files, so each returns a typed :class:`~varagity_assets.defs.ingest.per_file.PerFile`
value (one outcome per file; a failed file is carried downstream, not fatal to the
batch, and named when the stage's last asset fails the step).
"""

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Generic, TypeVar

import dagster as dg

from varagity.config import Settings, get_settings
from varagity.files import file_sha256
from varagity.ingest import stages
from varagity.ingest.discovery import relative_path_for
from varagity.ingest.parsers import ParsedDocument
from varagity.ingest.parsing import locate, parse_file
from varagity.models.protocols import PassageEmbedder
from varagity.pipeline import CELERY_QUEUE_TAG, INDEXED_ASSET, INGEST_JOB, LLM_POOL, REINGEST_TAG
from varagity.records import doc_id_for
from varagity.stores.ingest_failures import failures_by_path, record_failures
from varagity.stores.vector_store import PgVectorStore
from varagity_assets.defs.ingest.partitions import ingest_runs_in_flight
from varagity_assets.defs.ingest.per_file import (
    IngestFailure,
    PerFile,
    Unchanged,
    each_file,
    each_outcome,
    fail_on_failures,
    file_asset,
    run_keys,
)
from varagity_assets.resources import VaragityResource
from varagity_assets.retries import is_outage

T = TypeVar("T")


class ParsedFiles(PerFile[ParsedDocument]):
    """``parsed_document``: each file's extracted text and provenance."""


class ChunkedFiles(PerFile[list[stages.ChunkDraft]]):
    """``document_chunks``: each file's chunk drafts, in document order."""


class EmbeddedFiles(PerFile[list[list[float]]]):
    """``chunk_embeddings``: one vector per draft, in draft order."""


class IndexedFiles(PerFile[stages.StoredRows]):
    """``indexed_document``: what each file's Postgres write did."""


@dataclass(frozen=True, slots=True)
class NotStored:
    """The file has no stored version to contextualize (deleted, or not indexed yet)."""

    relative_path: str


class ContextualizedFiles(PerFile[stages.ContextResult | NotStored]):
    """``chunk_contexts``: what each file's blurb pass did."""


class BM25Files(PerFile[stages.BM25Result | NotStored]):
    """``bm25_index``: what writing each file's BM25 entries from its rows did."""


@file_asset(group_name="ingest", kinds={"python"})
def parsed_document(context: dg.AssetExecutionContext, varagity: VaragityResource) -> ParsedFiles:
    """The file's extracted text and provenance (skipped when this version is indexed)."""
    settings = varagity.settings
    reingest = context.run.tags.get(REINGEST_TAG) == "true"

    def parse(key: str) -> ParsedDocument | Unchanged:
        rel = relative_path_for(key)
        if not reingest:  # hash the bytes first: an indexed version is never re-parsed
            doc_id = doc_id_for(rel, file_sha256(locate(settings.docs_path, rel)))
            marker = varagity.services.pg.get_document(doc_id)
            if marker is not None:
                note = " (no extractable text)" if marker.n_chunks == 0 else ""
                context.log.info(f"{rel} is already indexed as {doc_id}{note}; skipping")
                return Unchanged(rel, doc_id)
        return parse_file(settings.docs_path, rel, settings=settings)

    def describe(parsed: ParsedDocument | Unchanged) -> dict[str, object]:
        if isinstance(parsed, Unchanged):
            return {"doc_id": parsed.doc_id, "relative_path": parsed.relative_path}
        return {
            "doc_id": parsed.doc_id,
            "relative_path": parsed.relative_path,
            "characters": len(parsed.text),
            "bytes": parsed.size_bytes,
            "content_hash": parsed.content_hash,
        }

    return ParsedFiles(each_file(context, "parse", parse, describe=describe))


@file_asset(group_name="ingest", kinds={"python"})
def document_chunks(
    context: dg.AssetExecutionContext, varagity: VaragityResource, parsed_document: ParsedFiles
) -> ChunkedFiles:
    """The document cut into chunks (strategy, size and overlap from settings)."""
    settings = varagity.settings

    def chunk(key: str, parsed: ParsedDocument) -> list[stages.ChunkDraft]:
        drafts = stages.chunk_document(parsed, settings, varagity.services.embedder)
        if not drafts:
            context.log.warning(f"{parsed.relative_path} has no extractable text: 0 chunks")
        return drafts

    def describe(drafts: list[stages.ChunkDraft]) -> dict[str, object]:
        return {
            "chunks": len(drafts),
            "tokens": sum(d.n_tokens for d in drafts),
            "strategy": settings.CHUNKING_STRATEGY,
            "chunk_size": settings.CHUNK_SIZE,
            "chunk_overlap": settings.CHUNK_OVERLAP,
        }

    return ChunkedFiles(each_outcome(context, "chunk", parsed_document, chunk, describe))


def _pending(context: dg.AssetExecutionContext, upstream: Mapping[str, object]) -> list[str]:
    """The run's files the upstream stage left a value for (not failed, not unchanged)."""
    return [k for k in run_keys(context) if not isinstance(upstream[k], IngestFailure | Unchanged)]


@dataclass(frozen=True, slots=True)
class Together(Generic[T]):
    """A stage done for several files at once: each file's value, and what the whole
    batch took (each file's materialization records it; its own stage time is ~0)."""

    values: dict[str, T]
    seconds: float = 0.0

    def metadata(self, stage: str) -> dict[str, dict[str, object]]:
        """Per batched file: ``<stage>_batch_seconds`` and ``<stage>_batch_files``."""
        shared: dict[str, object] = {
            f"{stage}_batch_seconds": round(self.seconds, 3),
            f"{stage}_batch_files": len(self.values),
        }
        return {key: shared for key in self.values}


def _together(
    context: dg.AssetExecutionContext, what: str, todo: list[str], fn: Callable[[], dict[str, T]]
) -> Together[T]:
    """``fn()``: a stage done for all of ``todo`` at once, or nothing when fewer than two
    files wait or it fails for a file's reason (each file is then done alone, so a bad
    one is named by itself). An outage is raised: the step retries."""
    if len(todo) < 2:
        return Together({})
    started = time.perf_counter()
    try:
        values = fn()
    except Exception as exc:
        if is_outage(exc):
            raise
        context.log.warning(f"{what} the run's files together failed ({exc}); one by one")
        return Together({})
    return Together(values, time.perf_counter() - started)


def _embed_together(
    context: dg.AssetExecutionContext, chunks: ChunkedFiles, embedder: PassageEmbedder
) -> Together[list[list[float]]]:
    """Every pending file's vectors from one pass over all their chunks."""
    todo = _pending(context, chunks)

    def embed() -> dict[str, list[list[float]]]:
        vectors = stages.embed_files([chunks.value(k) for k in todo], embedder)
        return dict(zip(todo, vectors, strict=True))

    return _together(context, "embedding", todo, embed)


@file_asset(group_name="ingest", kinds={"python"})
def chunk_embeddings(
    context: dg.AssetExecutionContext, varagity: VaragityResource, document_chunks: ChunkedFiles
) -> EmbeddedFiles:
    """One vector per chunk, over its header and text (the blurb stage re-embeds later).

    The chunks of every file of the run go to the embedding server together, in full
    ``EMBEDDING_BATCH_SIZE`` requests rather than a short one per file; should that
    fail, each file is embedded alone, so a file the server refuses is named by itself.
    """
    embedder = varagity.services.embedder
    batched = _embed_together(context, document_chunks, embedder)

    def embed(key: str, drafts: list[stages.ChunkDraft]) -> list[list[float]]:
        if key in batched.values:
            return batched.values[key]
        return stages.embed_drafts(drafts, embedder)

    def describe(vectors: list[list[float]]) -> dict[str, object]:
        return {"vectors": len(vectors), "model": embedder.model, "dimension": embedder.dim}

    return EmbeddedFiles(
        each_outcome(
            context, "embed", document_chunks, embed, describe, extra=batched.metadata("embed")
        )
    )


def _stored_by_an_earlier_attempt(
    context: dg.AssetExecutionContext,
    pg: PgVectorStore,
    parsed: ParsedFiles,
    embedded: EmbeddedFiles,
) -> EmbeddedFiles:
    """``embedded``, with the files an earlier attempt of this step already stored (an
    outage cut it short and the step is being retried) turned :class:`Unchanged`, so the
    retry writes only what is left. A file counts as stored when this version's
    documents row exists (its rows are written in one transaction; ``bm25_index`` then
    removes the older versions). Not on a first attempt, nor on a reingest, whose files
    were stored before the run began."""
    if context.retry_number == 0 or context.run.tags.get(REINGEST_TAG) == "true":
        return embedded
    out = dict(embedded)
    for key in _pending(context, embedded):
        doc = parsed.value(key)
        if pg.get_document(doc.doc_id) is not None:
            context.log.info(f"{doc.relative_path} was stored before the retry; not again")
            out[key] = Unchanged(doc.relative_path, doc.doc_id)
    return EmbeddedFiles(out)


@file_asset(group_name="ingest", kinds={"postgres"})
def indexed_document(
    context: dg.AssetExecutionContext,
    varagity: VaragityResource,
    parsed_document: ParsedFiles,
    document_chunks: ChunkedFiles,
    chunk_embeddings: EmbeddedFiles,
) -> IndexedFiles:
    """The document's Postgres rows: its chunks with their vectors, and the documents row
    (the marker), each file marked as waiting for its BM25 entries (``bm25_index``).

    The run's files are written together (one Postgres transaction); should that fail,
    each file is written alone, so a file that cannot be stored is named by itself. A
    retry after an outage writes only the files not yet stored. A file that failed here
    or upstream is recorded (the corpus listing names it) and carried on: ``bm25_index``,
    the stage's last asset, fails the step naming it once the other files are searchable.
    """
    services = varagity.services

    def store_input(key: str) -> stages.StoreInput:
        return stages.StoreInput(
            parsed_document.value(key), document_chunks.value(key), chunk_embeddings.value(key)
        )

    def write(keys: list[str]) -> list[stages.StoredRows]:
        return stages.store_rows(
            [store_input(k) for k in keys],
            pg=services.pg,
            settings=services.settings,
            embedding_model=services.embedder.model,
        )

    chunk_embeddings = _stored_by_an_earlier_attempt(
        context, services.pg, parsed_document, chunk_embeddings
    )
    todo = _pending(context, chunk_embeddings)
    together = _together(
        context, "storing", todo, lambda: dict(zip(todo, write(todo), strict=True))
    )

    def store(key: str, vectors: list[list[float]]) -> stages.StoredRows:
        return together.values[key] if key in together.values else write([key])[0]

    def describe(result: stages.StoredRows) -> dict[str, object]:
        return {"doc_id": result.doc_id, "chunks": result.n_chunks}

    out = IndexedFiles(
        each_outcome(
            context, "store", chunk_embeddings, store, describe, extra=together.metadata("store")
        )
    )
    stored, skipped = out.count(stages.StoredRows), out.count(Unchanged)
    failures = out.failures()
    context.log.info(f"stored {stored} file(s), {skipped} unchanged, {len(failures)} failed")
    # the corpus listing shows these files as failed, with the reason, until they change
    record_failures(
        services.pg,
        [(f.relative_path, f.stage, f.message) for f in failures],
        run_id=context.run_id,
    )
    return out


def index_host_tags(settings: Settings) -> dict[str, str]:
    """The op tags of a step that writes the BM25 index: with the embedded Tantivy index,
    the Celery queue of the host that owns its directory (``CELERY_INDEX_QUEUE``); with
    ``ELASTICSEARCH_URL`` none (any worker may write, the executor's default queue). A
    plain tag: the in-process and multiprocess executors ignore it."""
    if settings.ELASTICSEARCH_URL:
        return {}
    return {CELERY_QUEUE_TAG: settings.CELERY_INDEX_QUEUE}


def _failed_in_run(
    context: dg.AssetExecutionContext, pg: PgVectorStore
) -> dict[str, IngestFailure]:
    """The run's files an earlier stage of this run failed (``indexed_document`` records
    them in Postgres with the run's id), by partition key: read from the database, not
    handed over, so a step on another host, or a rebuild on its own, needs no artifact."""
    keys = {relative_path_for(k): k for k in run_keys(context)}
    return {
        keys[rel]: IngestFailure(rel, row.stage, row.reason)
        for rel, row in failures_by_path(pg).items()
        if rel in keys and row.run_id == context.run_id
    }


def _writes_every_file(context: dg.AssetExecutionContext) -> bool:
    """Whether the step rewrites the entries of every file: a rebuild (``bm25_index`` on
    its own) or a reingest. An ingest leaves alone the files whose entries are there."""
    if context.run.tags.get(REINGEST_TAG) == "true":
        return True
    selection = context.run.asset_selection
    if selection is not None:
        return dg.AssetKey(INDEXED_ASSET) not in selection
    return context.run.job_name != INGEST_JOB


def build_bm25_index(settings: Settings) -> dg.AssetsDefinition:
    """``bm25_index`` as ``settings`` configure it: its steps tagged for the host that
    owns the index (:func:`index_host_tags`) and its kind the configured backend. The
    code location builds it once, when it loads (as it does the backfill policy)."""
    backend = "elasticsearch" if settings.ELASTICSEARCH_URL else "tantivy"

    @file_asset(
        group_name="ingest",
        kinds={"postgres", backend},
        deps=[indexed_document],
        op_tags=index_host_tags(settings),
    )
    def bm25_index(context: dg.AssetExecutionContext, varagity: VaragityResource) -> BM25Files:
        """Each file's BM25 entries, written from its chunk rows in Postgres alone.

        The newest stored version of each file of the run gets entries that are exactly
        its chunks (``contextualized_content`` is what is searched), older versions
        leave both stores, and its waiting mark clears: the file is searchable. The
        run's files are written in one BM25 commit; should that fail, one by one. In an
        ingest run a file whose entries are already written is left alone; materialized
        on its own (``rebuild_bm25_index``, a Dagster UI backfill over every partition)
        or in a reingest it rewrites every file's entries: the index rebuilt from
        Postgres, nothing parsed or embedded. The stage's last asset: it fails the step
        naming each file that failed here or earlier in the run.
        """
        services = varagity.services
        pg, bm25 = services.pg, services.bm25
        force = _writes_every_file(context)
        failed = _failed_in_run(context, pg)
        todo = [k for k in run_keys(context) if k not in failed]

        def write(keys: list[str]) -> dict[str, stages.BM25Result | None]:
            rels = [relative_path_for(k) for k in keys]
            found = stages.index_stored_paths(rels, pg=pg, bm25=bm25, force=force)
            return {k: found[rel] for k, rel in zip(keys, rels, strict=True)}

        together = _together(context, "indexing", todo, lambda: write(todo))

        def index(key: str) -> stages.BM25Result | NotStored:
            result = together.values[key] if key in together.values else write([key])[key]
            if result is None:
                rel = relative_path_for(key)
                context.log.info(f"{rel} has no stored version (deleted, or never stored)")
                return NotStored(rel)
            return result

        def describe(result: stages.BM25Result | NotStored) -> dict[str, object]:
            if isinstance(result, NotStored):
                return {"relative_path": result.relative_path, "stored": False}
            return {
                "doc_id": result.doc_id,
                "entries": result.entries,
                "written": result.written,
                "replaced_versions": len(result.replaced_doc_ids),
                "bm25_backend": bm25.backend,
            }

        done = each_file(context, "bm25", index, todo, describe, extra=together.metadata("bm25"))
        out = BM25Files({k: failed[k] if k in failed else done[k] for k in run_keys(context)})
        written = sum(1 for v in out.values() if isinstance(v, stages.BM25Result) and v.written)
        new_failures = [v for v in done.values() if isinstance(v, IngestFailure)]
        context.log.info(
            f"wrote the BM25 entries of {written} file(s) ({bm25.backend}), "
            f"{out.count(stages.BM25Result) - written} already there, "
            f"{out.count(NotStored)} not stored, {len(out.failures())} failed"
        )
        record_failures(
            pg, [(f.relative_path, f.stage, f.message) for f in new_failures], run_id=context.run_id
        )
        fail_on_failures(
            out, f"{out.count(stages.BM25Result)} other file(s) of this run were indexed"
        )
        return out

    return bm25_index


bm25_index = build_bm25_index(get_settings())


@file_asset(
    group_name="contextualize",
    kinds={"python", "postgres", "tantivy"},
    pool=LLM_POOL,
    deps=[bm25_index],
)
def chunk_contexts(
    context: dg.AssetExecutionContext, varagity: VaragityResource
) -> ContextualizedFiles:
    """Each stored chunk's LLM blurb, re-embedded and re-indexed in place as it lands.

    Works from the stores: the newest stored version of the file, its chunks that have
    no blurb yet, the document text rebuilt from its chunks. Every few blurbs the
    chunks are replaced in both stores under their ``chunk_id`` and an observation
    ("contextualized n/m") is logged, so the partition shows progress before the step
    ends. :class:`NotStored` for a file with no stored version; nothing is called with
    ``CONTEXTUALIZE=false``. While an ingest run is queued or under way the pass gives
    way: the blurb being written is cut off within a few tokens and no other is asked
    for (what is written stays; the blurb sensor requests the rest once ingest is
    done), so new files never wait for the LLM's cores. A chat turn that wants the model
    (from any API process or host, through the ``model_claims`` table) cuts the blurb
    under way the same way, but the pass waits for the turn and then goes on (the
    step's ``yielded_to_turns`` says how often).
    """
    services = varagity.services
    settings = services.settings

    def situate(key: str) -> stages.ContextResult | NotStored:
        rel = relative_path_for(key)
        versions = services.pg.documents_at_path(rel)
        if not versions:
            context.log.info(f"{rel} has no stored version (deleted, or not indexed yet)")
            return NotStored(rel)

        def progress(result: stages.ContextResult) -> None:
            context.log.info(f"{rel}: contextualized {result.progress}")
            context.log_event(
                dg.AssetObservation(
                    asset_key=context.asset_key,
                    partition=key,
                    metadata={"contextualized": result.progress, "doc_id": result.doc_id},
                )
            )

        return stages.contextualize_document(
            versions[-1].doc_id,  # the newest; an older one is being purged
            pg=services.pg,
            bm25=services.bm25,
            chat=services.chat,
            embedder=services.embedder,
            settings=settings,
            on_progress=progress,
            should_pause=lambda: ingest_runs_in_flight(context.instance) > 0,
            claims=services.model_claims,
        )

    def describe(result: stages.ContextResult | NotStored) -> dict[str, object]:
        if isinstance(result, NotStored):
            return {"relative_path": result.relative_path, "stored": False}
        written = len(result.blurbs)
        return {
            "doc_id": result.doc_id,
            "contextualized": result.progress,
            "blurbs_written": written,
            "model": settings.LLM_MODEL if settings.CONTEXTUALIZE else "none (off)",
            "llm_seconds": round(result.llm_seconds, 3),
            "chunks_per_s": round(written / result.llm_seconds, 3) if result.llm_seconds else 0.0,
            "superseded": result.superseded,
            "paused_for_ingest": result.paused,
            "yielded_to_turns": result.yielded,
        }

    out = ContextualizedFiles(each_file(context, "contextualize", situate, describe=describe))
    done = out.count(stages.ContextResult)
    fail_on_failures(out, f"{done} other file(s) of this run were contextualized")
    return out
