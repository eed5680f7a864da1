"""Launching and watching Dagster work over its GraphQL API (no Dagster import).

The CLI and the API never run pipeline code themselves: they ask the Dagster
webserver to add ``documents`` partitions and launch backfills of the ingest assets,
exactly as the UI does, then read the backfill's progress back.

Field names follow the schema served by dagster-webserver 1.13 (checked by
introspection): a backfill is a ``PartitionBackfill`` whose ``assetBackfillData``
counts targeted / in-progress / materialized / failed partitions per asset, whose
``runs`` carry the partition (range) they cover in tags, and whose failed runs explain
themselves through ``ExecutionStepFailureEvent`` / ``RunFailureEvent`` in their logs.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import httpx

from varagity.ingest.discovery import relative_path_for
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
    SOURCE_TAG,
    contiguous_groups,
    ingest_batches,
    range_request_tags,
    run_partitions,
)

# BulkActionStatus values after which a backfill launches and changes nothing more.
FINISHED_STATUSES = frozenset(
    {"COMPLETED", "COMPLETED_SUCCESS", "COMPLETED_FAILED", "FAILED", "CANCELED"}
)
# Run every step of a backfill run in the run's own process, as the sensor's
# ingest job (``INGEST_JOB``) does: a subprocess per step would re-import the whole stack
# for every asset of a run (most of a small ingest's latency). This is the config of the
# definitions' default executor; change it with that executor.
IN_PROCESS_RUN_CONFIG: dict[str, Any] = {"execution": {"config": {"in_process": {}}}}
_ADD_BATCH = 100  # addDynamicPartition mutations per GraphQL document
_LOG_PAGE = 1000  # run events per page when looking for a failure
_FAILED_RUNS_EXPLAINED = 20  # failed runs whose logs are read per progress report
_LIST_PAGE = 50  # backfills per page when listing recent jobs
_LIST_PAGES = 4  # pages scanned at most (other tools' backfills are skipped)

JobKind = Literal["ingest", "reingest"]


class DagsterError(RuntimeError):
    """Dagster refused or could not answer the request; the message says why."""


class DagsterUnavailable(DagsterError):
    """The webserver cannot be reached, or what answers at its URL is not Dagster."""


class BackfillNotFound(DagsterError):
    """No backfill has this id."""


@dataclass(frozen=True, slots=True)
class PartitionCounts:
    """How many partitions of one asset a backfill targets, and where they stand."""

    targeted: int
    materialized: int
    failed: int
    in_progress: int


@dataclass(frozen=True, slots=True)
class AssetProgress:
    """One ingest asset's partition counts within a backfill."""

    asset: str
    counts: PartitionCounts


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
class BackfillSummary:
    """What a listing shows of one backfill.

    ``partitions`` are the counts of the final (indexing) asset: a file is materialized
    there once it is searchable (its LLM blurbs follow in the blurb sensor's runs, not
    in the backfill). Times are Unix timestamps (seconds).
    """

    backfill_id: str
    kind: JobKind
    source: str | None
    status: str
    title: str | None
    created_at: float
    ended_at: float | None
    partitions: PartitionCounts

    @property
    def done(self) -> bool:
        """Whether the backfill has finished (successfully or not)."""
        return self.status in FINISHED_STATUSES

    @property
    def succeeded(self) -> bool:
        """Whether it finished with every targeted partition materialized."""
        if self.status == "COMPLETED_SUCCESS":
            return True
        return self.status == "COMPLETED" and self.partitions.failed == 0


@dataclass(frozen=True, slots=True)
class BackfillProgress(BackfillSummary):
    """The full picture of one backfill: targets, per-asset counts, runs and failures."""

    partition_keys: list[str]
    assets: list[AssetProgress]
    runs: list[BackfillRun]
    failures: list[PartitionFailure]
    error: str | None


