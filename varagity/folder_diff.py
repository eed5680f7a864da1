"""A corpus folder against what a store holds of it: what must be taken in (ingested, or
built into the graph) and what must go (purged, or removed from the graph).

The folder sensors keep cursors of what they have seen, but a store can move without
them: a restore puts back another week's corpus, a crash lands between a sensor's
cursor and a store's commit, somebody edits the database by hand. :class:`FolderDiff`
is the store's side of that check, for the documents
(:func:`varagity.ingest.reconcile.diff_folder`) and for the message graph
(:func:`varagity.graph.folder.graph_diff`). Nothing here reads a file or a store.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Set
from dataclasses import dataclass, field

_SHOWN = 5


@dataclass(frozen=True, slots=True)
class FolderDiff:
    """Where the stores and ``DOCS_PATH`` disagree."""

    to_ingest: tuple[str, ...] = ()
    """Files whose current version is not stored (new, changed, or lost by the stores)."""
    to_purge: tuple[str, ...] = ()
    """Paths the stores hold documents of whose files are gone from the folder."""
    failed: Mapping[str, str] = field(default_factory=dict)
    """Files not stored whose last ingest failed: path -> why (not asked for again)."""
    verbs: tuple[str, str] = ("ingest", "purge")
    """What taking a file in and letting one go are called (a graph builds and removes)."""

    @property
    def clean(self) -> bool:
        """Whether nothing is to be ingested or purged."""
        return not self.to_ingest and not self.to_purge

    def counts(self) -> dict[str, int]:
        """``{"to_ingest": n, "to_purge": n, "failed": n}``."""
        return {
            "to_ingest": len(self.to_ingest),
            "to_purge": len(self.to_purge),
            "failed": len(self.failed),
        }

    def summary(self) -> str:
        """One line for a log or a terminal."""
        ingest, purge = self.verbs
        if self.clean and not self.failed:
            return "the stores hold exactly the folder's files"
        parts = [
            f"{len(self.to_ingest)} file(s) to {ingest}{_few(self.to_ingest)}",
            f"{len(self.to_purge)} removed file(s) to {purge}{_few(self.to_purge)}",
        ]
        if self.failed:
            parts.append(
                f"{len(self.failed)} file(s) left as they are: they failed{_few(self.failed)}"
            )
        return ", ".join(parts)


def _few(paths: Iterable[str]) -> str:
    items = sorted(paths)
    if not items:
        return ""
    more = f" +{len(items) - _SHOWN} more" if len(items) > _SHOWN else ""
    return " (" + ", ".join(items[:_SHOWN]) + more + ")"


def diff_versions(
    current: Mapping[str, str],
    stored: Mapping[str, Set[str]],
    failures: Mapping[str, str],
    *,
    present: Set[str] = frozenset(),
) -> FolderDiff:
    """The diff of the folder's files against the stores.

    Args:
        current: Relative path -> ``doc_id`` of the file's current bytes.
        stored: Relative path -> the ``doc_id`` of every version the stores hold.
        failures: Relative path -> why its last ingest failed.
        present: Paths that are in the folder but not read now (skipped: unreadable, a
            link turned outside): their stored versions are kept, never purged.
    """
    to_ingest, failed = [], {}
    for rel, doc_id in sorted(current.items()):
        if doc_id in stored.get(rel, ()):
            continue
        if rel in failures:
            failed[rel] = failures[rel]
        else:
            to_ingest.append(rel)
    to_purge = sorted(rel for rel in stored if rel not in current and rel not in present)
    return FolderDiff(tuple(to_ingest), tuple(to_purge), failed)
