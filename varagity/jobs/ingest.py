"""Ingest jobs: Dagster backfills of the ingest assets over ``documents`` partitions (an
ingest of new and changed files, or a reingest of every targeted file), and the runs of
the ingest job the folder sensor would ask for (:meth:`IngestJobs.launch_runs`: an
upload's files, a repair's).

A backfill's progress counts files: per asset, the partitions targeted, materialized,
failed and in progress (a file is searchable once the final, indexing asset is
materialized; its LLM blurbs follow in the blurb sensor's runs, not in the backfill),
its runs with the partition range each covers, and each failed file with its run's
error.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from varagity.ingest.discovery import relative_path_for
from varagity.jobs.gate import BACKUPS, refuse_beside
from varagity.jobs.model import (
    FINISHED_STATUSES,
    AssetProgress,
    PartitionCounts,
    Run,
    backfill_url,
)
from varagity.jobs.transport import BackfillNode, DagsterClient, DagsterError, RunNode
from varagity.pipeline import (
    BATCH_TAG,
    DOCUMENTS_PARTITIONS,
    FILES_TAG,
    INDEXED_ASSET,
    INGEST_ASSETS,
    INGEST_JOB,
    PARTITION_TAG,
    RANGE_END_TAG,
    RANGE_START_TAG,
    REINGEST_TAG,
    SEARCHABLE_ASSET,
    SOURCE_TAG,
    contiguous_groups,
    ingest_batches,
    range_request_tags,
    run_partitions,
)

# Run every step of a backfill run in the run's own process, as the sensor's
# ingest job (``INGEST_JOB``) does: a subprocess per step would re-import the whole stack
# for every asset of a run (most of a small ingest's latency). This is the config of the
# definitions' default executor; change it with that executor.
IN_PROCESS_RUN_CONFIG: dict[str, Any] = {"execution": {"config": {"in_process": {}}}}
_FAILED_RUNS_EXPLAINED = 20  # failed runs whose logs are read per progress report
_LIST_PAGE = 50  # backfills per page when listing recent jobs
_LIST_PAGES = 4  # pages scanned at most (other tools' backfills are skipped)

C = TypeVar("C", bound="BackfillCounts")


@dataclass(frozen=True, slots=True)
class BackfillRun:
    """One run a backfill launched and the partition range it covers."""

    run_id: str
    status: str
    first_partition: str | None
    last_partition: str | None
    started_at: float | None
    ended_at: float | None


@dataclass(frozen=True, slots=True)
class PartitionFailure:
    """A partition whose run failed, with the run's error when its logs give one."""

    partition_key: str
    relative_path: str
    run_id: str
    error: str | None


@dataclass(frozen=True, slots=True)
class BackfillCounts:
    """What a listing shows of a backfill: its title and the counts of the final
    asset (``bm25_index``: a file counted there is searchable)."""

    title: str | None
    files: PartitionCounts


@dataclass(frozen=True, slots=True)
class BackfillProgress(BackfillCounts):
    """The full picture of a backfill: targets, per-asset counts, runs and failures."""

    partition_keys: list[str]
    assets: list[AssetProgress]
    runs: list[BackfillRun]
    failures: list[PartitionFailure]


def _counts(node: BackfillNode) -> BackfillCounts:
    final = next((a.counts for a in node.assets if a.asset == SEARCHABLE_ASSET), None)
    return BackfillCounts(title=node.title, files=final or PartitionCounts(0, 0, 0, 0))


def _backfill_run(node: RunNode) -> BackfillRun:
    single = node.tags.get(PARTITION_TAG)
    return BackfillRun(
        run_id=node.run_id,
        status=node.status,
        first_partition=single or node.tags.get(RANGE_START_TAG),
        last_partition=single or node.tags.get(RANGE_END_TAG),
        started_at=node.started_at,
        ended_at=node.ended_at,
    )


def _is_varagity_job(node: BackfillNode) -> bool:
    return SOURCE_TAG in node.tags or REINGEST_TAG in node.tags


