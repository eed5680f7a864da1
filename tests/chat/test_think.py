"""The streaming <think> splitter, fed at every possible token boundary."""

from __future__ import annotations

import pytest

from varagity.generation.think import Piece, ThinkSplitter, split_think


def _run(deltas: list[str]) -> list[Piece]:
    splitter = ThinkSplitter()
    pieces: list[Piece] = []
    for delta in deltas:
        pieces.extend(splitter.feed(delta))
    pieces.extend(splitter.flush())
    merged: list[Piece] = []
    for piece in pieces:  # adjacent pieces of one kind read as one
        if merged and merged[-1].kind == piece.kind:
            merged[-1] = Piece(piece.kind, merged[-1].text + piece.text)
        else:
            merged.append(piece)
    return merged


def _every_split(text: str) -> list[list[str]]:
    """The text cut into two deltas at every position, and into single characters."""
    cuts = [[text[:i], text[i:]] for i in range(len(text) + 1)]
    return [*cuts, list(text)]


CASES = [
    ("no tags at all", "The kettle [1].", [("answer", "The kettle [1].")]),
    (
        "think then answer",
        "<think>Check source 1.</think>\n\nThe warranty is 27 months [1].",
        [("reasoning", "Check source 1."), ("answer", "The warranty is 27 months [1].")],
    ),
    (
        "text before and after",
        "Sure. <think>hmm</think> 27 months.",
        [("answer", "Sure. "), ("reasoning", "hmm"), ("answer", "27 months.")],
    ),
    (
        "unclosed think",
        "<think>still thinking about it",
        [("reasoning", "still thinking about it")],
    ),
    (
        "unclosed think ending in half a closing tag",
        "<think>still thinking</thi",
        [("reasoning", "still thinking</thi")],
    ),
    (
        "two blocks",
        "<think>a</think>b<think>c</think>d",
        [("reasoning", "a"), ("answer", "b"), ("reasoning", "c"), ("answer", "d")],
    ),
    ("a lone < is text", "a < b and <thin ice>", [("answer", "a < b and <thin ice>")]),
    ("answer ending in a tag prefix", "x <thi", [("answer", "x <thi")]),
    ("empty think", "<think></think>Answer.", [("answer", "Answer.")]),
    (
        "a closing tag outside a block is text",
        "a </think> b",
        [("answer", "a </think> b")],
    ),
]


@pytest.mark.parametrize(
    ("text", "expected"), [(t, e) for _, t, e in CASES], ids=[c[0] for c in CASES]
)
def test_every_token_boundary_gives_the_same_pieces(
    text: str, expected: list[tuple[str, str]]
) -> None:
    for deltas in _every_split(text):
        assert [tuple(p) for p in _run(deltas)] == expected, deltas


def test_partial_tags_are_held_back_only_until_decided() -> None:
    splitter = ThinkSplitter()
    assert splitter.feed("Hello <th") == [Piece("answer", "Hello ")]
    assert splitter.feed("ink>why") == [Piece("reasoning", "why")]
    assert splitter.feed(" not</") == [Piece("reasoning", " not")]
    assert splitter.feed("b>") == [Piece("reasoning", "</b>")]
    assert splitter.feed("</think>  ") == []  # whitespace after a tag is dropped
    assert splitter.feed(" done") == [Piece("answer", "done")]
    assert splitter.flush() == []


def test_plain_text_streams_without_delay() -> None:
    splitter = ThinkSplitter()
    assert splitter.feed("The ") == [Piece("answer", "The ")]
    assert splitter.feed(" kettle") == [Piece("answer", " kettle")]  # no stripping


def test_split_think_of_a_complete_reply() -> None:
    assert split_think("<think>r1</think>A<think>r2</think>B") == ("r1r2", "AB")
    assert split_think("plain") == ("", "plain")
    assert split_think("<think>never closed") == ("never closed", "")
