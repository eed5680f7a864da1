"""Export or restore either corpus by name: the one place that picks the documents'
(:mod:`varagity.backup.rag`) or the graph's (:mod:`varagity.backup.graph`) code, for
the Dagster asset and job and the CLI's in-process fallback alike. Each is imported
only when its corpus is asked for."""

from __future__ import annotations

from pathlib import Path

from varagity.backup.bundle import Corpus, ExportResult, Progress, RestoreResult
from varagity.config import Settings
from varagity.folder_diff import FolderDiff
from varagity.stores.bm25 import BM25Store
from varagity.stores.vector_store import PgVectorStore


def export_corpus(
    corpus: Corpus, settings: Settings, pg: PgVectorStore, *, progress: Progress | None = None
) -> ExportResult:
    """Write a bundle of ``corpus`` (see :func:`~varagity.backup.rag.export_rag` and
    :func:`~varagity.backup.graph.export_graph`)."""
    if corpus == "graph":
        from varagity.backup.graph import export_graph

        return export_graph(settings, progress=progress)
    from varagity.backup.rag import export_rag

    return export_rag(settings, pg, progress=progress)


def restore_corpus(
    corpus: Corpus,
    path: Path,
    settings: Settings,
    pg: PgVectorStore,
    bm25: BM25Store,
    *,
    progress: Progress | None = None,
) -> RestoreResult:
    """Replace ``corpus`` with the bundle at ``path`` (see
    :func:`~varagity.backup.rag.restore_rag` and :func:`~varagity.backup.graph.restore_graph`)."""
    if corpus == "graph":
        from varagity.backup.graph import restore_graph

        return restore_graph(path, settings, progress=progress)
    from varagity.backup.rag import restore_rag

    return restore_rag(path, settings, pg, bm25, progress=progress)


def folder_diff_of(corpus: Corpus, settings: Settings, pg: PgVectorStore) -> FolderDiff:
    """What ``corpus``'s folder holds that the corpus does not, and the reverse: after a
    restore, the runs the folder sensor launches next (see
    :func:`~varagity.ingest.reconcile.diff_folder` and
    :func:`~varagity.graph.folder.graph_diff`)."""
    if corpus == "graph":
        from varagity.graph.folder import graph_diff

        return graph_diff(settings)
    from varagity.ingest.reconcile import diff_folder

    return diff_folder(settings.docs_path, pg)
