"""``varagity graph``: the message graph's builds, rebuilds (of a range of days, or of
every day) and reset, as Dagster runs launched and followed through the stack's
webserver, and its status."""

from __future__ import annotations

import argparse
import functools
import signal
import sys
from datetime import date
from typing import TYPE_CHECKING

from varagity.config import get_settings
from varagity_cli.common import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE, fail

if TYPE_CHECKING:
    from varagity.jobs import Run
    from varagity.jobs.graph import GraphJobs, GraphProgress
    from varagity_cli.common import Subparsers


def _jobs() -> GraphJobs:
    from varagity.jobs import DagsterClient
    from varagity.jobs.graph import GraphJobs

    return GraphJobs(DagsterClient.for_settings(get_settings()))


def _what(run: Run[GraphProgress]) -> str:
    """``build of phone/chat.db``, ``rebuild of days 2026-03-03..2026-03-04``, ``reset``."""
    p = run.progress
    if run.kind == "build":
        return f"build of {p.path}"
    if run.kind == "rebuild":
        days = f"days {p.first_day}..{p.last_day}" if p.first_day else "every day"
        return f"rebuild of {days}"
    return "removal" if run.kind == "remove" else "reset"


def _line(run: Run[GraphProgress]) -> str:
    """The run's state and its days: ``running: 3/8 days processed, 1 processing``."""
    b = run.progress.build
    if b is None or b.total == 0:
        return run.state
    parts = [f"{b.processed}/{b.total} days processed"]
    for count, what in ((b.processing, "processing"), (b.failed, "failed")):
        if count:
            parts.append(f"{count} {what}")
    return f"{run.state}: {', '.join(parts)}"


def _follow(jobs: GraphJobs, runs: list[Run[GraphProgress]]) -> int:
    """Print each run's progress until it ends, one after the other (they take turns on
    the graph's one writer slot); 0 when every one succeeded."""
    from varagity.jobs.follow import follow_blocking

    signal.signal(signal.SIGINT, signal.default_int_handler)
    failed = []
    for first in runs:
        said = ""
        run = first
        read = functools.partial(jobs.read, first.id)
        try:
            for run in follow_blocking(read, done=lambda r: r.done, poll_s=1):
                line = _line(run)
                if line != said:
                    print(f"  {_what(run)}: {line}", flush=True)
                    said = line
        except KeyboardInterrupt:
            print(f"stopped following; run {first.id} goes on ({first.url})")
            return EXIT_INTERRUPTED
        if run.progress.message and run.done:
            print(f"  {run.progress.message}")
        if not run.succeeded:
            failed.append(f"{_what(run)} {run.state}: {run.error or run.status}")
    if failed:
        return fail("; ".join(failed))
    return EXIT_OK


def _day(value: str) -> str:
    """An argparse type: a ``YYYY-MM-DD`` day."""
    try:
        return date.fromisoformat(value).isoformat()
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a day (YYYY-MM-DD)") from None


def cmd_build(
    *, paths: list[str], rebuild: bool, first: str | None, last: str | None, wait: bool
) -> int:
    """Build archives (all by default; a build resumes a killed one), or rebuild the days
    from ``first`` to ``last`` (every day with ``rebuild`` alone) of every archive."""
    from varagity.graph.manifest import day_span, read_manifest
    from varagity.graph.registry import workdir_for
    from varagity.jobs import CorpusBusy
    from varagity.jobs.graph import BuildTargetsRefused, build_targets

    settings = get_settings()
    if not settings.GRAPH_ENABLED:
        return fail("graph_disabled: GRAPH_ENABLED is false", EXIT_USAGE)
    rebuilds = rebuild or first is not None or last is not None
    if rebuilds and paths:
        return fail(
            "a rebuild takes every archive's days in its range: leave out the paths", EXIT_USAGE
        )
    if first is not None and last is not None and first > last:
        return fail(f"--from {first} comes after --to {last}", EXIT_USAGE)
    root = settings.graph_docs_path
    try:
        targets = build_targets(root, None if rebuilds else paths or None)
    except BuildTargetsRefused as exc:
        return fail(f"{exc.code}: {exc}", EXIT_USAGE)
    jobs = _jobs()
    try:  # refused beside an export, a restore or a reset of the graph
        if rebuilds:
            every = first is None and last is None
            held = day_span(read_manifest(workdir_for(settings))) if every else None
            launched = jobs.launch_rebuild(first, last, held=held, source="cli")
        else:
            launched = jobs.launch(root, targets, source="cli")
    except CorpusBusy as exc:
        return fail(f"{exc.code}: {exc}")
    for run in launched.launched:
        print(f"{_what(run)}: run {run.id}: {run.url}")
    for run in launched.in_flight:
        print(f"{_what(run)} is already {run.state}: run {run.id}: {run.url}")
    runs = launched.launched or launched.in_flight
    return _follow(jobs, runs) if wait else EXIT_OK


