"""The corpus as a user manages it: what ``DOCS_PATH`` holds against what is indexed,
and deleting documents (optionally with their files).

Listing is cheap on a corpus of thousands: one query for the indexed documents and
one walk of the folder that only stats files (no hashing). A file counts as changed
when its modification time differs from the one recorded at ingest. Each indexed
document also says how many of its chunks have their LLM blurb already (the blurb
stage runs after a file is searchable), and whether it is still being contextualized.

Deletion reuses the pipeline's purge (BM25 first, the Postgres marker last), over the
whole set at once. Removing files never leaves ``DOCS_PATH``: a file whose folder
resolves outside it (a symlinked folder) is refused, a symlink is removed itself and
never followed, and only folders the removal emptied are pruned, never ``DOCS_PATH``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path, PurePosixPath
from typing import Literal

from varagity.files import prune_empty_folders
from varagity.ingest.discovery import CorpusFile, scan
from varagity.ingest.stages import purge_documents
from varagity.records import normalize_relative_path
from varagity.stores.bm25 import BM25Store
from varagity.stores.corpus_queries import indexed_documents, relative_paths_of
from varagity.stores.ingest_failures import failures_by_path
from varagity.stores.vector_store import PgVectorStore

DocumentStatus = Literal["indexed", "no_text", "pending", "failed", "outdated", "missing"]

# Modification times go through float seconds and JSON; closer than this is "the same".
_MTIME_TOLERANCE = timedelta(milliseconds=1)


@dataclass(frozen=True, slots=True)
class CorpusEntry:
    """One document or file of the corpus and its status.

    ``indexed``: stored and current, searchable; ``no_text``: stored with 0 chunks;
    ``pending``: in ``DOCS_PATH`` but not searchable yet (not stored, or stored and its
    BM25 entries not written yet); ``failed``: its last ingest failed (``reason``
    says which stage and why) and the file has not changed since; ``outdated``: the
    file changed since it was indexed; ``missing``: indexed, but the file is gone (or
    no longer ingestible).
    ``n_contextualized`` counts the stored chunks that have their LLM blurb;
    ``contextualizing`` is true while blurbs are on and some chunks still wait.
    """

    relative_path: str
    status: DocumentStatus
    doc_id: str | None = None
    file_type: str = ""
    n_chunks: int | None = None
    n_contextualized: int | None = None
    contextualizing: bool = False
    extractions: tuple[str, ...] = ()
    content_hash: str | None = None
    size_bytes: int | None = None
    file_created_at: datetime | None = None
    file_modified_at: datetime | None = None
    ingested_at: datetime | None = None
    reason: str | None = None

    @property
    def file_name(self) -> str:
        """The file's name without its folder."""
        return PurePosixPath(self.relative_path).name


def _mtime(f: CorpusFile) -> datetime:
    return datetime.fromtimestamp(f.mtime_ns / 1e9, UTC)


