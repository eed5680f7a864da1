"""The shared turn runner: event order, the repetition guard, limits and error paths.

A scripted model and a fixed retriever drive the runner here, so each path is exact;
the API and CLI tests run the same runner against the real stack.
"""

from __future__ import annotations

import uuid
from collections.abc import Generator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tests.support.records import retrieved_chunk
from varagity.chat.base import Turn
from varagity.chat.turn import (
    QUESTION_MAX_CHARS,
    TokenDelta,
    TurnDone,
    TurnError,
    TurnEvent,
    TurnRequest,
    TurnRetrieval,
    run_turn,
)
from varagity.config import Settings, load_settings
from varagity.generation.answer import ABSTENTION, NO_EVIDENCE_ANSWER, UNSUPPORTED_NOTE
from varagity.generation.grounding import is_abstention
from varagity.graph.types import ComputedAnswer, DayCard, GraphRetrieval
from varagity.models.base import ModelError
from varagity.models.protocols import Decoding
from varagity.records import RetrievedChunk
from varagity.retrieval.base import Retrieval

HEAD = "The Tern K2 kettle has a warranty of 27 months [1]."
LOOP = "The Kestrel is a FastAPI application that serves the corpus."
QUESTION = "What is the warranty period of the Tern K2 kettle?"
INDEX_AS_OF = datetime(2026, 12, 3, 14, 2, tzinfo=UTC)


class ScriptedModel:
    """Streams fixed deltas, then returns a finish reason; records what it was asked."""

    def __init__(
        self, deltas: Sequence[str], finish: str | None = "stop", fail_after: int | None = None
    ) -> None:
        self.deltas = list(deltas)
        self.finish = finish
        self.fail_after = fail_after
        self.sent = 0
        self.closed = False
        self.calls: list[dict[str, object]] = []

    def stream(
        self,
        messages: list[dict[str, str]],
        max_tokens: int | None = None,
        temperature: float | None = None,
        *,
        decoding: Decoding | None = None,
    ) -> Generator[str, None, str | None]:
        self.calls.append({"messages": messages, "max_tokens": max_tokens, "decoding": decoding})
        try:
            for delta in self.deltas:
                if self.fail_after is not None and self.sent == self.fail_after:
                    raise ModelError("stream broke", url="http://model", model="m")
                self.sent += 1
                yield delta
        finally:
            self.closed = True
        return self.finish

    def complete(
        self,
        messages: Sequence[dict[str, str]],
        max_tokens: int | None = None,
        temperature: float | None = None,
    ) -> str:
        return "the Tern K2 kettle"  # the condense engine's referent


class FixedRetriever:
    method = "bm25"

    def __init__(self, chunks: list[RetrievedChunk], error: Exception | None = None) -> None:
        self.chunks = chunks
        self.error = error
        self.queries: list[tuple[str, int]] = []

    def retrieve(self, query: str, k: int) -> Retrieval:
        self.queries.append((query, k))
        if self.error:
            raise self.error
        return Retrieval(self.method, query, self.chunks[:k], {"bm25": 1.0})


class FixedGraph:
    def __init__(self, found: GraphRetrieval) -> None:
        self.found = found

    def retrieve(self, question: str, *, top_k: int | None = None) -> GraphRetrieval:
        return self.found


class FakeServices:
    def __init__(
        self,
        settings: Settings,
        chat: ScriptedModel,
        retriever: FixedRetriever,
        graph: FixedGraph | None = None,
    ) -> None:
        self.settings = settings
        self.chat = chat
        self.graph = graph
        self._retriever = retriever
        self.methods: list[str | None] = []
        self.model_claims: object = None

    def retriever(self, method: str | None = None) -> FixedRetriever:
        self.methods.append(method)
        return self._retriever

    def index_as_of(self) -> datetime | None:
        return INDEX_AS_OF


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    """Streamed, attributed answers from whole chunks: the mechanics of the stream."""
    return load_settings(
        VARAGITY_HOME=tmp_path,
        LLM_MAX_TOKENS=200,
        LLM_REPEAT_PENALTY=1.15,
        ANSWER_CITATIONS="attributed",
        ANSWER_CONTEXT="chunks",
    )