class IngestJobs:
    """Launch, read and list ingest jobs over one client."""

    def __init__(self, client: DagsterClient) -> None:
        """Read and launch through ``client``."""
        self.client = client
        # a finished run's partitions never change: look them up once per adapter
        self._run_keys: dict[str, list[str]] = {}

    def url(self, backfill_id: str) -> str:
        """The backfill's page in the Dagster UI."""
        return backfill_url(self.client.url, backfill_id)

    def _run(self, node: BackfillNode, progress: C, error: str | None) -> Run[C]:
        files = progress.files
        return Run(
            id=node.backfill_id,
            kind="reingest" if node.tags.get(REINGEST_TAG) == "true" else "ingest",
            corpus="rag",
            job=None,
            status=node.status,
            done=node.status in FINISHED_STATUSES,
            succeeded=node.status == "COMPLETED_SUCCESS"
            or (node.status == "COMPLETED" and files.failed == 0),
            created_at=node.created_at,
            started_at=None,
            ended_at=node.ended_at,
            source=node.tags.get(SOURCE_TAG),
            error=error,
            url=self.url(node.backfill_id),
            progress=progress,
            tags=node.tags,
        )

    # --- partitions ----------------------------------------------------------------------
    def partitions(self) -> list[str]:
        """Every partition key of the ``documents`` partitions, in definition order."""
        return self.client.partition_keys(INDEXED_ASSET)

    def add_partitions(self, partition_keys: Sequence[str]) -> list[str]:
        """Add the ``documents`` partitions that do not exist yet; return the added keys.

        A key the folder sensor adds concurrently counts as present, not as an error.
        """
        return self.client.add_dynamic_partitions(
            DOCUMENTS_PARTITIONS, INDEXED_ASSET, partition_keys
        )

    # --- backfills -----------------------------------------------------------------------
    def launch(
        self,
        partition_keys: Sequence[str] | None,
        *,
        reingest: bool = False,
        source: str,
        add_missing: bool = True,
    ) -> str:
        """Backfill the ingest assets over these files' partitions; the backfill id.

        A plain ingest skips every file whose exact version is already indexed, so only
        new and changed files are processed; a ``reingest`` re-processes them all (all
        of the corpus's partitions when ``partition_keys`` is None). With
        ``add_missing`` the missing partitions are added first; without, they must
        exist. Refused beside an export or a restore of the documents.

        Raises:
            CorpusBusy: An export or a restore of the documents is in flight.
            DagsterError: Dagster cannot be reached, refused it, or there is nothing to
                ingest.
        """
        refuse_beside(self.client, "rag", kinds=BACKUPS)
        what = "re-ingest" if reingest else "ingest"
        if partition_keys is None and reingest:
            keys = self.partitions()
            if not keys:
                raise DagsterError("there is nothing to re-ingest: the corpus has no partitions")
        else:
            keys = list(partition_keys or ())
            if not keys:
                raise DagsterError(f"there is nothing to {what}: no partitions were given")
            if add_missing:
                self.add_partitions(keys)
        tags = {SOURCE_TAG: source}
        if reingest:
            tags = {REINGEST_TAG: "true", SOURCE_TAG: source}
        return self.client.launch_backfill(
            keys,
            INGEST_ASSETS,
            tags=tags,
            title=f"Varagity {'reingest' if reingest else 'ingest'} of {len(keys)} file(s) "
            f"({source})",
            run_config=IN_PROCESS_RUN_CONFIG,
        )

    def status(self, backfill_id: str) -> str:
        """The backfill's status (``REQUESTED``, ``COMPLETED_SUCCESS``, ``FAILED``...)."""
        return self.client.backfill(backfill_id).status

    def read(self, backfill_id: str) -> Run[BackfillProgress]:
        """A backfill's status, per-asset partition counts, runs and failed partitions.

        Raises:
            BackfillNotFound: No backfill has this id.
        """
        node = self.client.backfill(backfill_id)
        runs = [_backfill_run(r) for r in node.runs]
        runs.sort(key=lambda r: (r.started_at is None, r.started_at or 0.0, r.run_id))
        counts = _counts(node)
        progress = BackfillProgress(
            title=counts.title,
            files=counts.files,
            partition_keys=node.partition_names,
            assets=node.assets,
            runs=runs,
            failures=self._failures(runs, node.partition_names),
        )
        return self._run(node, progress, node.error)

    def recent(self, limit: int = 20) -> list[Run[BackfillCounts]]:
        """The newest backfills launched by Varagity (API or CLI), newest first."""
        if limit < 1:
            raise ValueError(f"limit must be at least 1, got {limit}")
        jobs: list[Run[BackfillCounts]] = []
        cursor: str | None = None
        for _ in range(_LIST_PAGES):
            page = self.client.backfills(cursor=cursor, limit=_LIST_PAGE)
            jobs.extend(self._run(b, _counts(b), None) for b in page if _is_varagity_job(b))
            if len(jobs) >= limit or len(page) < _LIST_PAGE:
                break
            cursor = page[-1].backfill_id
        return jobs[:limit]

    def _failures(self, runs: list[BackfillRun], targeted: list[str]) -> list[PartitionFailure]:
        """Each targeted partition of each failed run, with that run's error."""
        targets = set(targeted)
        out: list[PartitionFailure] = []
        failed = [r for r in runs if r.status in ("FAILURE", "CANCELED")]
        for i, run in enumerate(failed):
            if run.status == "CANCELED":
                error: str | None = "the run was canceled"
            elif i < _FAILED_RUNS_EXPLAINED:
                error = self.client.run_error(run.run_id)
            else:
                error = None
            out.extend(
                PartitionFailure(key, relative_path_for(key), run.run_id, error)
                for key in self._run_partitions(run)
                if key in targets
            )
        return out

    def _run_partitions(self, run: BackfillRun) -> list[str]:
        """The partition keys a finished run covered (its range, in definition order)."""
        if run.run_id in self._run_keys:
            return self._run_keys[run.run_id]
        first, last = run.first_partition, run.last_partition
        if first is None or last is None:
            keys: list[str] = []
        elif first == last:
            keys = [first]
        else:
            order = self.partitions()
            position = {k: n for n, k in enumerate(order)}
            lo, hi = position.get(first), position.get(last)
            keys = order[lo : hi + 1] if lo is not None and hi is not None else []
        self._run_keys[run.run_id] = keys
        return keys

    # --- runs of the ingest job ----------------------------------------------------------
    def launch_runs(
        self,
        partition_keys: Sequence[str],
        *,
        batch_size: int,
        source: str,
        sizes: Mapping[str, int] | None = None,
        batch_bytes: int | None = None,
    ) -> list[str]:
        """Ingest these files now, in runs of the ingest job the folder sensor would ask for.

        Adds the missing partitions, then submits one run per contiguous range of at
        most ``batch_size`` of them and, given each file's ``sizes`` by partition key, at
        most ``batch_bytes`` of file (in the partition set's order, cut as
        :func:`~varagity.pipeline.ingest_batches` cuts a burst; a lone file gets a
        one-partition run), tagged as the sensor tags its batches, so a failed or crashed
        run is re-run by the sensor in the same way. The first two runs of a burst are
        launched before the partitions of the others are added (a thousand of them keep
        the webserver busy for seconds): its first files are searchable that much
        sooner, and the two runs start together, as the cut wants. A file an ingest run
        already covers (the folder sensor may have been quicker) is left to that run;
        the sensor likewise leaves a file alone while a run covering it is in flight.
        Refused beside an export or a restore of the documents. Returns the ids of the
        runs launched.

        Raises:
            CorpusBusy: An export or a restore of the documents is in flight.
            DagsterError: Dagster cannot be reached or refused a launch.
        """
        keys = list(dict.fromkeys(partition_keys))
        if not keys:
            raise DagsterError("there is nothing to ingest: no partitions were given")
        refuse_beside(self.client, "rag", kinds=BACKUPS)
        batches = ingest_batches(
            keys,
            batch_size,
            weight=None if sizes is None else lambda key: sizes.get(key, 0),
            max_weight=batch_bytes,
        )
        run_ids = self._launch_batches(batches[:2], batch_size, source=source)
        if len(batches) > 2:
            run_ids += self._launch_batches(batches[2:], batch_size, source=source)
        return run_ids

    def _launch_batches(
        self, batches: Sequence[Sequence[str]], batch_size: int, *, source: str
    ) -> list[str]:
        """Add the partitions of ``batches``, then launch a run per contiguous range (in
        the partition set's order, at most ``batch_size``) of each batch's keys, leaving
        out keys a run is busy with."""
        keys = [key for batch in batches for key in batch]
        self.add_partitions(keys)
        position = {key: i for i, key in enumerate(self.partitions())}
        missing = [k for k in keys if k not in position]
        if missing:
            raise DagsterError(f"Dagster has no partition {missing[0]!r} after adding it")
        busy = self._in_flight_partitions(list(position))
        run_ids = []
        for batch in batches:
            todo = sorted((k for k in batch if k not in busy), key=position.__getitem__)
            for group in contiguous_groups(todo, position, batch_size):
                tags = {SOURCE_TAG: source}
                if len(group) == 1:
                    tags[PARTITION_TAG] = group[0]
                else:
                    tags |= {
                        **range_request_tags(group),
                        BATCH_TAG: "true",
                        FILES_TAG: str(len(group)),
                    }
                run_ids.append(self.client.launch_run(INGEST_JOB, tags))
        return run_ids

    def _in_flight_partitions(self, ordered: list[str]) -> set[str]:
        """Partitions an ingest run is queued for or working on (``ordered``: the
        partition set in its order, to expand ranges): the folder sensor may have asked
        for a just-written file before the upload route did."""
        position = {key: i for i, key in enumerate(ordered)}
        busy: set[str] = set()
        for run in self.client.in_flight_runs({"pipelineName": INGEST_JOB}):
            busy.update(run_partitions(run.tags, ordered, position) or ())
        return busy
