"""``varagity doctor``: the invariants a healthy corpus keeps, checked on any stack.

The invariants (each :class:`Problem` names the one it breaks):

* ``indexed_once``: every ingestible file of ``DOCS_PATH`` has exactly its current
  version stored (the ``doc_id`` of its path and content), not an older one, and each
  documents row holds as many chunks as it says.
* ``no_duplicates``: one documents row per path.
* ``no_orphans``: no documents of files that are gone, no BM25 chunks of documents that
  are gone.
* ``stores_agree``: the same chunk ids in Postgres and the BM25 index (Tantivy, or
  Elasticsearch when configured).
* ``searchable``: every stored document has its BM25 entries: no document waits for
  them (the ``bm25_pending`` mark its ingest's ``indexed_document`` step sets and its
  ``bm25_index`` step clears) for longer than the settle time.
* ``no_stuck_runs``: no Dagster run starting or started for longer than a bound, and no
  pool slot still claimed by a run that ended (it blocks every run queued on that pool).
* ``nothing_forgotten``: no store holds a trace of a source the user forgot (the ledger
  of :mod:`varagity.forget`): no documents row, chunk or BM25 entry of a forgotten
  document, no cached preview of its bytes, no source snapshot left unredacted, no
  forgotten day or message in the graph's build manifest, no engine file holding the
  engine's chunk id of forgotten text.

Safe against a live stack: it only reads. Postgres is read in one repeatable-read
snapshot; a document the snapshot and the BM25 index disagree on is read again under
that document's write lock (the lock every writer holds across its BM25 write and its
Postgres transaction), so an ingest in flight is never reported as a mismatch. Files
modified less than ``settle_s`` ago are counted as in flight, not as unindexed, and a
document stored less than ``settle_s`` ago whose BM25 entries are not written yet (an
ingest between its two last steps) is in flight, not a disagreement of the stores.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlsplit

import psutil
import psycopg

from varagity.config import Settings
from varagity.folder_diff import FolderDiff
from varagity.forget import traces
from varagity.ingest.discovery import current_doc_ids, partition_key_for, scan
from varagity.jobs import DagsterClient, DagsterError, DagsterUnavailable, RunNode
from varagity.jobs.follow import follow_blocking
from varagity.jobs.gate import BACKUPS, refuse_beside
from varagity.jobs.ingest import IngestJobs
from varagity.jobs.model import CANCELING_RUN_STATUS, ENDED_RUN_STATUSES
from varagity.jobs.purge import PurgeJobs
from varagity.pipeline import (
    BM25_JOB,
    FILES_TAG,
    PARTITION_TAG,
    SOURCE_TAG,
    contiguous_groups,
    range_request_tags,
)
from varagity.stores.bm25 import BM25Store
from varagity.stores.postgres import connect
from varagity.stores.vector_store import DOCUMENT_LOCK_SPACE

INVARIANTS = (
    "indexed_once",
    "no_duplicates",
    "no_orphans",
    "stores_agree",
    "searchable",
    "no_stuck_runs",
    "nothing_forgotten",
)
#: A run started longer ago than this is stuck (a big blurb batch may legitimately run long).
STARTED_BOUND_S = 3600.0
#: A run still starting after this is stuck (run monitoring fails them after 180 s).
STARTING_BOUND_S = 300.0
#: A slot held this long after its run ended is leaked (run monitoring frees them after 5 s).
SLOT_GRACE_S = 60.0
_SHOWN = 5  # ids shown per problem


@dataclass(frozen=True, slots=True)
class Problem:
    """One broken invariant on one subject (a path, a document, a run, a pool)."""

    invariant: str
    subject: str
    detail: str


@dataclass
class DoctorReport:
    """What the checks found."""

    problems: list[Problem] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    dead_runs: list[str] = field(default_factory=list)
    """Started runs whose worker process is gone (``no_stuck_runs``; repairable)."""
    unsearchable: list[str] = field(default_factory=list)
    """Relative paths of documents stored but never given their BM25 entries
    (``searchable``; repairable: a ``rebuild_bm25_index`` run for their files)."""

    @property
    def ok(self) -> bool:
        """Whether every invariant holds."""
        return not self.problems

    def broken(self) -> dict[str, int]:
        """Problems per invariant (every invariant listed, 0 when it holds)."""
        out = dict.fromkeys(INVARIANTS, 0)
        for p in self.problems:
            out[p.invariant] = out.get(p.invariant, 0) + 1
        return out

    def render(self) -> str:
        """The report as text."""
        lines = ["Counted: " + ", ".join(f"{k} {v}" for k, v in self.counts.items())]
        broken = self.broken()
        for name in INVARIANTS:
            lines.append(f"  {'ok  ' if not broken[name] else 'FAIL'} {name}")
            lines.extend(
                f"       {p.subject}: {p.detail}" for p in self.problems if p.invariant == name
            )
        lines.extend(f"Note: {n}" for n in self.notes)
        lines.append(
            "All invariants hold."
            if self.ok
            else f"{len(self.problems)} problem(s) in {sum(1 for v in broken.values() if v)} "
            "invariant(s)."
        )
        return "\n".join(lines)


def _few(ids: Sequence[str] | set[str]) -> str:
    items = sorted(ids)
    more = f" (+{len(items) - _SHOWN} more)" if len(items) > _SHOWN else ""
    return ", ".join(items[:_SHOWN]) + more


@dataclass
class _Snapshot:
    docs: dict[str, tuple[str, int]]  # doc_id -> (relative_path, n_chunks)
    pg_chunks: dict[str, set[str]]  # doc_id -> chunk ids
    failures: dict[str, str]  # relative_path -> reason of its last failed ingest
    pending: dict[str, float]  # doc_id -> seconds its BM25 entries have been waiting


def _read_pending(
    conn: psycopg.Connection, doc_ids: Sequence[str] | None = None
) -> dict[str, float]:
    """doc_id -> how long (seconds, by the database's clock) each document marked as
    waiting for its BM25 entries has waited; of ``doc_ids`` only, when given."""
    table = conn.execute("SELECT to_regclass('bm25_pending')").fetchone()
    if not table or not table[0]:  # a database migrated before 011
        return {}
    query = "SELECT doc_id, EXTRACT(EPOCH FROM now() - since) FROM bm25_pending"
    rows = (
        conn.execute(query)
        if doc_ids is None
        else conn.execute(query + " WHERE doc_id = ANY(%s)", (list(doc_ids),))
    )
    return {r[0]: float(r[1]) for r in rows}


def _read_postgres(conn: psycopg.Connection) -> _Snapshot:
    docs = {
        r[0]: (r[1], int(r[2]))
        for r in conn.execute("SELECT doc_id, relative_path, n_chunks FROM documents")
    }
    chunks: dict[str, set[str]] = defaultdict(set)
    for chunk_id, doc_id in conn.execute("SELECT chunk_id, doc_id FROM chunks"):
        chunks[doc_id].add(chunk_id)
    failures: dict[str, str] = {}
    has_failures = conn.execute("SELECT to_regclass('ingest_failures')").fetchone()
    if has_failures and has_failures[0]:
        failures = {
            r[0]: f"{r[1]} failed: {r[2]}"
            for r in conn.execute("SELECT relative_path, stage, reason FROM ingest_failures")
        }
    return _Snapshot(docs, chunks, failures, _read_pending(conn))


def _bm25_by_doc(listing: dict[str, str]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = defaultdict(set)
    for chunk_id, doc_id in listing.items():
        out[doc_id].add(chunk_id)
    return out


def _disagreements(
    doc_ids: set[str], pg: dict[str, set[str]], bm25: dict[str, set[str]]
) -> dict[str, tuple[set[str], set[str]]]:
    """doc_id -> (chunk ids only in Postgres, chunk ids only in BM25), where they differ."""
    out = {}
    for doc_id in doc_ids:
        a, b = pg.get(doc_id, set()), bm25.get(doc_id, set())
        if a != b:
            out[doc_id] = (a - b, b - a)
    return out


def _recheck_locked(
    conn: psycopg.Connection, bm25: BM25Store, doc_ids: Sequence[str]
) -> tuple[set[str], dict[str, set[str]], dict[str, set[str]], dict[str, float]]:
    """Documents, Postgres chunks, BM25 chunks and waiting marks of ``doc_ids``, read
    while holding their write locks (no writer is between its BM25 write and its commit)."""
    with conn.transaction():
        conn.execute("SET LOCAL lock_timeout = '30s'")
        for doc_id in sorted(doc_ids):
            conn.execute(
                "SELECT pg_advisory_xact_lock(%s, hashtext(%s))", (DOCUMENT_LOCK_SPACE, doc_id)
            )
        docs = {
            r[0]
            for r in conn.execute(
                "SELECT doc_id FROM documents WHERE doc_id = ANY(%s)", (list(doc_ids),)
            )
        }
        pg: dict[str, set[str]] = defaultdict(set)
        for chunk_id, doc_id in conn.execute(
            "SELECT chunk_id, doc_id FROM chunks WHERE doc_id = ANY(%s)", (list(doc_ids),)
        ):
            pg[doc_id].add(chunk_id)
        in_bm25 = _bm25_by_doc(bm25.chunk_ids(list(doc_ids)))
        pending = _read_pending(conn, doc_ids)
    return docs, pg, in_bm25, pending


def check_stores(
    db_url: str,
    bm25: BM25Store,
    docs_path: Path,
    *,
    settle_s: float = 60.0,
    report: DoctorReport | None = None,
) -> DoctorReport:
    """Check the corpus invariants (all but ``no_stuck_runs``) of one Postgres + BM25 pair.

    Args:
        db_url: The app database.
        bm25: The BM25 store of the same corpus.
        docs_path: ``DOCS_PATH``.
        settle_s: Files modified, and documents stored without their BM25 entries yet,
            more recently than this count as in flight.
        report: Add to this report instead of a new one.
    """
    report = report or DoctorReport()
    files, _ = scan(docs_path)
    now = time.time()
    current = current_doc_ids(files)
    recent = {
        f.relative_path
        for f in files
        if f.relative_path in current and now - f.mtime_ns / 1e9 < settle_s
    }
    with connect(db_url) as conn:
        conn.read_only = True
        conn.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
        with conn.transaction():
            snap = _read_postgres(conn)
        bm25_listing = bm25.chunk_ids()
        in_bm25 = _bm25_by_doc(bm25_listing)

        # stores_agree and BM25 orphans: confirm each disagreement under the writers' lock
        suspects = _disagreements(set(snap.docs) | set(in_bm25), snap.pg_chunks, in_bm25)
        if suspects:
            conn.read_only = False  # advisory locks need no write, but a read-write session
            conn.isolation_level = psycopg.IsolationLevel.READ_COMMITTED
            live_docs, pg_now, bm25_now, pending_now = _recheck_locked(conn, bm25, list(suspects))
            for doc_id in suspects:  # the marks as the writers' lock saw them
                snap.pending.pop(doc_id, None)
            snap.pending.update(pending_now)
            for doc_id, (only_pg, only_bm25) in sorted(
                _disagreements(set(suspects), pg_now, bm25_now).items()
            ):
                if doc_id in live_docs and doc_id in snap.pending:
                    continue  # waits for its BM25 entries: in flight, or ``searchable``
                if doc_id not in live_docs:
                    report.problems.append(
                        Problem(
                            "no_orphans",
                            doc_id,
                            f"{len(only_bm25)} BM25 chunk(s) of a document Postgres does not "
                            f"hold: {_few(only_bm25)}",
                        )
                    )
                    continue
                parts = []
                if only_pg:
                    parts.append(f"{len(only_pg)} only in Postgres: {_few(only_pg)}")
                if only_bm25:
                    parts.append(f"{len(only_bm25)} only in BM25: {_few(only_bm25)}")
                path = snap.docs.get(doc_id, ("?", 0))[0]
                report.problems.append(
                    Problem("stores_agree", f"{path} ({doc_id})", "; ".join(parts))
                )

    in_flight = {d for d, age in snap.pending.items() if age < settle_s and d in snap.docs}
    for doc_id, age in sorted(snap.pending.items()):
        if doc_id in in_flight or doc_id not in snap.docs:
            continue
        path = snap.docs[doc_id][0]
        report.unsearchable.append(path)
        report.problems.append(
            Problem(
                "searchable",
                f"{path} ({doc_id})",
                f"stored {_age(age)} ago but never made searchable (its BM25 entries were "
                "never written): run `varagity doctor --repair`, or the rebuild_bm25_index "
                "job for this file in the Dagster UI",
            )
        )

    by_path: dict[str, list[str]] = defaultdict(list)
    for doc_id, (path, n_chunks) in snap.docs.items():
        by_path[path].append(doc_id)
        held = len(snap.pg_chunks.get(doc_id, ()))
        if held != n_chunks:
            report.problems.append(
                Problem(
                    "indexed_once",
                    f"{path} ({doc_id})",
                    f"documents row says {n_chunks} chunk(s), Postgres holds {held}",
                )
            )
    for path, ids in sorted(by_path.items()):
        if len(ids) > 1:
            report.problems.append(
                Problem("no_duplicates", path, f"{len(ids)} documents rows: {_few(ids)}")
            )
        if path not in current:
            report.problems.append(
                Problem(
                    "no_orphans",
                    path,
                    f"the file is gone but {len(ids)} document(s) remain: {_few(ids)}",
                )
            )
    for path, doc_id in sorted(current.items()):
        stored = by_path.get(path, [])
        if doc_id in stored or path in recent:
            continue
        if path in snap.failures:
            detail = snap.failures[path]
        elif stored:
            detail = f"only an older version is stored ({_few(stored)})"
        else:
            detail = "not indexed"
        report.problems.append(Problem("indexed_once", path, detail))
    report.counts.update(
        files=len(current),
        documents=len(snap.docs),
        postgres_chunks=sum(len(v) for v in snap.pg_chunks.values()),
        bm25_chunks=len(bm25_listing),
    )
    if in_flight:
        report.notes.append(
            f"{len(in_flight)} document(s) stored in the last {settle_s:.0f}s wait for their "
            "BM25 entries (ingest in flight between its two steps)"
        )
    if recent:
        report.notes.append(
            f"{len(recent)} file(s) modified in the last {settle_s:.0f}s were not required to be "
            "indexed yet (ingest in flight)"
        )
    return report


def _age(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def check_runs(
    client: DagsterClient,
    *,
    started_bound_s: float = STARTED_BOUND_S,
    starting_bound_s: float = STARTING_BOUND_S,
    slot_grace_s: float = SLOT_GRACE_S,
    report: DoctorReport | None = None,
) -> DoctorReport:
    """Check ``no_stuck_runs`` through the Dagster webserver's GraphQL API.

    Raises:
        DagsterError: The webserver is unreachable or rejected a query.
    """
    report = report or DoctorReport()
    now = time.time()
    try:
        runs = client.runs({"statuses": ["STARTING", "STARTED", CANCELING_RUN_STATUS]}, limit=500)
    except DagsterUnavailable:
        raise
    except DagsterError as exc:
        report.notes.append(f"could not list runs: {exc}")
        runs = []
    local = _is_local(client.url)
    for run in runs:
        age = now - (run.started_at or run.created_at or now)
        gone = _worker_gone(client, run) if local and run.status == "STARTED" else None
        if gone is not None:
            report.dead_runs.append(run.run_id)
            report.problems.append(Problem("no_stuck_runs", f"run {run.run_id}", gone))
            continue
        bound = started_bound_s if run.status == "STARTED" else starting_bound_s
        if age > bound:
            report.problems.append(
                Problem(
                    "no_stuck_runs",
                    f"run {run.run_id}",
                    f"{run.status} for {age / 60:.0f} min (bound {bound / 60:.0f} min)",
                )
            )
    pools = client.pools()
    holders = sorted({r for p in pools for r in p.active_run_ids})
    states = {node.run_id: node for node in client.runs({"runIds": holders})} if holders else {}
    for pool in pools:
        for run_id in pool.active_run_ids:
            holder = states.get(run_id)
            status, ended = (holder.status, holder.ended_at) if holder else ("DELETED", None)
            if status not in ENDED_RUN_STATUSES and status != "DELETED":
                continue
            if ended is not None and now - float(ended) < slot_grace_s:
                continue
            report.problems.append(
                Problem(
                    "no_stuck_runs",
                    f"pool {pool.key}",
                    f"a slot is still claimed by run {run_id}, which ended ({status}); "
                    f"{pool.pending_steps} step(s) wait for the pool",
                )
            )
    report.counts.update(active_runs=len(runs))
    return report


def _is_local(url: str) -> bool:
    """Whether the Dagster webserver (and so its run workers) is on this machine: only
    then can a worker's process id be looked up here."""
    return (urlsplit(url).hostname or "") in ("127.0.0.1", "localhost", "::1")


def _worker_gone(client: DagsterClient, run: RunNode) -> str | None:
    """Why a started run's worker is gone (its process no longer exists, or the id was
    taken by a process started after the run), or None while it lives or cannot be told."""
    pids = client.worker_pids(run.run_id)
    if not pids:
        return None
    pid = pids[0]
    try:
        process = psutil.Process(pid)
        born = process.create_time()
    except psutil.NoSuchProcess:
        return f"STARTED, but its worker (pid {pid}) is gone"
    except psutil.Error:
        return None
    started = float(run.started_at or run.created_at or 0.0)
    if born > started + 1.0:
        return f"STARTED, but its worker (pid {pid}) is gone (the id is another process's now)"
    return None


def stuck_summary(client: DagsterClient) -> list[str]:
    """One line per stuck run or leaked pool slot (for the health route)."""
    return [f"{p.subject}: {p.detail}" for p in check_runs(client).problems]


def check_forgotten(
    db_url: str,
    bm25: BM25Store,
    settings: Settings | None,
    *,
    report: DoctorReport | None = None,
) -> DoctorReport:
    """``nothing_forgotten``: every store asked for every source the ledger says was
    forgotten (:func:`varagity.forget.traces`); without ``settings`` only Postgres and
    the BM25 index are asked (not the preview cache or the graph's files)."""
    report = report or DoctorReport()
    with connect(db_url) as conn:
        conn.read_only = True
        ledger = conn.execute("SELECT to_regclass('forgotten_sources')").fetchone()
        if ledger is None or ledger[0] is None:  # a database no store has migrated yet
            report.notes.append("no ledger of forgotten sources: nothing was forgotten")
            return report
        found = list(traces(conn, bm25, settings))
        row = conn.execute("SELECT count(*) FROM forgotten_sources").fetchone()
    for trace in found:
        report.problems.append(
            Problem(
                "nothing_forgotten",
                f"{trace.target} (forget {trace.forget_id[:8]})",
                f"{trace.store} still holds it: {trace.detail}",
            )
        )
    report.counts["forgotten_sources"] = int(row[0]) if row else 0
    return report


def run_doctor(
    db_url: str,
    bm25: BM25Store,
    docs_path: Path,
    dagster: DagsterClient | None,
    *,
    settle_s: float = 60.0,
    started_bound_s: float = STARTED_BOUND_S,
    settings: Settings | None = None,
) -> DoctorReport:
    """Every check: the stores, the forgotten sources (the preview cache and the graph's
    files too, with ``settings``), then (with a client) the runs."""
    report = check_stores(db_url, bm25, docs_path, settle_s=settle_s)
    check_forgotten(db_url, bm25, settings, report=report)
    if dagster is not None:
        check_runs(dagster, started_bound_s=started_bound_s, report=report)
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    report.notes.insert(0, f"checked at {stamp}")
    return report


# --- repair -----------------------------------------------------------------------------
#: What ``--repair`` launches runs for; the other invariants are reported, not repaired.
REPAIRED = ("indexed_once", "no_orphans", "searchable", "no_stuck_runs")


@dataclass
class Repairs:
    """What a repair did: the runs it launched (to wait for) and a line per action."""

    launched: list[str] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)


