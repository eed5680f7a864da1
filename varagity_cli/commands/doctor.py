"""``varagity doctor``: the corpus invariants, checked read-only, and ``--repair``."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from varagity.config import get_settings
from varagity_cli.common import EXIT_FAILED, EXIT_OK

if TYPE_CHECKING:
    from varagity.doctor import DoctorReport
    from varagity_cli.common import Subparsers

EXIT_RUNS_UNCHECKED = 2
"""Every check passed but the Dagster run checks, which could not reach Dagster."""


def cmd_doctor(
    *,
    settle: float,
    stuck_after: float,
    no_runs: bool,
    repair: bool,
    repair_timeout: float,
) -> int:
    """Check the corpus and run invariants (read-only; safe on a live stack)."""
    from varagity.doctor import check_runs, run_doctor
    from varagity.jobs import DagsterClient, DagsterError
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
            settle_s=settle,
            settings=settings,
        )
    finally:
        bm25.close()
    unchecked = False
    if not no_runs:
        try:
            check_runs(
                DagsterClient.for_settings(settings),
                started_bound_s=stuck_after,
                report=report,
            )
        except DagsterError as exc:
            report.notes.append(f"runs not checked: {exc}")
            unchecked = True
    print(report.render())
    if repair and not report.ok:
        if unchecked:
            print("error: --repair launches runs through Dagster, which is not reachable")
            return EXIT_FAILED
        return _repair(report, settle=settle, repair_timeout=repair_timeout)
    if not report.ok:
        return EXIT_FAILED
    return EXIT_RUNS_UNCHECKED if unchecked else EXIT_OK


def _repair(report: DoctorReport, *, settle: float, repair_timeout: float) -> int:
    """``doctor --repair``: launch the runs that fix ``report``, wait for them, check
    again; the exit status is the second check's."""
    from varagity.doctor import launch_repairs, run_doctor, wait_for_runs
    from varagity.ingest.reconcile import diff_folder
    from varagity.jobs import CorpusBusy, DagsterClient, DagsterError
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
    except (DagsterError, CorpusBusy) as exc:
        print(f"error: the repair could not launch its runs: {exc}", file=sys.stderr)
        return EXIT_FAILED
    finally:
        pg.close()
    print("\nRepair:")
    for line in repairs.lines:
        print(f"  {line}")
    if repairs.launched:
        print(f"waiting for {len(repairs.launched)} run(s) (at most {repair_timeout:.0f} s)")
        statuses = wait_for_runs(client, repairs.launched, timeout_s=repair_timeout)
        for run_id in repairs.launched:
            print(f"  run {run_id}: {statuses.get(run_id, 'unknown')}")
    bm25 = open_bm25_store(settings)
    try:
        again = run_doctor(
            database_url(settings),
            bm25,
            settings.docs_path,
            client,
            settle_s=settle,
            settings=settings,
        )
    finally:
        bm25.close()
    print("\nAfter the repair:")
    print(again.render())
    return EXIT_OK if again.ok else EXIT_FAILED


def register(sub: Subparsers) -> None:
    """Add ``doctor``."""
    doctor = sub.add_parser(
        "doctor",
        help="check the corpus invariants (indexed once, stores agree, no orphans, no stuck "
        "runs); read-only, safe on a live stack; exit 1 when one is broken",
    )
    doctor.add_argument(
        "--settle",
        type=float,
        default=60.0,
        help="files modified, and documents stored without their BM25 entries yet, less "
        "than this many seconds ago count as in flight (default 60)",
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
        "documents of removed files, write the BM25 entries of files stored but never made "
        "searchable, mark runs whose worker is gone canceled), wait for them and check again",
    )
    doctor.add_argument(
        "--repair-timeout",
        type=float,
        default=900.0,
        help="how long --repair waits for its runs, in seconds (default 900)",
    )
    doctor.set_defaults(
        func=lambda a: cmd_doctor(
            settle=a.settle,
            stuck_after=a.stuck_after,
            no_runs=a.no_runs,
            repair=a.repair,
            repair_timeout=a.repair_timeout,
        )
    )