def list_corpus(
    pg: PgVectorStore, docs_path: Path, *, contextualize: bool = True
) -> list[CorpusEntry]:
    """Every indexed document and every ingestible file not yet indexed, by path.

    ``contextualize`` is the ``CONTEXTUALIZE`` setting: with it off no document counts
    as being contextualized, whatever its chunks hold.
    """
    files, _ = scan(docs_path)
    on_disk = {f.relative_path: f for f in files}
    entries: list[CorpusEntry] = []
    indexed_paths = set()
    failures = failures_by_path(pg)
    for doc in indexed_documents(pg):
        rel, modified = doc.relative_path, doc.file_modified_at
        reason: str | None = None
        indexed_paths.add(rel)
        f = on_disk.get(rel)
        status: DocumentStatus
        if f is None:
            status = "missing"
        elif (
            abs(_mtime(f) - modified) > _MTIME_TOLERANCE
            if modified is not None
            else _mtime(f) > doc.ingested_at  # no chunks recorded the file's clock
        ):
            status = "outdated"
        elif doc.awaiting_bm25:  # stored, not searchable until its BM25 entries are written
            failure = failures.get(rel)
            failed = failure is not None and failure.failed_at >= doc.ingested_at
            status = "failed" if failed else "pending"
            reason = failure.summary if failed and failure else None
        else:
            status = "indexed" if doc.n_chunks else "no_text"
        entries.append(
            CorpusEntry(
                relative_path=rel,
                status=status,
                doc_id=doc.doc_id,
                file_type=doc.file_type,
                n_chunks=doc.n_chunks,
                n_contextualized=doc.n_contextualized,
                contextualizing=contextualize and doc.n_contextualized < doc.n_chunks,
                extractions=tuple(sorted(e for e in doc.extractions if e)),
                content_hash=doc.content_hash,
                size_bytes=f.size if f else None,
                file_created_at=doc.file_created_at,
                file_modified_at=_mtime(f) if f else modified,
                ingested_at=doc.ingested_at,
                reason=reason,
            )
        )
    for rel, f in on_disk.items():
        if rel not in indexed_paths:
            failure = failures.get(rel)
            failed = failure is not None and failure.failed_at >= _mtime(f)
            entries.append(
                CorpusEntry(
                    relative_path=rel,
                    status="failed" if failed else "pending",
                    file_type=f.path.suffix.lower().lstrip("."),
                    size_bytes=f.size,
                    file_modified_at=_mtime(f),
                    reason=failure.summary if failed and failure else None,
                )
            )
    entries.sort(key=lambda e: e.relative_path)
    return entries


@dataclass(frozen=True, slots=True)
class FileRemoval:
    """What happened to one document's file."""

    relative_path: str
    removed: bool
    code: str | None = None
    message: str | None = None


@dataclass(slots=True)
class DeleteReport:
    """The outcome of deleting a set of documents."""

    deleted: list[str] = field(default_factory=list)
    not_found: list[str] = field(default_factory=list)
    files: list[FileRemoval] = field(default_factory=list)
    pruned_folders: list[str] = field(default_factory=list)


def delete_documents(
    pg: PgVectorStore,
    bm25: BM25Store,
    docs_path: Path,
    doc_ids: Sequence[str],
    *,
    remove_file: bool = False,
) -> DeleteReport:
    """Delete documents from both stores at once; optionally remove their files.

    Ids with no stored document come back in ``not_found``. Files are removed only
    after both stores dropped their documents.
    """
    requested = list(dict.fromkeys(doc_ids))
    paths = relative_paths_of(pg, requested) if remove_file else {}
    deleted = set(purge_documents(requested, pg=pg, bm25=bm25))
    report = DeleteReport(
        deleted=[d for d in requested if d in deleted],
        not_found=[d for d in requested if d not in deleted],
    )
    for rel in sorted({paths[d] for d in report.deleted if d in paths}):
        removal, pruned = remove_corpus_file(docs_path, rel)
        report.files.append(removal)
        report.pruned_folders.extend(pruned)
    return report


def remove_corpus_file(docs_path: Path, relative_path: str) -> tuple[FileRemoval, list[str]]:
    """Unlink one corpus file and prune the folders that leaves empty.

    Returns:
        The outcome, and the pruned folders (relative to ``DOCS_PATH``), deepest first.
    """
    root = docs_path.resolve()
    try:
        rel = normalize_relative_path(relative_path)
    except ValueError as exc:
        return FileRemoval(relative_path, False, "outside_corpus", str(exc)), []
    path = root / rel
    folder = path.parent.resolve()
    if folder != root and root not in folder.parents:
        message = f"{rel} lies in a folder that resolves outside the corpus ({folder})"
        return FileRemoval(rel, False, "outside_corpus", message), []
    if not path.is_symlink():
        if not path.exists():
            return FileRemoval(rel, False, "already_gone", f"{rel} is no longer there"), []
        if not path.is_file():
            return FileRemoval(rel, False, "not_a_file", f"{rel} is not a regular file"), []
    try:
        path.unlink()  # a symlink itself, never its target
    except OSError as exc:
        return FileRemoval(rel, False, "unlink_failed", f"{rel}: {exc.strerror}"), []
    return FileRemoval(rel, True), prune_empty_folders(root, path.parent)
