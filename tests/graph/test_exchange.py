"""Graph answers quoted from the chats (:mod:`varagity.graph.exchange`), ranked with the
packaged embedding server and read by the packaged graph reader (GRAPH_READER_LLM)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from varagity.config import load_settings
from varagity.generation.grounding import is_abstention
from varagity.generation.quotes import EXTRACT_LEAD
from varagity.graph.day_rank import named_cards
from varagity.graph.exchange import (
    MAX_SCORE,
    Exchange,
    absent_people,
    best_exchange,
    card_writers,
    day_passages,
    read_exchange,
    with_exchange,
)
from varagity.graph.types import ComputedAnswer, DayCard, GraphRetrieval
from varagity.models.chat import ChatClient
from varagity.models.embeddings import EmbeddingClient
from varagity_stack.model_servers import free_port

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
_KARAOKE = DayCard(
    "chae:2026-04-21",
    "Chae Song-hwa",
    "2026-04-21",
    "[16:00] Chae Song-hwa: Hey Li Hua! I'm organizing a karaoke night this Saturday at 7 PM. "
    "Want to join?\n"
    "[16:01] Li Hua: Totally in for the karaoke night! Looking forward to it!\n"
    "[16:02] Chae Song-hwa: Great, see you there!",
)
#: A floor no score reaches (scores are at most 2): the rule it sets is off.
_NEVER = MAX_SCORE + 0.5


@pytest.fixture(scope="module")
def embedder(model_urls: dict[str, str]) -> Iterator[EmbeddingClient]:
    client = EmbeddingClient.from_settings(load_settings(**model_urls))
    yield client
    client.close()


@pytest.fixture(scope="module")
def reader(model_urls: dict[str, str]) -> Iterator[ChatClient]:
    """The graph reader's own server (GRAPH_READER_LLM, the packaged default)."""
    client = ChatClient.reader_from_settings(load_settings(**model_urls))
    assert client is not None
    yield client
    client.close()


def test_the_message_that_answers_is_quoted_with_its_reply(
    embedder: EmbeddingClient, reader: ChatClient
) -> None:
    found = GraphRetrieval(days=(_RENT, _PRAGUE))
    question = "What local dish did Wolfgang try in Prague?"

    answered = with_exchange(found, question, embedder, reader, min_score=1.1, read_score=1.1)

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


def test_a_question_no_message_answers_is_left_to_the_model(
    embedder: EmbeddingClient, reader: ChatClient
) -> None:
    found = GraphRetrieval(days=(_RENT, _PRAGUE))
    question = "What colour is the bicycle Jennifer bought for her niece?"

    assert (
        with_exchange(found, question, embedder, reader, min_score=1.1, read_score=1.1).computed
        is None
    )
    # the same question with no floor gets its best exchange: the floor decided
    quoted = with_exchange(found, question, embedder, reader, min_score=0.0, read_score=_NEVER)
    assert quoted.computed is not None


def test_a_computed_answer_is_kept(embedder: EmbeddingClient, reader: ChatClient) -> None:
    computed = ComputedAnswer("Yes. The first was written on ... [1].", ())
    found = GraphRetrieval(days=(_PRAGUE,), computed=computed)
    question = "What local dish did Wolfgang try in Prague?"

    kept = with_exchange(found, question, embedder, reader, min_score=0.0, read_score=0.0)

    assert kept.computed is computed


def test_day_passages_write_the_weekday_and_the_days_named() -> None:
    card = DayCard("k", "Adam Smith", "2026-03-08", "[13:00] Adam Smith: Power is out today.")

    (annotated,) = day_passages([card])
    (written,) = day_passages([card], annotated=False)

    assert annotated.startswith("Messages in Adam Smith on Sunday 2026-03-08:\n")
    assert "today (Sunday 2026-03-08)" in annotated
    assert written.endswith("[13:00] Adam Smith: Power is out today.")


