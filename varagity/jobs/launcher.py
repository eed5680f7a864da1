"""Ingest runs for files that just landed in ``DOCS_PATH``, launched now instead of at
the folder sensor's next tick: an upload's files, and files written or moved into the
folder by anything else (told by :class:`~varagity.ingest.watch.FolderWatcher`).

Launches go one at a time, so the second of two that name the same file finds the
first's run in flight and leaves the file to it; the watcher's hand-over waits for
uploads in progress, so an uploaded file's run is the upload's (tagged
``varagity/source=upload``), not a second one. What the watcher launches is decided by
:func:`~varagity.folder_diff.watcher_launches`, beside the folder sensor's own decision:
a file that landed longer ago than the watcher launches is the sensor's, so the two
never both launch it. A launch that fails only logs: the folder sensor ingests the
files as any other that lands in the folder.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from varagity.config import Settings
from varagity.folder_diff import FileStat, watcher_launches
from varagity.ingest.discovery import partition_key_for
from varagity.jobs.gate import CorpusBusy
from varagity.jobs.ingest import IngestJobs
from varagity.jobs.transport import DagsterClient, DagsterError

log = logging.getLogger(__name__)

UPLOAD_SOURCE = "upload"
"""The ``varagity/source`` tag of the ingest runs an upload launches."""
FOLDER_SOURCE = "folder"
"""The ``varagity/source`` tag of the ingest runs launched for files that landed in the
folder some other way (a copy, a move, a sync tool)."""

#: How long the watcher's hand-over waits for uploads in progress before it launches
#: anyway (an upload of many large files can take longer; the second launch then leaves
#: what the first covers).
_UPLOAD_WAIT_S = 30.0
_UPLOADED_KEPT = 10_000


class IngestLauncher:
    """Launches the ingest runs of landed files, one launch at a time.

    ``settings`` is called for the settings in force at each launch (the API's can
    change at run time); ``timeout`` bounds each answer Dagster gives.
    """

    def __init__(self, settings: Callable[[], Settings], *, timeout: float = 30.0) -> None:
        self._settings = settings
        self._timeout = timeout
        self._launching = threading.Lock()
        self._uploads = 0
        self._uploads_done = threading.Condition()
        # what uploads launched: (mtime_ns, size) by relative path, so the watcher's
        # hand-over of the same files asks Dagster nothing
        self._uploaded: dict[str, tuple[int, int]] = {}

    @contextmanager
    def uploading(self) -> Iterator[None]:
        """Around an upload's storing and launch: the watcher's hand-over of its files
        waits until it has launched them itself."""
        with self._uploads_done:
            self._uploads += 1
        try:
            yield
        finally:
            with self._uploads_done:
                self._uploads -= 1
                self._uploads_done.notify_all()

    def launch(self, relative_paths: list[str], *, source: str) -> None:
        """Ask Dagster to ingest these files now, in the runs the folder sensor would
        ask for. Beside an export or a restore of the documents nothing is launched: the
        sensor takes the files once it has ended (a run launched during a restore would
        only fail on the corpus lock)."""
        settings = self._settings()
        docs = settings.docs_path
        with self._launching:
            try:
                jobs = IngestJobs(DagsterClient.for_settings(settings, timeout=self._timeout))
                jobs.launch_runs(
                    [partition_key_for(p) for p in relative_paths],
                    batch_size=settings.INGEST_BATCH_SIZE,
                    source=source,
                    # a file gone meanwhile weighs nothing (its run finds it gone)
                    sizes={partition_key_for(p): _size(docs / p) for p in relative_paths},
                    batch_bytes=settings.INGEST_BATCH_BYTES,
                )
            except (DagsterError, CorpusBusy) as exc:
                log.warning(
                    "%d %s file(s) wait for the folder sensor: %s",
                    len(relative_paths),
                    source,
                    exc,
                )
                return
            if source == UPLOAD_SOURCE:
                if len(self._uploaded) > _UPLOADED_KEPT:  # handed over long ago
                    self._uploaded.clear()
                self._uploaded.update((p, _version(docs / p)) for p in relative_paths)

    def landed(self, relative_paths: list[str]) -> None:
        """The folder watcher's hand-over: once no upload is in progress, launch what
        an upload has not launched already and the folder sensor does not take."""
        with self._uploads_done:
            self._uploads_done.wait_for(lambda: self._uploads == 0, timeout=_UPLOAD_WAIT_S)
        docs = self._settings().docs_path
        with self._launching:
            landed = {p: _stat(docs / p) for p in relative_paths}
            todo = watcher_launches(landed, self._uploaded, now_ns=time.time_ns())
        if todo:
            self.launch(todo, source=FOLDER_SOURCE)


def _version(path: Path) -> tuple[int, int]:
    """What tells one write of a file from another: (mtime_ns, size); (0, -1) if gone."""
    try:
        stat = path.stat()
    except OSError:
        return (0, -1)
    return (stat.st_mtime_ns, stat.st_size)


def _stat(path: Path) -> FileStat | None:
    """The file as it is now; ``None`` if it is gone."""
    try:
        stat = path.stat()
    except OSError:
        return None
    return FileStat(stat.st_mtime_ns, stat.st_size, stat.st_ctime_ns)


def _size(path: Path) -> int:
    """The file's size in bytes; 0 if it is gone."""
    return max(0, _version(path)[1])
