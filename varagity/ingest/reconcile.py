"""``DOCS_PATH`` against the stores (:class:`~varagity.folder_diff.FolderDiff`): what must
be ingested or purged so that the stores hold exactly the current version of every
file. The folder sensor applies the same diff on every tick (from the digests its
cursor already holds), a restore reports it, and ``varagity doctor --repair`` launches
its runs.

A file whose current version is not stored but whose last ingest failed (an
``ingest_failures`` row) is not asked for again: it would fail the same way. It is
listed apart, with its reason, so a person sees why it is not searchable.
"""

from __future__ import annotations

from pathlib import Path

from varagity.folder_diff import FolderDiff, diff_versions
from varagity.ingest.discovery import current_doc_ids, scan
from varagity.stores.ingest_failures import failures_by_path
from varagity.stores.vector_store import PgVectorStore


def diff_folder(docs_path: Path, pg: PgVectorStore) -> FolderDiff:
    """Hash every file of ``docs_path`` and diff the folder against the stores."""
    files, skipped = scan(docs_path)
    current = current_doc_ids(files)
    failures = {rel: row.summary for rel, row in failures_by_path(pg).items()}
    return diff_versions(
        current,
        pg.stored_versions(),
        failures,
        present={s.relative_path for s in skipped},
    )