def test_a_reply_that_asks_back_brings_its_answer(
    embedder: EmbeddingClient, reader: ChatClient
) -> None:
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

    found = GraphRetrieval(days=(card,))
    computed = with_exchange(
        found, question, embedder, reader, min_score=0.0, read_score=_NEVER
    ).computed

    assert computed is not None
    (_, lines), *_ = computed.quoted  # as the model would be shown them: days written in
    assert lines.splitlines() == day_passages([card])[0].splitlines()[1:4]
    assert "Around 5:30" in computed.text and "see you there" not in computed.text


def test_the_model_reads_the_answer_in_the_exchange(reader: ChatClient) -> None:
    lines = tuple(_PRAGUE.excerpt.splitlines()[1:3])
    exchange = Exchange(1, "Tuesday 2026-05-12", lines, 1.0)

    reading = read_exchange("What local dish did Wolfgang try in Prague?", exchange, reader)

    assert not reading.says_none
    assert reading.grounded, reading.reply
    assert "goulash" in reading.reply.casefold()


def test_an_exchange_without_the_answer_is_read_as_none(reader: ChatClient) -> None:
    lines = tuple(_KARAOKE.excerpt.splitlines()[:2])
    exchange = Exchange(1, "Tuesday 2026-04-21", lines, 1.3)

    reading = read_exchange("What song did Li Hua sing at the karaoke night?", exchange, reader)

    assert reading.says_none, reading.reply
    assert not reading.grounded


def test_the_turn_abstains_when_the_best_messages_do_not_answer(
    embedder: EmbeddingClient, reader: ChatClient
) -> None:
    """However well the talk about the event matches, a reading of NONE is an
    abstention that offers those messages, cited, not an answer."""
    found = GraphRetrieval(days=(_RENT, _KARAOKE))
    question = "What song did Li Hua sing at the karaoke night?"

    answered = with_exchange(found, question, embedder, reader, min_score=0.0, read_score=0.0)

    computed = answered.computed
    assert computed is not None
    first = computed.text.split("\n", 1)[0]
    assert first.startswith(EXTRACT_LEAD) and is_abstention(first)
    assert first.endswith("written on Tuesday 2026-04-21 [2]:")
    assert (
        "[16:00] Chae Song-hwa: \u201cHey Li Hua! I'm organizing a karaoke night" in computed.text
    )
    ((source, _),) = computed.quoted
    assert source == 2
    # without the reading the same exchange would have been the answer
    unread = with_exchange(found, question, embedder, reader, min_score=0.0, read_score=_NEVER)
    assert unread.computed is not None and " wrote on " in unread.computed.text.split("\n")[0]


def test_a_reading_that_names_the_answer_quotes_it_below_the_floor(
    embedder: EmbeddingClient, reader: ChatClient
) -> None:
    found = GraphRetrieval(days=(_RENT, _PRAGUE))
    question = "What local dish did Wolfgang try in Prague?"

    # no score reaches the floor: only the reading can make the exchange the answer
    answered = with_exchange(found, question, embedder, reader, min_score=_NEVER, read_score=0.0)

    assert answered.computed is not None
    assert answered.computed.text.startswith("Wolfgang Schulz and Li Hua wrote on Tuesday")
    assert "goulash" in answered.computed.text


def test_when_the_reading_fails_the_score_decides(
    embedder: EmbeddingClient, model_urls: dict[str, str]
) -> None:
    dead = {**model_urls, "GRAPH_READER_BASE_URL": f"http://127.0.0.1:{free_port()}/v1"}
    settings = load_settings(**dead, MODEL_MAX_RETRIES=0)
    question = "What song did Li Hua sing at the karaoke night?"
    found = GraphRetrieval(days=(_RENT, _KARAOKE))
    nobody = ChatClient.reader_from_settings(settings)
    assert nobody is not None
    try:
        above = with_exchange(found, question, embedder, nobody, min_score=0.0, read_score=0.0)
        below = with_exchange(found, question, embedder, nobody, min_score=_NEVER, read_score=0.0)
    finally:
        nobody.close()

    assert above.computed is not None and " wrote on " in above.computed.text.split("\n")[0]
    assert below.computed is None


