"""Placing uploaded files into the corpus folder: path rules, atomic writes, mtimes."""

from __future__ import annotations

from pathlib import Path

import pytest

from varagity.ingest.uploads import parse_mtime_ms, store_uploads, upload_path
from varagity.uploads import StagedFile, UploadRefused, place_upload, target_folder

MTIME_MS = 1_600_000_000_123  # 2020-09-13, with milliseconds


def _staged(tmp_path: Path, name: str, data: bytes, limit: int = 1 << 20) -> StagedFile:
    staging = tmp_path / "staging"
    staging.mkdir(exist_ok=True)
    staged = StagedFile(staging, name, limit)
    for i in range(0, len(data), 7):  # several pieces, as a network stream delivers them
        staged.write(data[i : i + 7])
    staged.finish()
    return staged


def _tree(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*"))


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("a.md", "a.md"),
        ("notes/2024/a.md", "notes/2024/a.md"),
        ("./notes//a.md", "notes/a.md"),
        ("notes\\win\\a.md", "notes/win/a.md"),
        ("Reports 2024/Über café.md", "Reports 2024/Über café.md"),
        ("deep/varagity-exports/a.md", "deep/varagity-exports/a.md"),  # only the root's
    ],
)
def test_upload_paths_are_normalized(name: str, expected: str) -> None:
    assert upload_path(name) == expected


@pytest.mark.parametrize(
    ("name", "code"),
    [
        ("", "invalid_path"),
        ("./", "invalid_path"),
        ("../a.md", "path_traversal"),
        ("notes/../../a.md", "path_traversal"),
        ("/etc/a.md", "absolute_path"),
        ("C:\\Users\\me\\a.md", "absolute_path"),
        ("varagity-exports/a.md", "reserved_path"),
        ("Varagity-Exports/x/a.md", "reserved_path"),
        ("varagity-exports", "reserved_path"),
        (".secret.md", "hidden_name"),
        ("notes/.git/a.md", "hidden_name"),
        ("a\x01b.md", "invalid_name"),
        ("a\nb.md", "invalid_name"),
        ("x" * 256 + ".md", "invalid_name"),
        ("tool.exe", "unsupported_type"),
        ("README", "unsupported_type"),
    ],
)
def test_unsafe_or_unparsable_upload_paths_are_refused(name: str, code: str) -> None:
    with pytest.raises(UploadRefused) as refused:
        upload_path(name)
    assert refused.value.code == code
    assert refused.value.message


def test_target_folder_prefixes_and_is_checked_like_a_path() -> None:
    assert upload_path("a.md", target_folder("inbox/today")) == "inbox/today/a.md"
    assert target_folder("") == ""
    for folder, code in [
        ("../up", "path_traversal"),
        ("/abs", "absolute_path"),
        (".hidden", "hidden_name"),
        ("VARAGITY-EXPORTS", "reserved_path"),
    ]:
        with pytest.raises(UploadRefused) as refused:
            target_folder(folder)
        assert refused.value.code == code


def test_mtimes_are_milliseconds_since_the_epoch() -> None:
    assert parse_mtime_ms("") is None
    assert parse_mtime_ms(str(MTIME_MS)) == MTIME_MS * 1_000_000
    assert parse_mtime_ms("1500.5") == 1_500_500_000
    for bad in ("soon", "-1", "nan", "inf", "1e30"):
        with pytest.raises(UploadRefused) as refused:
            parse_mtime_ms(bad)
        assert refused.value.code == "invalid_mtime"


def test_staged_file_stops_writing_past_the_limit(tmp_path: Path) -> None:
    small = _staged(tmp_path, "a.md", b"x" * 100, limit=100)
    assert not small.too_large and small.path.stat().st_size == 100
    big = _staged(tmp_path, "b.md", b"x" * 101, limit=100)
    assert big.too_large and big.size == 101
    assert not big.path.exists()  # the staged bytes were dropped


