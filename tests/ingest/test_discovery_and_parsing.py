"""Discovery of the corpus folder and the text parser's refusals."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from varagity.config import load_settings
from varagity.files import file_sha256
from varagity.ingest.discovery import RESERVED_DIR, resolve_in_corpus, scan
from varagity.ingest.parsers import ParseError
from varagity.ingest.parsing import parse_file
from varagity.records import content_hash, doc_id_for

SMALL = load_settings(MAX_FILE_BYTES=1000)


def test_scan_finds_text_files_and_reports_the_rest(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("# A")
    (tmp_path / "sub dir").mkdir()
    (tmp_path / "sub dir" / "b é.txt").write_text("b")
    (tmp_path / "model.xyz").write_bytes(b"\x00\x01")
    (tmp_path / ".hidden.md").write_text("h")
    (tmp_path / RESERVED_DIR).mkdir()
    (tmp_path / RESERVED_DIR / "backup.md").write_text("never corpus")
    outside = tmp_path.parent / f"{tmp_path.name}-outside.md"
    outside.write_text("outside")
    os.symlink(outside, tmp_path / "link.md")
    files, skipped = scan(tmp_path)
    assert [f.relative_path for f in files] == ["a.md", "sub dir/b é.txt"]
    reasons = {s.relative_path: s.reason for s in skipped}
    assert "unsupported file type .xyz" in reasons["model.xyz"]
    assert "outside the corpus" in reasons["link.md"]
    assert RESERVED_DIR + "/backup.md" not in reasons


def test_scan_of_missing_folder_is_empty(tmp_path: Path) -> None:
    assert scan(tmp_path / "nope") == ([], [])


def test_parse_builds_identity_from_bytes(tmp_path: Path) -> None:
    (tmp_path / "n.md").write_bytes("\ufeffCafé notes\n".encode())
    parsed = parse_file(tmp_path, "n.md", settings=SMALL)
    assert parsed.text == "Café notes"  # pages are stripped of outer whitespace
    assert parsed.content_hash == file_sha256(tmp_path / "n.md")
    assert parsed.content_hash == content_hash((tmp_path / "n.md").read_bytes())
    assert parsed.doc_id == doc_id_for("n.md", parsed.content_hash)
    assert parsed.file_type == "md" and parsed.file_modified_at is not None


def test_utf16_with_bom_decodes(tmp_path: Path) -> None:
    (tmp_path / "u.txt").write_bytes("hello wide".encode("utf-16"))
    assert parse_file(tmp_path, "u.txt", settings=SMALL).text == "hello wide"


@pytest.mark.parametrize(
    ("data", "fragment"),
    [
        (b"hello \x80\x81\x8d\x8f\x90\x9d junk", "undecodable text: no encoding fits"),
        (b"\x00\x01\x02binary", "NUL bytes"),
    ],
)
def test_undecodable_files_fail_by_name(tmp_path: Path, data: bytes, fragment: str) -> None:
    (tmp_path / "bad.txt").write_bytes(data)
    with pytest.raises(ParseError) as err:
        parse_file(tmp_path, "bad.txt", settings=SMALL)
    assert "bad.txt" in str(err.value) and fragment in str(err.value)


def test_oversized_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "big.txt").write_text("x" * 2000)
    with pytest.raises(ParseError, match="over MAX_FILE_BYTES"):
        parse_file(tmp_path, "big.txt", settings=SMALL)


def test_paths_outside_the_corpus_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        resolve_in_corpus(tmp_path, "../etc/passwd")
    with pytest.raises(FileNotFoundError):
        parse_file(tmp_path, "missing.md", settings=SMALL)


def test_source_code_is_ingested_as_text(tmp_path: Path) -> None:
    (tmp_path / "lib.rs").write_text("pub struct DiffExecutor;\n")
    (tmp_path / "Makefile").write_text("all:\n")
    files, skipped = scan(tmp_path)
    assert [f.relative_path for f in files] == ["lib.rs"]
    assert parse_file(tmp_path, "lib.rs", settings=SMALL).file_type == "rs"
    assert "unsupported file type (none)" in skipped[0].reason


def test_file_birth_time_is_read_when_the_filesystem_keeps_it(tmp_path: Path) -> None:
    import subprocess
    from datetime import UTC, datetime

    from varagity.ingest.parsing import birth_time

    (tmp_path / "b.txt").write_text("born")
    out = subprocess.run(
        ["stat", "-c", "%W", str(tmp_path / "b.txt")], capture_output=True, text=True
    )
    expected = int(out.stdout.strip()) if out.stdout.strip().isdigit() else 0
    got = birth_time(tmp_path / "b.txt")
    if expected > 0:
        assert got == datetime.fromtimestamp(expected, UTC)
    else:
        assert got is None
