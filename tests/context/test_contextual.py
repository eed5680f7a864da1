"""The blurb prompt against the real packaged chat server: sized in the model's tokens."""

from __future__ import annotations

import random

import pytest

from tests.conftest import SettingsFactory
from varagity.context.contextual import DocumentContextualizer, fit_document, utf8_bytes
from varagity.models.chat import ChatClient
from varagity.tokens import count_tokens, truncate_tokens


def _numbers_document(n_bytes: int) -> str:
    """A table of counter readings, as an instrument exports them: mostly digits."""
    rng = random.Random(12)
    lines = ["counter readings"]
    while sum(len(line) + 1 for line in lines) < n_bytes:
        lines.append(" ".join(str(rng.randrange(10**11, 10**12)) for _ in range(6)))
    return "\n".join(lines)


def test_a_numbers_file_fits_the_chat_models_window(
    make_settings: SettingsFactory, model_urls: dict[str, str]
) -> None:
    """Issue 12 #4: a 21.6 kB file of numbers was sized in cl100k tokens and overflowed
    the context ("requested 9836 tokens")."""
    settings = make_settings(**model_urls)
    chat = ChatClient.from_settings(settings)
    document = _numbers_document(21_600)
    window = settings.LLM_CONTEXT_TOKENS
    chunk = document[-1500:]
    own = chat.count_tokens(document)
    assert own is not None  # the packaged server tokenizes with the model's vocabulary
    assert own > window
    # the premise: the cut sized in cl100k tokens (55% of the window) overflows it
    answer = settings.CONTEXT_MAX_TOKENS + 128
    cl100k_cut = truncate_tokens(document, int(window * 0.55) - count_tokens(chunk) - answer)
    assert (chat.count_tokens(cl100k_cut + chunk) or 0) + answer > window

    situate = DocumentContextualizer(
        chat,
        document,
        longest_chunk=chunk,
        context_tokens=window,
        max_tokens=settings.CONTEXT_MAX_TOKENS,
    )
    prompt = "".join(m["content"] for m in situate.messages(chunk))
    prompt_tokens = chat.count_tokens(prompt)
    assert prompt_tokens is not None
    assert prompt_tokens + settings.CONTEXT_MAX_TOKENS <= window
    assert prompt_tokens > window // 2  # truncated to fit, not to a sliver
    assert "[... document truncated ...]" in situate.preamble


@pytest.mark.parametrize("text", ["plain words " * 3000, "1234.5678," * 2000, "ünïcödé " * 2000])
def test_fit_document_without_a_tokenizer_keeps_within_utf8_bytes(text: str) -> None:
    fitted = fit_document(text, context_tokens=2048, reserve_tokens=512)
    assert utf8_bytes(fitted) <= int(2048 * 0.95) - 512
    assert fitted.endswith("[... document truncated ...]")
    assert text.startswith(fitted.removesuffix("\n[... document truncated ...]"))
