"""``varagity ask``: one question answered over a corpus; and how a chat turn is shown
in the terminal (:func:`render_turn`, which ``varagity chat`` shares; the sections of
``--verbose`` 1 and 2 are :mod:`varagity_cli.render`'s)."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, TextIO

from varagity.config import RETRIEVAL_METHODS, get_settings
from varagity_cli.common import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    add_verbose,
    fail,
    open_services,
)
from varagity_cli.render import (
    badges,
    graph_section,
    prompt_section,
    raw_section,
    timings_section,
    trace_section,
)

if TYPE_CHECKING:
    from varagity.chat.turn import Corpus, TurnDone, TurnEvent, TurnRetrieval
    from varagity.records import Quote
    from varagity_cli.common import Subparsers


def cmd_ask(
    *,
    question: str,
    k: int,
    method: str | None,
    corpus: Corpus,
    show_reasoning: bool,
    verbose: int = 0,
) -> int:
    """Answer a question over the corpus, streaming to stdout, then list the sources
    (and with ``verbose``, how the turn went: :func:`render_turn`).

    Runs the same turn as the chat API (:func:`varagity.chat.turn.run_turn`).
    """
    from varagity.chat.turn import TurnRequest, run_turn

    try:
        request = TurnRequest(
            question=question, method=method, k=k, corpus=corpus, debug=verbose >= 2
        )
    except ValueError as exc:
        return fail(str(exc), EXIT_USAGE)
    with open_services(get_settings()) as services:
        events = run_turn(services, request)
        return render_turn(events, show_reasoning=show_reasoning, verbose=verbose)


def render_turn(
    events: Iterable[TurnEvent],
    *,
    show_reasoning: bool = False,
    verbose: int = 0,
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> int:
    """Print a turn as ``varagity ask`` shows it; the exit status (1 on an error event).

    The answer streams to ``out``, then the numbered sources (cited ones starred). A
    reasoning model's thinking never reaches ``out``: it is hidden, or with
    ``show_reasoning`` written to ``err`` after a ``reasoning:`` prefix (dimmed on a
    terminal). Why generation stopped early, if it did, is noted on ``err``.

    With ``verbose`` 1 the sources are followed on ``out`` by the retrieval trace table
    and the stage timings, with 2 also by the prompt and the model's raw output when the
    turn recorded them (``TurnRequest.debug``); see :mod:`varagity_cli.render`.
    """
    from varagity.chat.turn import ReasoningDelta, TokenDelta, TurnDone, TurnError, TurnRetrieval

    out = out or sys.stdout
    err = err or sys.stderr
    dim, plain = ("\033[2m", "\033[0m") if err.isatty() else ("", "")
    evidence: TurnRetrieval | None = None
    thinking = False
    for event in events:
        if isinstance(event, TurnRetrieval):
            evidence = event
            if event.degraded:
                print(f"note: {event.degraded}", file=err)
            if event.condensed_query:
                print(f"(searched for: {event.condensed_query})", file=err)
        elif isinstance(event, ReasoningDelta):
            if show_reasoning:
                err.write(f"{dim}{'' if thinking else 'reasoning: '}{event.text}{plain}")
                err.flush()
                thinking = True
        elif isinstance(event, TokenDelta):
            if thinking:
                err.write("\n")
                thinking = False
            out.write(event.text)
            out.flush()
        elif isinstance(event, TurnError):
            print(f"\nerror ({event.code}): {event.message}", file=err)
            return EXIT_FAILED
        elif isinstance(event, TurnDone):
            assert evidence is not None  # the runner sends the evidence first
            _print_sources(evidence, set(event.cited), out, event.quotes)
            if evidence.index_as_of is not None:
                print(f"index as of {format_index_as_of(evidence.index_as_of)}", file=out)
            if event.stop_reason == "repetition":
                print(
                    "(stopped: the answer began repeating itself; without the repeats it "
                    f"reads: {event.answer!r})",
                    file=err,
                )
            elif event.stop_reason == "length":
                print("(stopped at the LLM_MAX_TOKENS cap)", file=err)
            if verbose >= 1:
                print(_debug_sections(evidence, event, verbose), file=out)
    return EXIT_OK


def _debug_sections(evidence: TurnRetrieval, done: TurnDone, verbose: int) -> str:
    """What ``--verbose`` adds after the sources: the trace and timings (1), the prompt
    and the raw output (2)."""
    if evidence.graph is not None:
        sections = [graph_section(evidence.graph, query=evidence.query)]
    else:
        sections = [trace_section(evidence.chunks, method=evidence.method, query=evidence.query)]
    sections.append(timings_section(done.timings_ms))
    if verbose >= 2 and done.debug is not None:
        sections += [prompt_section(done.debug.messages), raw_section(done.debug.raw)]
    return "\n".join(sections)


def _print_sources(
    evidence: TurnRetrieval, cited: set[int], out: TextIO, quotes: Sequence[Quote] = ()
) -> None:
    """The numbered sources (cited ones starred), each with what the answer quotes of it."""
    from varagity.generation.quotes import quoted_texts

    def print_quotes(n: int) -> None:
        for text in quoted_texts(quotes, n):
            print(f'       "{text}"', file=out)

    print("\n\nSources:", file=out)
    chunks = evidence.chunks
    for n, day in enumerate(evidence.days, start=1):
        mark = "*" if n in cited else " "
        print(f" {mark}[{n}] {day.thread_name}, {day.span} ({day.doc_key})", file=out)
        print_quotes(n)
    if evidence.days:
        print("  (day-grain: each source is one conversation-day)", file=out)
        return
    for n, chunk in enumerate(chunks, start=1):
        rec = chunk.record
        mark = "*" if n in cited else " "
        page = f", p. {rec.page}" if rec.page is not None else ""
        line = (
            f" {mark}[{n}] {rec.relative_path}{page} (chunk {rec.chunk_index}) "
            f"{badges(chunk.trace)}"
        )
        print(line, file=out)
        print_quotes(n)
    if not chunks:
        print("  (none: the corpus has nothing matching, or is empty)", file=out)


def format_index_as_of(value: datetime, now: datetime | None = None) -> str:
    """``3 Dec 14:02`` in local time (``3 Dec 2025 14:02`` in another year)."""
    local = value.astimezone()
    year = "" if local.year == (now or datetime.now(local.tzinfo)).year else f" {local.year}"
    return f"{local.day} {local:%b}{year} {local:%H:%M}"


def register(sub: Subparsers) -> None:
    """Add ``ask``."""
    ask = sub.add_parser("ask", help="answer a question with numbered sources")
    ask.add_argument("question")
    ask.add_argument("-k", type=int, default=5)
    ask.add_argument("--method", choices=list(RETRIEVAL_METHODS))
    ask.add_argument(
        "--corpus",
        choices=["rag", "graph"],
        default="rag",
        help="answer from the documents (rag) or the message graph (graph)",
    )
    ask.add_argument(
        "--show-reasoning",
        action="store_true",
        help="write a reasoning model's thinking to stderr (hidden by default)",
    )
    add_verbose(ask)
    ask.set_defaults(
        func=lambda a: cmd_ask(
            question=a.question,
            k=a.k,
            method=a.method,
            corpus=a.corpus,
            show_reasoning=a.show_reasoning,
            verbose=a.verbose,
        )
    )
