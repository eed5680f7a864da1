"""Per-file assets, in two stages that run as separate jobs.

Ingest (``ingest_documents``): parsed document -> chunks -> embeddings -> index. The
file is searchable with its raw chunks (and their deterministic headers) as soon as
``indexed_document`` commits; no LLM call stands in the way.

Contextualize (``contextualize_documents``, requested by the blurb sensor once chunks
are stored): ``chunk_contexts`` writes each stored chunk's LLM blurb and, a few chunks
at a time, re-embeds and re-indexes them in place, so search improves while the
document is contextualized and the next batch's ingest never waits for it.

Each asset is partitioned by corpus file. One run may target several partitions (the
sensors batch), so each asset maps over ``context.partition_keys`` and returns
``{partition_key: value}``. A file that fails a stage is carried downstream as an
:class:`IngestFailure` instead of sinking the whole batch; the last asset of a stage
finishes every good file, then fails the step naming each bad file and its reason.
"""

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import dagster as dg

from varagity.dagster_client import REINGEST_TAG
from varagity.ingest import stages
from varagity.ingest.discovery import file_sha256, relative_path_for
from varagity.ingest.parsers import ParsedDocument
from varagity.ingest.parsing import locate, parse_file
from varagity.records import doc_id_for
from varagity_assets.documents.partitions import documents_partitions
from varagity_assets.documents.resources import VaragityResource

T = TypeVar("T")
BATCH_POLICY = dg.BackfillPolicy.multi_run(max_partitions_per_run=25)


@dataclass(frozen=True, slots=True)
class IngestFailure:
    """A file that failed a stage: carried downstream so the rest of the batch proceeds."""

    relative_path: str
    stage: str
    message: str


@dataclass(frozen=True, slots=True)
class Unchanged:
    """This exact file version is already indexed: later stages do nothing."""

    relative_path: str
    doc_id: str


def _per_partition(
    context: dg.AssetExecutionContext,
    stage: str,
    upstream: dict[str, Any],
    fn: Callable[[str, Any], T],
) -> dict[str, T | IngestFailure | Unchanged]:
    """Apply ``fn`` to each targeted partition, passing failures/skips through."""
    out: dict[str, T | IngestFailure | Unchanged] = {}
    for key in context.partition_keys:
        previous = upstream.get(key)
        if isinstance(previous, IngestFailure | Unchanged):
            out[key] = previous
            continue
        started = time.perf_counter()
        try:
            out[key] = fn(key, previous)
        except Exception as exc:  # one bad file must not sink the batch
            rel = relative_path_for(key)
            message = f"{type(exc).__name__}: {exc}"
            context.log.error(f"{stage} failed for {rel}: {message}")
            out[key] = IngestFailure(rel, stage, message)
            continue
        context.add_asset_metadata(
            {f"{stage}_seconds": round(time.perf_counter() - started, 3)}, partition_key=key
        )
    return out


def _parsed(upstream: dict[str, Any], key: str) -> ParsedDocument:
    value = upstream[key]
    assert isinstance(value, ParsedDocument)
    return value


@dg.asset(
    partitions_def=documents_partitions,
    group_name="ingest",
    io_manager_key="artifacts",
    backfill_policy=BATCH_POLICY,
    kinds={"python"},
)
def parsed_document(
    context: dg.AssetExecutionContext, varagity: VaragityResource
) -> dict[str, Any]:
    """The file's extracted text and provenance (skipped when this version is indexed)."""
    settings = varagity.settings
    reingest = context.run.tags.get(REINGEST_TAG) == "true"

    def parse(key: str, _: Any) -> ParsedDocument | Unchanged:
        rel = relative_path_for(key)
        if not reingest:  # hash the bytes first: an indexed version is never re-parsed
            doc_id = doc_id_for(rel, file_sha256(locate(settings.docs_path, rel)))
            marker = varagity.services.pg.get_document(doc_id)
            if marker is not None:
                note = " (no extractable text)" if marker.n_chunks == 0 else ""
                context.log.info(f"{rel} is already indexed as {doc_id}{note}; skipping")
                return Unchanged(rel, doc_id)
        parsed = parse_file(settings.docs_path, rel, settings=settings)
        context.add_asset_metadata(
            {
                "doc_id": parsed.doc_id,
                "relative_path": rel,
                "characters": len(parsed.text),
                "bytes": parsed.size_bytes,
                "content_hash": parsed.content_hash,
            },
            partition_key=key,
        )
        return parsed

    return _per_partition(context, "parse", {}, parse)


@dg.asset(
    partitions_def=documents_partitions,
    group_name="ingest",
    io_manager_key="artifacts",
    backfill_policy=BATCH_POLICY,
    kinds={"python"},
)
def document_chunks(
    context: dg.AssetExecutionContext, varagity: VaragityResource, parsed_document: dict[str, Any]
) -> dict[str, Any]:
    """The document cut into chunks (strategy, size and overlap from settings)."""
    settings = varagity.settings

    def chunk(key: str, parsed: ParsedDocument) -> list[stages.ChunkDraft]:
        drafts = stages.chunk_document(parsed, settings, varagity.services.embedder)
        if not drafts:
            context.log.warning(f"{parsed.relative_path} has no extractable text: 0 chunks")
        context.add_asset_metadata(
            {
                "chunks": len(drafts),
                "tokens": sum(d.n_tokens for d in drafts),
                "strategy": settings.CHUNKING_STRATEGY,
                "chunk_size": settings.CHUNK_SIZE,
                "chunk_overlap": settings.CHUNK_OVERLAP,
            },
            partition_key=key,
        )
        return drafts

    return _per_partition(context, "chunk", parsed_document, chunk)