@pytest.fixture
def quoted(tmp_path: Path) -> Settings:
    """The defaults: quote-checked answers from the best sentences."""
    return load_settings(VARAGITY_HOME=tmp_path, LLM_MAX_TOKENS=200)


def _services(settings: Settings, model: ScriptedModel, chunks: int = 2) -> FakeServices:
    evidence = [retrieved_chunk(1, "Warranty: 27 months."), retrieved_chunk(2, "Lentil soup.")][
        :chunks
    ]
    return FakeServices(settings, model, FixedRetriever(evidence))


def _split(text: str, size: int = 3) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def _kinds(events: list[TurnEvent]) -> list[str]:
    return [type(e).__name__ for e in events]


def test_events_come_in_order_and_done_holds_the_whole_answer(settings: Settings) -> None:
    model = ScriptedModel(["<thi", "nk>check [1]</th", "ink>", *_split(HEAD)])
    services = _services(settings, model)
    events = list(run_turn(services, TurnRequest(question=QUESTION, k=2)))
    kinds = _kinds(events)
    assert kinds[0] == "TurnRetrieval" and kinds[-1] == "TurnDone"
    assert kinds.index("ReasoningDelta") < kinds.index("TokenDelta")
    retrieval, done = events[0], events[-1]
    assert isinstance(retrieval, TurnRetrieval) and isinstance(done, TurnDone)
    assert retrieval.query == QUESTION and retrieval.condensed_query is None
    assert retrieval.method == "bm25" and retrieval.chat_engine == "simple"
    assert [c.record.content for c in retrieval.chunks] == ["Warranty: 27 months.", "Lentil soup."]
    assert retrieval.index_as_of == INDEX_AS_OF  # stamped right after retrieval
    assert done.answer == "".join(e.text for e in events if isinstance(e, TokenDelta)) == HEAD
    assert done.reasoning == "check [1]"
    assert done.cited == [1] and done.stop_reason == "finished"
    assert {"bm25", "first_token", "generate", "total"} <= set(done.timings_ms)
    call = model.calls[0]
    assert call["max_tokens"] == 200
    assert call["decoding"] == Decoding(repeat_penalty=1.15)
    assert model.closed


def test_a_looping_stream_is_stopped_trimmed_and_closed(settings: Settings) -> None:
    stream = _split(HEAD + " " + " ".join([LOOP] * 200))
    model = ScriptedModel(stream, finish="length")
    events = list(run_turn(_services(settings, model), TurnRequest(question=QUESTION)))
    done = events[-1]
    assert isinstance(done, TurnDone)
    assert done.stop_reason == "repetition"
    assert done.answer == f"{HEAD} {LOOP}"
    assert model.closed and model.sent < len(stream) / 20  # generation stopped early
    shown = "".join(e.text for e in events if isinstance(e, TokenDelta))
    assert shown.startswith(done.answer)
    assert len(shown) <= len(HEAD) + 3 * (len(LOOP) + 1)  # nothing past the detection point


def test_hitting_the_cap_is_a_length_stop(settings: Settings) -> None:
    model = ScriptedModel(_split("The warranty is 27"), finish="length")
    done = list(run_turn(_services(settings, model), TurnRequest(question=QUESTION)))[-1]
    assert isinstance(done, TurnDone) and done.stop_reason == "length"
    assert done.answer == "The warranty is 27 [1]" and done.cited == [1]  # attributed


def test_citations_are_attributed_as_the_answer_streams(settings: Settings) -> None:
    # the model cites the wrong passage for one sentence and nothing for the other
    answer = "The soup is lentil [1]. The warranty lasts 27 months. It is purple."
    model = ScriptedModel(_split(answer, 2))
    events = list(run_turn(_services(settings, model), TurnRequest(question=QUESTION)))
    done = events[-1]
    assert isinstance(done, TurnDone)
    assert done.answer == (
        "The soup is lentil [2]. The warranty lasts 27 months [1]. It is purple."
    )
    assert done.cited == [2, 1]
    assert "".join(e.text for e in events if isinstance(e, TokenDelta)) == done.answer

    as_written = settings.model_copy(update={"ANSWER_CITATIONS": "model"})
    model = ScriptedModel(_split(answer, 2))
    done = list(run_turn(_services(as_written, model), TurnRequest(question=QUESTION)))[-1]
    assert isinstance(done, TurnDone) and done.answer == answer and done.cited == [1]


