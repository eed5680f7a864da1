"""One chat turn end to end, as typed events: the runner every front end shares.

The SSE chat route (``POST /api/chat``), the OpenAI-compatible route
(``/v1/chat/completions``), ``varagity ask`` and ``varagity chat`` are adapters over
:func:`run_turn`: each builds a :class:`TurnRequest` and renders the events it yields
(the two that keep conversations share :mod:`varagity.chat.conversation`).

Event order: one :class:`TurnRetrieval` (the evidence, numbered as the answer cites
it, and the query that found it), then :class:`TurnQueued` whenever the turn waits in
the answer queue (:mod:`varagity.chat.queue`: at most ``LLM_CONCURRENCY`` answers
generate at once) and its position changes (repeated every
:data:`QUEUE_HEARTBEAT_SECONDS` while it does not, so a front end can notice a client
that left the line), then :class:`ReasoningDelta` and
:class:`TokenDelta` in the order the model wrote them, then :class:`TurnDone`. A failure is a
:class:`TurnError` and ends the turn, whether it comes before the evidence or mid-answer.
Closing the generator early (a client that went away) closes the model's stream, which
stops generation.

The answer stream passes through a :class:`~varagity.generation.repetition.RepetitionGuard`:
when the answer starts looping, generation stops, the repeated tail is trimmed from
:attr:`TurnDone.answer` (the deltas already sent cannot be taken back, so front ends
show ``done``'s answer as the final text) and the stop reason is ``"repetition"``.
The model is shown the passages cut to the sentences that matter for the question
(``ANSWER_CONTEXT=sentences``: :func:`~varagity.generation.quotes.select_context`), or
whole. With ``ANSWER_CITATIONS=quoted`` (the default) the stream then passes a
:class:`~varagity.generation.quotes.QuotedAnswerStream`: each sentence is held until it
is complete and released only with the ``[n]`` of the verbatim quote that holds every
value it states; a sentence without one is dropped, and an answer left with none is the
abstention that names what the passages cover. :attr:`TurnDone.quotes` carries the
quotes; time to first token is the time to the first checked sentence. With
``ANSWER_CITATIONS=attributed`` it passes a
:class:`~varagity.generation.grounding.CitationStream` instead, which streams text as it
comes and gives each sentence the ``[n]`` of the passage that supports it; an answer of
which no sentence is supported ends with
:data:`~varagity.generation.answer.UNSUPPORTED_NOTE`.

A turn asks one corpus (:attr:`TurnRequest.corpus`). ``"rag"`` retrieves document
chunks; ``"graph"`` asks the message graph (:class:`GraphReader`, the engine's
retrieval only: entities, relations and transcript days) and numbers its day cards as
the evidence, so the answer prompt, the stream, the citations, the repetition guard
and the limits are the same as for documents. A graph turn that cannot be answered
from the graph (``GRAPH_ENABLED=false``, the engine failing, no day found) degrades to
a document answer and says so: :attr:`TurnRetrieval.degraded` is the note a client
shows, :attr:`TurnRetrieval.corpus` is ``"rag"`` and :attr:`TurnRetrieval.graph` None,
while :attr:`TurnRetrieval.target_corpus` stays ``"graph"`` (the ask is the record).

Limits live here, so every front end enforces the same ones: a question of at most
:data:`QUESTION_MAX_CHARS` characters, and at most ``LLM_MAX_TOKENS`` answer tokens
(a request may ask for fewer, never more).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Generator, Sequence
from contextlib import closing
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal, Protocol, get_args

from varagity.chat.base import ChatEngine, PreparedQuery, Turn
from varagity.chat.queue import ANSWERS, ModelTurn, QueueReason, answer_queue
from varagity.chat.registry import build_chat_engine
from varagity.config import Settings
from varagity.generation.answer import (
    ABSTENTION,
    UNSUPPORTED_NOTE,
    chunk_passages,
    cited_numbers,
    stream_answer,
)
from varagity.generation.grounding import CitationStream, attribute_answer
from varagity.generation.quotes import GIVE_UP_AFTER, QuotedAnswerStream, select_context
from varagity.generation.repetition import RepetitionGuard
from varagity.generation.think import ThinkSplitter
from varagity.graph.exchange import day_passages
from varagity.graph.order import messages_span
from varagity.graph.relative_dates import as_written
from varagity.graph.transcripts import weekday_of
from varagity.graph.types import ComputedAnswer, DayCard, GraphRetrieval
from varagity.models.base import ModelError
from varagity.models.protocols import Completer, Decoding, Streamer
from varagity.records import Quote, RetrievedChunk
from varagity.retrieval.base import Retriever

log = logging.getLogger(__name__)

#: Longest question any front end accepts, in characters.
QUESTION_MAX_CHARS = 4000
#: A waiting turn repeats its :class:`TurnQueued` this often while its place is unchanged.
QUEUE_HEARTBEAT_SECONDS = 1.0

#: What a turn is answered from: the indexed documents (chunk RAG) or the message graph.
Corpus = Literal["rag", "graph"]
CORPORA: tuple[str, ...] = get_args(Corpus)

#: :attr:`TurnRetrieval.method` of a turn answered from the graph.
GRAPH_METHOD = "graph"
#: :attr:`TurnRetrieval.degraded` notes: why a graph turn is answered from the documents.
GRAPH_DISABLED_NOTE = (
    "The message graph is switched off (GRAPH_ENABLED=false), so this answer comes from "
    "the documents instead."
)
GRAPH_FAILED_NOTE = (
    "The message graph could not be read ({error}), so this answer comes from the "
    "documents instead."
)
GRAPH_EMPTY_NOTE = (
    "The message graph has no conversation day matching this question (or nothing is "
    "built yet), so this answer comes from the documents instead."
)

#: Why generation ended: the model finished, it hit the answer token cap, or the
#: repetition guard stopped a loop.
StopReason = Literal["finished", "length", "repetition"]

#: Codes of :class:`TurnError`.
ErrorCode = Literal["invalid_request", "model_unavailable", "internal_error"]


@dataclass(frozen=True, slots=True)
class TurnRequest:
    """One question to answer, with what decides how.

    Attributes:
        question: The user's words (the answer prompt gets them unchanged).
        history: Earlier turns of the conversation, oldest first; the runner keeps the
            last ``CHAT_HISTORY_TURNS``.
        method: Retrieval method; None uses ``RETRIEVAL_METHOD``.
        k: Evidence chunks to retrieve; None uses ``TOP_K``.
        chat_engine: Chat engine; None uses ``CHAT_ENGINE``.
        corpus: What to answer from: ``"rag"`` (the documents) or ``"graph"`` (the
            message graph, which takes ``GRAPH_TOP_K`` entities and relations and
            ``GRAPH_CHUNK_TOP_K`` days; ``k`` and ``method`` then apply only when
            the turn degrades to the documents).
        max_answer_tokens: A lower answer cap than ``LLM_MAX_TOKENS`` (never higher).
        debug: Also keep what the model was sent and what it wrote, unchecked
            (:attr:`TurnDone.debug`: ``varagity ask -v 2``, the web client's developer
            mode).

    Raises:
        ValueError: On construction, for a blank or too long question, ``k`` or
            ``max_answer_tokens`` below 1, or an unknown corpus.
    """

    question: str
    history: tuple[Turn, ...] = ()
    method: str | None = None
    k: int | None = None
    chat_engine: str | None = None
    corpus: Corpus = "rag"
    max_answer_tokens: int | None = None
    debug: bool = False

    def __post_init__(self) -> None:
        """Refuse requests no front end should pass on."""
        if not self.question.strip():
            raise ValueError("The question is empty.")
        if len(self.question) > QUESTION_MAX_CHARS:
            raise ValueError(
                f"The question is {len(self.question)} characters long; the limit is "
                f"{QUESTION_MAX_CHARS}. Shorten it, or ask about one thing at a time."
            )
        if self.k is not None and self.k < 1:
            raise ValueError(f"k must be at least 1, got {self.k}")
        if self.max_answer_tokens is not None and self.max_answer_tokens < 1:
            raise ValueError(f"max_answer_tokens must be at least 1, got {self.max_answer_tokens}")
        if self.corpus not in CORPORA:
            raise ValueError(f"Unknown corpus {self.corpus!r}; choose one of: {', '.join(CORPORA)}")


@dataclass(frozen=True, slots=True)
class TurnRetrieval:
    """The evidence found for the turn, and how.

    Attributes:
        chunks: The document evidence, in rank order; the answer cites chunk ``n`` as
            ``[n]`` (empty on a graph turn).
        query: What retrieval searched for.
        condensed_query: The chat engine's rewrite when it drove retrieval, else None.
        method: The retriever's method name (``"graph"`` on a graph turn).
        chat_engine: The chat engine's registry name.
        timings_ms: Stage timings so far (``condense``, retrieval stages, ``graph``).
        corpus: What the evidence came from.
        target_corpus: What the request asked for (``"graph"`` on a degraded turn).
        graph: The graph's retrieval (entities, relations, days, mode) on a graph
            turn, else None.
        degraded: Why a graph turn is answered from the documents instead, for the
            client to show; None when the turn got what it asked for.
        index_as_of: When the document index last changed before this retrieval (the
            newest ``ingested_at``): what the answer was given from. None on a graph
            turn and on an empty corpus.
    """

    chunks: tuple[RetrievedChunk, ...]
    query: str
    condensed_query: str | None
    method: str
    chat_engine: str
    timings_ms: dict[str, float]
    corpus: Corpus = "rag"
    target_corpus: Corpus = "rag"
    graph: GraphRetrieval | None = None
    degraded: str | None = None
    index_as_of: datetime | None = None

    @property
    def days(self) -> tuple[DayCard, ...]:
        """The graph's day cards, in the order the answer cites them (``[n]``)."""
        return self.graph.days if self.graph is not None else ()

    @property
    def topics(self) -> list[tuple[str, str]]:
        """What each numbered passage is about, for an abstention to name: the file and
        its innermost section, or the conversation and day."""
        if self.graph is not None:
            return [
                (d.thread_name or "a conversation", weekday_of(d.span)) for d in self.graph.days
            ]
        return [
            (c.record.file_name, (c.record.heading_path or "").rsplit(" > ", 1)[-1].strip())
            for c in self.chunks
        ]

    @property
    def names(self) -> list[str]:
        """What names each numbered passage's subject beyond its text: the file's path,
        headings and header, or the conversation and day."""
        if self.graph is not None:
            return [f"{thread} on {span}" for thread, span in self.topics]
        return [
            " ".join(
                part
                for part in (c.record.relative_path, c.record.heading_path, c.record.header)
                if part
            )
            for c in self.chunks
        ]

    @property
    def passages(self) -> list[str]:
        """The numbered evidence (``[n]`` is item n-1): whole chunk texts or day cards
        (a day named with its weekday, and the days its messages name relative to it
        written out, all computed here: a model asked "on which day" guesses one
        otherwise); the quotes of an answer index these texts."""
        if self.graph is not None:
            return day_passages(self.graph.days)
        return chunk_passages(self.chunks)

    def written(self, quotes: Sequence[Quote]) -> tuple[Quote, ...]:
        """``quotes`` of :attr:`passages` as the sources wrote them: on a graph turn, a
        quote of a day card without the days written into its transcript."""
        if self.graph is None:
            return tuple(quotes)
        annotated = self.passages
        written = day_passages(self.graph.days, annotated=False)
        kept = []
        for q in quotes:
            start, end = as_written(annotated[q.source - 1], written[q.source - 1], q.start, q.end)
            text = written[q.source - 1][start:end]
            lead = len(text) - len(text.lstrip())
            text = text.strip()
            kept.append(Quote(q.source, text, start + lead, start + lead + len(text)))
        return tuple(kept)


