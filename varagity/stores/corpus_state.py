"""Whether the corpora still match the settings that built them.

Chunking, contextualization and OCR settings do not change file hashes, so changing
them leaves every file "unchanged" and the stored chunks out of date. The corpus
records the settings it was built with; when the current ones differ on a non-empty
corpus it is *stale* until a completed reingest rebuilds it (:class:`CorpusState`).

The message graph is the same with the chat model and the extraction settings
(:data:`~varagity.config.GRAPH_AFFECTING`): they change no transcript, so no build
extracts a day again, and the days extracted before keep what the old model made of
them. The graph records the settings it was built with; when the current ones differ
on a non-empty graph it is stale until a rebuild of every day (:class:`GraphState`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime

from varagity.config import GRAPH_AFFECTING, REINGEST_AFFECTING, Settings
from varagity.stores.vector_store import PgVectorStore

INGEST_SETTINGS_KEY = "_ingest_settings"
STALE_KEY = "_corpus_stale"
#: The message graph's stale flag (why it may not match its sources); a graph backup
#: records it and its restore puts it back.
GRAPH_STALE_KEY = "_graph_stale"
#: The graph-affecting settings the message graph was built with.
GRAPH_SETTINGS_KEY = "_graph_settings"


def _env_strings(settings: Settings, names: tuple[str, ...]) -> dict[str, str]:
    out = {}
    for name in names:
        value = getattr(settings, name)
        out[name] = str(value).lower() if isinstance(value, bool) else str(value)
    return out


def ingest_settings(settings: Settings) -> dict[str, str]:
    """The reingest-affecting settings in their environment-string form."""
    return _env_strings(settings, REINGEST_AFFECTING)


def graph_settings(settings: Settings) -> dict[str, str]:
    """The graph-affecting settings in their environment-string form."""
    return _env_strings(settings, GRAPH_AFFECTING)


def _changes(recorded: dict[str, str], current: dict[str, str]) -> str:
    return ", ".join(
        f"{k} {recorded.get(k)!s}->{v}" for k, v in current.items() if recorded.get(k) != v
    )


@dataclass(frozen=True, slots=True)
class StaleFlag:
    """The corpus was built with other settings than the current ones."""

    reason: str
    since: datetime


class _MetadataRows:
    """Reads and writes metadata rows of ``app_settings`` (keys starting with ``_``)."""

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


class CorpusState(_MetadataRows):
    """Reads and writes the document corpus's metadata rows of ``app_settings``."""

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
            changes = _changes(recorded, current)
            self._set(STALE_KEY, f"ingest settings changed since the corpus was built: {changes}")
        return self.stale()

    def rebuilt_with(self, settings: Settings) -> None:
        """A reingest completed under ``settings``: record them and clear the flag."""
        self._set(INGEST_SETTINGS_KEY, json.dumps(ingest_settings(settings), sort_keys=True))
        self._delete(STALE_KEY)


class GraphState(_MetadataRows):
    """Reads and writes the message graph's metadata rows of ``app_settings``: the
    settings it was built with and its stale flag."""

    def built_with(self) -> dict[str, str] | None:
        """The graph-affecting settings the graph was built with, if recorded."""
        row = self._get(GRAPH_SETTINGS_KEY)
        return json.loads(row[0]) if row else None

    def stale(self) -> StaleFlag | None:
        """The graph's stale flag, if set (by a settings change, or a restored bundle
        that was stale)."""
        row = self._get(GRAPH_STALE_KEY)
        return StaleFlag(row[0], row[1]) if row else None

    def observe(self, settings: Settings, *, empty: bool) -> StaleFlag | None:
        """Compare ``settings`` with those the graph was built with; set the flag when
        they differ. An ``empty`` graph (its manifest holds no day) adopts them and is
        never stale. Setting a value back does not clear the flag: only a rebuild of
        every day does (:meth:`rebuilt_with`), or a reset (:meth:`forget`)."""
        if empty:
            self.rebuilt_with(settings)
            return None
        current = graph_settings(settings)
        recorded = self.built_with()
        if recorded is None:
            self._set(GRAPH_SETTINGS_KEY, json.dumps(current, sort_keys=True))
        elif recorded != current and self.stale() is None:
            changes = _changes(recorded, current)
            self._set(GRAPH_STALE_KEY, f"graph settings changed since it was built: {changes}")
        return self.stale()

    def rebuilt_with(self, settings: Settings) -> None:
        """Every day was extracted under ``settings``: record them, clear the flag."""
        self._set(GRAPH_SETTINGS_KEY, json.dumps(graph_settings(settings), sort_keys=True))
        self._delete(GRAPH_STALE_KEY)

    def forget(self) -> None:
        """The graph was emptied: nothing recorded, no flag (its next build adopts the
        settings it is built with)."""
        self._delete(GRAPH_SETTINGS_KEY)
        self._delete(GRAPH_STALE_KEY)