_SUMMARY_FIELDS = """
  id status timestamp endTimestamp title
  tags { key value }
  assetBackfillData {
    assetBackfillStatuses {
      __typename
      ... on AssetPartitionsStatusCounts {
        assetKey { path }
        numPartitionsTargeted numPartitionsInProgress numPartitionsMaterialized
        numPartitionsFailed
      }
    }
  }
"""

_LAUNCH_BACKFILL = """
mutation Launch($params: LaunchBackfillParams!) {
  launchPartitionBackfill(backfillParams: $params) {
    __typename
    ... on LaunchBackfillSuccess { backfillId }
    ... on PartitionKeysNotFoundError { message }
    ... on PythonError { message }
    ... on UnauthorizedError { message }
    ... on InvalidSubsetError { message }
    ... on RunConflict { message }
    ... on RunConfigValidationInvalid { errors { message } }
  }
}
"""

_LAUNCH_RUN = """
mutation LaunchRun($params: ExecutionParams!) {
  launchRun(executionParams: $params) {
    __typename
    ... on LaunchRunSuccess { run { runId } }
    ... on PythonError { message }
    ... on UnauthorizedError { message }
    ... on InvalidSubsetError { message }
    ... on RunConflict { message }
    ... on PipelineNotFoundError { message }
    ... on RunConfigValidationInvalid { errors { message } }
    ... on InvalidStepError { invalidStepKey }
    ... on InvalidOutputError { invalidOutputName }
    ... on NoModeProvidedError { message }
    ... on PresetNotFoundError { message }
    ... on ConflictingExecutionParamsError { message }
  }
}
"""

_BACKFILL = (
    """
query Backfill($id: String!) {
  partitionBackfillOrError(backfillId: $id) {
    __typename
    ... on PartitionBackfill {"""
    + _SUMMARY_FIELDS
    + """
      partitionNames
      error { message }
      runs { runId status startTime endTime tags { key value } }
    }
    ... on BackfillNotFoundError { message }
    ... on PythonError { message }
  }
}
"""
)

_BACKFILLS = (
    """
query Backfills($cursor: String, $limit: Int) {
  partitionBackfillsOrError(cursor: $cursor, limit: $limit) {
    __typename
    ... on PartitionBackfills { results {"""
    + _SUMMARY_FIELDS
    + """ } }
    ... on PythonError { message }
  }
}
"""
)

_RUN_FAILURE_EVENTS = """
query RunFailure($id: ID!, $after: String, $limit: Int) {
  logsForRun(runId: $id, afterCursor: $after, limit: $limit) {
    __typename
    ... on EventConnection {
      cursor hasMore
      events {
        __typename
        ... on ExecutionStepFailureEvent { stepKey message error { message className } }
        ... on RunFailureEvent { message error { message className } }
      }
    }
    ... on RunNotFoundError { message }
    ... on PythonError { message }
  }
}
"""


def _tags(node: dict[str, Any]) -> dict[str, str]:
    return {t["key"]: t["value"] for t in node.get("tags") or []}


def _error_text(error: dict[str, Any] | None) -> str | None:
    """A PythonError's message, without the ``dagster...Failure:`` prefix of a Failure."""
    if not error:
        return None
    message = str(error.get("message") or "").strip()
    head, sep, rest = message.partition(": ")
    if sep and error.get("className") == "Failure" and head.endswith("Failure"):
        message = rest.strip()
    return message or None


def _counts(node: dict[str, Any]) -> PartitionCounts:
    return PartitionCounts(
        targeted=node["numPartitionsTargeted"],
        materialized=node["numPartitionsMaterialized"],
        failed=node["numPartitionsFailed"],
        in_progress=node["numPartitionsInProgress"],
    )


def _asset_progress(node: dict[str, Any]) -> list[AssetProgress]:
    statuses = (node.get("assetBackfillData") or {}).get("assetBackfillStatuses") or []
    return [
        AssetProgress(asset="/".join(s["assetKey"]["path"]), counts=_counts(s))
        for s in statuses
        if s.get("__typename") == "AssetPartitionsStatusCounts"
    ]