@dataclass(frozen=True, slots=True)
class TurnQueued:
    """The model is busy: this turn waits in line.

    Attributes:
        position: 1-based place in the line (1: next to be answered).
        reason: What holds the model: ``"answers"``, other chats of this process
            ahead in line; ``"context"``, contextualization blurbs of an ingest (any
            process or host), which give the model up within moments of this turn's
            claim on it (:class:`~varagity.chat.queue.ModelTurn`).
    """

    position: int
    reason: QueueReason = ANSWERS


@dataclass(frozen=True, slots=True)
class ReasoningDelta:
    """A piece of the model's ``<think>`` reasoning."""

    text: str


@dataclass(frozen=True, slots=True)
class TokenDelta:
    """A piece of the answer."""

    text: str


@dataclass(frozen=True, slots=True)
class TurnDebug:
    """What the model was sent and what it wrote, before any check (a debug record).

    Attributes:
        messages: The chat messages sent, in order (``role`` and ``content``: the system
            prompt, earlier turns, the user turn with the numbered passages); empty when
            no model was asked (no evidence: the fixed reply; a graph answer computed
            from the archive).
        raw: The stream as the model wrote it: reasoning in its ``<think>`` tags,
            sentences the quote check dropped, citations before attribution, a repeated
            tail before trimming (the fixed or computed reply when no model was asked).
    """

    messages: tuple[dict[str, str], ...]
    raw: str


