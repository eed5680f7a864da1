"""``varagity evaluation``: answer evaluations (Dagster runs of ``evaluate_answers``)
launched, followed, shown, listed and killed through the Dagster webserver."""

from __future__ import annotations

import signal
from datetime import datetime
from typing import TYPE_CHECKING

from varagity.config import get_settings
from varagity_cli.common import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE, fail

if TYPE_CHECKING:
    from varagity.jobs import Run
    from varagity.jobs.evaluation import EvaluationJobs, EvaluationProgress
    from varagity_cli.common import Subparsers


def _jobs() -> EvaluationJobs:
    from varagity.jobs import DagsterClient
    from varagity.jobs.evaluation import EvaluationJobs

    return EvaluationJobs(DagsterClient.for_settings(get_settings()))


def _figures(run: Run[EvaluationProgress]) -> str:
    f = run.progress.figures
    if f is None:
        return "-"
    return (
        f"n {f.n}, correctness {f.answer_correctness:.3f}, fully correct "
        f"{f.fully_correct:.3f}, citations {f.citation_validity:.3f}, abstention "
        f"{f.abstention_accuracy:.3f}, loops {f.loops}, first token p50 "
        f"{f.first_token_p50_ms:.0f} ms"
    )


def cmd_launch(*, suite: str | None, wait: bool) -> int:
    """Launch an answer evaluation; with ``wait`` print each question as it is answered
    and the figures, 0 when the run succeeded."""
    from varagity.eval.answers import answer_suite_root
    from varagity.jobs import CorpusBusy
    from varagity.jobs.follow import follow_blocking

    path = None
    if suite is not None:
        try:
            path = answer_suite_root(suite)
        except (ValueError, OSError) as exc:  # a SuiteError is a ValueError
            return fail(f"invalid_suite: {exc}", EXIT_USAGE)
    jobs = _jobs()
    try:  # refused while a restore of the documents is in flight (varagity.jobs.gate)
        run_id = jobs.launch(path, source="cli")
    except CorpusBusy as exc:
        return fail(f"{exc.code}: {exc}")
    run = jobs.read(run_id)
    print(f"answer evaluation of {path or 'the golden suite'}: run {run_id}: {run.url}")
    if not wait:
        return EXIT_OK
    # Ctrl-C stops following (the run goes on), also where this process was started
    # with SIGINT ignored (a shell's background job)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    printed, state = 0, ""
    try:
        for run in follow_blocking(lambda: jobs.read(run_id), done=lambda r: r.done, poll_s=1):
            for line in run.progress.lines[printed:]:
                print(f"  {line}", flush=True)
            printed = len(run.progress.lines)
            if run.state != state:
                print(run.state, flush=True)
                state = run.state
    except KeyboardInterrupt:
        print(f"stopped following; run {run_id} goes on (`varagity evaluation kill {run_id}`)")
        return EXIT_INTERRUPTED
    if run.progress.figures is not None:
        print(f"figures: {_figures(run)}")
    return EXIT_OK if run.succeeded else fail(run.error or f"the evaluation {run.state}")


def cmd_show(*, run_id: str) -> int:
    """Print one answer evaluation."""
    from varagity.jobs import RunNotFound

    try:
        run = _jobs().read(run_id)
    except RunNotFound as exc:
        return fail(str(exc), EXIT_USAGE)
    progress = run.progress
    print(f"run {run.id}: {run.state} ({run.status}), from {run.source or '?'}: {run.url}")
    print(f"suite: {progress.suite or 'the golden suite'}")
    print(f"questions: {progress.done}/{progress.total}  {progress.question or ''}".rstrip())
    print(f"figures: {_figures(run)}")
    if run.error:
        print(f"error: {run.error}")
    return EXIT_OK


def cmd_kill(*, run_id: str) -> int:
    """Stop a queued or running answer evaluation."""
    from varagity.jobs import RunEnded, RunNotFound

    try:
        run = _jobs().kill(run_id)
    except RunNotFound as exc:
        return fail(str(exc), EXIT_USAGE)
    except RunEnded as exc:
        return fail(str(exc), EXIT_FAILED)
    print(f"run {run.id}: termination requested (now {run.status})")
    return EXIT_OK


def cmd_list(*, limit: int) -> int:
    """Print the newest answer evaluations, one a line."""
    for run in _jobs().recent(limit):
        when = datetime.fromtimestamp(run.created_at).strftime("%Y-%m-%d %H:%M")
        p = run.progress
        figures = p.figures
        said = f"correctness {figures.answer_correctness:.3f}" if figures else ""
        print(f"{run.id}  {when}  {run.state:<9}  {p.done}/{p.total}  {said}".rstrip())
    return EXIT_OK


def register(sub: Subparsers) -> None:
    """Add ``evaluation`` with its ``launch``, ``show``, ``kill`` and ``list``."""
    evaluation = sub.add_parser(
        "evaluation",
        help="answer evaluations of the live index, as Dagster runs",
        description="Answer a golden suite on the live index through the stack's Dagster "
        "(the evaluate_answers job: the answers scored, the answer gates checked). "
        "`varagity eval` runs evaluations offline instead.",
    )
    ev_sub = evaluation.add_subparsers(dest="evaluation_command", required=True)
    launch = ev_sub.add_parser("launch", help="launch an evaluation and follow it")
    launch.add_argument("--suite", help="a suite folder (default: eval_suites/sample)")
    launch.add_argument(
        "--no-wait", dest="wait", action="store_false", help="launch the run and return"
    )
    launch.set_defaults(func=lambda a: cmd_launch(suite=a.suite, wait=a.wait))
    show = ev_sub.add_parser("show", help="one evaluation: state, questions, figures")
    show.add_argument("run_id")
    show.set_defaults(func=lambda a: cmd_show(run_id=a.run_id))
    kill = ev_sub.add_parser("kill", help="stop a queued or running evaluation")
    kill.add_argument("run_id")
    kill.set_defaults(func=lambda a: cmd_kill(run_id=a.run_id))
    listing = ev_sub.add_parser("list", help="the newest evaluations")
    listing.add_argument("--limit", type=int, default=10)
    listing.set_defaults(func=lambda a: cmd_list(limit=a.limit))
