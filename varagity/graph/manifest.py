"""The graph workdir's two sidecars: the build manifest and the size summary.

``varagity_manifest.json`` maps each doc_key the engine holds to what was inserted for
it (content sha256, message guids, thread name, span, source archive). It is

* the upsert diff the engine does not do: a re-submitted document id is dropped by the
  engine's enqueue dedup, so a day that gained messages must be found here (its hash
  differs) and deleted, then reinserted (:func:`diff`);
* the provenance index behind a citation: doc_key -> thread, span and message guids,
  which survives restarts (:func:`provenance`).

``varagity_graph_summary.json`` caches the graph's size ({entities, relations,
message_guids, docs, refreshed_at} and the engine's documents by status) for the status
route and the gauges, which thus never open the engine.

Both are written atomically (a temp file in the same folder, fsynced, then
``os.replace``), and both read as *absent* when missing, unreadable, or of another
schema version: every rendered day then looks new, which the engine's own dedup
absorbs, where trusting a mis-shaped file could make a stale transcript permanent.
They are caches of what the last writes did, never authoritative over the engine, and
only the graph build (the single writer) writes them.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from varagity.graph.base import ApplyReport
from varagity.graph.types import GraphDiff, ThreadDay

log = logging.getLogger(__name__)

MANIFEST_FILE = "varagity_manifest.json"
SUMMARY_FILE = "varagity_graph_summary.json"
MANIFEST_SCHEMA = 1
SUMMARY_SCHEMA = 1


@dataclass(frozen=True)
class ManifestEntry:
    """What the engine was given for one doc_key."""

    content_sha256: str
    message_guids: tuple[str, ...]
    thread_name: str
    span: str
    source: str
    senders: tuple[str, ...] = ()
    """Who wrote the day (:attr:`ThreadDay.senders`); empty in an entry written before
    they were kept."""

    @classmethod
    def of(cls, day: ThreadDay) -> ManifestEntry:
        """The entry recording ``day`` as inserted."""
        return cls(
            day.content_sha256,
            day.message_guids,
            day.thread_name,
            day.span,
            day.source,
            day.senders,
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "content_sha256": self.content_sha256,
            "message_guids": list(self.message_guids),
            "thread_name": self.thread_name,
            "span": self.span,
            "source": self.source,
            "senders": list(self.senders),
        }

    @classmethod
    def from_json(cls, value: Any) -> ManifestEntry:
        if not isinstance(value, dict):
            raise ValueError("an entry is not an object")
        guids = value["message_guids"]
        senders = value.get("senders", [])
        fields = (value["content_sha256"], value["thread_name"], value["span"], value["source"])
        if (
            not isinstance(guids, list)
            or not isinstance(senders, list)
            or not all(isinstance(f, str) for f in (*fields, *guids, *senders))
        ):
            raise ValueError("an entry has fields of the wrong type")
        return cls(fields[0], tuple(guids), fields[1], fields[2], fields[3], tuple(senders))


Manifest = dict[str, ManifestEntry]


@dataclass(frozen=True)
class GraphSummary:
    """The graph's last known size."""

    entities: int
    relations: int
    message_guids: int
    docs: int
    refreshed_at: str  # ISO 8601, UTC
    statuses: Mapping[str, int] | None = None
    """The engine's documents by status (processed, pending, processing, failed) when
    the summary was written; ``None`` in a summary written before it was recorded."""


def write_json_atomic(path: Path, payload: object) -> None:
    """Write ``payload`` as JSON to ``path`` so that a reader sees the old file or the
    new one, never a part: temp file beside it, fsync, ``os.replace``, fsync the folder."""
    path.parent.mkdir(parents=True, exist_ok=True)
    data = json.dumps(payload, ensure_ascii=False, sort_keys=True, indent=1).encode("utf-8")
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
        raise
    with contextlib.suppress(OSError):  # not every filesystem lets a folder be fsynced
        folder = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(folder)
        finally:
            os.close(folder)