@dg.asset(
    partitions_def=documents_partitions,
    group_name="ingest",
    io_manager_key="artifacts",
    backfill_policy=BATCH_POLICY,
    pool="embedding",
    kinds={"python"},
)
def chunk_embeddings(
    context: dg.AssetExecutionContext,
    varagity: VaragityResource,
    document_chunks: dict[str, Any],
) -> dict[str, Any]:
    """One vector per chunk, over its header and text (the blurb stage re-embeds later)."""
    embedder = varagity.services.embedder

    def embed(key: str, drafts: list[stages.ChunkDraft]) -> list[list[float]]:
        vectors = stages.embed_drafts(drafts, embedder)
        context.add_asset_metadata(
            {"vectors": len(vectors), "model": embedder.model, "dimension": embedder.dim},
            partition_key=key,
        )
        return vectors

    return _per_partition(context, "embed", document_chunks, embed)


@dg.asset(
    partitions_def=documents_partitions,
    group_name="ingest",
    io_manager_key="artifacts",
    backfill_policy=BATCH_POLICY,
    kinds={"postgres", "tantivy"},
)
def indexed_document(
    context: dg.AssetExecutionContext,
    varagity: VaragityResource,
    parsed_document: dict[str, Any],
    document_chunks: dict[str, Any],
    chunk_embeddings: dict[str, Any],
) -> dict[str, Any]:
    """The document searchable: BM25 index first, then its Postgres rows (the marker)."""
    services = varagity.services

    def store(key: str, vectors: list[list[float]]) -> stages.StoreResult:
        parsed = _parsed(parsed_document, key)
        drafts = document_chunks[key]
        result = stages.store_document(
            parsed,
            drafts,
            vectors,
            pg=services.pg,
            bm25=services.bm25,
            settings=services.settings,
            embedding_model=services.embedder.model,
        )
        context.add_asset_metadata(
            {
                "doc_id": result.doc_id,
                "chunks": result.n_chunks,
                "replaced_versions": len(result.replaced_doc_ids),
                "bm25_backend": services.bm25.backend,
            },
            partition_key=key,
        )
        return result

    out = _per_partition(context, "store", chunk_embeddings, store)
    stored = sum(1 for v in out.values() if isinstance(v, stages.StoreResult))
    skipped = sum(1 for v in out.values() if isinstance(v, Unchanged))
    failed = sum(1 for v in out.values() if isinstance(v, IngestFailure))
    context.log.info(f"indexed {stored} file(s), {skipped} unchanged, {failed} failed")
    _fail_on_failures(out, f"{stored} other file(s) of this run were indexed")
    return out


@dg.asset(
    partitions_def=documents_partitions,
    group_name="contextualize",
    io_manager_key="artifacts",
    backfill_policy=BATCH_POLICY,
    pool="llm",
    deps=[indexed_document],
    kinds={"python", "postgres", "tantivy"},
)
def chunk_contexts(context: dg.AssetExecutionContext, varagity: VaragityResource) -> dict[str, Any]:
    """Each stored chunk's LLM blurb, re-embedded and re-indexed in place as it lands.

    Works from the stores: the newest stored version of the file, its chunks that have
    no blurb yet, the document text rebuilt from its chunks. Every few blurbs the
    chunks are replaced in both stores under their ``chunk_id`` and an observation
    ("contextualized n/m") is logged, so the partition shows progress before the step
    ends. ``None`` for a file with no stored version; nothing is called with
    ``CONTEXTUALIZE=false``.
    """
    services = varagity.services
    settings = services.settings

    def situate(key: str, _: Any) -> stages.ContextResult | None:
        rel = relative_path_for(key)
        versions = services.pg.documents_at_path(rel)
        if not versions:
            context.log.info(f"{rel} has no stored version (deleted, or not indexed yet)")
            return None

        def progress(result: stages.ContextResult) -> None:
            context.log.info(f"{rel}: contextualized {result.progress}")
            context.log_event(
                dg.AssetObservation(
                    asset_key=context.asset_key,
                    partition=key,
                    metadata={"contextualized": result.progress, "doc_id": result.doc_id},
                )
            )

        result = stages.contextualize_document(
            versions[-1].doc_id,  # the newest; an older one is being purged
            pg=services.pg,
            bm25=services.bm25,
            chat=services.chat,
            embedder=services.embedder,
            settings=settings,
            on_progress=progress,
        )
        written = len(result.blurbs)
        context.add_asset_metadata(
            {
                "doc_id": result.doc_id,
                "contextualized": result.progress,
                "blurbs_written": written,
                "model": settings.LLM_MODEL if settings.CONTEXTUALIZE else "none (off)",
                "llm_seconds": round(result.llm_seconds, 3),
                "chunks_per_s": round(written / result.llm_seconds, 3)
                if result.llm_seconds
                else 0.0,
                "superseded": result.superseded,
            },
            partition_key=key,
        )
        return result

    out = _per_partition(context, "contextualize", {}, situate)
    done = sum(1 for v in out.values() if isinstance(v, stages.ContextResult))
    _fail_on_failures(out, f"{done} other file(s) of this run were contextualized")
    return out


def _fail_on_failures(out: dict[str, Any], others: str) -> None:
    """Fail the step naming every file of ``out`` that failed, once the others are done."""
    failures = [v for v in out.values() if isinstance(v, IngestFailure)]
    if not failures:
        return
    raise dg.Failure(
        description="; ".join(
            f"{f.relative_path}: {f.stage} failed - {f.message}" for f in failures
        )
        + f" ({others})",
        metadata={
            "failed_files": dg.MetadataValue.md(
                "| file | stage | reason |\n|---|---|---|\n"
                + "\n".join(
                    f"| {f.relative_path} | {f.stage} | {f.message.replace('|', '/')} |"
                    for f in failures
                )
            )
        },
    )