def _summary_fields(node: dict[str, Any]) -> dict[str, Any]:
    """The :class:`BackfillSummary` constructor arguments of a backfill node."""
    tags = _tags(node)
    final = next((a.counts for a in _asset_progress(node) if a.asset == INDEXED_ASSET), None)
    return {
        "backfill_id": node["id"],
        "kind": "reingest" if tags.get(REINGEST_TAG) == "true" else "ingest",
        "source": tags.get(SOURCE_TAG),
        "status": node["status"],
        "title": node.get("title"),
        "created_at": float(node["timestamp"]),
        "ended_at": node.get("endTimestamp"),
        "partitions": final or PartitionCounts(0, 0, 0, 0),
    }


def _is_varagity_job(node: dict[str, Any]) -> bool:
    tags = _tags(node)
    return SOURCE_TAG in tags or REINGEST_TAG in tags


def _run(node: dict[str, Any]) -> BackfillRun:
    tags = _tags(node)
    single = tags.get(PARTITION_TAG)
    return BackfillRun(
        run_id=node["runId"],
        status=node["status"],
        first_partition=single or tags.get(RANGE_START_TAG),
        last_partition=single or tags.get(RANGE_END_TAG),
        started_at=node.get("startTime"),
        ended_at=node.get("endTime"),
    )


