"""Files landing in ``DOCS_PATH``, told as they land (Linux inotify).

The folder sensor finds a new file on its next tick, evaluated every few seconds by the
Dagster daemon; a file should not wait for that. :class:`FolderWatcher` is told by the
kernel when a writer closes a file or a file is moved into the corpus, groups what lands
close together, and hands the relative paths of the files :func:`scan` would ingest to a
callback (the API launches their ingest runs, as it does for uploads). It only speeds
things up: the sensor still diffs the folder, so an event the watcher misses (a full
kernel queue, a file changed by a second open) is found on the next tick, and removals
are left to the sensor.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path

from inotify_simple import Event, INotify, flags

from varagity.ingest.discovery import CorpusFile, corpus_file_at, not_corpus

log = logging.getLogger(__name__)

#: A batch is handed over once nothing new landed for this long (a burst of files, such
#: as a folder copied in, becomes one launch) ...
QUIET_S = 0.15
#: ... or once its first file has waited this long (a long copy is handed over as it
#: goes, in about this many seconds' worth of files).
MAX_WAIT_S = 1.0
#: How many recently handed-over files the watcher remembers, to hand each version once.
HANDED_MEMORY = 4096


class FolderWatcher:
    """Watch ``docs_path`` (recursively, hidden and reserved folders aside) and call
    ``on_landed`` with the corpus-relative paths of files that were written or moved in.

    ``on_landed`` runs on the watcher's thread, one batch at a time; what it raises is
    logged and the watcher goes on.
    """

    def __init__(
        self,
        docs_path: Path,
        on_landed: Callable[[list[str]], None],
        *,
        quiet_s: float = QUIET_S,
        max_wait_s: float = MAX_WAIT_S,
    ) -> None:
        self.docs_path = docs_path
        self._on_landed = on_landed
        self._quiet_s = quiet_s
        self._max_wait_s = max_wait_s
        self._dirs: dict[int, Path] = {}
        #: what was last handed over of each recent file, so the same version goes once
        self._handed: OrderedDict[Path, tuple[int, int, int]] = OrderedDict()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._inotify: INotify | None = None

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> bool:
        """Start watching; ``False`` (with the reason logged) when this system cannot
        watch the folder, in which case new files wait for the folder sensor's tick."""
        root = self.docs_path.resolve()
        if not root.is_dir():
            log.info("not watching %s: it is not a folder yet", root)
            return False
        try:
            self._inotify = INotify()
            self._watch_tree(root, None)
        except OSError as exc:  # no inotify (not Linux), or no watch left
            self._close()
            why = (
                "the system's inotify watch limit is reached (raise fs.inotify.max_user_watches)"
                if exc.errno == errno.ENOSPC
                else str(exc)
            )
            log.warning("not watching %s: %s; new files wait for the folder sensor", root, why)
            return False
        self._thread = threading.Thread(target=self._run, name="folder-watcher", daemon=True)
        self._thread.start()
        log.info("watching %s (%d folders) for new files", root, len(self._dirs))
        return True

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._close()

    def __repr__(self) -> str:
        return f"FolderWatcher({str(self.docs_path)!r})"

    # --- the watching thread ------------------------------------------------

    def _run(self) -> None:
        assert self._inotify is not None
        landed: dict[Path, None] = {}  # in landing order, once each
        first = last = rewatched = 0.0
        while not self._stop.is_set():
            if landed:
                due = min(last + self._quiet_s, first + self._max_wait_s)
                timeout_ms = max(1, int((due - time.monotonic()) * 1000))
            else:
                timeout_ms = 250  # to notice stop()
            try:
                events = self._inotify.read(timeout=timeout_ms)
            except OSError as exc:
                log.warning("the folder watcher stopped (%s): new files wait for the sensor", exc)
                return
            before = len(landed)
            for event in events:
                self._handle(event, landed)
            now = time.monotonic()
            if not self._dirs and now - rewatched >= 1.0:  # DOCS_PATH removed: back yet?
                rewatched = now
                self._rewatch(landed)
            if len(landed) > before:
                first = first if before else now
                last = now
            if landed and (now - last >= self._quiet_s or now - first >= self._max_wait_s):
                self._hand_over(list(landed))
                landed.clear()

    def _handle(self, event: Event, landed: dict[Path, None]) -> None:
        if event.mask & flags.Q_OVERFLOW:
            log.warning("too many changes at once for the folder watcher: the sensor finds them")
            return
        if event.mask & flags.IGNORED:  # the folder was removed (or moved out)
            self._dirs.pop(event.wd, None)
            return
        folder = self._dirs.get(event.wd)
        if folder is None or not event.name:
            return
        path = folder / event.name
        if event.mask & flags.ISDIR:
            if event.mask & flags.MOVED_FROM:
                self._forget_tree(path)
            elif event.mask & (flags.CREATE | flags.MOVED_TO) and self._watched(path):
                try:
                    self._watch_tree(path, landed)  # what was copied in before its watch
                except OSError as exc:
                    log.warning("cannot watch %s (%s): the sensor finds its files", path, exc)
            return
        if event.mask & (flags.CLOSE_WRITE | flags.MOVED_TO) or (
            event.mask & flags.CREATE and path.is_symlink()
        ):
            landed[path] = None

    def _hand_over(self, paths: list[Path]) -> None:
        rels = []
        for path in paths:
            found = corpus_file_at(self.docs_path, path)
            if not isinstance(found, CorpusFile):  # the sensor reports skipped files, once
                continue
            version = (found.size, found.mtime_ns, found.ctime_ns)
            if self._handed.get(path) == version:
                continue  # listed with its folder, then its close told again: once is enough
            self._handed[path] = version
            self._handed.move_to_end(path)
            if len(self._handed) > HANDED_MEMORY:
                self._handed.popitem(last=False)
            rels.append(found.relative_path)
        if not rels:
            return
        try:
            self._on_landed(rels)
        except Exception:
            log.exception("handing over %d landed file(s) failed: the sensor finds them", len(rels))

    # --- watches ----------------------------------------------------------

    def _watched(self, folder: Path) -> bool:
        """Whether files in ``folder`` can be corpus (not hidden, not the reserved one)."""
        return not not_corpus(folder.relative_to(self.docs_path.resolve()).parts)

    def _watch_tree(self, top: Path, landed: dict[Path, None] | None) -> None:
        """Watch ``top`` and the folders below it (links to folders are not followed, as
        :func:`scan` does not follow them); with ``landed``, its files count as landed."""
        assert self._inotify is not None
        mask = (
            flags.CLOSE_WRITE
            | flags.MOVED_TO
            | flags.MOVED_FROM
            | flags.CREATE
            | flags.ONLYDIR
            | flags.DONT_FOLLOW
        )
        pending = [top]
        while pending:
            here = pending.pop()
            # the watch before the listing: a file written in between is then listed, or
            # told by an event, or both (handed over once, see _hand_over), never neither
            try:
                self._dirs[self._inotify.add_watch(here, mask)] = here
                entries = os.scandir(here)
            except FileNotFoundError:
                if here == top:
                    raise
                continue  # removed while its parent was being listed
            with entries:
                for entry in entries:
                    if entry.is_dir(follow_symlinks=False):
                        if self._watched(Path(entry.path)):
                            pending.append(Path(entry.path))
                    elif landed is not None:
                        landed[Path(entry.path)] = None

    def _rewatch(self, landed: dict[Path, None]) -> None:
        """Watch ``DOCS_PATH`` again once it is back (removed and made anew); what is
        in it by then counts as landed."""
        root = self.docs_path.resolve()
        if not root.is_dir():
            return
        try:
            self._watch_tree(root, landed)
        except OSError as exc:
            log.warning("cannot watch %s again (%s): the sensor finds its files", root, exc)
            return
        log.info("watching %s again", root)

    def _forget_tree(self, top: Path) -> None:
        """Stop watching ``top`` and below: moved out, their paths no longer hold."""
        assert self._inotify is not None
        for wd, folder in list(self._dirs.items()):
            if folder == top or top in folder.parents:
                del self._dirs[wd]
                with contextlib.suppress(OSError):  # already gone with the folder
                    self._inotify.rm_watch(wd)

    def _close(self) -> None:
        if self._inotify is not None:
            self._inotify.close()
        self._inotify = None
        self._dirs.clear()
