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

from varagity.ingest.discovery import CorpusFile, scan
from varagity.ingest.stages import purge_documents
from varagity.records import normalize_relative_path
from varagity.stores.bm25 import BM25Store
from varagity.stores.vector_store import PgVectorStore

DocumentStatus = Literal["indexed", "no_text", "pending", "outdated", "missing"]

# Modification times go through float seconds and JSON; closer than this is "the same".
_MTIME_TOLERANCE = timedelta(milliseconds=1)

_INDEXED_SQL = """
SELECT d.doc_id, d.relative_path, d.file_type, d.content_hash, d.n_chunks, d.ingested_at,
       c.extractions, c.file_created_at, c.file_modified_at, coalesce(c.n_contextualized, 0)
FROM documents d
LEFT JOIN (
    SELECT doc_id,
           array_agg(DISTINCT metadata->>'extraction') AS extractions,
           count(*) FILTER (WHERE contextualized_at IS NOT NULL) AS n_contextualized,
           min((metadata->>'file_created_at')::timestamptz)
               FILTER (WHERE chunk_index = 0) AS file_created_at,
           min((metadata->>'file_modified_at')::timestamptz)
               FILTER (WHERE chunk_index = 0) AS file_modified_at
    FROM chunks GROUP BY doc_id
) c ON c.doc_id = d.doc_id
ORDER BY d.relative_path, d.ingested_at
"""


@dataclass(frozen=True, slots=True)
class CorpusEntry:
    """One document or file of the corpus and its status.

    ``indexed``: stored and current; ``no_text``: stored with 0 chunks; ``pending``:
    in ``DOCS_PATH`` but not indexed; ``outdated``: the file changed since it was
    indexed; ``missing``: indexed, but the file is gone (or no longer ingestible).
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
    with pg.connection() as conn:
        rows = conn.execute(_INDEXED_SQL).fetchall()
    entries: list[CorpusEntry] = []
    indexed_paths = set()
    for row in rows:
        doc_id, rel, file_type, digest, n_chunks, ingested, extractions, created, modified = row[:9]
        n_contextualized = int(row[9])
        indexed_paths.add(rel)
        f = on_disk.get(rel)
        status: DocumentStatus
        if f is None:
            status = "missing"
        elif (
            abs(_mtime(f) - modified) > _MTIME_TOLERANCE
            if modified is not None
            else _mtime(f) > ingested  # no chunks recorded the file's clock
        ):
            status = "outdated"
        else:
            status = "indexed" if n_chunks else "no_text"
        entries.append(
            CorpusEntry(
                relative_path=rel,
                status=status,
                doc_id=doc_id,
                file_type=file_type,
                n_chunks=n_chunks,
                n_contextualized=n_contextualized,
                contextualizing=contextualize and n_contextualized < n_chunks,
                extractions=tuple(sorted(e for e in extractions or () if e)),
                content_hash=digest,
                size_bytes=f.size if f else None,
                file_created_at=created,
                file_modified_at=_mtime(f) if f else modified,
                ingested_at=ingested,
            )
        )
    for rel, f in on_disk.items():
        if rel not in indexed_paths:
            entries.append(
                CorpusEntry(
                    relative_path=rel,
                    status="pending",
                    file_type=f.path.suffix.lower().lstrip("."),
                    size_bytes=f.size,
                    file_modified_at=_mtime(f),
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
    paths: dict[str, str] = {}
    if remove_file and requested:
        with pg.connection() as conn:
            found = conn.execute(
                "SELECT doc_id, relative_path FROM documents WHERE doc_id = ANY(%s)",
                (requested,),
            ).fetchall()
        paths = {doc_id: rel for doc_id, rel in found}
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


def prune_empty_folders(root: Path, folder: Path) -> list[str]:
    """Remove ``folder`` and its ancestors while they are empty, stopping below ``root``.

    Both are compared lexically (``folder`` must be spelled under ``root``); a symlinked
    folder is never removed (``rmdir`` refuses it).

    Returns:
        The removed folders relative to ``root``, deepest first.
    """
    pruned: list[str] = []
    current = folder
    while current != root and root in current.parents:
        try:
            current.rmdir()
        except OSError:  # not empty, a symlink, or gone: stop
            break
        pruned.append(current.relative_to(root).as_posix())
        current = current.parent
    return pruned