@dataclass(frozen=True, slots=True)
class TurnDone:
    """The finished answer.

    Attributes:
        answer: The answer text (without a trimmed repeated tail).
        reasoning: The reasoning text, or None when the model wrote none.
        cited: Source numbers the answer cites, in first-seen order.
        stop_reason: Why generation ended.
        timings_ms: All stage timings, with ``first_token``, ``generate``, ``total``.
        quotes: With ``ANSWER_CITATIONS=quoted``, the verbatim passage text each answer
            sentence rests on, in sentence order (``Quote.source`` is its ``[n]``).
        debug: The prompt and the raw stream when :attr:`TurnRequest.debug` asked for
            them, else None.
    """

    answer: str
    reasoning: str | None
    cited: list[int]
    stop_reason: StopReason
    timings_ms: dict[str, float] = field(default_factory=dict)
    quotes: tuple[Quote, ...] = ()
    debug: TurnDebug | None = None


@dataclass(frozen=True, slots=True)
class TurnError:
    """A failure; nothing follows it. ``cause``: the exception behind it, for callers
    that act on its kind (a batch job retries after a transient model error)."""

    code: ErrorCode
    message: str
    cause: BaseException | None = field(default=None, compare=False, repr=False)


TurnEvent = TurnRetrieval | TurnQueued | ReasoningDelta | TokenDelta | TurnDone | TurnError


