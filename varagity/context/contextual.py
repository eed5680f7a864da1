"""Situating context for chunks (Anthropic's Contextual Retrieval).

The model sees the whole document and one chunk and writes a short blurb placing the
chunk in the document; ``contextualized_content`` (the chunk's deterministic header,
then the blurb, then the chunk, see :func:`contextualized_text`) is what gets embedded
and BM25-indexed. The wording is the one Anthropic published with the technique.

Prompt layout, for the server's prompt cache: a llama.cpp-style server skips the
prompt evaluation of the longest prefix it has already seen, so every request is laid
out most-shared first. The instructions (identical for every chunk of every document)
are the system message; the user message is the document (identical for all chunks of
one document), then the chunk last. Only the chunk and a few tokens of markup around
it are new to the server from the second chunk of a document on; the instruction that
Anthropic's prompt puts after the chunk moved into the system message for the same
reason (it would otherwise be evaluated again with every chunk).

Warming in steps (:meth:`DocumentContextualizer.warm`): the first request of a
document still evaluates the whole document, and a server cannot interrupt a prompt
evaluation - a chat turn that wants the model meanwhile would wait for all of it. So
before a document's first blurb the preamble is sent in growing prefixes, each
evaluating at most :data:`WARM_STEP_TOKENS` new tokens (the cache keeps the rest) and
generating one token; between two of them the pass can give the model up. The sum of
evaluated tokens stays the same; each step adds an HTTP round trip, one generated
token and the server's cache bookkeeping (measured in docs/benchmarks.md).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable

from varagity.models.protocols import Completer

log = logging.getLogger(__name__)

SYSTEM_PROMPT = (
    "You will be given a document and then one chunk of it. Please give a short succinct "
    "context to situate the chunk within the overall document for the purposes of "
    "improving search retrieval of the chunk. Answer only with the succinct context and "
    "nothing else."
)
DOCUMENT_TEMPLATE = "<document>\n{document}\n</document>\n"
CHUNK_TEMPLATE = (
    "Here is the chunk we want to situate within the whole document\n<chunk>\n{chunk}\n</chunk>"
)
# The document and chunk are measured in the chat model's own tokens (or a bound that
# holds for it), so only a small margin of the window stays unplanned.
_WINDOW_SHARE = 0.95
# the system prompt, the markup and the chat template's own tokens
_PROMPT_OVERHEAD_TOKENS = 128
_THINK = re.compile(r"<think>.*?(</think>|$)", re.DOTALL)
# small models sometimes echo the prompt's markup back
_ECHOED_TAGS = re.compile(r"</?(chunk|document)>", re.IGNORECASE)


TokenCount = Callable[[str], int]
# streamed deltas between two ``should_stop`` questions while a blurb is written
_STOP_CHECK_EVERY = 4
#: Most new prompt tokens one warming request makes the server evaluate: the longest a
#: chat turn waits for blurb work (about 1.2 s of prompt evaluation for the 0.5B on two
#: cores). Measured against 256 (docs/benchmarks.md): the first token during blurbs went
#: from 1.30x to 0.97x the idle p50, a document's blurbs took as long (36 s against 37
#: s), and the server held 0.5 GB more after one document (more cached prompt states;
#: the cache's byte limit bounds both in the long run).
WARM_STEP_TOKENS = 128


class Interrupted(Exception):
    """A blurb was cut off before the model finished it: ``should_stop`` said so."""


def utf8_bytes(text: str) -> int:
    """A bound on any byte-level tokenizer's count (BPE, SentencePiece with byte
    fallback): no token covers less than one byte of UTF-8."""
    return len(text.encode("utf-8"))


def model_token_count(client: Completer) -> TokenCount:
    """How to measure prompt parts for ``client``'s model: the served model's own
    tokenizer when the server offers one (the packaged llama.cpp server does), else
    :func:`utf8_bytes`. cl100k is no bound here: SmolLM2 splits digits 2-3x finer."""
    count = getattr(client, "count_tokens", None)
    if count is None or count("probe") is None:
        log.info("the chat server has no tokenize endpoint: sizing blurb prompts by UTF-8 bytes")
        return utf8_bytes
    return lambda text: int(count(text) or 0)


def fit_document(
    document: str, *, context_tokens: int, reserve_tokens: int, count: TokenCount = utf8_bytes
) -> str:
    """The document prefix that fits the model window beside one chunk and the answer,
    measured by ``count`` (the chat model's tokens, or a bound on them)."""
    budget = max(64, int(context_tokens * _WINDOW_SHARE) - reserve_tokens)
    if count(document) <= budget:
        return document
    marker = "\n[... document truncated ...]"
    budget -= count(marker)
    # the longest prefix within budget, by bisection (no tokenizer averages 16
    # characters a token over a whole document)
    low, high = 0, min(len(document), 16 * budget)
    while low < high:
        mid = (low + high + 1) // 2
        if count(document[:mid]) <= budget:
            low = mid
        else:
            high = mid - 1
    return document[:low] + marker


def clean_context(raw: str) -> str:
    """Strip reasoning blocks, echoed labels and surrounding whitespace from a blurb."""
    text = _THINK.sub("", raw)
    text = _ECHOED_TAGS.sub("", text).strip()
    text = re.sub(r"^(context|situating context)\s*:\s*", "", text, flags=re.IGNORECASE)
    return text.strip()


class DocumentContextualizer:
    """Writes the blurbs of one document's chunks, every request sharing its preamble.

    The document is fitted to the model window once, for the longest chunk it will be
    asked about, so the preamble is byte-identical for every chunk (the prompt cache
    only reuses an exact prefix). Call :meth:`situate` for the chunks one after another:
    sequential requests are what let the server reuse the document's evaluation.
    """

    def __init__(
        self,
        client: Completer,
        document: str,
        *,
        longest_chunk: str,
        context_tokens: int,
        max_tokens: int,
    ) -> None:
        """Fit the document once.

        Args:
            client: The chat model.
            document: The document's full text.
            longest_chunk: The longest chunk that will be situated.
            context_tokens: The model's window.
            max_tokens: Cap on one blurb's length.
        """
        self.client = client
        self.max_tokens = max_tokens
        self.count = count = model_token_count(client)
        reserve = count(longest_chunk) + max_tokens + _PROMPT_OVERHEAD_TOKENS
        fitted = fit_document(
            document, context_tokens=context_tokens, reserve_tokens=reserve, count=count
        )
        self.preamble = DOCUMENT_TEMPLATE.format(document=fitted)

    def messages(self, chunk: str) -> list[dict[str, str]]:
        """The request for one chunk: instructions, document, then the chunk last."""
        return [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": self.preamble + CHUNK_TEMPLATE.format(chunk=chunk)},
        ]

    def warm_cuts(self, step_tokens: int = WARM_STEP_TOKENS) -> list[int]:
        """Where :meth:`warm` cuts the preamble: growing prefix lengths (characters),
        each about ``step_tokens`` tokens past the one before, ending at a word; empty
        when the whole preamble is one step or less."""
        total = self.count(self.preamble)
        if total <= step_tokens:
            return []
        step_chars = max(1, len(self.preamble) * step_tokens // total)
        cuts: list[int] = []
        at = step_chars
        while at < len(self.preamble) - step_chars // 4:
            # end on a word followed by a space: the prefix then tokenizes as the
            # whole does up to there (a cut mid-word would not match the cache)
            space = self.preamble.rfind(" ", cuts[-1] if cuts else 0, at + 1)
            cut = space if space > (cuts[-1] if cuts else 0) else at
            cuts.append(cut)
            at = cut + step_chars
        return cuts

    def warm(
        self,
        *,
        step_tokens: int = WARM_STEP_TOKENS,
        should_stop: Callable[[], bool] | None = None,
    ) -> int:
        """Load the document into the server's prompt cache in steps of about
        ``step_tokens`` tokens (see the module doc); returns the requests sent.

        ``should_stop`` is asked before each step; when it says so,
        :class:`Interrupted` is raised (the steps done stay in the server's cache).
        """
        cuts = self.warm_cuts(step_tokens)
        for sent, cut in enumerate(cuts):
            if should_stop is not None and should_stop():
                raise Interrupted(f"stopped after {sent} of {len(cuts)} warming steps")
            messages = [
                {"role": "system", "content": SYSTEM_PROMPT},
                {"role": "user", "content": self.preamble[:cut]},
            ]
            self.client.complete(messages, max_tokens=1, temperature=0.0)
        return len(cuts)

    def situate(self, chunk: str, *, should_stop: Callable[[], bool] | None = None) -> str:
        """The cleaned blurb for one chunk ("" when the model wrote nothing usable).

        With ``should_stop`` and a client that streams, the reply is streamed and
        ``should_stop`` asked every few tokens; when it says so the stream is closed
        (the server stops generating) and :class:`Interrupted` is raised, so a blurb
        under way gives its cores up within moments instead of running to its end.
        """
        messages = self.messages(chunk)
        stream = getattr(self.client, "stream", None)
        if should_stop is None or stream is None:
            raw = self.client.complete(messages, max_tokens=self.max_tokens, temperature=0.0)
            return clean_context(raw)
        parts: list[str] = []
        deltas = stream(messages, max_tokens=self.max_tokens, temperature=0.0)
        try:
            for delta in deltas:
                parts.append(delta)
                if len(parts) % _STOP_CHECK_EVERY == 0 and should_stop():
                    raise Interrupted(f"stopped after {len(parts)} streamed pieces")
        finally:
            deltas.close()
        return clean_context("".join(parts))


def contextualized_text(header: str | None, context: str | None, content: str) -> str:
    """What gets embedded and indexed: the deterministic header, the LLM blurb, the chunk.

    Each present part is separated from the next by a blank line; a chunk with neither
    header nor blurb is indexed as it is.
    """
    return "\n\n".join(part for part in (header, context, content) if part)