def test_an_answer_no_passage_supports_says_so(settings: Settings) -> None:
    model = ScriptedModel(_split("The kettle is purple and made in Norway [1]."))
    events = list(run_turn(_services(settings, model), TurnRequest(question=QUESTION)))
    done = events[-1]
    assert isinstance(done, TurnDone)
    assert done.answer == "The kettle is purple and made in Norway." + UNSUPPORTED_NOTE
    assert done.cited == [] and is_abstention(done.answer)
    assert "".join(e.text for e in events if isinstance(e, TokenDelta)) == done.answer
    # an abstention is not an unsupported claim
    model = ScriptedModel([ABSTENTION])
    done = list(run_turn(_services(settings, model), TurnRequest(question=QUESTION)))[-1]
    assert isinstance(done, TurnDone) and done.answer == ABSTENTION


def test_the_answer_cap_can_be_lowered_never_raised(settings: Settings) -> None:
    for asked, sent in ((50, 50), (10_000, 200), (None, 200)):
        model = ScriptedModel(["ok"])
        list(run_turn(_services(settings, model), TurnRequest(QUESTION, max_answer_tokens=asked)))
        assert model.calls[0]["max_tokens"] == sent, asked


def test_history_is_kept_to_the_last_turns(settings: Settings) -> None:
    few = settings.model_copy(update={"CHAT_HISTORY_TURNS": 1})
    model = ScriptedModel(["ok"])
    history = (Turn("First?", "One."), Turn("Which kettle?", "The Tern K2 kettle."))
    follow_up = "How long is its warranty?"
    request = TurnRequest(follow_up, history=history, chat_engine="condense_context")
    services = _services(few, model)
    retrieval = next(iter(run_turn(services, request)))
    assert isinstance(retrieval, TurnRetrieval)
    assert retrieval.condensed_query == f"{follow_up} (the Tern K2 kettle)"
    list(run_turn(services, request))
    messages = model.calls[-1]["messages"]
    assert isinstance(messages, list)
    assert [m["content"] for m in messages[1:3]] == ["Which kettle?", "The Tern K2 kettle."]
    assert services._retriever.queries[-1][0] == retrieval.condensed_query


class RecordingClaims:
    """In-memory stand-in for ``ModelClaims`` (whose Postgres side
    tests/stores/test_model_claims.py covers): records when a turn claims the model."""

    def __init__(self) -> None:
        self.held: set[uuid.UUID] = set()
        self.events: list[str] = []

    def claim(self, kind: str) -> uuid.UUID:
        claim_id = uuid.uuid4()
        self.held.add(claim_id)
        self.events.append(f"claim {kind}")
        return claim_id

    def release(self, claim_id: uuid.UUID) -> None:
        self.held.discard(claim_id)
        self.events.append("release")

    def live(self, kind: str, **_: object) -> int:
        return len(self.held) if kind == "turn" else 0


def test_the_model_is_claimed_before_the_query_is_rewritten_and_given_up_after(
    settings: Settings,
) -> None:
    # the condense call (like HyDE's) asks the model before retrieval: blurb passes must
    # already give it way then, not only once the answer starts
    model = ScriptedModel(["ok"])
    services = _services(settings, model)
    claims = services.model_claims = RecordingClaims()
    claimed_at_condense: list[int] = []
    referent = model.complete

    def complete(*args: Any, **kwargs: Any) -> str:
        claimed_at_condense.append(claims.live("turn"))
        return referent(*args, **kwargs)

    model.complete = complete  # type: ignore[method-assign]
    history = (Turn("Which kettle?", "The Tern K2 kettle."),)
    request = TurnRequest(
        "How long is its warranty?", history=history, chat_engine="condense_context"
    )
    events = list(run_turn(services, request))
    assert isinstance(events[-1], TurnDone)
    assert claimed_at_condense == [1]
    assert claims.events == ["claim turn", "release"] and not claims.held
    # a turn that fails before its answer lets go too
    services._retriever.error = RuntimeError("index gone")
    assert isinstance(list(run_turn(services, request))[-1], TurnError)
    assert claims.events[-2:] == ["claim turn", "release"] and not claims.held


