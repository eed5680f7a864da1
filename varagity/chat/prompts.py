"""Prompts of the ``condense_context`` engine and the cleanup of its replies."""

from __future__ import annotations

import re
from collections.abc import Sequence

from varagity.generation.answer import format_history
from varagity.generation.think import split_think
from varagity.tokens import count_tokens, truncate_tokens

CONDENSE_SYSTEM = (
    "You rewrite the last question of a conversation as one standalone search query. "
    "Replace words like 'it', 'they', 'that' or 'there' with what they refer to in the "
    "conversation. Reply with the rewritten question only, on one line."
)

# One worked example before the real request: measured with SmolLM2-135M, the bare
# instruction made it answer the question instead of rewriting it ("The kettle has a
# warranty of 27 months."); with this example it rewrote "How long does it last?" into
# "How long does the Tern K2 kettle last?".
_EXAMPLE = (
    ("Who makes the Orca 3 bike?", "The Orca 3 is made by Velotec."),
    "How much does it weigh?",
    "How much does the Orca 3 bike weigh?",
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
    """The rewrite request: a worked example, then the conversation and its follow-up."""
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
    return f"Conversation:\n{transcript}\n\nFollow-up question: {question}\n\nStandalone question:"


def clean_condensed(reply: str, max_tokens: int) -> str:
    """The search query in a rewrite reply ("" when nothing usable remains).

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