def launch_repairs(
    report: DoctorReport,
    diff: Callable[[], FolderDiff],
    client: DagsterClient,
    *,
    batch_size: int,
    source: str = "doctor",
) -> Repairs:
    """Launch the runs that fix what ``report`` found: started runs whose worker is gone
    are marked canceled first (their partitions and pool slots free), then the folder is
    diffed against the stores (``diff``) and its files ingested and its orphans purged,
    each in a run with its logs, as the folder sensor would; documents stored but never
    made searchable get their BM25 entries written from their Postgres rows in runs of
    ``rebuild_bm25_index`` over their files (:func:`launch_bm25_rebuild`). Files whose
    last ingest failed are not retried (they are listed with why). The runs are launched
    as the API launches them, refused beside an export or a restore of the documents.

    Raises:
        CorpusBusy: An export or a restore of the documents is in flight.
        DagsterError: The webserver is unreachable or refused a run.
    """
    done = Repairs()
    for run_id in report.dead_runs:
        client.mark_run_canceled(run_id)
        done.lines.append(f"run {run_id}: marked canceled (its worker is gone)")
    found = diff()
    if found.to_ingest:
        keys = [partition_key_for(rel) for rel in found.to_ingest]
        runs = IngestJobs(client).launch_runs(keys, batch_size=batch_size, source=source)
        done.launched.extend(runs)
        done.lines.append(
            f"ingest of {len(keys)} file(s) launched in {len(runs)} run(s): {_few(found.to_ingest)}"
        )
    if found.to_purge:
        run_id = PurgeJobs(client).launch(found.to_purge, source=source)
        done.launched.append(run_id)
        done.lines.append(
            f"purge of {len(found.to_purge)} removed file(s) launched (run {run_id}): "
            f"{_few(found.to_purge)}"
        )
    if report.unsearchable:
        paths = sorted(set(report.unsearchable))
        runs = launch_bm25_rebuild(client, paths, batch_size=batch_size, source=source)
        done.launched.extend(runs)
        done.lines.append(
            f"BM25 entries of {len(paths)} stored file(s) rebuilt from Postgres in "
            f"{len(runs)} run(s) of {BM25_JOB}: {_few(paths)}"
        )
    for rel, why in sorted(found.failed.items()):
        done.lines.append(f"{rel}: not retried, its last ingest failed ({why})")
    left = sorted({p.invariant for p in report.problems} - set(REPAIRED))
    if left:
        done.lines.append(f"not repaired here (see docs/operations.md): {', '.join(left)}")
    if not done.lines:
        done.lines.append("nothing to repair")
    return done