def test_no_evidence_answers_without_the_model(settings: Settings) -> None:
    model = ScriptedModel(["never"])
    events = list(run_turn(_services(settings, model, chunks=0), TurnRequest(question=QUESTION)))
    assert _kinds(events) == ["TurnRetrieval", "TokenDelta", "TurnDone"]
    done = events[-1]
    assert isinstance(done, TurnDone)
    assert done.answer == NO_EVIDENCE_ANSWER and done.stop_reason == "finished"
    assert model.calls == []


def test_a_model_failure_mid_answer_ends_with_an_error(settings: Settings) -> None:
    model = ScriptedModel(_split(HEAD), fail_after=2)
    events = list(run_turn(_services(settings, model), TurnRequest(question=QUESTION)))
    assert _kinds(events) == ["TurnRetrieval", "TokenDelta", "TokenDelta", "TurnError"]
    error = events[-1]
    assert isinstance(error, TurnError) and error.code == "model_unavailable"
    assert "stream broke" in error.message and model.closed


def test_failures_before_the_evidence_are_error_events(settings: Settings) -> None:
    down = _services(settings, ScriptedModel(["x"]))
    down._retriever.error = ModelError("cannot connect", url="http://emb", model="e")
    events = list(run_turn(down, TurnRequest(question=QUESTION)))
    assert len(events) == 1 and isinstance(events[0], TurnError)
    assert events[0].code == "model_unavailable" and "http://emb" in events[0].message
    assert events[0].cause is down._retriever.error  # a batch job may retry on its kind

    bad_engine = list(run_turn(down, TurnRequest(question=QUESTION, chat_engine="magic")))
    assert len(bad_engine) == 1 and isinstance(bad_engine[0], TurnError)
    assert bad_engine[0].code == "invalid_request" and "magic" in bad_engine[0].message

    broken = _services(settings, ScriptedModel(["x"]))
    broken._retriever.error = KeyError("oops")
    internal = list(run_turn(broken, TurnRequest(question=QUESTION)))
    assert isinstance(internal[0], TurnError) and internal[0].code == "internal_error"


def test_closing_the_turn_early_closes_the_model_stream(settings: Settings) -> None:
    model = ScriptedModel(_split(HEAD * 5))
    events = run_turn(_services(settings, model), TurnRequest(question=QUESTION))
    assert isinstance(next(events), TurnRetrieval)
    assert isinstance(next(events), TokenDelta)
    events.close()
    assert model.closed and model.sent < len(model.deltas)


def test_bad_requests_are_refused_with_the_reason() -> None:
    for kwargs, message in (
        ({"question": "  "}, "empty"),
        ({"question": "x" * (QUESTION_MAX_CHARS + 1)}, f"limit is {QUESTION_MAX_CHARS}"),
        ({"question": "q", "k": 0}, "k must be at least 1"),
        ({"question": "q", "max_answer_tokens": 0}, "max_answer_tokens"),
        ({"question": "q", "corpus": "documents"}, "Unknown corpus 'documents'"),
    ):
        with pytest.raises(ValueError, match=message):
            TurnRequest(**kwargs)  # type: ignore[arg-type]


def test_quoted_answers_release_checked_sentences_with_their_quotes(quoted: Settings) -> None:
    assert quoted.ANSWER_CITATIONS == "quoted" and quoted.ANSWER_CONTEXT == "sentences"
    answer = "The warranty lasts 27 months [2]. The warranty lasts 24 months."
    model = ScriptedModel(_split(answer, 2))
    asked = TurnRequest(question="How long is the warranty?")
    events = list(run_turn(_services(quoted, model), asked))
    done = events[-1]
    assert isinstance(done, TurnDone)
    # the second sentence's 24 is in no passage: dropped, never shown
    assert done.answer == "The warranty lasts 27 months [1]."
    assert "".join(e.text for e in events if isinstance(e, TokenDelta)) == done.answer
    assert [(q.source, q.text) for q in done.quotes] == [(1, "Warranty: 27 months.")]
    assert done.cited == [1] and "first_token" in done.timings_ms
    system = model.calls[0]["messages"][0]["content"]  # type: ignore[index]
    assert "copy names, numbers and dates exactly" in system


