"""Grounded, cited answers: the evidence is numbered and the model cites it as [n]."""

from __future__ import annotations

import re
from collections.abc import Generator, Sequence
from typing import Protocol

from varagity.models.clients import Decoding
from varagity.records import RetrievedChunk
from varagity.tokens import count_tokens, truncate_tokens

SYSTEM_PROMPT = (
    "You answer questions using only the numbered sources provided. After each claim, "
    "cite the source it comes from as [n], for example [1] or [2][3]. If the sources do "
    "not contain the answer, say that you could not find it in the documents. Be concise."
)
HISTORY_NOTE = (
    " Earlier turns of the conversation come first; use them only to understand what the "
    "latest question refers to, and answer it from the sources."
)
NO_EVIDENCE_ANSWER = (
    "I could not find anything about this in the indexed documents. Add relevant files to "
    "the corpus folder, or rephrase the question."
)
_CITATION = re.compile(r"\[(\d{1,3})\]")
# Share of the context window earlier turns may take, and the cap on one old answer.
HISTORY_SHARE = 0.2
HISTORY_ANSWER_TOKENS = 200


class Streamer(Protocol):
    """The slice of the chat client generation needs (:class:`ChatClient` has it)."""

    def stream(
        self,
        messages: list[dict[str, str]],
        max_tokens: int | None = None,
        temperature: float | None = None,
        *,
        decoding: Decoding | None = None,
    ) -> Generator[str, None, str | None]:
        """Token deltas of one chat completion; returns the server's finish reason."""
        ...


def format_sources(chunks: Sequence[RetrievedChunk], *, max_tokens: int) -> str:
    """The numbered evidence block, within a token budget (later sources trimmed first)."""
    per_source = max(64, max_tokens // max(1, len(chunks)))
    blocks = []
    for n, chunk in enumerate(chunks, start=1):
        rec = chunk.record
        body = rec.content
        if count_tokens(body) > per_source:
            body = truncate_tokens(body, per_source) + " ..."
        blocks.append(f"[{n}] {body}")
    return "\n\n".join(blocks)


def format_history(history: Sequence[tuple[str, str]], *, max_tokens: int) -> list[dict[str, str]]:
    """Earlier ``(question, answer)`` turns as chat messages, newest kept first.

    Old answers lose their ``[n]`` citations (they numbered other sources) and are
    capped at ``HISTORY_ANSWER_TOKENS``; turns that no longer fit ``max_tokens`` are
    dropped, oldest first.
    """
    kept: list[dict[str, str]] = []
    used = 0
    for question, answer in reversed(history):
        reply = " ".join(_CITATION.sub("", answer).split())
        if count_tokens(reply) > HISTORY_ANSWER_TOKENS:
            reply = truncate_tokens(reply, HISTORY_ANSWER_TOKENS) + " ..."
        cost = count_tokens(question) + count_tokens(reply)
        if used + cost > max_tokens:
            break
        used += cost
        kept[:0] = [{"role": "user", "content": question}, {"role": "assistant", "content": reply}]
    return kept


def build_messages(
    question: str,
    chunks: Sequence[RetrievedChunk],
    *,
    context_tokens: int,
    answer_tokens: int,
    history: Sequence[tuple[str, str]] = (),
) -> list[dict[str, str]]:
    """System prompt, earlier turns (if any), then one user turn with sources + question.

    ``history`` holds ``(question, answer)`` pairs, oldest first; they get at most
    ``HISTORY_SHARE`` of the context window and the sources what is left.
    """
    earlier = format_history(history, max_tokens=int(context_tokens * HISTORY_SHARE))
    history_tokens = sum(count_tokens(m["content"]) for m in earlier)
    budget = max(
        256, int(context_tokens * 0.6) - answer_tokens - count_tokens(question) - history_tokens
    )
    sources = format_sources(chunks, max_tokens=budget)
    # The question comes first and again last: measured with SmolLM2-135M on the sample
    # corpus, restating it after long sources keeps small models on the question, and
    # file-name headers on sources were echoed back instead of answered from.
    user = (
        f"Question: {question}\n\nSources:\n\n{sources}\n\n"
        f'Answer the question "{question}" in one or two sentences, citing sources like [1]:'
    )
    system = SYSTEM_PROMPT + (HISTORY_NOTE if earlier else "")
    return [{"role": "system", "content": system}, *earlier, {"role": "user", "content": user}]


def stream_answer(
    client: Streamer,
    question: str,
    chunks: Sequence[RetrievedChunk],
    *,
    context_tokens: int,
    answer_tokens: int,
    history: Sequence[tuple[str, str]] = (),
    decoding: Decoding | None = None,
) -> Generator[str, None, str | None]:
    """Token deltas of the grounded answer (a fixed reply when there is no evidence).

    ``history`` is the earlier ``(question, answer)`` turns the prompt shows the model;
    ``question`` is always the user's own words, never a search rewrite. Returns the
    model's finish reason (``"stop"`` for the fixed reply).
    """
    if not chunks:
        yield NO_EVIDENCE_ANSWER
        return "stop"
    messages = build_messages(
        question,
        chunks,
        context_tokens=context_tokens,
        answer_tokens=answer_tokens,
        history=history,
    )
    return (yield from client.stream(messages, max_tokens=answer_tokens, decoding=decoding))


def cited_numbers(answer: str, n_sources: int) -> list[int]:
    """Source numbers the answer cites, in first-seen order, ignoring out-of-range ones."""
    seen: list[int] = []
    for match in _CITATION.finditer(answer):
        n = int(match.group(1))
        if 1 <= n <= n_sources and n not in seen:
            seen.append(n)
    return seen
