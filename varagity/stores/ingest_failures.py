"""The ``ingest_failures`` table: why a corpus file is not indexed.

The ingest job records each file it could not store (stage and error, and the run);
storing the path (:meth:`~varagity.stores.vector_store.PgVectorStore.write_document`)
or purging it clears the row, so a row always describes the file's latest attempt.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from varagity.stores.vector_store import PgVectorStore

_REASON_CHARS = 2000  # a traceback-sized error is cut here; the run's logs keep the rest


@dataclass(frozen=True, slots=True)
class IngestFailureRow:
    """The last failed ingest of one path."""

    relative_path: str
    stage: str
    reason: str
    run_id: str | None
    failed_at: datetime

    @property
    def summary(self) -> str:
        """``<stage> failed: <reason>``."""
        return f"{self.stage} failed: {self.reason}"


def record_failures(
    pg: PgVectorStore, failures: Sequence[tuple[str, str, str]], *, run_id: str | None
) -> None:
    """Record ``(relative_path, stage, reason)`` failures (replacing older ones)."""
    if not failures:
        return
    with pg.connection() as conn, conn.transaction(), conn.cursor() as cur:
        cur.executemany(
            "INSERT INTO ingest_failures (relative_path, stage, reason, run_id, failed_at)"
            " VALUES (%s, %s, %s, %s, now()) ON CONFLICT (relative_path) DO UPDATE SET"
            " stage = EXCLUDED.stage, reason = EXCLUDED.reason, run_id = EXCLUDED.run_id,"
            " failed_at = now()",
            [(rel, stage, reason[:_REASON_CHARS], run_id) for rel, stage, reason in failures],
        )


def clear_failures(pg: PgVectorStore, relative_paths: Sequence[str]) -> None:
    """Forget the failures of ``relative_paths`` (purged files)."""
    if relative_paths:
        with pg.connection() as conn:
            conn.execute(
                "DELETE FROM ingest_failures WHERE relative_path = ANY(%s)", (list(relative_paths),)
            )


def failures_by_path(pg: PgVectorStore) -> dict[str, IngestFailureRow]:
    """Every recorded failure, by path."""
    with pg.connection() as conn:
        rows = conn.execute(
            "SELECT relative_path, stage, reason, run_id, failed_at FROM ingest_failures"
        ).fetchall()
    return {r[0]: IngestFailureRow(*r) for r in rows}
