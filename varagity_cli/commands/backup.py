"""``varagity backup``: list, verify, export and restore corpus bundles."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, TextIO

from varagity.config import get_settings
from varagity_cli.common import EXIT_FAILED, EXIT_OK, fail

if TYPE_CHECKING:
    from varagity.backup.bundle import BundleVerdict, Corpus
    from varagity.jobs.backup import BackupJobs
    from varagity_cli.common import Subparsers


def _print_verdict(verdict: BundleVerdict, out: TextIO) -> None:
    """One bundle's line: name, size, date, counts and verdict, then why it is refused
    and how its settings drift from here."""
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


def cmd_backup_list(*, corpus: Corpus) -> int:
    """List a corpus's bundles with their cheap verdicts (no stack needed)."""
    from varagity.backup.bundle import exports_dir, list_bundles

    settings = get_settings()
    verdicts = list_bundles(settings, corpus)
    print(f"{exports_dir(settings, corpus)}: {len(verdicts)} bundle(s)")
    for verdict in verdicts:
        _print_verdict(verdict, sys.stdout)
    return EXIT_OK


def cmd_backup_verify(*, corpus: Corpus, name: str) -> int:
    """Check every member's sha256 of one bundle, without restoring it (no stack needed)."""
    from varagity.backup.bundle import resolve_bundle
    from varagity.backup.rows import verify_bundle

    settings = get_settings()
    verdict = verify_bundle(resolve_bundle(settings, corpus, name), settings, corpus)
    _print_verdict(verdict, sys.stdout)
    return EXIT_OK if verdict.ok else EXIT_FAILED


def cmd_backup_export(*, corpus: Corpus, wait: bool) -> int:
    """Launch an export run of a corpus through the Dagster webserver."""
    return _launch_backup_run(corpus, None, wait=wait)


def cmd_backup_restore(*, corpus: Corpus, name: str, wait: bool) -> int:
    """Check a bundle's verdict, then launch a restore run through the Dagster webserver."""
    from varagity.backup.bundle import inspect_bundle, resolve_bundle

    settings = get_settings()
    verdict = inspect_bundle(resolve_bundle(settings, corpus, name), settings, corpus)
    if not verdict.ok:
        _print_verdict(verdict, sys.stderr)
        return EXIT_FAILED
    return _launch_backup_run(corpus, name, wait=wait)


def _launch_backup_run(corpus: Corpus, name: str | None, *, wait: bool) -> int:
    """Export (``name`` None) or restore ``corpus`` as a Dagster run, followed to its end
    with ``wait``; in this process when Dagster is not reachable."""
    from varagity.jobs import CorpusBusy, DagsterClient, DagsterUnavailable
    from varagity.jobs.backup import BackupJobs

    settings = get_settings()
    jobs = BackupJobs(DagsterClient.for_settings(settings))
    what = "export" if name is None else f"restore from {name}"
    try:  # refused beside another writer of the corpus (varagity.jobs.gate)
        run_id = jobs.launch(corpus, name, source="cli")
    except DagsterUnavailable:
        print(
            f"Dagster is not reachable at {settings.dagster_url} (the stack is not up): "
            f"running the {what} of {corpus} in this process (no Dagster run)",
            flush=True,
        )
        return _backup_in_process(corpus, name)
    except CorpusBusy as exc:
        return fail(f"{exc.code}: {exc}")
    print(f"{what} of {corpus}: run {run_id}: {settings.dagster_url}/runs/{run_id}")
    return _follow_backup_run(jobs, run_id) if wait else EXIT_OK


def _follow_backup_run(jobs: BackupJobs, run_id: str) -> int:
    """Print a backup run's progress until it ends; 0 when it succeeded."""
    from varagity.jobs.follow import follow_blocking

    said = ""
    run = None
    for run in follow_blocking(lambda: jobs.read(run_id), done=lambda r: r.done, poll_s=1):
        line = f"{run.status.lower()}"
        if run.progress.phase:
            line += f": {run.progress.phase} {run.progress.done}/{run.progress.total}"
        if line != said:
            print(line, flush=True)
            said = line
    assert run is not None  # the loop ends with the run done
    if run.status == "SUCCESS":
        if run.progress.bundle:
            print(f"bundle: {run.progress.bundle}")
        return EXIT_OK
    return fail(run.error or run.status)


def _print_progress(phase: str, done: int, total: int) -> None:
    if done == total or done % 1000 == 0:
        print(f"{phase} {done}/{total}", flush=True)


def _backup_in_process(corpus: Corpus, name: str | None) -> int:
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
        return fail("graph_disabled: GRAPH_ENABLED is false")
    started_here = settings.DATABASE_URL is None and embedded_postgres_pid(settings) is None
    services = Services.open(settings)
    try:
        if name is None:
            exported = export_corpus(
                corpus, services.settings, services.pg, progress=_print_progress
            )
            verdict = verify_bundle(exported.path, services.settings, corpus)
            _print_verdict(verdict, sys.stdout)
            return EXIT_OK if verdict.ok else EXIT_FAILED
        path = resolve_bundle(services.settings, corpus, name)
        restored = restore_corpus(
            corpus,
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
        said = folder_diff_of(corpus, services.settings, services.pg).summary()
        print(f"the folder against what was restored: {said} (the folder sensor acts on it)")
        return EXIT_OK
    except (BundleError, CorpusBusy) as exc:
        return fail(str(exc))
    finally:
        services.close()
        if started_here:
            stop_embedded_postgres(settings)


def register(sub: Subparsers) -> None:
    """Add ``backup`` with its ``list``, ``verify``, ``export`` and ``restore``."""
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
    b_list.set_defaults(func=lambda a: cmd_backup_list(corpus=a.corpus))
    b_verify = backup_sub.add_parser("verify", help="check every member's sha256 of a bundle")
    b_verify.add_argument("corpus", choices=corpora)
    b_verify.add_argument("name", help="the bundle's file name (see backup list)")
    b_verify.set_defaults(func=lambda a: cmd_backup_verify(corpus=a.corpus, name=a.name))
    b_export = backup_sub.add_parser("export", help="write the corpus into a new bundle")
    b_export.add_argument("corpus", choices=corpora)
    b_restore = backup_sub.add_parser("restore", help="replace the corpus with a bundle")
    b_restore.add_argument("corpus", choices=corpora)
    b_restore.add_argument("name", help="the bundle's file name (see backup list)")
    for launcher in (b_export, b_restore):
        launcher.add_argument(
            "--no-wait", dest="wait", action="store_false", help="launch the run and return"
        )
    b_export.set_defaults(func=lambda a: cmd_backup_export(corpus=a.corpus, wait=a.wait))
    b_restore.set_defaults(
        func=lambda a: cmd_backup_restore(corpus=a.corpus, name=a.name, wait=a.wait)
    )
