"""Grounded answer prompts and citation parsing."""

from __future__ import annotations

from varagity.generation.answer import (
    ABSTENTION,
    NO_EVIDENCE_ANSWER,
    build_messages,
    cited_numbers,
    format_history,
    stream_answer,
)
from varagity.generation.grounding import is_abstention


def test_sources_are_numbered_in_rank_order() -> None:
    msgs = build_messages(
        "How long?",
        ["27 months", "14 days"],
        context_tokens=8192,
        answer_tokens=256,
    )
    user = msgs[-1]["content"]
    assert user.startswith("Question: How long?\n\nSources:\n\n[1] 27 months")
    assert user.index("[1] 27 months") < user.index("[2] 14 days")
    assert user.rstrip().endswith('"How long?" in one or two sentences, citing sources like [1]:')
    system = msgs[0]["content"]
    assert "[n]" in system and f'say "{ABSTENTION}"' in system


def test_long_sources_are_trimmed_to_the_budget() -> None:
    long = "word " * 5000
    msgs = build_messages("q", [long], context_tokens=2048, answer_tokens=256)
    assert len(msgs[-1]["content"]) < len(long) / 2


def test_cited_numbers() -> None:
    assert cited_numbers("A [2] and [1][2], not [7] or [0].", 3) == [2, 1]
    assert cited_numbers("no citations", 3) == []


def test_abstention_is_one_recognisable_phrase() -> None:
    assert is_abstention(ABSTENTION) and is_abstention(NO_EVIDENCE_ANSWER)
    assert is_abstention("Sorry: the  documents do not say [1].")
    assert not is_abstention("The warranty is 27 months [1].")


def test_no_evidence_needs_no_model() -> None:
    class Boom:
        def stream(self, *a: object, **k: object):  # pragma: no cover - must not be called
            raise AssertionError("model called without evidence")

    out = "".join(stream_answer(Boom(), "q", [], context_tokens=8192, answer_tokens=64))
    assert out == NO_EVIDENCE_ANSWER


def test_history_comes_before_the_question_without_old_citations() -> None:
    history = [("Kettle warranty?", "It is 27 months [1][2]."), ("Who makes it?", "Tern [1].")]
    msgs = build_messages(
        "Where is it made?",
        ["Made in Porto"],
        context_tokens=8192,
        answer_tokens=256,
        history=history,
    )
    assert [m["role"] for m in msgs] == ["system", "user", "assistant", "user", "assistant", "user"]
    assert msgs[1]["content"] == "Kettle warranty?"
    assert msgs[2]["content"] == "It is 27 months ."
    assert msgs[4]["content"] == "Tern ."
    assert msgs[-1]["content"].startswith("Question: Where is it made?")  # the user's own words
    assert "Earlier turns" in msgs[0]["content"]
    plain = build_messages("q", ["x"], context_tokens=8192, answer_tokens=256)
    assert "Earlier turns" not in plain[0]["content"] and len(plain) == 2


def test_history_keeps_the_newest_turns_within_its_budget() -> None:
    old = ("Tell me everything about the ancient relic", "word " * 400)
    new = ("Who makes it?", "Tern.")
    turns = format_history([old, new], max_tokens=150)
    assert [m["content"] for m in turns] == ["Who makes it?", "Tern."]
    capped = format_history([old], max_tokens=10_000)
    assert capped[1]["content"].endswith(" ...")
    assert len(capped[1]["content"].split()) < 300
    assert format_history([old, new], max_tokens=1) == []


def test_stream_answer_sends_history_to_the_model() -> None:
    class Recorder:
        def __init__(self) -> None:
            self.messages: list[dict[str, str]] = []

        def stream(self, messages, max_tokens=None, temperature=None, *, decoding=None):
            self.messages = messages
            yield "ok"

    recorder = Recorder()
    out = "".join(
        stream_answer(
            recorder,
            "Who makes it?",
            ["Tern"],
            context_tokens=8192,
            answer_tokens=64,
            history=[("Kettle warranty?", "27 months.")],
        )
    )
    assert out == "ok"
    assert [m["content"] for m in recorder.messages[1:3]] == ["Kettle warranty?", "27 months."]