def launch_bm25_rebuild(
    client: DagsterClient, relative_paths: Sequence[str], *, batch_size: int, source: str
) -> list[str]:
    """Launch ``rebuild_bm25_index`` over the files at ``relative_paths`` (their
    ``bm25_index`` partitions, one run per contiguous range of at most ``batch_size``):
    each file's BM25 entries written from its stored chunk rows
    (:func:`varagity.ingest.stages.index_stored_paths`) and its waiting mark cleared.
    Refused beside an export or a restore of the documents. The run ids.

    Raises:
        CorpusBusy: An export or a restore of the documents is in flight.
        DagsterError: The webserver is unreachable, refused a run, or has no partition
            of one of the files.
    """
    refuse_beside(client, "rag", kinds=BACKUPS)
    keys = sorted({partition_key_for(rel) for rel in relative_paths})
    position = {key: i for i, key in enumerate(IngestJobs(client).partitions())}
    missing = [k for k in keys if k not in position]
    if missing:
        raise DagsterError(f"Dagster has no partition {missing[0]!r} of a stored file")
    run_ids = []
    for group in contiguous_groups(sorted(keys, key=position.__getitem__), position, batch_size):
        tags = {SOURCE_TAG: source}
        if len(group) == 1:
            tags[PARTITION_TAG] = group[0]
        else:
            tags |= {**range_request_tags(group), FILES_TAG: str(len(group))}
        run_ids.append(client.launch_run(BM25_JOB, tags))
    return run_ids


def wait_for_runs(
    client: DagsterClient, run_ids: Sequence[str], *, timeout_s: float, poll_s: float = 2.0
) -> dict[str, str]:
    """Wait until every run of ``run_ids`` has ended (or ``timeout_s`` passed); their
    statuses."""
    deadline = time.monotonic() + timeout_s

    def settled(statuses: dict[str, str]) -> bool:
        ended = all(statuses.get(r) in ENDED_RUN_STATUSES for r in run_ids)
        return ended or time.monotonic() > deadline

    *_, statuses = follow_blocking(
        lambda: client.run_statuses(run_ids), done=settled, poll_s=poll_s
    )
    return statuses
