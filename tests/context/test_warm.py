"""Warming the server's prompt cache in steps, against the real packaged chat server: no
request before a document's first blurb makes the server evaluate more than a step."""

from __future__ import annotations

import pytest

from tests.conftest import SettingsFactory
from varagity.context.contextual import DocumentContextualizer, Interrupted
from varagity.models.chat import ChatClient

pytestmark = pytest.mark.integration

DOCUMENT = "\n\n".join(
    f"## Pier {n}\n\nPier {n} of the harbour takes ships of up to {n * 1000} tonnes; its "
    f"crane lifts {n * 4} containers an hour and the berth was dredged in {1990 + n}."
    for n in range(1, 31)
)


def test_the_document_is_warmed_in_steps_then_the_blurb_is_asked(
    make_settings: SettingsFactory, model_urls: dict[str, str]
) -> None:
    settings = make_settings(**model_urls)
    chat = ChatClient.from_settings(settings)
    chunk = DOCUMENT.split("\n\n")[5]
    situate = DocumentContextualizer(
        chat,
        DOCUMENT,
        longest_chunk=chunk,
        context_tokens=settings.LLM_CONTEXT_TOKENS,
        max_tokens=16,
    )
    step = 128
    cuts = situate.warm_cuts(step)
    total = chat.count_tokens(situate.preamble) or 0
    assert total > 3 * step and len(cuts) >= 3
    sizes = [chat.count_tokens(situate.preamble[:cut]) or 0 for cut in cuts]
    assert sizes == sorted(sizes)
    # each step adds about ``step`` new tokens (a cut lands at a word), never many more
    steps = [b - a for a, b in zip([0, *sizes], [*sizes, total], strict=True)]
    assert max(steps) <= step * 1.5, steps
    assert all(situate.preamble[cut] == " " for cut in cuts)  # cuts fall between words

    asked: list[int] = []

    def stop_after_two() -> bool:
        asked.append(1)
        return len(asked) > 2

    with pytest.raises(Interrupted):
        situate.warm(step_tokens=step, should_stop=stop_after_two)
    assert situate.warm(step_tokens=step) == len(cuts)
    assert situate.situate(chunk).strip()  # the blurb itself is asked as before
    # a document of one step or less is not warmed at all
    assert situate.warm(step_tokens=total + 1) == 0