def cmd_reset(*, yes: bool, wait: bool) -> int:
    """Empty the message graph (its working directory, manifest, caches and stale flag)
    in a Dagster run, keeping the archives; asks first unless ``yes``."""
    from varagity.graph.registry import workdir_for
    from varagity.graph.status import read_graph
    from varagity.jobs import CorpusBusy

    settings = get_settings()
    if not settings.GRAPH_ENABLED:
        return fail("graph_disabled: GRAPH_ENABLED is false", EXIT_USAGE)
    workdir = workdir_for(settings)
    held = read_graph(workdir)
    said = (
        f"Reset the message graph in {workdir}: its {held.days} day(s), {held.entities} "
        f"entities and {held.relations} relations are dropped; the archives in "
        f"{settings.graph_docs_path} are kept (build them to get it back)."
    )
    if not yes:
        if not sys.stdin.isatty():
            return fail(f"{said} Pass --yes to confirm (no terminal to ask on).", EXIT_USAGE)
        answer = input(f"{said}\nType 'reset' to confirm: ")
        if answer.strip() != "reset":
            print("nothing was reset")
            return EXIT_FAILED
    jobs = _jobs()
    try:  # refused beside any other run of the graph
        run = jobs.launch_reset(source="cli")
    except CorpusBusy as exc:
        return fail(f"{exc.code}: {exc}")
    print(f"reset: run {run.id}: {run.url}")
    return _follow(jobs, [run]) if wait else EXIT_OK


def cmd_status() -> int:
    """Print the graph's size, its stale flag and the runs building it (no Dagster run)."""
    from varagity.graph.registry import workdir_for
    from varagity.graph.status import read_graph
    from varagity.jobs import DagsterError
    from varagity.stores.corpus_state import GraphState
    from varagity.stores.postgres import database_url
    from varagity.stores.vector_store import PgVectorStore

    settings = get_settings()
    workdir = workdir_for(settings)
    held = read_graph(workdir)
    when = held.refreshed_at.strftime("%Y-%m-%d %H:%M UTC") if held.refreshed_at else "never"
    print(
        f"{workdir}: {held.days} day(s), {held.messages} messages, {held.entities} entities, "
        f"{held.relations} relations (last built {when})"
    )
    pg = PgVectorStore(database_url(settings), embedding_dim=settings.EMBEDDING_DIM)
    try:
        flag = GraphState(pg).stale()
    finally:
        pg.close()
    if flag is not None:
        since = flag.since.strftime("%Y-%m-%d %H:%M")
        print(f"stale since {since}: {flag.reason} (`varagity graph build --rebuild`)")
    try:
        for run in _jobs().in_flight():
            print(f"{_what(run)}: {_line(run)} (run {run.id})")
    except DagsterError as exc:
        print(f"(no runs listed: {exc})")
    return EXIT_OK


def register(sub: Subparsers) -> None:
    """Add ``graph`` with its ``build``, ``reset`` and ``status``."""
    graph = sub.add_parser(
        "graph",
        help="build, rebuild and reset the message graph (Dagster runs)",
        description="The message graph's runs, launched through the stack's Dagster "
        "webserver and followed to their end: builds of archives in GRAPH_DOCS_PATH, "
        "rebuilds of a range of days (or every day), and a reset that empties the graph "
        "and keeps the archives.",
    )
    graph_sub = graph.add_subparsers(dest="graph_command", required=True)
    build = graph_sub.add_parser(
        "build",
        help="build archives (all by default), or rebuild a range of days",
        description="Build the archives named (relative to GRAPH_DOCS_PATH; a folder means "
        "the archives below it; none: every supported archive): each extracts its new or "
        "changed days, and a killed build resumes. With --rebuild, --from or --to, one "
        "rebuild instead: every archive's days in the range (every day with --rebuild "
        "alone) are extracted again, the other days are left as they are; a rebuild of "
        "every day clears the graph's stale flag.",
    )
    build.add_argument("paths", nargs="*", help="archives or folders under GRAPH_DOCS_PATH")
    build.add_argument(
        "--rebuild", action="store_true", help="extract the days again (every day by default)"
    )
    build.add_argument("--from", dest="first", type=_day, help="a rebuild's first day (YYYY-MM-DD)")
    build.add_argument(
        "--to", dest="last", type=_day, help="a rebuild's last day (YYYY-MM-DD, included)"
    )
    reset = graph_sub.add_parser(
        "reset",
        help="empty the graph, keeping the archives",
        description="Empty the message graph (the engine's working directory with its "
        "cache, the build manifest, the size summary, the stale flag) in a Dagster run; "
        "the archives in GRAPH_DOCS_PATH are kept, and `varagity graph build` gives the "
        "graph back.",
    )
    reset.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    for launcher in (build, reset):
        launcher.add_argument(
            "--no-wait", dest="wait", action="store_false", help="launch the run and return"
        )
    build.set_defaults(
        func=lambda a: cmd_build(
            paths=a.paths, rebuild=a.rebuild, first=a.first, last=a.last, wait=a.wait
        )
    )
    reset.set_defaults(func=lambda a: cmd_reset(yes=a.yes, wait=a.wait))
    status = graph_sub.add_parser("status", help="the graph's size, stale flag and runs")
    status.set_defaults(func=lambda a: cmd_status())
