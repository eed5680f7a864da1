"""A rebuild of the message graph: the days of a range (or every day) extracted again
from the archives, the other days left as they are; and a reset, the graph emptied.

A build extracts only what changed: a day whose transcript is the same is never sent to
the engine again. Extraction settings and the chat model change no transcript, so after
such a change the days keep what the old model made of them (the graph is *stale*,
:class:`~varagity.stores.corpus_state.GraphState`). A rebuild reads every supported
archive of ``GRAPH_DOCS_PATH`` and takes the days in its range:

* every day an archive renders in the range is deleted from the engine (when the graph
  holds it) and inserted again, so it is extracted again under the current settings
  (the engine's LLM response cache is keyed by the prompt and the model: a day is
  extracted by the model again only when the prompt or the model changed);
* a day the manifest records in the range for an archive that no longer renders it
  leaves the graph, as in a build;
* a day another archive owns in the manifest stays with that archive (as in a build),
  and the days of an archive that cannot be read now stay as they are.

Nothing outside the range is touched. The plan is computed here
(:func:`plan_rebuild`); the Dagster asset ``graph_rebuilt_days`` applies it as the
graph's single writer.

A reset (:func:`empty_workdir`) empties the engine's working directory in place: the
engine's files (its LLM response cache among them) and the sidecars (build manifest,
size summary), and any folder a killed restore left beside it. The folder itself stays,
so the graph-sources sensor does not take it for a restored graph and rebuild every
archive on its own; the archives are never touched.
"""

from __future__ import annotations

import logging
import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from varagity.config import Settings
from varagity.graph.archives import scan_archives
from varagity.graph.contacts import ContactsError, load_contacts
from varagity.graph.manifest import ManifestEntry
from varagity.graph.sources.base import MessageSourceError
from varagity.graph.sources.registry import read_archive, rejections
from varagity.graph.swap import debris
from varagity.graph.transcripts import graph_timezone
from varagity.graph.types import ThreadDay
from varagity.pipeline import span_in_range

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RebuildPlan:
    """What a rebuild of the days ``low`` .. ``high`` does."""

    low: str | None
    """The first day (``None``: every day before ``high`` too)."""
    high: str | None
    """The last day (``None``: every day after ``low`` too)."""
    days: tuple[ThreadDay, ...] = ()
    """The days in range the archives render: extracted again."""
    held: tuple[str, ...] = ()
    """Those of :attr:`days` the graph holds now: deleted before they are inserted."""
    removed: tuple[str, ...] = ()
    """Days in range the manifest records for an archive that no longer renders them."""
    outside: int = 0
    """Days rendered or held outside the range (left as they are)."""
    left: tuple[str, ...] = ()
    """Days in range the graph holds that no archive read here renders (their archive is
    gone, waiting for its removal run, or cannot be read now): left as they are."""
    unreadable: dict[str, str] = field(default_factory=dict)
    """Archives that could not be read, with why (their days are left as they are)."""

    @property
    def every_day(self) -> bool:
        """After it, every day of the graph and its archives was extracted again: no
        day lies outside the range, and nothing was left for another reason."""
        return self.outside == 0 and not self.left and not self.unreadable

    @property
    def described(self) -> str:
        """``days 2026-03-03..2026-03-04``, ``every day``, ``days from 2026-03-03``..."""
        if self.low is None and self.high is None:
            return "every day"
        if self.low is None:
            return f"days up to {self.high}"
        if self.high is None:
            return f"days from {self.low}"
        return f"days {self.low}..{self.high}"


def plan_rebuild(
    settings: Settings,
    manifest: Mapping[str, ManifestEntry],
    low: str | None,
    high: str | None,
) -> RebuildPlan:
    """The rebuild of the days ``low`` .. ``high`` (``None``: open on that side) of every
    supported archive under ``GRAPH_DOCS_PATH``, read as a build reads them (time zone,
    contacts files, ``GRAPH_OWNER_NAME``). Reads every archive; calls no model."""
    root = settings.graph_docs_path
    tz = graph_timezone(settings)
    days: dict[str, ThreadDay] = {}
    removed: list[str] = []
    unreadable: dict[str, str] = {}
    outside = 0
    rendered_by: set[str] = set()  # archives read here: the days they render are known
    seen: set[str] = set()
    for candidate in scan_archives(root):
        rel = candidate.relative_path
        if rejections(candidate.path):
            continue  # not an archive: a build would not read it either
        try:
            contacts = load_contacts(root, rel, owner=settings.GRAPH_OWNER_NAME)
            rendered = read_archive(root, rel, tz=tz, contacts=contacts)
        except ContactsError as exc:
            unreadable[rel] = str(exc)
            continue
        except MessageSourceError as exc:
            unreadable[rel] = exc.reason
            continue
        except OSError as exc:
            unreadable[rel] = str(exc)
            continue
        rendered_by.add(rel)
        keys = set()
        for day in rendered:
            keys.add(day.doc_key)
            entry = manifest.get(day.doc_key)
            if (entry is not None and entry.source != rel) or day.doc_key in seen:
                continue  # another archive's day (a chat exported twice): stays with it
            seen.add(day.doc_key)
            if span_in_range(day.span, low, high):
                days[day.doc_key] = day
            else:
                outside += 1
        for key, entry in manifest.items():
            if entry.source == rel and key not in keys and span_in_range(entry.span, low, high):
                removed.append(key)
    left: list[str] = []
    for key, entry in manifest.items():
        if key in seen or entry.source in rendered_by:
            continue
        if span_in_range(entry.span, low, high):
            left.append(key)
        else:
            outside += 1
    return RebuildPlan(
        low=low,
        high=high,
        days=tuple(days[key] for key in sorted(days)),
        held=tuple(sorted(key for key in days if key in manifest)),
        removed=tuple(sorted(removed)),
        outside=outside,
        left=tuple(sorted(left)),
        unreadable=unreadable,
    )


@dataclass(frozen=True)
class EmptiedWorkdir:
    """What a reset removed."""

    files: int
    bytes: int
    names: tuple[str, ...]
    """The entries of the working directory removed (and debris beside it), by name."""


def _size(path: Path) -> tuple[int, int]:
    if path.is_dir() and not path.is_symlink():
        files = [p for p in path.rglob("*") if p.is_file() and not p.is_symlink()]
        return len(files), sum(p.stat().st_size for p in files)
    try:
        return 1, path.lstat().st_size
    except FileNotFoundError:
        return 0, 0


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)


def empty_workdir(workdir: Path) -> EmptiedWorkdir:
    """Remove everything in ``workdir`` (the engine's files and the sidecars) and the
    folders a killed restore left beside it, keeping ``workdir`` itself (absent stays
    absent). Call it as the graph's writer (holding its write lock)."""
    removed: list[Path] = []
    if workdir.is_dir():
        removed.extend(sorted(workdir.iterdir()))
    removed.extend(debris(workdir))
    files = size = 0
    for path in removed:
        count, length = _size(path)
        files, size = files + count, size + length
        _remove(path)
    if removed:
        log.info("emptied %s: %d file(s), %d bytes", workdir, files, size)
    return EmptiedWorkdir(files=files, bytes=size, names=tuple(p.name for p in removed))
