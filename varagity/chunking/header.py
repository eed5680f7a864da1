"""The deterministic contextual header of a chunk: where it sits, at no model cost.

Anthropic's contextual retrieval prepends an LLM-written blurb to each chunk before
embedding and indexing it. Much of what such a blurb says is known without a model:
the file the chunk comes from, the Markdown headings above it, the class and function
around it. :func:`chunk_header` writes that as a few short labelled lines, which
:func:`~varagity.context.contextual.contextualized_text` puts before the blurb and the
chunk in the text BM25 indexes. The embedding leaves it out: the model reads a bounded
window (MiniLM: 256 word pieces) that a chunk already fills, so header words would push
the chunk's tail out (measured: -6 Pass@5 for the dense arm, +2 for BM25).
"""

from __future__ import annotations


def chunk_header(
    relative_path: str | None, heading_path: str | None = None, symbol_path: str | None = None
) -> str | None:
    """``File: a/b.rs`` / ``Section: A > B`` / ``In: impl X > fn y`` lines, or None.

    Args:
        relative_path: The document's corpus-relative path.
        heading_path: The Markdown breadcrumb of the chunk's section.
        symbol_path: The code definitions enclosing the chunk.

    Returns:
        The header lines joined with newlines; None when there is nothing to say.
    """
    lines = []
    if relative_path:
        lines.append(f"File: {relative_path}")
    if heading_path:
        lines.append(f"Section: {heading_path}")
    if symbol_path:
        lines.append(f"In: {symbol_path}")
    return "\n".join(lines) or None