def _read_versioned(path: Path, schema: int) -> dict[str, Any] | None:
    """The JSON object in ``path`` if it is one of ``schema``; ``None`` (with a warning
    unless the file is simply missing) otherwise."""
    try:
        payload = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        log.warning("%s is unreadable (%s); treating it as absent", path, exc)
        return None
    if not isinstance(payload, dict) or payload.get("schema_version") != schema:
        found = payload.get("schema_version") if isinstance(payload, dict) else None
        log.warning("%s has schema version %r, not %d; treating it as absent", path, found, schema)
        return None
    return payload


# --- the manifest -----------------------------------------------------------------


def read_manifest(workdir: Path) -> Manifest:
    """doc_key -> entry from ``workdir``'s manifest; empty when absent or unusable."""
    path = workdir / MANIFEST_FILE
    payload = _read_versioned(path, MANIFEST_SCHEMA)
    if payload is None:
        return {}
    documents = payload.get("documents")
    if not isinstance(documents, dict):
        log.warning("%s has no documents object; treating it as absent", path)
        return {}
    try:
        return {str(key): ManifestEntry.from_json(value) for key, value in documents.items()}
    except (KeyError, ValueError, TypeError) as exc:
        log.warning("%s has a malformed entry (%s); treating it as absent", path, exc)
        return {}


def write_manifest(workdir: Path, manifest: Mapping[str, ManifestEntry]) -> None:
    """Replace ``workdir``'s manifest with ``manifest`` (atomically)."""
    documents = {key: manifest[key].to_json() for key in sorted(manifest)}
    write_json_atomic(
        workdir / MANIFEST_FILE, {"schema_version": MANIFEST_SCHEMA, "documents": documents}
    )


def diff(
    rendered: Iterable[ThreadDay], manifest: Mapping[str, ManifestEntry], *, source: str
) -> GraphDiff:
    """What must change in the engine for one archive: its days that are ``new`` (not
    in the manifest), ``changed`` (content hash, or the writers recorded, differ) and
    ``removed`` (in the manifest for ``source`` but no longer rendered).

    A day whose doc_key the manifest records for *another* archive (the same chat
    exported twice) stays with that archive and is left out, with a warning: two
    archives taking turns to replace one day would re-extract it on every build.
    """
    new: list[ThreadDay] = []
    changed: list[ThreadDay] = []
    seen: set[str] = set()
    for day in rendered:
        if day.source != source:
            raise ValueError(f"{day.doc_key} was rendered from {day.source!r}, not {source!r}")
        if day.doc_key in seen:
            raise ValueError(f"{day.doc_key} was rendered twice")
        seen.add(day.doc_key)
        entry = manifest.get(day.doc_key)
        if entry is None:
            new.append(day)
        elif entry.source != source:
            log.warning(
                "%s is rendered by %s but already belongs to %s; left with %s",
                day.doc_key,
                source,
                entry.source,
                entry.source,
            )
        elif entry.content_sha256 != day.content_sha256 or entry.senders != day.senders:
            # (same text, writers not recorded yet, by a build before they were kept:
            # the engine finds the text it holds and does nothing, the manifest
            # records the writers)
            changed.append(day)
    removed = sorted(k for k, e in manifest.items() if e.source == source and k not in seen)
    return GraphDiff(new=tuple(new), changed=tuple(changed), removed=tuple(removed))


def record_apply(
    manifest: Mapping[str, ManifestEntry], diff: GraphDiff, report: ApplyReport
) -> Manifest:
    """The manifest after the engine applied (part of) ``diff``, as ``report`` says.

    Only what was applied is recorded: an inserted day gets its entry (new or replacing
    the old one); a deleted doc_key loses its entry, unless it was also reinserted.
    A changed day that was deleted but failed to reinsert is thus gone from the
    manifest and looks new to the next diff; a new day that failed is still absent.
    """
    updated = dict(manifest)
    days = {day.doc_key: day for day in (*diff.new, *diff.changed)}
    for key in report.deleted:
        updated.pop(key, None)
    for key in report.inserted:
        day = days.get(key)
        if day is None:
            raise ValueError(f"the engine reports {key} inserted, which the diff does not hold")
        updated[key] = ManifestEntry.of(day)
    return updated