def test_a_quoted_answer_with_no_checked_sentence_abstains(quoted: Settings) -> None:
    model = ScriptedModel(_split("The warranty lasts 36 months [1]."))
    events = list(run_turn(_services(quoted, model), TurnRequest(question=QUESTION)))
    done = events[-1]
    assert isinstance(done, TurnDone)
    assert is_abstention(done.answer) and "36" not in done.answer
    assert done.answer.startswith(ABSTENTION) and "f1.md" in done.answer  # what is covered
    assert done.quotes == () and done.cited == []
    assert "".join(e.text for e in events if isinstance(e, TokenDelta)) == done.answer


def test_a_graph_day_is_given_to_the_model_with_its_weekday() -> None:
    card = DayCard("t1::2026-03-02", "Maya", "2026-03-02", "[09:14] Maya: We land at 7.")
    evidence = TurnRetrieval(
        (), "q", None, "graph", "simple", {}, corpus="graph", graph=GraphRetrieval(days=(card,))
    )
    # the weekday is computed, not left for the model to guess
    assert evidence.passages == [
        "Messages in Maya on Monday 2026-03-02:\n[09:14] Maya: We land at 7."
    ]
    assert evidence.topics == [("Maya", "Monday 2026-03-02")]


def test_an_answer_retrieval_computed_is_given_without_the_model(quoted: Settings) -> None:
    days = (
        DayCard(
            "t1::2026-03-02", "Maya", "2026-03-02", "[09:14] Maya: Flights booked for tomorrow."
        ),
        DayCard("t1::2026-03-09", "Maya", "2026-03-09", "[18:00] Maya: Hotel booked too."),
    )
    computed = ComputedAnswer(
        "Yes. The first was written on Monday 2026-03-02 [1] and the second on Monday "
        "2026-03-09 [2]: the first came before the second.",
        ((1, "[09:14] Maya: Flights booked for tomorrow."), (2, "[18:00] Maya: Hotel booked too.")),
    )
    model = ScriptedModel(["The model was asked."])
    graph = FixedGraph(GraphRetrieval(days=days, computed=computed))
    services = FakeServices(quoted, model, FixedRetriever([]), graph)
    request = TurnRequest("Did Maya book the flights before the hotel?", corpus="graph")
    events = list(run_turn(services, request))
    done = events[-1]
    assert isinstance(done, TurnDone)
    assert done.answer == computed.text and model.calls == []
    assert done.cited == [1, 2]
    # each quote is the message as written (no day written into it for the model)
    assert [(q.source, q.text) for q in done.quotes] == [
        (1, "[09:14] Maya: Flights booked for tomorrow."),
        (2, "[18:00] Maya: Hotel booked too."),
    ]
    passages = [
        f"Messages in Maya on {weekday} {d.span}:\n{d.excerpt}"
        for weekday, d in zip(("Monday", "Monday"), days, strict=True)
    ]
    for quote in done.quotes:
        assert passages[quote.source - 1][quote.start : quote.end] == quote.text


def test_a_debug_turn_keeps_the_prompt_sent_and_the_raw_stream(quoted: Settings) -> None:
    written = "<think>check [2]</think>The warranty lasts 27 months [2]. It lasts 24 months."
    model = ScriptedModel(_split(written, 4))
    request = TurnRequest(question="How long is the warranty?", debug=True)
    done = list(run_turn(_services(quoted, model), request))[-1]
    assert isinstance(done, TurnDone) and done.debug is not None
    # exactly what the model was sent, and what it wrote before the quote check dropped
    # the unquoted sentence, split off the reasoning and renumbered the citation
    assert list(done.debug.messages) == model.calls[0]["messages"]
    assert [m["role"] for m in done.debug.messages] == ["system", "user"]
    assert done.debug.raw == written
    assert done.answer == "The warranty lasts 27 months [1]."

    plain = list(
        run_turn(_services(quoted, ScriptedModel(_split(written, 4))), TurnRequest(QUESTION))
    )
    assert isinstance(plain[-1], TurnDone) and plain[-1].debug is None  # kept only when asked

    # no evidence: no model was asked, and the fixed reply is what was "written"
    empty = list(run_turn(_services(quoted, ScriptedModel(["never"]), chunks=0), request))[-1]
    assert isinstance(empty, TurnDone) and empty.debug is not None
    assert empty.debug.messages == () and empty.debug.raw == NO_EVIDENCE_ANSWER