def test_a_person_the_question_names_must_be_in_the_exchange() -> None:
    lines = (
        "[20:00] Sara Lindqvist: Potluck at my place on Saturday, I'm on the 3rd floor.",
        "[20:01] Noor Haddad: Lovely idea, Sara. I'll bring lentil soup.",
    )
    people = ["Ingrid Bakke", "Sara Lindqvist", "Noor Haddad", "Li Hua"]

    assert absent_people("What is Ingrid bringing to Sara's potluck?", lines, people) == [
        "Ingrid Bakke"
    ]
    # named as a writer, or in a message, or not at all: nobody is missing
    assert absent_people("What is Noor bringing to Sara's potluck?", lines, people) == []
    assert absent_people("What is everyone bringing to the potluck?", lines, people) == []
    # a short word of a name ("Li") names nobody; a lower-case word is no name
    assert absent_people("Is li the word for it?", lines, people) == []
    assert absent_people("What does ingrid bring?", lines, people) == []


def test_a_reading_of_messages_without_the_person_asked_about_is_no_answer(
    reader: ChatClient,
) -> None:
    card = DayCard(
        "sara:2026-03-25",
        "Sara Lindqvist",
        "2026-03-25",
        "[20:00] Sara Lindqvist: Next supper club at my place? Potluck on Saturday April 4 "
        "at 19:00.\n"
        "[20:01] Noor Haddad: Lovely idea, Sara. I'll bring lentil soup.\n"
        "[20:02] Ingrid Bakke: Dessert is mine: cardamom buns.",
    )
    lines = tuple(card.excerpt.splitlines()[:2])
    exchange = Exchange(1, "Wednesday 2026-03-25", lines, 1.2)
    question = "What is Ingrid bringing to Sara's potluck?"

    reading = read_exchange(question, exchange, reader, card_writers([card]))

    assert card_writers([card]) == ["Sara Lindqvist", "Noor Haddad", "Ingrid Bakke"]
    assert not reading.grounded, reading.reply
    # with Ingrid's own message in the exchange, what it says can be the answer
    hers = Exchange(1, "Wednesday 2026-03-25", tuple(card.excerpt.splitlines()[1:3]), 1.2)
    assert read_exchange(question, hers, reader, card_writers([card])).grounded


def test_the_cards_of_a_day_the_question_names() -> None:
    days = (_PRAGUE, _RENT, _KARAOKE)
    assert named_cards("Why did Adam write on 20260602?", days) == (1,)
    assert named_cards("What happened on April 21, 2026 and on 2026-05-12?", days) == (0, 2)
    # a day no card is on, a day without its year, no day at all: none
    assert named_cards("Why did Adam write on 20260603?", days) == ()
    assert named_cards("Why did Adam write on June 2?", days) == ()
    assert named_cards("Why did Adam write?", days) == ()


def test_a_question_that_names_its_day_reads_that_days_messages(
    embedder: EmbeddingClient, reader: ChatClient
) -> None:
    """Asked about the talk of a day it names, in words its messages do not share, the
    question's best message there scores under the usual floor and is read anyway."""
    found = GraphRetrieval(days=(_RENT, _PRAGUE))
    question = "Why does Li Hua message Adam on 20260602?"
    passages = day_passages(found.days)
    exchange = best_exchange(question, found.days, passages, embedder, cards=(0,))
    assert exchange is not None and exchange.source == 1
    assert exchange.score < 1.1, exchange.score

    answered = with_exchange(found, question, embedder, reader, min_score=_NEVER, read_score=1.1)

    computed = answered.computed
    assert computed is not None
    assert computed.text.startswith("Li Hua and Adam Smith wrote on Tuesday 2026-06-02 [1]:")
    assert "the rent for last month is transferred" in computed.text
    # the same question about a day no card is on: the same best message, scoring as
    # low, is not read, and the model answers
    other_day = "Why does Li Hua message Adam on 20260603?"
    unread = with_exchange(found, other_day, embedder, reader, min_score=_NEVER, read_score=1.1)
    assert unread.computed is None
