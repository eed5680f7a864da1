"""The API's side of landed files: the app's :class:`~varagity.jobs.launcher.IngestLauncher`
(an upload's runs, and the folder watcher's), and the folder watcher's start with the
app (``FOLDER_WATCH``)."""

from __future__ import annotations

import logging
from contextlib import ExitStack

import psycopg
from fastapi import FastAPI

from varagity.config import Settings
from varagity.corpus_lock import folder_watcher_presence
from varagity.ingest.watch import FolderWatcher
from varagity.jobs.launcher import IngestLauncher
from varagity.stores.postgres import database_url
from varagity_api.deps import DAGSTER_TIMEOUT_S, app_settings

log = logging.getLogger(__name__)


def ingest_launcher(app: FastAPI) -> IngestLauncher:
    """The app's launcher, made on first use (an app served without its lifespan has
    one too)."""
    launcher: IngestLauncher | None = getattr(app.state, "ingest_launcher", None)
    if launcher is None:
        launcher = app.state.ingest_launcher = IngestLauncher(
            lambda: app_settings(app), timeout=DAGSTER_TIMEOUT_S
        )
    return launcher


def watch_folder(
    settings: Settings, launcher: IngestLauncher
) -> tuple[ExitStack, FolderWatcher | None]:
    """Start the folder watcher (``FOLDER_WATCH``) handing landed files to ``launcher``,
    and tell the folder sensor so through Postgres
    (:func:`~varagity.corpus_lock.folder_watcher_presence`): while a watcher is live the
    sensor leaves a file that just landed to it instead of asking for a second run.
    Closing the returned stack stops both; no watcher when it cannot run (the sensor
    then takes every file, as it always can)."""
    stack = ExitStack()
    if not settings.FOLDER_WATCH:
        return stack, None
    try:
        stack.enter_context(folder_watcher_presence(database_url(settings)))
    except (psycopg.Error, OSError, RuntimeError) as exc:
        log.warning(
            "not watching %s: Postgres cannot be reached (%s); new files wait for the "
            "folder sensor",
            settings.docs_path,
            exc,
        )
        return stack, None
    watcher = FolderWatcher(settings.docs_path, launcher.landed)
    if not watcher.start():
        stack.close()
        return ExitStack(), None
    stack.callback(watcher.stop)
    return stack, watcher