class DagsterClient:
    """A thin GraphQL client for the Dagster webserver."""

    def __init__(self, url: str, *, timeout: float = 30.0) -> None:
        """``url`` is the webserver's base URL (the UI's address)."""
        self.url = url.rstrip("/")
        self.timeout = timeout
        self._repository: dict[str, str] | None = None
        # a finished run's error and partitions never change: look them up once per client
        self._run_errors: dict[str, str | None] = {}
        self._run_keys: dict[str, list[str]] = {}

    def query(self, document: str, variables: dict[str, Any] | None = None) -> dict[str, Any]:
        """Run a GraphQL document and return its ``data``.

        Raises:
            DagsterUnavailable: the webserver is unreachable or did not answer GraphQL.
            DagsterError: the webserver rejected the document.
        """
        endpoint = f"{self.url}/graphql"
        try:
            response = httpx.post(
                endpoint,
                json={"query": document, "variables": variables or {}},
                timeout=self.timeout,
            )
        except httpx.HTTPError as exc:
            raise DagsterUnavailable(
                f"Dagster webserver at {self.url} is unreachable: {exc}"
            ) from exc
        try:
            body = response.json()
        except ValueError:
            body = None
        if not isinstance(body, dict) or ("data" not in body and "errors" not in body):
            raise DagsterUnavailable(
                f"{endpoint} answered HTTP {response.status_code} without a GraphQL body; "
                f"is DAGSTER_URL ({self.url}) a Dagster webserver?"
            )
        if body.get("errors"):
            raise DagsterError(
                f"Dagster at {self.url} rejected the request: {body['errors'][0].get('message')}"
            )
        data: dict[str, Any] = body["data"]
        return data

    def repository_selector(self) -> dict[str, str]:
        """The code location and repository that define the ingest assets."""
        if self._repository is None:
            data = self.query(
                "query Repo($path: [String!]!) { assetNodeOrError(assetKey: {path: $path}) "
                "{ __typename ... on AssetNode { repository { name location { name } } } "
                "... on AssetNotFoundError { message } } }",
                {"path": [INDEXED_ASSET]},
            )
            node = data["assetNodeOrError"]
            if node["__typename"] != "AssetNode":
                raise DagsterError(
                    f"Dagster at {self.url} has no asset {INDEXED_ASSET!r}: is the varagity_assets "
                    "code location loaded?"
                )
            repo = node["repository"]
            self._repository = {
                "repositoryName": repo["name"],
                "repositoryLocationName": repo["location"]["name"],
            }
        return self._repository

    def document_partitions(self) -> list[str]:
        """Every partition key of the ``documents`` partitions, in definition order."""
        data = self.query(
            "query Keys($path: [String!]!) { assetNodeOrError(assetKey: {path: $path}) "
            "{ ... on AssetNode { partitionKeys } } }",
            {"path": [INDEXED_ASSET]},
        )
        keys: list[str] = data["assetNodeOrError"].get("partitionKeys") or []
        return keys

    def add_document_partitions(self, partition_keys: Iterable[str]) -> list[str]:
        """Add the ``documents`` partitions that do not exist yet; return the added keys.

        A key the folder sensor adds concurrently counts as present, not as an error.
        """
        existing = set(self.document_partitions())
        missing = list(dict.fromkeys(k for k in partition_keys if k not in existing))
        added: list[str] = []
        selector = self.repository_selector() if missing else {}
        for start in range(0, len(missing), _ADD_BATCH):
            batch = missing[start : start + _ADD_BATCH]
            params = ", ".join(f"$k{i}: String!" for i in range(len(batch)))
            fields = "\n".join(
                f"a{i}: addDynamicPartition(partitionKey: $k{i}, partitionsDefName: $defName, "
                "repositorySelector: $repo) { __typename "
                "... on AddDynamicPartitionSuccess { partitionKey } "
                "... on DuplicateDynamicPartitionError { partitionName } "
                "... on UnauthorizedError { message } ... on PythonError { message } }"
                for i in range(len(batch))
            )
            data = self.query(
                f"mutation Add($defName: String!, $repo: RepositorySelector!, {params}) "
                f"{{ {fields} }}",
                {
                    "defName": DOCUMENTS_PARTITIONS,
                    "repo": selector,
                    **{f"k{i}": key for i, key in enumerate(batch)},
                },
            )
            for i, key in enumerate(batch):
                result = data[f"a{i}"]
                kind = result["__typename"]
                if kind == "AddDynamicPartitionSuccess":
                    added.append(key)
                elif kind != "DuplicateDynamicPartitionError":
                    raise DagsterError(
                        f"Dagster refused to add partition {key!r} to {DOCUMENTS_PARTITIONS}: "
                        f"{result.get('message')}"
                    )
        return added

    def _launch(self, partition_keys: Sequence[str], tags: dict[str, str], title: str) -> str:
        data = self.query(
            _LAUNCH_BACKFILL,
            {
                "params": {
                    "partitionNames": list(partition_keys),
                    "assetSelection": [{"path": [name]} for name in INGEST_ASSETS],
                    "tags": [{"key": k, "value": v} for k, v in tags.items()],
                    "title": title,
                    "runConfigData": IN_PROCESS_RUN_CONFIG,
                }
            },
        )
        result = data["launchPartitionBackfill"]
        if result["__typename"] != "LaunchBackfillSuccess":
            reason = result.get("message") or "; ".join(
                e["message"] for e in result.get("errors") or []
            )
            raise DagsterError(f"Dagster refused the backfill ({result['__typename']}): {reason}")
        backfill_id: str = result["backfillId"]
        return backfill_id

    def launch_ingest(self, partition_keys: Sequence[str], *, source: str = "api") -> str:
        """Ingest these files: add their missing partitions, then backfill the ingest assets.

        Without the reingest tag the assets skip every file whose exact version is
        already indexed, so only new and changed files are processed. Returns the
        backfill id.
        """
        if not partition_keys:
            raise DagsterError("there is nothing to ingest: no partitions were given")
        self.add_document_partitions(partition_keys)
        return self._launch(
            partition_keys,
            {SOURCE_TAG: source},
            f"Varagity ingest of {len(partition_keys)} file(s) ({source})",
        )

    def launch_ingest_runs(
        self, partition_keys: Sequence[str], *, batch_size: int, source: str
    ) -> list[str]:
        """Ingest these files now, in runs of the ingest job the folder sensor would ask for.

        Adds the missing partitions, then submits one run per contiguous range of at
        most ``batch_size`` of them (in the partition set's order, the first run of
        several a half-size one as :func:`~varagity.pipeline.ingest_batches` says; a lone
        file gets a one-partition run), tagged as the sensor tags its batches, so a failed or
        crashed run is re-run by the sensor in the same way. A file an ingest run already
        covers (the folder sensor may have been quicker) is left to that run; the sensor
        likewise leaves a file alone while a run covering it is in flight. Returns the
        ids of the runs launched.
        """
        keys = list(dict.fromkeys(partition_keys))
        if not keys:
            raise DagsterError("there is nothing to ingest: no partitions were given")
        self.add_document_partitions(keys)
        position = {key: i for i, key in enumerate(self.document_partitions())}
        missing = [k for k in keys if k not in position]
        if missing:
            raise DagsterError(f"Dagster has no partition {missing[0]!r} after adding it")
        busy = self._in_flight_ingest_partitions(list(position))
        todo = sorted((k for k in keys if k not in busy), key=position.__getitem__)
        groups = [
            group
            for batch in ingest_batches(todo, batch_size)
            for group in contiguous_groups(batch, position, batch_size)
        ]
        selector = self.repository_selector()
        run_ids = []
        for group in groups:
            tags = {SOURCE_TAG: source}
            if len(group) == 1:
                tags[PARTITION_TAG] = group[0]
            else:
                tags |= {
                    **range_request_tags(group),
                    BATCH_TAG: "true",
                    FILES_TAG: str(len(group)),
                }
            data = self.query(
                _LAUNCH_RUN,
                {
                    "params": {
                        "selector": {**selector, "jobName": INGEST_JOB},
                        "executionMetadata": {
                            "tags": [{"key": k, "value": v} for k, v in tags.items()]
                        },
                    }
                },
            )
            result = data["launchRun"]
            if result["__typename"] != "LaunchRunSuccess":
                reason = result.get("message") or "; ".join(
                    e["message"] for e in result.get("errors") or []
                )
                raise DagsterError(f"Dagster refused the run ({result['__typename']}): {reason}")
            run_ids.append(result["run"]["runId"])
        return run_ids

    def _in_flight_ingest_partitions(self, ordered: list[str]) -> set[str]:
        """Partitions an ingest run is queued for or working on (``ordered``: the
        partition set in its order, to expand ranges): the folder sensor may have asked
        for a just-written file before the upload route did."""
        data = self.query(
            "query Busy($job: String!) { runsOrError(filter: {pipelineName: $job, statuses: "
            "[QUEUED, NOT_STARTED, STARTING, STARTED]}) { ... on Runs { results "
            "{ tags { key value } } } } }",
            {"job": INGEST_JOB},
        )
        position = {key: i for i, key in enumerate(ordered)}
        busy: set[str] = set()
        for run in (data.get("runsOrError") or {}).get("results") or []:
            busy.update(run_partitions(_tags(run), ordered, position) or ())
        return busy

    def launch_reingest(
        self, partition_keys: Sequence[str] | None = None, *, source: str = "cli"
    ) -> str:
        """Backfill the ingest assets over the given (default: all) partitions, forcing
        every file to be re-processed; returns the backfill id.

        The partitions must exist (see :meth:`add_document_partitions`).
        """
        keys = list(partition_keys) if partition_keys is not None else self.document_partitions()
        if not keys:
            raise DagsterError("there is nothing to re-ingest: the corpus has no partitions")
        return self._launch(
            keys,
            {REINGEST_TAG: "true", SOURCE_TAG: source},
            f"Varagity reingest of {len(keys)} file(s) ({source})",
        )

    def _backfill_node(self, backfill_id: str) -> dict[str, Any]:
        if "\x00" in backfill_id:  # Postgres refuses NUL: no backfill can have this id
            raise BackfillNotFound(f"Dagster has no backfill {backfill_id!r}")
        result: dict[str, Any] = self.query(_BACKFILL, {"id": backfill_id})[
            "partitionBackfillOrError"
        ]
        if result["__typename"] == "BackfillNotFoundError":
            raise BackfillNotFound(f"Dagster has no backfill {backfill_id!r}")
        if result["__typename"] != "PartitionBackfill":
            raise DagsterError(f"reading backfill {backfill_id!r} failed: {result.get('message')}")
        return result

    def backfill_status(self, backfill_id: str) -> str:
        """The backfill's status (``REQUESTED``, ``COMPLETED_SUCCESS``, ``FAILED``...)."""
        status: str = self._backfill_node(backfill_id)["status"]
        return status

    def backfill_progress(self, backfill_id: str) -> BackfillProgress:
        """Status, per-asset partition counts, runs and failed partitions of a backfill."""
        node = self._backfill_node(backfill_id)
        runs = [_run(r) for r in node.get("runs") or []]
        runs.sort(key=lambda r: (r.started_at is None, r.started_at or 0.0, r.run_id))
        keys: list[str] = node.get("partitionNames") or []
        return BackfillProgress(
            **_summary_fields(node),
            partition_keys=keys,
            assets=_asset_progress(node),
            runs=runs,
            failures=self._failures(runs, keys),
            error=_error_text(node.get("error")),
        )

    def _failures(self, runs: list[BackfillRun], targeted: list[str]) -> list[PartitionFailure]:
        """Each targeted partition of each failed run, with that run's error."""
        targets = set(targeted)
        out: list[PartitionFailure] = []
        failed = [r for r in runs if r.status in ("FAILURE", "CANCELED")]
        for i, run in enumerate(failed):
            if run.status == "CANCELED":
                error: str | None = "the run was canceled"
            elif i < _FAILED_RUNS_EXPLAINED:
                error = self.run_error(run.run_id)
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
            order = self.document_partitions()
            position = {k: n for n, k in enumerate(order)}
            lo, hi = position.get(first), position.get(last)
            keys = order[lo : hi + 1] if lo is not None and hi is not None else []
        self._run_keys[run.run_id] = keys
        return keys

    def run_error(self, run_id: str) -> str | None:
        """Why a run failed: its step failures' errors, else its run-failure message."""
        if run_id in self._run_errors:
            return self._run_errors[run_id]
        step_errors: list[str] = []
        run_error: str | None = None
        cursor: str | None = None
        while True:
            result = self.query(
                _RUN_FAILURE_EVENTS, {"id": run_id, "after": cursor, "limit": _LOG_PAGE}
            )["logsForRun"]
            if result["__typename"] != "EventConnection":
                raise DagsterError(f"reading the logs of run {run_id} failed: {result['message']}")
            for event in result["events"]:
                kind = event["__typename"]
                if kind == "ExecutionStepFailureEvent":
                    text = _error_text(event.get("error")) or event.get("message")
                    if text:
                        step_errors.append(f"{event.get('stepKey')}: {text}")
                elif kind == "RunFailureEvent":
                    run_error = _error_text(event.get("error")) or event.get("message")
            if not result["hasMore"] or not result["events"]:
                break
            cursor = result["cursor"]
        error = "; ".join(step_errors) or run_error
        self._run_errors[run_id] = error
        return error

    def recent_jobs(self, limit: int = 20) -> list[BackfillSummary]:
        """The newest backfills launched by Varagity (API or CLI), newest first."""
        if limit < 1:
            raise ValueError(f"limit must be at least 1, got {limit}")
        jobs: list[BackfillSummary] = []
        cursor: str | None = None
        for _ in range(_LIST_PAGES):
            result = self.query(_BACKFILLS, {"cursor": cursor, "limit": _LIST_PAGE})[
                "partitionBackfillsOrError"
            ]
            if result["__typename"] != "PartitionBackfills":
                raise DagsterError(f"listing backfills failed: {result.get('message')}")
            page = result["results"]
            jobs.extend(BackfillSummary(**_summary_fields(b)) for b in page if _is_varagity_job(b))
            if len(jobs) >= limit or len(page) < _LIST_PAGE:
                break
            cursor = page[-1]["id"]
        return jobs[:limit]