def update_after_apply(workdir: Path, diff: GraphDiff, report: ApplyReport) -> Manifest:
    """Read ``workdir``'s manifest, :func:`record_apply` the report, write it back."""
    updated = record_apply(read_manifest(workdir), diff, report)
    write_manifest(workdir, updated)
    return updated


def day_span(manifest: Mapping[str, ManifestEntry]) -> tuple[str, str] | None:
    """The first and last day (``YYYY-MM-DD``) of the days ``manifest`` records; ``None``
    when it records none."""
    if not manifest:
        return None
    spans = [entry.span for entry in manifest.values()]
    return min(s.split("..")[0] for s in spans), max(s.split("..")[-1] for s in spans)


def provenance(workdir: Path, doc_key: str) -> ManifestEntry | None:
    """The thread, span and message guids behind a cited doc_key (``None`` when the
    manifest does not know it)."""
    return read_manifest(workdir).get(doc_key)


# --- the size summary ---------------------------------------------------------------


def summarize(
    manifest: Mapping[str, ManifestEntry],
    *,
    entities: int,
    relations: int,
    statuses: Mapping[str, int] | None = None,
) -> GraphSummary:
    """The summary of a graph with ``manifest`` and the engine's counts (entities,
    relations, and documents by status when given), stamped now."""
    return GraphSummary(
        entities=entities,
        relations=relations,
        message_guids=sum(len(e.message_guids) for e in manifest.values()),
        docs=len(manifest),
        refreshed_at=datetime.now(UTC).isoformat(timespec="seconds"),
        statuses=dict(statuses) if statuses is not None else None,
    )


def write_summary(workdir: Path, summary: GraphSummary) -> None:
    """Replace ``workdir``'s summary (atomically)."""
    payload: dict[str, object] = {
        "schema_version": SUMMARY_SCHEMA,
        "entities": summary.entities,
        "relations": summary.relations,
        "message_guids": summary.message_guids,
        "docs": summary.docs,
        "refreshed_at": summary.refreshed_at,
    }
    if summary.statuses is not None:
        payload["statuses"] = dict(summary.statuses)
    write_json_atomic(workdir / SUMMARY_FILE, payload)


def _statuses(path: Path, value: object) -> dict[str, int] | None:
    """A summary's optional ``statuses`` (an older summary has none)."""
    if value is None:
        return None
    if isinstance(value, dict) and all(
        isinstance(k, str) and type(v) is int and v >= 0 for k, v in value.items()
    ):
        return dict(value)
    log.warning("%s has malformed statuses; leaving them out", path)
    return None


def read_summary(workdir: Path) -> GraphSummary | None:
    """``workdir``'s summary; ``None`` when absent or unusable."""
    path = workdir / SUMMARY_FILE
    payload = _read_versioned(path, SUMMARY_SCHEMA)
    if payload is None:
        return None
    try:
        counts = [payload[k] for k in ("entities", "relations", "message_guids", "docs")]
        refreshed_at = payload["refreshed_at"]
        if not all(type(c) is int and c >= 0 for c in counts) or not isinstance(refreshed_at, str):
            raise ValueError("counts must be non-negative integers")
    except (KeyError, ValueError) as exc:
        log.warning("%s is malformed (%s); treating it as absent", path, exc)
        return None
    entities, relations, message_guids, docs = counts
    statuses = _statuses(path, payload.get("statuses"))
    return GraphSummary(entities, relations, message_guids, docs, refreshed_at, statuses)
