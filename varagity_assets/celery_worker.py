"""A Celery worker that executes the documents pipeline's steps (``STEP_EXECUTOR=celery``).

``python -m varagity_assets.celery_worker --queues varagity --concurrency 1`` on a worker
host; ``--queues varagity-index`` on the host that owns the Tantivy index. The app is
built from the same settings as the executor that sends the tasks
(:func:`varagity_assets.executors.celery_app_args`: broker, result backend, late
acknowledgement), and the worker imports the code location and the ingest stages before
it forks its pool, so a step starts warm (as the code server's run workers do).

dagster-celery's own ``dagster-celery worker start`` does the same from a YAML file of
executor config; this one reads the settings every other process reads.
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Sequence

from celery import Celery
from dagster._core.execution.retries import RetryMode
from dagster_celery.make_app import make_app
from dagster_celery.tasks import create_task

from varagity.config import Settings, get_settings
from varagity_assets.code_server import WARM_MODULES
from varagity_assets.executors import RoutedCeleryExecutor


def worker_app(settings: Settings) -> Celery:
    """The Celery app with dagster-celery's ``execute_plan`` task, configured from
    ``settings`` exactly as the executor's."""
    app = make_app(RoutedCeleryExecutor(settings, RetryMode.DISABLED).app_args())
    create_task(app)
    return app


def main(argv: Sequence[str] | None = None) -> None:
    """Run the worker in the foreground until SIGTERM (warm shutdown: the step under way
    finishes; SIGKILL leaves it unacknowledged, for another worker to take)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    settings = get_settings()
    parser.add_argument(
        "--queues", default=settings.CELERY_QUEUE, help="comma-separated queues to consume"
    )
    parser.add_argument("--concurrency", type=int, default=1, help="steps at once")
    parser.add_argument("--hostname", default=None, help="worker name (name@host)")
    parser.add_argument("--loglevel", default="INFO")
    parser.add_argument(
        "--ping",
        metavar="NAME",
        help="instead of working: exit 0 when worker NAME answers through the broker "
        "(a container health check)",
    )
    args = parser.parse_args(argv)
    if args.ping:
        app = worker_app(settings)
        try:
            replies = app.control.ping(destination=[args.ping], timeout=3.0) or []
        finally:
            app.close()
        raise SystemExit(0 if any(args.ping in reply for reply in replies) else 1)
    for module in WARM_MODULES:
        importlib.import_module(module)
    app = worker_app(settings)
    worker_argv = [
        "worker",
        f"--queues={args.queues}",
        f"--concurrency={args.concurrency}",
        f"--loglevel={args.loglevel}",
        "--pool=prefork",
        "--without-gossip",
        "--without-mingle",
    ]
    if args.hostname:
        worker_argv.append(f"--hostname={args.hostname}")
    app.worker_main(argv=worker_argv)


if __name__ == "__main__":
    main()