class Model(Streamer, Completer, Protocol):
    """The chat model the runner needs: streaming answers, non-streaming rewrites."""


class GraphReader(Protocol):
    """What a graph turn reads: :class:`~varagity.graph.service.GraphService`."""

    def retrieve(self, question: str, *, top_k: int | None = None) -> GraphRetrieval:
        """The graph's entities, relations and transcript days for ``question``."""
        ...


class TurnServices(Protocol):
    """What :func:`run_turn` uses of :class:`~varagity.services.Services`."""

    settings: Settings

    @property
    def chat(self) -> Model:
        """The chat model client."""
        ...

    @property
    def graph(self) -> GraphReader:
        """The message graph (only graph turns use it)."""
        ...

    def retriever(self, method: str | None = None) -> Retriever:
        """The retriever for ``method`` (``RETRIEVAL_METHOD`` when None)."""
        ...

    def index_as_of(self) -> datetime | None:
        """When the document index last changed (None when it is empty)."""
        ...


def answer_decoding(settings: Settings) -> Decoding:
    """The decoding controls of answer generation (``LLM_*_PENALTY``)."""
    return Decoding(
        repeat_penalty=settings.LLM_REPEAT_PENALTY,
        frequency_penalty=settings.LLM_FREQUENCY_PENALTY,
        presence_penalty=settings.LLM_PRESENCE_PENALTY,
    )


def answer_token_cap(settings: Settings, requested: int | None = None) -> int:
    """The answer cap: ``requested`` when given and lower, else ``LLM_MAX_TOKENS``."""
    cap = settings.LLM_MAX_TOKENS
    return cap if requested is None else max(1, min(requested, cap))


def _ms(since: float) -> float:
    return round((time.perf_counter() - since) * 1000, 2)


def run_turn(services: TurnServices, request: TurnRequest) -> Generator[TurnEvent, None, None]:
    """Answer ``request`` as a stream of events; see the module doc for their order."""
    started = time.perf_counter()
    try:
        yield from _run(services, request, started)
    except ModelError as exc:
        yield TurnError("model_unavailable", str(exc), exc)
    except ValueError as exc:
        yield TurnError("invalid_request", str(exc))
    except Exception as exc:  # every turn ends with an event, never a torn stream
        log.exception("chat turn failed")
        yield TurnError("internal_error", f"{type(exc).__name__}: {exc}")


def _run(
    services: TurnServices, request: TurnRequest, started: float
) -> Generator[TurnEvent, None, None]:
    settings = services.settings
    line = answer_queue(settings.llm_url, settings.LLM_CONCURRENCY)
    # the claim tells blurb passes elsewhere (through Postgres) to give the model up; it
    # is made before the query is prepared, which may ask the model (condense, HyDE)
    turn = ModelTurn(line, getattr(services, "model_claims", None))
    turn.announce()
    try:
        yield from _answer(services, request, started, turn)
    finally:
        turn.leave()