def test_place_stores_atomically_with_the_original_mtime(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    staged = _staged(tmp_path, "a.md", b"# A\n\nfirst\n")
    mtime_ns = MTIME_MS * 1_000_000
    assert place_upload(docs, "notes/a.md", staged, mtime_ns) == "stored"
    target = docs / "notes" / "a.md"
    assert target.read_bytes() == b"# A\n\nfirst\n"
    assert target.stat().st_mtime_ns == mtime_ns
    assert _tree(docs) == ["notes", "notes/a.md"]  # no temporary file left beside it

    # the same bytes again: left alone (mtime untouched)
    again = _staged(tmp_path, "a.md", b"# A\n\nfirst\n")
    assert place_upload(docs, "notes/a.md", again, None) == "unchanged"
    assert target.stat().st_mtime_ns == mtime_ns

    # other bytes: replaced in one rename (a reader holding the old file keeps it whole)
    with target.open("rb") as before:
        other = _staged(tmp_path, "a.md", b"# A\n\nsecond\n")
        assert place_upload(docs, "notes/a.md", other, None) == "replaced"
        assert before.read() == b"# A\n\nfirst\n"
    assert target.read_bytes() == b"# A\n\nsecond\n"
    assert _tree(docs) == ["notes", "notes/a.md"]


def test_place_refuses_conflicts_and_folders_leading_out(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    outside = tmp_path / "outside"
    (docs / "taken.md").mkdir(parents=True)
    (docs / "file.md").write_text("a file")
    outside.mkdir()
    (docs / "link").symlink_to(outside, target_is_directory=True)
    staged = _staged(tmp_path, "x.md", b"data")
    for rel, code in [
        ("taken.md", "path_conflict"),  # a folder has that name
        ("file.md/inner.md", "path_conflict"),  # a file is in the way of a folder
        ("link/x.md", "outside_corpus"),
        ("link/new/x.md", "outside_corpus"),
    ]:
        with pytest.raises(UploadRefused) as refused:
            place_upload(docs, rel, staged, None)
        assert refused.value.code == code, rel
    assert list(outside.iterdir()) == []
    assert _tree(docs) == ["file.md", "link", "taken.md"]


def test_a_batch_stores_what_it_can_and_says_why_for_the_rest(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    files = [
        _staged(tmp_path, "a.md", b"alpha"),
        _staged(tmp_path, "b.md", b"beta"),
        _staged(tmp_path, "c.md", b"x" * 50, limit=10),
        _staged(tmp_path, "d.md", b"delta"),
        _staged(tmp_path, "e.md", b"echo"),
    ]
    results = store_uploads(
        docs,
        files,
        paths=["sub/a.md", "", "c.md", "sub/a.md", "e.md"],
        mtimes=[str(MTIME_MS), "", "", "", "yesterday"],
        folder="inbox",
    )
    assert [(r.status, r.relative_path, r.code) for r in results] == [
        ("stored", "inbox/sub/a.md", None),
        ("stored", "inbox/b.md", None),
        ("refused", "inbox/c.md", "too_large"),
        ("refused", "inbox/sub/a.md", "duplicate_path"),
        ("refused", "inbox/e.md", "invalid_mtime"),
    ]
    assert (docs / "inbox/sub/a.md").stat().st_mtime_ns == MTIME_MS * 1_000_000
    assert _tree(docs) == ["inbox", "inbox/b.md", "inbox/sub", "inbox/sub/a.md"]
    with pytest.raises(ValueError, match="paths has 1 entries for 5 files"):
        store_uploads(docs, files, paths=["a.md"])


def test_a_failed_write_leaves_nothing_behind(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    (docs / "kept-empty").mkdir(parents=True)
    staged = _staged(tmp_path, "x.md", b"1")
    staged.path.unlink()  # the staged bytes vanish after the folders are made
    with pytest.raises(UploadRefused) as refused:
        place_upload(docs, "kept-empty/new/deeper/x.md", staged, None)
    assert refused.value.code == "write_failed"
    assert _tree(docs) == ["kept-empty"]  # made folders pruned, the existing one kept

    # every name is legal but the whole path is longer than the OS allows
    too_deep = "/".join(["d" * 250] * 20) + "/x.md"
    with pytest.raises(UploadRefused) as refused:
        place_upload(docs, too_deep, _staged(tmp_path, "x.md", b"1"), None)
    assert refused.value.code == "write_failed"
    assert _tree(docs) == ["kept-empty"]


def test_a_name_of_255_bytes_can_be_stored(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    name = "n" * 252 + ".md"
    assert place_upload(docs, name, _staged(tmp_path, name, b"long"), None) == "stored"
    assert _tree(docs) == [name]
