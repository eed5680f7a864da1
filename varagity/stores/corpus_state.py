"""Whether the corpus still matches the settings that affect ingestion.

Chunking, contextualization and OCR settings do not change file hashes, so changing
them leaves every file "unchanged" and the stored chunks out of date. The corpus
records the settings it was built with; when the current ones differ on a non-empty
corpus it is *stale* until a completed reingest rebuilds it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime

from varagity.config import REINGEST_AFFECTING, Settings
from varagity.stores.vector_store import PgVectorStore

INGEST_SETTINGS_KEY = "_ingest_settings"
STALE_KEY = "_corpus_stale"
#: The message graph's stale flag (why it may not match its sources); a graph backup
#: records it and its restore puts it back.
GRAPH_STALE_KEY = "_graph_stale"


def ingest_settings(settings: Settings) -> dict[str, str]:
    """The reingest-affecting settings in their environment-string form."""
    out = {}
    for name in REINGEST_AFFECTING:
        value = getattr(settings, name)
        out[name] = str(value).lower() if isinstance(value, bool) else str(value)
    return out


@dataclass(frozen=True, slots=True)
class StaleFlag:
    """The corpus was built with other settings than the current ones."""

    reason: str
    since: datetime


class CorpusState:
    """Reads and writes the corpus metadata rows of ``app_settings``."""

    def __init__(self, pg: PgVectorStore) -> None:
        """Use the store's pool."""
        self.pg = pg

    def _get(self, key: str) -> tuple[str, datetime] | None:
        with self.pg.connection() as conn:
            row = conn.execute(
                "SELECT value, updated_at FROM app_settings WHERE key = %s", (key,)
            ).fetchone()
        return (row[0], row[1]) if row else None

    def _set(self, key: str, value: str) -> None:
        with self.pg.connection() as conn:
            conn.execute(
                "INSERT INTO app_settings (key, value, updated_at) VALUES (%s, %s, now())"
                " ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, updated_at = now()",
                (key, value),
            )

    def _delete(self, key: str) -> None:
        with self.pg.connection() as conn:
            conn.execute("DELETE FROM app_settings WHERE key = %s", (key,))

    def built_with(self) -> dict[str, str] | None:
        """The settings the corpus was built with, if recorded."""
        row = self._get(INGEST_SETTINGS_KEY)
        return json.loads(row[0]) if row else None

    def stale(self) -> StaleFlag | None:
        """The stale flag, if set."""
        row = self._get(STALE_KEY)
        return StaleFlag(row[0], row[1]) if row else None

    def observe(self, settings: Settings) -> StaleFlag | None:
        """Compare the current settings with the corpus; set the flag when they differ.

        An empty corpus simply adopts the current settings. Setting a value back does
        not clear the flag: only a completed reingest does (:meth:`rebuilt_with`).
        """
        current = ingest_settings(settings)
        recorded = self.built_with()
        if recorded == current and self.stale() is None:
            return None
        if not self.pg.list_documents():
            self.rebuilt_with(settings)
            return None
        if recorded is None:
            self._set(INGEST_SETTINGS_KEY, json.dumps(current, sort_keys=True))
            return None
        if recorded != current and self.stale() is None:
            changes = ", ".join(
                f"{k} {recorded.get(k)!s}->{v}" for k, v in current.items() if recorded.get(k) != v
            )
            self._set(STALE_KEY, f"ingest settings changed since the corpus was built: {changes}")
        return self.stale()

    def rebuilt_with(self, settings: Settings) -> None:
        """A reingest completed under ``settings``: record them and clear the flag."""
        self._set(INGEST_SETTINGS_KEY, json.dumps(ingest_settings(settings), sort_keys=True))
        self._delete(STALE_KEY)
