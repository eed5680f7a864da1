"""``varagity reingest``: a reingest backfill launched through the Dagster webserver."""

from __future__ import annotations

from typing import TYPE_CHECKING

from varagity.config import get_settings
from varagity_cli.common import EXIT_FAILED, EXIT_OK, fail

if TYPE_CHECKING:
    from varagity_cli.common import Subparsers


def cmd_reingest(*, partition: list[str] | None, wait: bool) -> int:
    """Launch a reingest backfill through the Dagster webserver; optionally wait for it."""
    from varagity.jobs import CorpusBusy, DagsterClient
    from varagity.jobs.follow import follow_blocking
    from varagity.jobs.ingest import IngestJobs

    settings = get_settings()
    jobs = IngestJobs(DagsterClient.for_settings(settings))
    try:  # refused beside an export or a restore of the documents (varagity.jobs.gate)
        backfill_id = jobs.launch(partition or None, reingest=True, source="cli", add_missing=False)
    except CorpusBusy as exc:
        return fail(f"{exc.code}: {exc}")
    print(f"reingest backfill {backfill_id} launched: {settings.dagster_url}/runs/b/{backfill_id}")
    if not wait:
        return EXIT_OK
    *_, status = follow_blocking(  # its statuses until it has finished; the last
        lambda: jobs.status(backfill_id),
        done=lambda status: status not in ("REQUESTED", "CANCELING", "FAILING"),
        poll_s=2,
    )
    print(f"backfill {backfill_id}: {status}")
    return EXIT_OK if status in ("COMPLETED", "COMPLETED_SUCCESS") else EXIT_FAILED


def register(sub: Subparsers) -> None:
    """Add ``reingest``."""
    reingest = sub.add_parser(
        "reingest", help="re-process files (all by default) with the current ingest settings"
    )
    reingest.add_argument(
        "--partition", action="append", help="a partition key (relative path); repeatable"
    )
    reingest.add_argument("--wait", action="store_true", help="wait for the backfill to finish")
    reingest.set_defaults(func=lambda a: cmd_reingest(partition=a.partition, wait=a.wait))
