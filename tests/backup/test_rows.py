"""The row checks' pure parts, without a bundle: what a corpus path may be, and what a
line of a member may hold (the whole bundles are in test_tampered_bundles.py)."""

from __future__ import annotations

import hashlib
import io
from pathlib import Path

import pytest

from varagity.backup import rows
from varagity.backup.bundle import BundleError, HashingReader, MemberRecord
from varagity.backup.rows import corpus_path_problem


def reader(data: bytes) -> HashingReader:
    member = MemberRecord("chunks.jsonl", len(data), hashlib.sha256(data).hexdigest())
    return HashingReader(io.BytesIO(data), member)


def parsed(data: bytes) -> list[tuple[int, dict[str, object]]]:
    return list(rows._rows(reader(data)))


def refusal(data: bytes) -> BundleError:
    with pytest.raises(BundleError) as caught:
        parsed(data)
    return caught.value


@pytest.mark.parametrize(
    ("path", "words"),
    [
        ("", "is empty"),
        ("../etc/passwd", "climbs out"),
        ("a/../../x.md", "climbs out"),
        ("/etc/passwd", "absolute"),
        ("a\\b.md", "backslash"),
        ("a/./b.md", "canonical"),
        ("a//b.md", "canonical"),
        ("a/b/", "canonical"),
        ("a\x00.md", "NUL"),
        (".git/config", "hidden"),
        ("notes/.swp", "hidden"),
        ("Varagity-Exports/x.zip", "varagity-exports"),
    ],
)
def test_a_corpus_path_is_canonical_and_inside(path: str, words: str) -> None:
    problem = corpus_path_problem(path, None)
    assert problem is not None and words in problem, problem


def test_a_corpus_path_may_not_resolve_outside_the_folder(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    (docs / "real").mkdir(parents=True)
    (docs / "out").symlink_to(tmp_path)
    assert corpus_path_problem("real/a.md", docs) is None
    assert corpus_path_problem("generated/not-there-yet.md", docs) is None
    problem = corpus_path_problem("out/secret.md", docs)
    assert problem is not None and "resolves outside" in problem


def test_an_archive_may_have_a_backslash_in_its_name() -> None:
    """The graph opens an archive by its path as it is: a backslash is part of a name."""
    assert corpus_path_problem("exports\\chat.db", None, backslash=True) is None
    assert corpus_path_problem("exports\\chat.db", None) is not None
    assert corpus_path_problem("../chat.db", None, backslash=True) is not None


def test_lines_are_rows_and_a_last_line_needs_no_newline() -> None:
    assert parsed(b'{"a":1}\n{"a":2}') == [(1, {"a": 1}), (2, {"a": 2})]
    assert parsed(b"") == []


@pytest.mark.parametrize(
    ("data", "code", "words"),
    [
        (b'{"a":1}\n\n', "bundle_row_invalid", "line 2 is not JSON"),
        (b'{"a":1}\n[1]\n', "bundle_row_invalid", "line 2 is not a JSON object"),
        (b'{"a":NaN}\n', "bundle_row_invalid", "holds the number NaN"),
        (b'{"a":-Infinity}\n', "bundle_row_invalid", "holds the number -Infinity"),
        (b'{"a":"\xc3"}\n', "bundle_text_invalid", "line 1 is not valid UTF-8: byte 0xc3"),
        (b'{"a":"x\\u0000"}\n', "bundle_text_invalid", "line 1: a holds a NUL character"),
        (b'{"m":{"k\\u0000":1}}\n', "bundle_text_invalid", "a key of m holds a NUL"),
        (b'{"m":["x","\\ud800"]}\n', "bundle_text_invalid", "m[1] holds a lone surrogate"),
        (b'{"a":"\\uFEFF\\n"}\n{"a":"\\u001b"}\n' + b"\xff\n", "bundle_text_invalid", "line 3"),
    ],
)
def test_a_line_is_a_storable_json_object(data: bytes, code: str, words: str) -> None:
    refused = refusal(data)
    assert refused.code == code
    assert words in refused.detail, refused.detail
    assert refused.detail.startswith("chunks.jsonl line")


def test_a_line_may_not_grow_without_end(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rows, "MAX_LINE_BYTES", 1000)
    monkeypatch.setattr(rows, "_READ_BYTES", 64)
    assert len(parsed(b'{"a":"' + b"x" * 900 + b'"}\n')) == 1
    refused = refusal(b'{"a":1}\n{"a":"' + b"x" * 5000)
    assert refused.code == "bundle_row_invalid"
    assert "chunks.jsonl line 2 is longer than 1000 bytes" in refused.detail
