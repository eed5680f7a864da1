"""Prompts of the ``condense_context`` engine, the cleanup of its replies, and the query.

The model is asked what the follow-up is about (a name, not a rewrite);
:func:`standalone_query` accepts that name only when the conversation says it and the
question does not, and appends it to the question.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from varagity.generation.answer import format_history
from varagity.generation.think import split_think
from varagity.tokens import count_tokens, truncate_tokens

CONDENSE_SYSTEM = (
    "You read a conversation and a follow-up question. Name the thing the follow-up "
    "question is about, as the conversation calls it. Reply with that name only, in a "
    "few words."
)

# The model names what the follow-up is about; the engine appends that name to the
# question (see varagity/chat/condense.py). Measured with Qwen2.5-Coder-0.5B on seven
# pronoun follow-ups over three conversations: asked to rewrite the whole question it
# echoed 7 of 7 back unchanged (with or without a worked example, with a stricter
# suffix 6 of 7); asked to name the referent with this worked example it named the
# right one 4 of 7 times, and its 3 misses (the example's "Orca 3 bike", a sentence)
# are caught because they do not come from the conversation. SmolLM2-135M answered
# the question instead in every case, which the same check also catches.
_EXAMPLE = (
    ("Who makes the Orca 3 bike?", "The Orca 3 is made by Velotec."),
    "How much does it weigh?",
    "the Orca 3 bike",
)

# A label the model may echo before the query ("Standalone question: ...").
_LABEL = re.compile(
    r"^\s*(?:\*\*)?(?:rewritten|standalone|search)?\s*(?:question|query)(?:\*\*)?\s*:\s*(?:\*\*)?",
    re.IGNORECASE,
)
_QUOTES = "\"'`“”‘’"


def condense_messages(
    question: str, history: Sequence[tuple[str, str]], *, max_history_tokens: int
) -> list[dict[str, str]]:
    """The referent request: a worked example, then the conversation and its follow-up."""
    (example_turn, example_follow_up, example_rewrite) = _EXAMPLE
    return [
        {"role": "system", "content": CONDENSE_SYSTEM},
        {"role": "user", "content": _request([example_turn], example_follow_up, 1000)},
        {"role": "assistant", "content": example_rewrite},
        {"role": "user", "content": _request(history, question, max_history_tokens)},
    ]


def _request(history: Sequence[tuple[str, str]], question: str, max_tokens: int) -> str:
    lines = []
    for message in format_history(history, max_tokens=max_tokens):
        speaker = "User" if message["role"] == "user" else "Assistant"
        lines.append(f"{speaker}: {message['content']}")
    transcript = "\n".join(lines)
    return f"Conversation:\n{transcript}\n\nFollow-up question: {question}"


def clean_condensed(reply: str, max_tokens: int) -> str:
    """The name in a referent reply ("" when nothing usable remains).

    Drops ``<think>`` reasoning, keeps the first non-blank line, strips an echoed
    label and surrounding quotes, and caps the length at ``max_tokens``.
    """
    _, answer = split_think(reply)
    line = next((ln for ln in answer.splitlines() if ln.strip()), "")
    line = _LABEL.sub("", line, count=1)
    line = " ".join(line.split()).strip(_QUOTES).strip()
    if count_tokens(line) > max_tokens:
        line = truncate_tokens(line, max_tokens).strip()
    return line


#: Most words a referent may have: a name, not a sentence.
REFERENT_MAX_WORDS = 8
_WORD = re.compile(r"\w+")
_ARTICLES = frozenset({"the", "a", "an"})


def _words(text: str) -> set[str]:
    return {w.casefold() for w in _WORD.findall(text)} - _ARTICLES


def standalone_query(
    question: str, referent: str, history: Sequence[tuple[str, str]]
) -> str | None:
    """The question with the thing it is about appended, or None to search it as asked.

    ``referent`` is refused when it is empty or longer than :data:`REFERENT_MAX_WORDS`
    words, when any of its words is absent from the conversation (a small model may
    name its worked example, or answer instead), or when the question already holds all
    of its words (the question stands alone).
    """
    words = _words(referent)
    if not words or len(_WORD.findall(referent)) > REFERENT_MAX_WORDS:
        return None
    said = set().union(*(_words(f"{q} {a}") for q, a in history)) if history else set()
    if not words <= said or words <= _words(question):
        return None
    return f"{question.strip()} ({referent.strip().rstrip('.')})"
