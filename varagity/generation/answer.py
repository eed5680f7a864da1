"""Grounded, cited answers: the evidence is numbered and the model cites it as [n].

The prompt asks for a citation after each claim, one fixed abstention phrase
(:data:`ABSTENTION`) when no source answers, and one or two sentences. Small models
cite rarely and not always the right source, so the turn runner attributes each
sentence to the passage that supports it (:mod:`varagity.generation.grounding`).
Decoding (``LLM_REPEAT_PENALTY`` etc.) and the repetition guard live in
the turn runner (:mod:`varagity.chat.turn`).

Measured with Qwen2.5-Coder-0.5B-Instruct Q4_K_M (temperature 0) on questions of
``eval_suites/sample`` plus unanswerable ones written for the check, hybrid top-5
evidence over the sample documents, on 2 heavily shared cores (60-400 s an answer, so
only subsets were run; the answer-eval suite measures the full picture):

* this prompt's wording with "say that you could not find it": 7/8 answered questions
  right, but only 1/8 cited (a wrong source);
* the abstention phrase as an order in the system prompt ("reply exactly: ..."), with
  sources first and the question last: it abstained on questions its sources answer
  (2 of 4) and still did not cite; two worked turns (a cited answer, an abstention)
  made that worse (2/3 false abstentions), so both were dropped;
* repeat penalty 1.1 (llama-cpp-python's own default) changed no answer against 1.0;
  frequency/presence penalties are available but off, since they penalise the
  recurring ``[n]`` tokens that citations need.

The 0.5B model's own markers stay rare, hence the attribution; loops are the
repetition guard's job, which stops them whatever the model or penalty.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Generator, Sequence

from varagity.models.protocols import Decoding, Streamer
from varagity.records import RetrievedChunk
from varagity.tokens import count_tokens, truncate_tokens

#: The fixed reply when the sources do not answer the question: one recognisable phrase,
#: so people, the web client and the answer scorer
#: (:func:`~varagity.generation.grounding.is_abstention`) can tell an abstention from an
#: answer.
ABSTENTION = "The documents do not say."

SYSTEM_PROMPT = (
    "You answer questions using only the numbered sources provided. After each claim, "
    "cite the source it comes from as [n], for example [1] or [2][3]. If the sources do "
    f'not contain the answer, say "{ABSTENTION}" Be concise.'
)
#: The prompt of quote-checked answers (``ANSWER_CITATIONS=quoted``): the citations are
#: the quotes' passages (:mod:`varagity.generation.quotes`), so the model is not asked for
#: markers, only to keep the passages' own words, which the check matches. Nor is it
#: told how to abstain: the check turns an answer with no quoted sentence into the
#: abstention. Measured with Qwen2.5-Coder-0.5B on the sample suite (39 questions, best
#: sentences within 400 tokens): with the abstention phrase it abstained on 4 of 31
#: answerable questions whose passages held the answer (6 of 31 when the phrase came
#: with "if the sources do not contain the answer"), without it on 3, each a wrong draft
#: the check dropped; the unanswerable ones abstained 6 of 8 times either way.
QUOTED_SYSTEM_PROMPT = (
    "You answer questions using only the numbered sources provided. Answer in the "
    "sources' own words, and copy names, numbers and dates exactly as written. Be concise."
)
HISTORY_NOTE = (
    " Earlier turns of the conversation come first; use them only to understand what the "
    "latest question refers to, and answer it from the sources."
)
#: Appended to an answer none of whose sentences a passage supports (the model wrote
#: it from elsewhere, or misread the passages): on the sample suite every such answer
#: of Qwen2.5-Coder-0.5B was wrong (docs/models.md).
UNSUPPORTED_NOTE = f"\n\n{ABSTENTION[:-1]} this: none of the passages supports the answer above."
NO_EVIDENCE_ANSWER = (
    f"{ABSTENTION} Nothing in the indexed documents matches this question: add relevant "
    "files to the corpus folder, or rephrase it."
)
_CITATION = re.compile(r"\[(\d{1,3})\]")
# Share of the context window earlier turns may take, and the cap on one old answer.
HISTORY_SHARE = 0.2
HISTORY_ANSWER_TOKENS = 200


def chunk_passages(chunks: Sequence[RetrievedChunk]) -> list[str]:
    """Document evidence as the prompt numbers it: each chunk's text."""
    return [c.record.content for c in chunks]


