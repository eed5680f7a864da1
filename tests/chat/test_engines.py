"""Chat engines: the registry, the condense prompt and its cleanup, the real rewrite."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import get_args

import pytest

from tests.conftest import free_port
from varagity.chat.base import Turn
from varagity.chat.condense import CondenseContextEngine
from varagity.chat.prompts import clean_condensed, condense_messages, standalone_query
from varagity.chat.registry import CHAT_ENGINES, build_chat_engine
from varagity.config import ChatEngineName
from varagity.models.chat import ChatClient
from varagity.tokens import count_tokens

KETTLE = Turn(
    "What is the warranty of the Tern K2 kettle?",
    "The Tern K2 kettle has a warranty of 27 months [1].",
)
FOLLOW_UP = "How long does it last?"


class CannedModel:
    """A stand-in model server that always replies with one text, counting calls."""

    def __init__(self, reply: str) -> None:
        self.reply = reply
        self.calls = 0

    def complete(
        self,
        messages: Sequence[dict[str, str]],
        max_tokens: int | None = None,
        temperature: float | None = None,
    ) -> str:
        self.calls += 1
        return self.reply


def _dead_model() -> ChatClient:
    return ChatClient(
        base_url=f"http://127.0.0.1:{free_port()}/v1", model="gone", max_retries=0, timeout=5
    )


def test_registry_matches_the_setting_and_rejects_unknown_names() -> None:
    assert set(CHAT_ENGINES) == set(get_args(ChatEngineName))
    model = CannedModel("x")
    for name in CHAT_ENGINES:
        assert build_chat_engine(name, completer=model).name == name
    with pytest.raises(ValueError, match=r"Unknown chat engine 'magic'.*simple, condense_context"):
        build_chat_engine("magic", completer=model)


def test_simple_searches_verbatim_without_history() -> None:
    model = CannedModel("never used")
    prepared = build_chat_engine("simple", completer=model).prepare(FOLLOW_UP, [KETTLE])
    assert prepared.search_query == prepared.question == FOLLOW_UP
    assert prepared.condensed_query is None
    assert prepared.history == ()
    assert prepared.engine == "simple"
    assert model.calls == 0


def test_condense_prompt_shows_the_conversation_without_old_citations() -> None:
    messages = condense_messages(FOLLOW_UP, [KETTLE], max_history_tokens=500)
    last = messages[-1]["content"]
    assert messages[0]["role"] == "system"
    assert "User: What is the warranty of the Tern K2 kettle?" in last
    assert "Assistant: The Tern K2 kettle has a warranty of 27 months ." in last
    assert "[1]" not in last
    assert last.index("Assistant:") < last.index(f"Follow-up question: {FOLLOW_UP}")


def test_condense_prompt_drops_the_oldest_turns_first() -> None:
    old = Turn("Tell me about the ancient relic " + "blah " * 300, "It is old.")
    messages = condense_messages(FOLLOW_UP, [old, KETTLE], max_history_tokens=100)
    assert "ancient relic" not in messages[-1]["content"]
    assert "Tern K2" in messages[-1]["content"]


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("How long does the kettle last?", "How long does the kettle last?"),
        ("Standalone question: How long does the kettle last?", "How long does the kettle last?"),
        ('**Query:** "kettle warranty length"', "kettle warranty length"),
        ("<think>they mean the kettle</think>\n\nKettle warranty?", "Kettle warranty?"),
        ("\n\nKettle warranty?\nThis rewrite replaces 'it'.", "Kettle warranty?"),
        ("<think>never finished", ""),
        ("   ", ""),
    ],
)
def test_clean_condensed(reply: str, expected: str) -> None:
    assert clean_condensed(reply, max_tokens=64) == expected


def test_clean_condensed_caps_the_length() -> None:
    capped = clean_condensed("kettle " * 500, max_tokens=8)
    assert capped.startswith("kettle kettle")
    assert count_tokens(capped) <= 8


def test_first_turn_makes_no_model_call() -> None:
    model = CannedModel("should not be asked")
    prepared = CondenseContextEngine(model).prepare("What is the Tern K2?", [])
    assert model.calls == 0
    assert prepared.search_query == "What is the Tern K2?"
    assert prepared.condensed_query is None
    assert prepared.engine == "condense_context"
    assert "condense" not in prepared.timings_ms


def test_kill_switch_searches_verbatim_but_keeps_history(caplog: pytest.LogCaptureFixture) -> None:
    model = CannedModel("How long does the Tern K2 kettle last?")
    with caplog.at_level(logging.WARNING):
        prepared = CondenseContextEngine(model, enabled=False).prepare(FOLLOW_UP, [KETTLE])
    assert model.calls == 0
    assert prepared.search_query == FOLLOW_UP and prepared.condensed_query is None
    assert prepared.history == (KETTLE,)
    assert prepared.engine == "condense_context"
    assert "CONDENSE_ENABLED" in caplog.text


@pytest.mark.parametrize(
    ("referent", "expected"),
    [
        ("the Tern K2 kettle", "How long does it last? (the Tern K2 kettle)"),
        ("Tern K2 kettle.", "How long does it last? (Tern K2 kettle)"),
        ("the Orca 3 bike", None),  # the worked example, not this conversation
        ("The kettle has a warranty of 27 months and more words", None),  # a sentence
        ("it", None),  # not a name the conversation uses
        ("", None),
    ],
)
def test_standalone_query_takes_only_a_name_from_the_conversation(
    referent: str, expected: str | None
) -> None:
    assert standalone_query(FOLLOW_UP, referent, [KETTLE]) == expected


def test_standalone_query_leaves_a_question_that_already_names_it() -> None:
    question = "Does the Tern K2 kettle have a glass window?"
    assert standalone_query(question, "the Tern K2 kettle", [KETTLE]) is None


def test_a_named_referent_drives_retrieval() -> None:
    model = CannedModel("the Tern K2 kettle")
    prepared = CondenseContextEngine(model).prepare(FOLLOW_UP, [KETTLE])
    assert model.calls == 1
    assert (
        prepared.search_query
        == prepared.condensed_query
        == ("How long does it last? (the Tern K2 kettle)")
    )
    assert prepared.question == FOLLOW_UP and prepared.history == (KETTLE,)


@pytest.mark.parametrize("reply", ["<think>only reasoning</think>", "  \n ", FOLLOW_UP.upper()])
def test_unusable_or_echoed_rewrites_fall_back(reply: str) -> None:
    model = CannedModel(reply)
    prepared = CondenseContextEngine(model).prepare(FOLLOW_UP, [KETTLE])
    assert model.calls == 1
    assert prepared.search_query == FOLLOW_UP
    assert prepared.condensed_query is None
    assert "condense" in prepared.timings_ms


def test_unreachable_model_falls_back_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        prepared = CondenseContextEngine(_dead_model()).prepare(FOLLOW_UP, [KETTLE])
    assert prepared.search_query == FOLLOW_UP
    assert prepared.condensed_query is None
    assert prepared.engine == "condense_context"
    assert prepared.history == (KETTLE,)
    assert "condensing the follow-up failed" in caplog.text and "cannot connect" in caplog.text


@pytest.mark.integration
def test_the_local_model_rewrites_a_pronoun_follow_up(model_urls: dict[str, str]) -> None:
    model = ChatClient(base_url=model_urls["LLM_BASE_URL"], model="local", max_retries=0)
    try:
        engine = build_chat_engine("condense_context", completer=model, condense_max_tokens=48)
        prepared = engine.prepare(FOLLOW_UP, [KETTLE])
    finally:
        model.close()
    assert prepared.condensed_query, "the real model gave no usable rewrite"
    assert prepared.condensed_query.strip().lower() != FOLLOW_UP.lower()
    assert prepared.search_query == prepared.condensed_query
    assert prepared.question == FOLLOW_UP  # the answer prompt still gets the user's words
    assert prepared.timings_ms["condense"] > 0