def _answer(
    services: TurnServices, request: TurnRequest, started: float, turn: ModelTurn
) -> Generator[TurnEvent, None, None]:
    settings = services.settings
    engine = _engine(services, request.chat_engine)
    keep = settings.CHAT_HISTORY_TURNS
    history: Sequence[Turn] = request.history[-keep:] if keep else ()
    prepared = engine.prepare(request.question, history)
    graph: GraphRetrieval | None = None
    degraded: str | None = None
    index_as_of: datetime | None = None
    timings = dict(prepared.timings_ms)
    if request.corpus == "graph":
        graph, degraded = _graph_evidence(services, prepared.search_query, timings)
    if graph is not None:
        chunks: tuple[RetrievedChunk, ...] = ()
        method = GRAPH_METHOD
    else:
        retriever = services.retriever(request.method)
        retrieval = retriever.retrieve(prepared.search_query, request.k or settings.TOP_K)
        timings.update(retrieval.timings_ms)
        chunks, method = tuple(retrieval.chunks), retriever.method
        index_as_of = services.index_as_of()
    evidence = TurnRetrieval(
        chunks=chunks,
        query=prepared.search_query,
        condensed_query=prepared.condensed_query,
        method=method,
        chat_engine=engine.name,
        timings_ms=dict(timings),
        corpus="graph" if graph is not None else "rag",
        target_corpus=request.corpus,
        graph=graph,
        degraded=degraded,
        index_as_of=index_as_of,
    )
    log.debug(
        "evidence for %r: %d passages (%s, %s engine), timings %s",
        evidence.query,
        len(chunks) or len(evidence.days),
        method,
        engine.name,
        timings,
    )
    yield evidence
    passages = evidence.passages
    queued = time.perf_counter()
    waited = False
    for wait in turn.enter(heartbeat=QUEUE_HEARTBEAT_SECONDS):
        waited = True
        yield TurnQueued(wait.position, wait.reason)
    if waited:
        timings["queued"] = _ms(queued)
    generating = time.perf_counter()
    prompt: list[dict[str, str]] = []
    raw: list[str] = []
    answer, reasoning, stop, quotes = yield from _generate(
        services, request, prepared, evidence, timings, generating, prompt=prompt, raw=raw
    )
    turn.leave()
    timings["generate"] = _ms(generating)
    timings["total"] = _ms(started)
    yield TurnDone(
        answer=answer,
        reasoning=reasoning,
        cited=cited_numbers(answer, len(passages)),
        stop_reason=stop,
        timings_ms=timings,
        quotes=evidence.written(quotes),
        debug=TurnDebug(tuple(prompt), "".join(raw)) if request.debug else None,
    )


def _computed_quotes(computed: ComputedAnswer, passages: Sequence[str]) -> tuple[Quote, ...]:
    """The transcript lines a computed answer rests on, as quotes of ``passages``."""
    quotes = []
    for n, messages in computed.quoted:
        span = messages_span(passages[n - 1], messages) if 0 < n <= len(passages) else None
        if span is not None:
            quotes.append(Quote(n, passages[n - 1][span[0] : span[1]], *span))
    return tuple(quotes)


def _graph_evidence(
    services: TurnServices, query: str, timings: dict[str, float]
) -> tuple[GraphRetrieval | None, str | None]:
    """The graph's evidence for ``query``, or None and why the turn degrades.

    Any failure of the graph degrades the turn (it is logged); a turn still fails
    when the documents cannot answer either.
    """
    if not services.settings.GRAPH_ENABLED:
        return None, GRAPH_DISABLED_NOTE
    started = time.perf_counter()
    try:
        found = services.graph.retrieve(query)
    except Exception as exc:  # the graph is optional evidence: fall back, say why
        log.warning("graph retrieval failed; answering from the documents", exc_info=True)
        return None, GRAPH_FAILED_NOTE.format(error=f"{type(exc).__name__}: {exc}")
    finally:
        timings["graph"] = _ms(started)
    if not found.days:
        return None, GRAPH_EMPTY_NOTE
    return found, None


def _engine(services: TurnServices, name: str | None) -> ChatEngine:
    settings = services.settings
    return build_chat_engine(
        name or settings.CHAT_ENGINE,
        completer=services.chat,
        condense_enabled=settings.CONDENSE_ENABLED,
        condense_max_tokens=settings.CONDENSE_MAX_TOKENS,
    )


