"""Recursive character splitting: sizes, overlap, offsets, nothing lost."""

from __future__ import annotations

from itertools import pairwise

import pytest

from varagity.chunking import split_recursive

TEXT = "\n\n".join(
    f"Paragraph {i}. " + " ".join(f"word{i}_{j}" for j in range(40)) for i in range(12)
)


@pytest.mark.parametrize(("size", "overlap"), [(200, 0), (400, 50), (800, 100), (90, 30)])
def test_chunks_cover_the_text_within_bounds(size: int, overlap: int) -> None:
    chunks = split_recursive(TEXT, size, overlap)
    assert chunks
    for c in chunks:
        assert len(c.text) <= size
        assert TEXT[c.char_start : c.char_end] == c.text
    # every non-whitespace character lands in some chunk
    covered = set()
    for c in chunks:
        covered.update(range(c.char_start, c.char_end))
    missing = [i for i, ch in enumerate(TEXT) if not ch.isspace() and i not in covered]
    assert missing == []
    # consecutive chunks overlap by at most `overlap` and move forward
    for a, b in pairwise(chunks):
        assert b.char_start > a.char_start
        assert a.char_end - b.char_start <= overlap


def test_paragraph_boundaries_are_preferred() -> None:
    chunks = split_recursive(TEXT, 800, 0)
    assert all(c.text.startswith("Paragraph") for c in chunks)


def test_overlap_repeats_tail_text() -> None:
    chunks = split_recursive(" ".join(f"w{i}" for i in range(400)), 100, 30)
    assert any(a.char_end > b.char_start for a, b in pairwise(chunks))


def test_unbreakable_text_is_hard_cut() -> None:
    chunks = split_recursive("x" * 250, 100, 0)
    assert [len(c.text) for c in chunks] == [100, 100, 50]


def test_empty_and_whitespace_give_no_chunks() -> None:
    assert split_recursive("", 100, 10) == []
    assert split_recursive(" \n\n \t", 100, 10) == []


def test_bad_parameters_are_refused() -> None:
    with pytest.raises(ValueError):
        split_recursive("abc", 0, 0)
    with pytest.raises(ValueError):
        split_recursive("abc", 10, 10)
