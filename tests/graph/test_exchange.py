"""Graph answers quoted from the chats (:mod:`varagity.graph.exchange`), ranked with the
packaged embedding server."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from varagity.config import load_settings
from varagity.graph.exchange import day_passages, with_exchange
from varagity.graph.types import ComputedAnswer, DayCard, GraphRetrieval
from varagity.models.embeddings import EmbeddingClient

_PRAGUE = DayCard(
    "wolfgang:2026-05-12",
    "Wolfgang Schulz",
    "2026-05-12",
    "[18:00] Li Hua: How was the trip? Did you see the castle?\n"
    "[18:01] Wolfgang Schulz: Loved it! The local dish I tried in Prague was goulash, so hearty.\n"
    "[18:02] Li Hua: That sounds delicious, I have to try it too.\n"
    "[18:05] Wolfgang Schulz: Next time we go together!",
)
_RENT = DayCard(
    "adam:2026-06-02",
    "Adam Smith",
    "2026-06-02",
    "[10:00] Li Hua: Hi Adam, the rent for last month is transferred.\n"
    "[10:01] Adam Smith: Thanks, got it. Have a nice day!",
)


@pytest.fixture(scope="module")
def embedder(model_urls: dict[str, str]) -> Iterator[EmbeddingClient]:
    client = EmbeddingClient.from_settings(load_settings(**model_urls))
    yield client
    client.close()


def test_the_message_that_answers_is_quoted_with_its_reply(embedder: EmbeddingClient) -> None:
    found = GraphRetrieval(days=(_RENT, _PRAGUE))

    answered = with_exchange(found, "What local dish did Wolfgang try in Prague?", embedder, 1.1)

    computed = answered.computed
    assert computed is not None
    assert computed.text.startswith("Wolfgang Schulz and Li Hua wrote on Tuesday 2026-05-12 [2]:")
    said = "[18:01] Wolfgang Schulz: \u201cLoved it! The local dish I tried in Prague was goulash"
    assert said in computed.text
    assert "[18:02] Li Hua: \u201cThat sounds delicious" in computed.text
    assert "[18:05]" not in computed.text and "castle" not in computed.text
    (source, lines), *more = computed.quoted
    assert not more and source == 2
    assert lines.splitlines() == _PRAGUE.excerpt.splitlines()[1:3]
    assert answered.days == found.days  # the evidence is unchanged


def test_a_question_no_message_answers_is_left_to_the_model(embedder: EmbeddingClient) -> None:
    found = GraphRetrieval(days=(_RENT, _PRAGUE))
    question = "What colour is the bicycle Jennifer bought for her niece?"

    assert with_exchange(found, question, embedder, 1.1).computed is None
    # the same question with no floor gets its best exchange: the floor decided
    assert with_exchange(found, question, embedder, 0.0).computed is not None


def test_a_computed_answer_is_kept(embedder: EmbeddingClient) -> None:
    computed = ComputedAnswer("Yes. The first was written on ... [1].", ())
    found = GraphRetrieval(days=(_PRAGUE,), computed=computed)

    kept = with_exchange(found, "What local dish did Wolfgang try in Prague?", embedder, 0.0)

    assert kept.computed is computed


def test_day_passages_write_the_weekday_and_the_days_named() -> None:
    card = DayCard("k", "Adam Smith", "2026-03-08", "[13:00] Adam Smith: Power is out today.")

    (annotated,) = day_passages([card])
    (written,) = day_passages([card], annotated=False)

    assert annotated.startswith("Messages in Adam Smith on Sunday 2026-03-08:\n")
    assert "today (Sunday 2026-03-08)" in annotated
    assert written.endswith("[13:00] Adam Smith: Power is out today.")


def test_a_reply_that_asks_back_brings_its_answer(embedder: EmbeddingClient) -> None:
    card = DayCard(
        "wolfgang:2026-09-23",
        "Wolfgang Schulz",
        "2026-09-23",
        "[16:00] Wolfgang Schulz: Wanna go to the grocery store after work today?\n"
        "[16:01] Li Hua: Sounds great! What time are you thinking?\n"
        "[16:02] Wolfgang Schulz: Around 5:30, right after my shift.\n"
        "[16:03] Li Hua: Perfect, see you there.",
    )
    question = "When does Wolfgang want to go to the grocery store?"

    computed = with_exchange(GraphRetrieval(days=(card,)), question, embedder, 0.0).computed

    assert computed is not None
    (_, lines), *_ = computed.quoted  # as the model would be shown them: days written in
    assert lines.splitlines() == day_passages([card])[0].splitlines()[1:4]
    assert "Around 5:30" in computed.text and "see you there" not in computed.text