def _generate(
    services: TurnServices,
    request: TurnRequest,
    prepared: PreparedQuery,
    evidence: TurnRetrieval,
    timings: dict[str, float],
    generating: float,
    *,
    prompt: list[dict[str, str]],
    raw: list[str],
) -> Generator[TurnEvent, None, tuple[str, str | None, StopReason, tuple[Quote, ...]]]:
    """Stream the answer's deltas; return ``(answer, reasoning, stop reason, quotes)``.

    The messages sent to the model are added to ``prompt`` and every delta it wrote, as
    it wrote it, to ``raw`` (for :class:`TurnDebug`).
    """
    settings = services.settings
    passages = evidence.passages
    computed = evidence.graph.computed if evidence.graph is not None else None
    if computed is not None:  # worked out from the archive: no model writes it
        timings.setdefault("first_token", _ms(generating))
        raw.append(computed.text)
        yield TokenDelta(computed.text)
        return computed.text, None, "finished", _computed_quotes(computed, passages)
    splitter = ThinkSplitter()
    guard = RepetitionGuard()
    mode = settings.ANSWER_CITATIONS if passages else "model"
    quoter = (
        QuotedAnswerStream(prepared.question, passages, evidence.topics, ABSTENTION, evidence.names)
        if mode == "quoted"
        else None
    )
    citer = CitationStream(list(passages)) if mode == "attributed" else None
    shown = passages
    if passages and settings.ANSWER_CONTEXT == "sentences":
        conversation = evidence.graph is not None
        shown = select_context(
            prepared.search_query,
            passages,
            max_tokens=settings.GRAPH_ANSWER_CONTEXT_TOKENS
            if conversation
            else settings.ANSWER_CONTEXT_TOKENS,
            conversation=conversation,
        )
    reasoning: list[str] = []
    finish: str | None = None
    deltas = stream_answer(
        services.chat,
        prepared.question,
        shown,
        context_tokens=settings.LLM_CONTEXT_TOKENS,
        answer_tokens=answer_token_cap(settings, request.max_answer_tokens),
        history=prepared.history,
        decoding=answer_decoding(settings),
        quoted=quoter is not None,
        on_prompt=prompt.extend,
    )
    with closing(deltas):  # closing this generator closes the model stream too
        while guard.loop is None:
            try:
                delta = next(deltas)
            except StopIteration as end:
                finish = end.value
                pieces = splitter.flush()
                ended = True
            else:
                raw.append(delta)
                pieces = splitter.feed(delta)
                ended = False
            for piece in pieces:
                if piece.kind == "reasoning":
                    timings.setdefault("first_token", _ms(generating))
                    reasoning.append(piece.text)
                    yield ReasoningDelta(piece.text)
                    continue
                sent = len(guard.text)
                loop = guard.feed(piece.text)
                visible = piece.text if loop is None else piece.text[: max(0, loop.keep - sent)]
                if quoter is not None:
                    visible = quoter.feed(visible)
                elif citer is not None:
                    visible = citer.feed(visible)
                if visible:
                    timings.setdefault("first_token", _ms(generating))
                    yield TokenDelta(visible)
                if loop is not None or (quoter is not None and quoter.gave_up):
                    break
            if ended or (quoter is not None and quoter.gave_up):
                break
    loop = guard.finish()
    answer = guard.trimmed()
    quotes: tuple[Quote, ...] = ()
    if quoter is not None:
        rest = quoter.finish()  # the last sentence, or the whole abstention
        if rest:
            timings.setdefault("first_token", _ms(generating))
            yield TokenDelta(rest)
        answer, quotes = quoter.text, tuple(quoter.quotes)
        if quoter.dropped:
            log.info("answer sentences without a quote, dropped: %r", quoter.dropped)
        if quoter.gave_up:
            log.info(
                "stopped generating after %d sentences in a row without a quote", GIVE_UP_AFTER
            )
    elif citer is not None:
        if citer.raw == answer:
            rest = citer.finish()  # the last sentence's citations
            note = UNSUPPORTED_NOTE if citer.unsupported else ""
            if rest + note:
                yield TokenDelta(rest + note)
            answer = citer.text + note
        else:  # the guard found the loop in text already shown: attribute what it kept
            answer = attribute_answer(answer, citer.passages)
    if loop is not None:
        log.warning("the answer began repeating itself; stopped at %r", loop.repeated)
        stop: StopReason = "repetition"
    elif finish == "length":
        stop = "length"
    else:
        stop = "finished"
    return answer, "".join(reasoning) or None, stop, quotes
