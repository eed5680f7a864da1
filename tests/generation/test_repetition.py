"""The degenerate-loop detector: loops are found and trimmed, real answers pass."""

from __future__ import annotations

import re

import pytest

from varagity.generation.repetition import RepetitionGuard, find_loop

SENTENCE = "The Kestrel is a FastAPI application that serves the corpus."
HEAD = "The Tern K2 kettle has a warranty of 27 months [1]."


def _deltas(text: str) -> list[str]:
    """Split like a model stream: a few characters at a time, words cut mid-way."""
    return [text[i : i + 3] for i in range(0, len(text), 3)]


def test_a_repeated_sentence_is_a_loop_trimmed_to_its_first_copy() -> None:
    text = HEAD + " " + " ".join([SENTENCE] * 5)
    loop = find_loop(text)
    assert loop is not None
    assert text[: loop.keep] == f"{HEAD} {SENTENCE}"
    assert text[loop.start :].startswith(SENTENCE)
    assert loop.start == len(HEAD) + len(SENTENCE) + 2
    assert loop.repeated.startswith("the kestrel is a fastapi")


def test_the_stream_guard_stops_on_the_third_copy() -> None:
    stream = _deltas(HEAD + " " + " ".join([SENTENCE] * 40))
    guard = RepetitionGuard()
    fed = 0
    for delta in stream:
        fed += 1
        if guard.feed(delta):
            break
    assert guard.loop is not None
    assert fed < len(stream) / 10  # it stopped long before the stream ran out
    assert guard.loop.detected_at <= len(HEAD) + 3 * (len(SENTENCE) + 1)
    assert guard.trimmed() == f"{HEAD} {SENTENCE}"
    assert guard.feed("more") is guard.loop and guard.trimmed() == f"{HEAD} {SENTENCE}"


def test_a_short_stutter_and_an_interleaved_sentence_are_loops() -> None:
    stutter = "The answer is " + "very " * 30
    loop = find_loop(stutter)
    assert loop is not None and stutter[: loop.keep] == "The answer is very"
    interleaved = " ".join(
        f"{SENTENCE} Point {word} matters." for word in ("one", "two", "three", "four")
    )
    found = find_loop(interleaved)
    assert found is not None
    assert interleaved[: found.keep] == f"{SENTENCE} Point one matters."


def test_the_streamed_and_complete_answers_agree() -> None:
    text = HEAD + " " + " ".join([SENTENCE] * 4) + " trailing"
    guard = RepetitionGuard()
    for delta in _deltas(text):
        guard.feed(delta)
    assert guard.finish() == find_loop(text)


@pytest.mark.parametrize(
    "answer",
    [
        # repeated citations of one source
        "The kettle holds 1.7 litres [1]. It boils in 3 minutes [1]. The warranty is 27 "
        "months [1][2]. Repairs are free during the warranty [1]. Parts ship in 5 days [1].",
        # a list whose items share a template
        "\n".join(
            f"- The Tern {m} kettle has a warranty of {w} months [{i}]."
            for i, (m, w) in enumerate(
                [("K1", 12), ("K2", 27), ("K3", 24), ("K4", 36), ("K5", 18)], start=1
            )
        ),
        # a Markdown table
        "| Model | Warranty | Capacity | Colour |\n|---|---|---|---|\n"
        + "\n".join(
            f"| Tern K{i} | {12 + i} months | {1 + i / 10:.1f} l | {c} |"
            for i, c in enumerate(["red", "blue", "grey", "black", "white", "green"], start=1)
        ),
        # the fixed abstention, twice (two unanswerable parts of one question)
        "The documents do not say. The documents do not say.",
        # numbered steps with a repeated instruction word
        "1. Fill the kettle [1].\n2. Close the lid [1].\n3. Press the switch [1].\n"
        "4. Wait for the click [1].\n5. Pour the water [1].",
    ],
)
def test_legitimate_answers_are_not_loops(answer: str) -> None:
    assert find_loop(answer) is None
    guard = RepetitionGuard()
    for delta in _deltas(answer):
        assert guard.feed(delta) is None
    assert guard.finish() is None and guard.trimmed() == answer


def test_a_token_cut_across_deltas_is_read_whole() -> None:
    guard = RepetitionGuard(ngram=2, occurrences=2)
    for delta in ("abc de", "f abc ", "xyz"):
        guard.feed(delta)
    assert guard.loop is None  # "abc def" and "abc xyz" differ; "de" + "f" is one word
    guard.feed(" abc def")
    assert guard.finish() is not None
    assert re.sub(r"\s+", " ", guard.trimmed()) == "abc def abc xyz"


def test_bad_thresholds_are_refused() -> None:
    with pytest.raises(ValueError, match="must be >= 2"):
        RepetitionGuard(ngram=1)


@pytest.mark.integration
def test_a_real_stream_stopped_mid_answer_frees_the_server(model_urls: dict[str, str]) -> None:
    """What the guard does on a loop (close the stream) stops the real server's answer."""
    from varagity.models.chat import ChatClient
    from varagity.models.protocols import Decoding

    client = ChatClient(
        base_url=model_urls["LLM_BASE_URL"], model="smollm2", max_retries=0, timeout=120
    )
    guard = RepetitionGuard()
    stream = client.stream(
        [{"role": "user", "content": "Describe a kettle in great detail."}],
        max_tokens=256,
        decoding=Decoding(repeat_penalty=1.1),
    )
    received = 0
    for delta in stream:
        received += 1
        guard.feed(delta)
        if received == 5:
            break
    stream.close()
    assert received == 5 and guard.text.strip()
    reply = client.complete([{"role": "user", "content": "Say hello."}], max_tokens=8)
    assert reply.strip()  # the server went on to the next request
    client.close()
