"""The folder watcher on a real folder, told by the kernel's inotify."""

from __future__ import annotations

import os
import shutil
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from inotify_simple import INotify

from varagity.ingest.discovery import RESERVED_DIR
from varagity.ingest.watch import FolderWatcher


class Landed:
    """What the watcher hands over, batch by batch."""

    def __init__(self) -> None:
        self.batches: list[list[str]] = []
        self._changed = threading.Condition()

    def __call__(self, paths: list[str]) -> None:
        with self._changed:
            self.batches.append(paths)
            self._changed.notify_all()

    @property
    def paths(self) -> list[str]:
        return [p for batch in self.batches for p in batch]

    def wait_for(self, expected: set[str], timeout: float = 20.0) -> None:
        with self._changed:
            assert self._changed.wait_for(lambda: expected <= set(self.paths), timeout), (
                f"still missing {sorted(expected - set(self.paths))}; got {self.batches}"
            )

    def settle(self, quiet: float = 1.5) -> None:
        """Let anything still on its way arrive."""
        time.sleep(quiet)


@pytest.fixture
def watched(tmp_path: Path) -> Iterator[tuple[Path, Landed]]:
    docs = tmp_path / "docs"
    (docs / "old").mkdir(parents=True)
    landed = Landed()
    watcher = FolderWatcher(docs, landed)
    assert watcher.start()
    try:
        yield docs, landed
    finally:
        watcher.stop()
    assert not watcher.running


def test_written_moved_and_copied_in_files_are_handed_over_once_each(
    watched: tuple[Path, Landed], tmp_path: Path
) -> None:
    docs, landed = watched
    (docs / "a.md").write_text("alpha")
    (docs / "old" / "b.txt").write_text("beta")
    outside = tmp_path / "outside.md"
    outside.write_text("gamma")
    os.rename(outside, docs / "moved.md")  # an editor's save, a sync tool
    tree = tmp_path / "tree"
    (tree / "deep" / "er").mkdir(parents=True)
    (tree / "deep" / "er" / "c.md").write_text("delta")
    (tree / "d.md").write_text("epsilon")
    os.rename(tree, docs / "tree")  # a folder moved in: no event for its files
    shutil.copytree(docs / "tree", docs / "copied")  # a folder copied in
    expected = {
        "a.md",
        "old/b.txt",
        "moved.md",
        "tree/deep/er/c.md",
        "tree/d.md",
        "copied/deep/er/c.md",
        "copied/d.md",
    }
    landed.wait_for(expected)
    # a file written inside a folder that was moved in is watched too
    (docs / "tree" / "deep" / "later.md").write_text("zeta")
    landed.wait_for(expected | {"tree/deep/later.md"})
    landed.settle()
    assert sorted(landed.paths) == sorted(expected | {"tree/deep/later.md"})


def test_what_is_not_corpus_is_not_handed_over(watched: tuple[Path, Landed]) -> None:
    docs, landed = watched
    (docs / ".hidden.md").write_text("swap file")
    (docs / ".git").mkdir()
    (docs / ".git" / "notes.md").write_text("inside a hidden folder")
    (docs / RESERVED_DIR).mkdir()
    (docs / RESERVED_DIR / "bundle.md").write_text("a backup's file")
    (docs / "archive.xyz").write_text("a type no parser reads")
    (docs / "loop.md").symlink_to(docs / "loop.md")
    (docs / "kept.md").write_text("the one corpus file")
    landed.wait_for({"kept.md"})
    landed.settle()
    assert landed.paths == ["kept.md"]


def test_a_burst_of_files_is_handed_over_in_few_batches(watched: tuple[Path, Landed]) -> None:
    docs, landed = watched
    names = {f"burst/{i:03d}.md" for i in range(300)}
    (docs / "burst").mkdir()
    for name in sorted(names):
        (docs / name).write_text(f"file {name}")
    landed.wait_for(names)
    landed.settle()
    assert sorted(landed.paths) == sorted(names)
    # launched together, not one per file: a batch closes after a quiet moment or a
    # second, so a busy machine splits the burst where its writes paused (seen: 6)
    assert len(landed.batches) <= len(names) // 10, [len(b) for b in landed.batches]


def test_a_file_written_while_a_new_folder_gets_its_watch_is_handed_over_once(
    watched: tuple[Path, Landed], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The race seen in CI: a folder made, and files written into it before the watcher
    has watched it. One lands just before its watch is added (only the listing finds it),
    one just after (both the listing and its close event tell it)."""
    docs, landed = watched
    add_watch = INotify.add_watch

    def racing(self: INotify, path: object, mask: int) -> int:
        if Path(str(path)).name == "race":
            (Path(str(path)) / "before-watch.md").write_text("listed only")
            wd = add_watch(self, path, mask)
            (Path(str(path)) / "after-watch.md").write_text("listed and told")
            return wd
        return add_watch(self, path, mask)

    monkeypatch.setattr(INotify, "add_watch", racing)
    (docs / "race").mkdir()
    expected = {"race/before-watch.md", "race/after-watch.md"}
    landed.wait_for(expected)
    landed.settle()
    assert sorted(landed.paths) == sorted(expected)


def test_a_file_moved_out_with_its_folder_is_not_reported_under_its_old_path(
    watched: tuple[Path, Landed], tmp_path: Path
) -> None:
    docs, landed = watched
    (docs / "old" / "first.md").write_text("one")
    landed.wait_for({"old/first.md"})
    os.rename(docs / "old", tmp_path / "gone")
    (tmp_path / "gone" / "after.md").write_text("written after it left the corpus")
    (docs / "still.md").write_text("two")
    landed.wait_for({"still.md"})
    landed.settle()
    assert sorted(landed.paths) == ["old/first.md", "still.md"]


def test_a_callback_that_fails_does_not_stop_the_watcher(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    landed = Landed()
    calls = 0

    def flaky(paths: list[str]) -> None:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise RuntimeError("Dagster is down")
        landed(paths)

    watcher = FolderWatcher(docs, flaky)
    assert watcher.start()
    try:
        (docs / "first.md").write_text("lost to the failure: the sensor finds it")
        deadline = time.monotonic() + 20
        while calls == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        (docs / "second.md").write_text("handed over")
        landed.wait_for({"second.md"})
    finally:
        watcher.stop()
    assert calls == 2 and landed.paths == ["second.md"]


def test_a_missing_folder_is_not_watched(tmp_path: Path) -> None:
    watcher = FolderWatcher(tmp_path / "nowhere", Landed())
    assert watcher.start() is False
    assert not watcher.running


def test_the_folder_removed_and_made_again_is_watched_again(
    watched: tuple[Path, Landed], tmp_path: Path
) -> None:
    docs, landed = watched
    shutil.rmtree(docs)
    time.sleep(0.5)
    remade = tmp_path / "remade"
    (remade / "sub").mkdir(parents=True)
    (remade / "sub" / "back.md").write_text("in the folder when it came back")
    os.rename(remade, docs)
    landed.wait_for({"sub/back.md"})
    (docs / "sub" / "after.md").write_text("written once it is watched again")
    landed.wait_for({"sub/back.md", "sub/after.md"})
