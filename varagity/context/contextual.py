"""Situating context for chunks (Anthropic's Contextual Retrieval).

The model sees the whole document and one chunk and writes a short blurb placing the
chunk in the document; ``contextualized_content`` (the chunk's deterministic header,
then the blurb, then the chunk, see :func:`contextualized_text`) is what gets embedded
and BM25-indexed. The prompt is the one Anthropic published with
the technique. A document's chunks are sent one after another with an identical
document preamble, so a llama.cpp-style server reuses its prompt cache for it.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence

from varagity.models.clients import Completer
from varagity.tokens import count_tokens, truncate_tokens

log = logging.getLogger(__name__)

DOCUMENT_TEMPLATE = "<document>\n{document}\n</document>\n"
CHUNK_TEMPLATE = (
    "Here is the chunk we want to situate within the whole document\n"
    "<chunk>\n{chunk}\n</chunk>\n"
    "Please give a short succinct context to situate this chunk within the overall "
    "document for the purposes of improving search retrieval of the chunk. Answer only "
    "with the succinct context and nothing else."
)
# cl100k undercounts what small served models see (code, digits): keep this share
# of the model's window for the document.
_DOCUMENT_SHARE = 0.55
_THINK = re.compile(r"<think>.*?(</think>|$)", re.DOTALL)
# small models sometimes echo the prompt's markup back
_ECHOED_TAGS = re.compile(r"</?(chunk|document)>", re.IGNORECASE)


def fit_document(document: str, *, context_tokens: int, reserve_tokens: int) -> str:
    """The document prefix that fits the model window beside one chunk and the answer."""
    budget = max(64, int(context_tokens * _DOCUMENT_SHARE) - reserve_tokens)
    if count_tokens(document) <= budget:
        return document
    return truncate_tokens(document, budget) + "\n[... document truncated ...]"


def clean_context(raw: str) -> str:
    """Strip reasoning blocks, echoed labels and surrounding whitespace from a blurb."""
    text = _THINK.sub("", raw)
    text = _ECHOED_TAGS.sub("", text).strip()
    text = re.sub(r"^(context|situating context)\s*:\s*", "", text, flags=re.IGNORECASE)
    return text.strip()


def contextualize_chunks(
    client: Completer,
    document: str,
    chunks: Sequence[str],
    *,
    context_tokens: int,
    max_tokens: int,
) -> list[str]:
    """One situating blurb per chunk, in order (sequential: prompt-cache friendly)."""
    if not chunks:
        return []
    longest = max(count_tokens(c) for c in chunks)
    preamble = DOCUMENT_TEMPLATE.format(
        document=fit_document(
            document, context_tokens=context_tokens, reserve_tokens=longest + max_tokens + 128
        )
    )
    blurbs: list[str] = []
    for chunk in chunks:
        raw = client.complete(
            [{"role": "user", "content": preamble + CHUNK_TEMPLATE.format(chunk=chunk)}],
            max_tokens=max_tokens,
            temperature=0.0,
        )
        blurbs.append(clean_context(raw))
    return blurbs


def contextualized_text(header: str | None, context: str | None, content: str) -> str:
    """What gets embedded and indexed: the deterministic header, the LLM blurb, the chunk.

    Each present part is separated from the next by a blank line; a chunk with neither
    header nor blurb is indexed as it is.
    """
    return "\n\n".join(part for part in (header, context, content) if part)
