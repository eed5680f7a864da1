"""Identity derivation exactly as the data model defines it."""

from __future__ import annotations

import hashlib

import pytest

from varagity.records import (
    ChunkRecord,
    RetrievalTrace,
    chunk_id_for,
    content_hash,
    doc_id_for,
    normalize_relative_path,
)


def test_identity_rules() -> None:
    data = b"hello corpus\n"
    h = content_hash(data)
    assert h == hashlib.sha256(data).hexdigest()
    expected = hashlib.sha256(f"notes/a.md:{h}".encode()).hexdigest()[:16]
    assert doc_id_for("notes/a.md", h) == expected
    assert len(expected) == 16
    assert chunk_id_for(expected, 3) == f"{expected}::3"
    # same bytes at another path is another document; same path, other bytes too
    assert doc_id_for("notes/b.md", h) != expected
    assert doc_id_for("notes/a.md", content_hash(b"other")) != expected


def test_negative_chunk_index_is_refused() -> None:
    with pytest.raises(ValueError):
        chunk_id_for("abc", -1)


@pytest.mark.parametrize("bad", ["/etc/passwd", "../up.md", "a/../../b", ""])
def test_relative_paths_cannot_escape(bad: str) -> None:
    with pytest.raises(ValueError):
        normalize_relative_path(bad)


def test_relative_paths_are_posix() -> None:
    assert normalize_relative_path("dir\\sub\\f.md") == "dir/sub/f.md"


def test_records_validate() -> None:
    with pytest.raises(ValueError):
        RetrievalTrace(fused_score=0.5, fused_rank=1)  # final_rank is required
    with pytest.raises(ValueError):
        ChunkRecord.model_validate({"doc_id": "x"})
