"""Replacing the graph's working directory as a whole (a restored backup), crash-safe.

The new files are staged beside the live workdir, in ``<workdir>.restore-<run>`` on the
same filesystem. The swap is two renames: live -> ``<workdir>.previous-<run>``, staged ->
live. Once the new graph has opened, the previous one is renamed
``<workdir>.replaced-<run>`` (the commit point) and deleted. So the workdir is always
the old folder or the new one, never a mix, and what a crash leaves is read by
:func:`heal_workdir`:

* a staged folder alone: the restore died before the swap -> delete it;
* a previous folder: the restore died between the renames, or before the new graph
  opened -> put the previous graph back (whatever is live is the unproven new one);
* a replaced folder: the restore committed -> delete the debris.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
from pathlib import Path

from varagity.config import Settings
from varagity.corpus_lock import CorpusBusy, graph_write_lock
from varagity.files import fsync_dir
from varagity.graph.registry import workdir_for

log = logging.getLogger(__name__)

_DEBRIS = re.compile(r"^(?P<name>.+)\.(?P<kind>restore|previous|replaced|failed)-(?P<run>[\w-]+)$")


def workdir_identity(workdir: Path) -> str | None:
    """Which folder is the working directory now (device and inode), or None when there
    is none: a restore swaps another folder in, so the identity changes with every
    restore, however it was run, and with nothing else (a build writes inside it)."""
    try:
        st = workdir.stat()
    except OSError:
        return None
    return f"{st.st_dev}:{st.st_ino}"


def debris(workdir: Path) -> list[Path]:
    """The folders a restore (killed or not) left beside ``workdir``, by name."""
    try:
        siblings = sorted(workdir.parent.iterdir())
    except FileNotFoundError:
        return []
    found = []
    for path in siblings:
        match = _DEBRIS.match(path.name)
        if match is not None and match["name"] == workdir.name:
            found.append(path)
    return found


def staged_dir(workdir: Path, run: str) -> Path:
    """Where a restore extracts the new working directory."""
    return workdir.with_name(f"{workdir.name}.restore-{run}")


def previous_dir(workdir: Path, run: str) -> Path:
    """Where the live working directory waits while the new one is proven."""
    return workdir.with_name(f"{workdir.name}.previous-{run}")


def _remove(path: Path) -> None:
    """Delete a folder: renamed aside first (one step), then removed."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)


def swap_in(workdir: Path, staged: Path, run: str) -> None:
    """Make ``staged`` the live working directory, keeping the live one as previous."""
    previous = previous_dir(workdir, run)
    if workdir.exists():
        os.rename(workdir, previous)
    else:
        previous.mkdir()  # "there was no graph": rolling back leaves none
    os.rename(staged, workdir)
    fsync_dir(workdir.parent)


def roll_back(workdir: Path, run: str) -> None:
    """Put the previous working directory back (the new one did not open)."""
    previous = previous_dir(workdir, run)
    if workdir.exists():
        failed = workdir.with_name(f"{workdir.name}.failed-{run}")
        os.rename(workdir, failed)
        _remove(failed)
    if previous.exists():
        if any(previous.iterdir()):
            os.rename(previous, workdir)
        else:
            previous.rmdir()
    fsync_dir(workdir.parent)


def commit(workdir: Path, run: str) -> None:
    """The new working directory opened: drop the previous one."""
    previous = previous_dir(workdir, run)
    if previous.exists():
        replaced = workdir.with_name(f"{workdir.name}.replaced-{run}")
        os.rename(previous, replaced)
        fsync_dir(workdir.parent)
        _remove(replaced)


def heal_workdir(workdir: Path) -> list[str]:
    """Finish or undo what a killed swap of ``workdir`` left; returns what was done.
    Call it holding the graph's write lock (no restore may be running)."""
    done: list[str] = []
    try:
        siblings = list(workdir.parent.iterdir())
    except FileNotFoundError:
        return done
    for path in sorted(siblings):
        match = _DEBRIS.match(path.name)
        if match is None or match["name"] != workdir.name:
            continue
        kind, run = match["kind"], match["run"]
        if kind == "previous":
            roll_back(workdir, run)
            done.append(f"put back the graph a killed restore ({run}) had set aside")
        elif path.exists():
            _remove(path)
            done.append(f"removed {path.name}, left by a killed restore")
    for line in done:
        log.warning("%s: %s", workdir, line)
    return done


def heal_graph_workdir(settings: Settings) -> list[str]:
    """Heal the configured engine's working directory (:func:`heal_workdir`) unless a
    graph writer is running now (a restore in flight is not debris)."""
    try:
        with graph_write_lock(settings, holder="a graph workdir check"):
            return heal_workdir(workdir_for(settings))
    except CorpusBusy:
        return []