def day_passage(thread_name: str, span: str, excerpt: str) -> str:
    """A message-graph day card as the prompt numbers it: who talked, when, then the
    transcript lines (the model needs the thread and day to answer "with whom, when")."""
    return f"Messages in {thread_name or 'a conversation'} on {span}:\n{excerpt}"


def format_sources(passages: Sequence[str], *, max_tokens: int) -> str:
    """The numbered evidence block, within a token budget (each source gets its share)."""
    per_source = max(64, max_tokens // max(1, len(passages)))
    blocks = []
    for n, body in enumerate(passages, start=1):
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
    passages: Sequence[str],
    *,
    context_tokens: int,
    answer_tokens: int,
    history: Sequence[tuple[str, str]] = (),
    quoted: bool = False,
) -> list[dict[str, str]]:
    """System prompt, earlier turns (if any), then one user turn with sources + question.

    ``passages`` are the numbered evidence texts (:func:`chunk_passages`,
    :func:`day_passage`); passage ``n`` is cited as ``[n]``. ``quoted`` asks for the
    passages' own words instead of markers (:data:`QUOTED_SYSTEM_PROMPT`).

    ``history`` holds ``(question, answer)`` pairs, oldest first; they get at most
    ``HISTORY_SHARE`` of the context window and the sources what is left.
    """
    earlier = format_history(history, max_tokens=int(context_tokens * HISTORY_SHARE))
    history_tokens = sum(count_tokens(m["content"]) for m in earlier)
    fixed = count_tokens(question) + history_tokens
    budget = max(256, int(context_tokens * 0.6) - answer_tokens - fixed)
    sources = format_sources(passages, max_tokens=budget)
    # The question comes first and again last: measured with SmolLM2-135M, restating it
    # after long sources keeps small models on the question, and file-name headers on
    # sources were echoed back instead of answered from (see the module doc).
    ask = (
        "in one or two sentences:"
        if quoted
        else "in one or two sentences, citing sources like [1]:"
    )
    user = (
        f'Question: {question}\n\nSources:\n\n{sources}\n\nAnswer the question "{question}" {ask}'
    )
    system = (QUOTED_SYSTEM_PROMPT if quoted else SYSTEM_PROMPT) + (HISTORY_NOTE if earlier else "")
    return [{"role": "system", "content": system}, *earlier, {"role": "user", "content": user}]


def stream_answer(
    client: Streamer,
    question: str,
    passages: Sequence[str],
    *,
    context_tokens: int,
    answer_tokens: int,
    history: Sequence[tuple[str, str]] = (),
    decoding: Decoding | None = None,
    quoted: bool = False,
    on_prompt: Callable[[list[dict[str, str]]], None] | None = None,
) -> Generator[str, None, str | None]:
    """Token deltas of the grounded answer (a fixed reply when there is no evidence).

    ``history`` is the earlier ``(question, answer)`` turns the prompt shows the model;
    ``question`` is always the user's own words, never a search rewrite. ``on_prompt``,
    when given, is handed the messages just before they are sent (the turn runner's
    debug record; it is not called for the fixed reply, which asks no model). Returns
    the model's finish reason (``"stop"`` for the fixed reply).
    """
    if not passages:
        yield NO_EVIDENCE_ANSWER
        return "stop"
    messages = build_messages(
        question,
        passages,
        context_tokens=context_tokens,
        answer_tokens=answer_tokens,
        history=history,
        quoted=quoted,
    )
    if on_prompt is not None:
        on_prompt(messages)
    return (yield from client.stream(messages, max_tokens=answer_tokens, decoding=decoding))


def cited_numbers(answer: str, n_sources: int) -> list[int]:
    """Source numbers the answer cites, in first-seen order, ignoring out-of-range ones."""
    seen: list[int] = []
    for match in _CITATION.finditer(answer):
        n = int(match.group(1))
        if 1 <= n <= n_sources and n not in seen:
            seen.append(n)
    return seen
