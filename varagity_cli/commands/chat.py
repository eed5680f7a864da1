"""``varagity chat``: a conversation in the terminal, saved like the web client's turns,
with ``/good`` and ``/bad`` to rate its answers."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, TextIO

from varagity.config import RETRIEVAL_METHODS, get_settings
from varagity_cli.commands.ask import render_turn
from varagity_cli.common import EXIT_OK, EXIT_USAGE, add_verbose, open_services

if TYPE_CHECKING:
    from varagity.chat.turn import Corpus, TurnDone, TurnEvent, TurnRetrieval
    from varagity.services import Services
    from varagity.stores.conversation_store import ConversationStore
    from varagity_cli.common import Subparsers

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


def cmd_chat(
    *,
    k: int | None,
    method: str | None,
    corpus: Corpus,
    conversation: str | None,
    show_reasoning: bool,
    verbose: int = 0,
) -> int:
    """A conversation in the terminal: each line a question, answered and saved like the
    web client's turns (see :func:`chat_loop`)."""
    import signal

    from varagity.stores.conversation_store import ConversationStore

    # Ctrl-C is how an answer is stopped, so it must raise here even where the parent
    # started this process with SIGINT ignored (a shell's background job does that)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    with open_services(get_settings()) as services:
        return chat_loop(
            services,
            ConversationStore(services.pg),
            method=method,
            k=k,
            corpus=corpus,
            conversation_id=conversation,
            show_reasoning=show_reasoning,
            verbose=verbose,
        )


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
    verbose: int = 0,
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
    ``verbose`` adds what ``varagity ask --verbose`` adds after each answer's sources.

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
            return EXIT_USAGE
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
            return EXIT_OK
        except KeyboardInterrupt:  # at the prompt: a fresh line, as a shell does
            print(f"\n({CHAT_HELP})", file=err)
            continue
        question = line.strip()
        if not question:
            continue
        if question in ("/quit", "/exit"):
            return EXIT_OK
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
                question=question,
                history=earlier,
                method=method,
                k=k,
                corpus=corpus,
                debug=verbose >= 2,
            )
        except (ValueError, ConversationNotFound) as exc:
            print(f"error: {exc}", file=err)
            continue
        turn = _Turn()
        events = run_turn(services, request)
        try:
            render_turn(
                turn.watch(events),
                show_reasoning=show_reasoning,
                verbose=verbose,
                out=out,
                err=err,
            )
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


def register(sub: Subparsers) -> None:
    """Add ``chat``."""
    chat = sub.add_parser(
        "chat",
        help="a multi-turn conversation in the terminal, saved like the web client's",
        description=f"Ask a question per line; follow-ups see the conversation. {CHAT_HELP}.",
    )
    chat.add_argument("-k", type=int, default=None)
    chat.add_argument("--method", choices=list(RETRIEVAL_METHODS))
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
    add_verbose(chat)
    chat.set_defaults(
        func=lambda a: cmd_chat(
            k=a.k,
            method=a.method,
            corpus=a.corpus,
            conversation=a.conversation,
            show_reasoning=a.show_reasoning,
            verbose=a.verbose,
        )
    )
