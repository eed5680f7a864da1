"""The Dagster webserver's GraphQL API, spoken here and nowhere else (no Dagster import).

The CLI and the API never run pipeline code themselves: they ask the webserver, through
its guarded front, to add partitions and launch runs and backfills, exactly as the UI
does, and read them back. This module holds every GraphQL document and the one HTTP
call; its typed calls answer with plain records (:class:`RunNode`,
:class:`BackfillNode`) that the kinds' adapters (:mod:`varagity.jobs.ingest`,
``graph``, ``backup``, ``purge``) turn into :class:`~varagity.jobs.model.Run`. Only
modules of :mod:`varagity.jobs` import it (an import-linter contract); the rest of the
code reaches it through the package.

Field names follow the schema served by dagster-webserver 1.13 (checked by
introspection): a backfill is a ``PartitionBackfill`` whose ``assetBackfillData``
counts targeted / in-progress / materialized / failed partitions per asset, whose
``runs`` carry the partition (range) they cover in tags, and whose failed runs explain
themselves through ``ExecutionStepFailureEvent`` / ``RunFailureEvent`` in their logs.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import httpx

from varagity.jobs.model import IN_FLIGHT_RUN_STATUSES, AssetProgress, PartitionCounts
from varagity.pipeline import CONTEXTUALIZE_JOB, EVAL_ASSETS, INDEXED_ASSET, INGEST_JOB

if TYPE_CHECKING:
    from varagity.config import Settings

_ADD_BATCH = 100  # addDynamicPartition mutations per GraphQL document
_LOG_PAGE = 1000  # run events per page
_WORKER_LOGS = 60  # first run events where a run worker names its process id
_RECENT_RUNS = 20  # finished runs whose step durations /metrics averages


class DagsterError(RuntimeError):
    """Dagster refused or could not answer the request; the message says why."""


class DagsterUnavailable(DagsterError):
    """The webserver cannot be reached, or what answers at its URL is not Dagster."""


class BackfillNotFound(DagsterError):
    """No backfill has this id."""


class RunNotFound(DagsterError):
    """No run has this id (or the run is not of the kind asked for)."""


class RunEnded(DagsterError):
    """The run has already ended: there is nothing left to terminate."""


class TerminateFailed(DagsterError):
    """Dagster could not terminate the run (``reason`` says why); it may have ended."""

    def __init__(self, run_id: str, reason: str) -> None:
        super().__init__(f"Dagster could not terminate run {run_id}: {reason}")
        self.reason = reason


@dataclass(frozen=True, slots=True)
class RunNode:
    """One Dagster run as the webserver lists it."""

    run_id: str
    job: str
    status: str
    tags: dict[str, str]
    assets: tuple[str, ...]
    """The asset keys it materializes (``assetSelection``; empty for an op job)."""
    created_at: float
    started_at: float | None
    ended_at: float | None


@dataclass(frozen=True, slots=True)
class BackfillNode:
    """One partition backfill; a listing's leaves ``partition_names``, ``runs`` and
    ``error`` empty."""

    backfill_id: str
    status: str
    title: str | None
    tags: dict[str, str]
    created_at: float
    ended_at: float | None
    assets: list[AssetProgress]
    partition_names: list[str]
    runs: list[RunNode]
    error: str | None


@dataclass(frozen=True, slots=True)
class Pool:
    """A concurrency pool: which runs hold its slots, and how many steps wait for one."""

    key: str
    active_run_ids: list[str]
    pending_steps: int


@dataclass(frozen=True, slots=True)
class PipelineReading:
    """What Dagster says of the pipeline at one moment, for ``/metrics``."""

    runs_by_status: dict[str, int]
    """Runs waiting or working, by status (every status of
    :data:`~varagity.jobs.model.IN_FLIGHT_RUN_STATUSES`)."""
    step_seconds: dict[str, float]
    """Mean duration of each step (an asset) over the newest finished ingest and
    contextualize runs, by step key."""
    eval_gates: dict[tuple[str, str], bool]
    """``(asset, check) -> passed`` for the evaluation gates that have run."""


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

_RUN_FIELDS = (
    "runId status jobName creationTime startTime endTime tags { key value } assetSelection { path }"
)

_BACKFILL = (
    """
query Backfill($id: String!) {
  partitionBackfillOrError(backfillId: $id) {
    __typename
    ... on PartitionBackfill {"""
    + _SUMMARY_FIELDS
    + f"""
      partitionNames
      error {{ message }}
      runs {{ {_RUN_FIELDS} }}
    }}
    ... on BackfillNotFoundError {{ message }}
    ... on PythonError {{ message }}
  }}
}}
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

_RUNS = f"""
query Runs($filter: RunsFilter, $limit: Int) {{
  runsOrError(filter: $filter, limit: $limit) {{
    __typename
    ... on Runs {{ results {{ {_RUN_FIELDS} }} }}
    ... on InvalidPipelineRunsFilterError {{ message }}
    ... on PythonError {{ message }}
  }}
}}
"""

_RUN = f"""
query Run($id: ID!) {{
  runOrError(runId: $id) {{
    __typename
    ... on Run {{ {_RUN_FIELDS} }}
    ... on RunNotFoundError {{ message }}
    ... on PythonError {{ message }}
  }}
}}
"""

_RUN_STATUSES = """
query Statuses($ids: [String!]) {
  runsOrError(filter: {runIds: $ids}) { ... on Runs { results { runId status } } }
}
"""

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

_RUN_LOG = """
query RunLog($id: ID!, $after: String, $limit: Int) {
  logsForRun(runId: $id, afterCursor: $after, limit: $limit) {
    __typename
    ... on EventConnection {
      cursor hasMore
      events { __typename ... on MessageEvent { message } }
    }
    ... on RunNotFoundError { message }
    ... on PythonError { message }
  }
}
"""

_FIRST_LOGS = """
query FirstLogs($id: ID!, $limit: Int) {
  logsForRun(runId: $id, limit: $limit) {
    ... on EventConnection { events { ... on MessageEvent { message } } }
  }
}
"""
#: How a run worker names itself in its first log lines ("Executing steps in process
#: (pid: 1234)", "... parent process (pid: 1234)").
_WORKER_PID = re.compile(r"\(pid: (\d+)\)")

_TERMINATE = """
mutation Terminate($id: String!, $policy: TerminateRunPolicy!) {
  terminateRun(runId: $id, terminatePolicy: $policy) {
    __typename
    ... on TerminateRunFailure { message }
    ... on RunNotFoundError { message }
    ... on UnauthorizedError { message }
    ... on PythonError { message }
  }
}
"""

_POOLS = """
{ instance { concurrencyLimits {
    concurrencyKey slotCount activeSlotCount activeRunIds pendingStepCount
} } }
"""

_PIPELINE_READING = """
query PipelineReading($ingest: String!, $contextualize: String!, $recent: Int!,
                      $evalAssets: [AssetKeyInput!]!) {
  QUEUED: runsOrError(filter: {statuses: [QUEUED]}) { ... on Runs { count } }
  NOT_STARTED: runsOrError(filter: {statuses: [NOT_STARTED]}) { ... on Runs { count } }
  STARTING: runsOrError(filter: {statuses: [STARTING]}) { ... on Runs { count } }
  STARTED: runsOrError(filter: {statuses: [STARTED]}) { ... on Runs { count } }
  ingest: runsOrError(filter: {pipelineName: $ingest, statuses: [SUCCESS, FAILURE]},
                      limit: $recent) {
    ... on Runs { results { stepStats { stepKey startTime endTime } } }
  }
  contextualize: runsOrError(filter: {pipelineName: $contextualize,
                                      statuses: [SUCCESS, FAILURE]}, limit: $recent) {
    ... on Runs { results { stepStats { stepKey startTime endTime } } }
  }
  assetNodes(assetKeys: $evalAssets) {
    assetKey { path }
    assetChecksOrError {
      ... on AssetChecks { checks { name executionForLatestMaterialization { status } } }
    }
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


def _refusal(result: dict[str, Any]) -> str:
    """What a launch mutation's error result says."""
    return str(result.get("message") or "; ".join(e["message"] for e in result.get("errors") or []))


def _run_node(node: dict[str, Any]) -> RunNode:
    return RunNode(
        run_id=node["runId"],
        job=node["jobName"],
        status=node["status"],
        tags=_tags(node),
        assets=tuple("/".join(a["path"]) for a in node.get("assetSelection") or []),
        created_at=float(node["creationTime"]),
        started_at=node.get("startTime"),
        ended_at=node.get("endTime"),
    )


def _asset_progress(node: dict[str, Any]) -> list[AssetProgress]:
    statuses = (node.get("assetBackfillData") or {}).get("assetBackfillStatuses") or []
    return [
        AssetProgress(
            asset="/".join(s["assetKey"]["path"]),
            counts=PartitionCounts(
                targeted=s["numPartitionsTargeted"],
                materialized=s["numPartitionsMaterialized"],
                failed=s["numPartitionsFailed"],
                in_progress=s["numPartitionsInProgress"],
            ),
        )
        for s in statuses
        if s.get("__typename") == "AssetPartitionsStatusCounts"
    ]


def _backfill_node(node: dict[str, Any]) -> BackfillNode:
    return BackfillNode(
        backfill_id=node["id"],
        status=node["status"],
        title=node.get("title"),
        tags=_tags(node),
        created_at=float(node["timestamp"]),
        ended_at=node.get("endTimestamp"),
        assets=_asset_progress(node),
        partition_names=node.get("partitionNames") or [],
        runs=[_run_node(r) for r in node.get("runs") or []],
        error=_error_text(node.get("error")),
    )


def _mean_step_seconds(runs: list[dict[str, Any]]) -> dict[str, float]:
    durations: dict[str, list[float]] = {}
    for run in runs:
        for step in run["stepStats"]:
            if step["startTime"] is not None and step["endTime"] is not None:
                durations.setdefault(step["stepKey"], []).append(
                    step["endTime"] - step["startTime"]
                )
    return {key: sum(v) / len(v) for key, v in durations.items()}


class DagsterClient:
    """A thin GraphQL client for the Dagster webserver, through its guarded front."""

    def __init__(self, url: str, *, timeout: float = 30.0, api_key: str | None = None) -> None:
        """``url`` is the Dagster UI's address (``DAGSTER_URL``: the front that guards
        the webserver); ``api_key`` goes with every request as a bearer token when the
        front asks for one (``API_KEY``)."""
        self.url = url.rstrip("/")
        self.timeout = timeout
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._repository: dict[str, str] | None = None
        # a finished run's error never changes: look it up once per client
        self._run_errors: dict[str, str | None] = {}

    @classmethod
    def for_settings(cls, settings: Settings, *, timeout: float = 30.0) -> DagsterClient:
        """A client of ``settings.dagster_url`` carrying ``settings.API_KEY``."""
        return cls(settings.dagster_url, timeout=timeout, api_key=settings.API_KEY)

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
                headers=self._headers,
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
        if isinstance(body, dict) and {"code", "message"} <= body.keys():
            raise DagsterUnavailable(  # the front's refusal: a wrong key or Host name
                f"the Dagster UI's front at {self.url} refused the request "
                f"(HTTP {response.status_code} {body['code']}): {body['message']}"
            )
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

    def version(self) -> str:
        """The webserver's Dagster version."""
        version: str = self.query("{ version }")["version"]
        return version

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

    # --- partitions --------------------------------------------------------------------
    def partition_keys(self, asset: str) -> list[str]:
        """Every partition key of ``asset``'s partitions, in definition order."""
        data = self.query(
            "query Keys($path: [String!]!) { assetNodeOrError(assetKey: {path: $path}) "
            "{ ... on AssetNode { partitionKeys } } }",
            {"path": [asset]},
        )
        keys: list[str] = data["assetNodeOrError"].get("partitionKeys") or []
        return keys

    def add_dynamic_partitions(
        self, definition: str, asset: str, partition_keys: Iterable[str]
    ) -> list[str]:
        """Add the keys of the dynamic partitions ``definition`` (read through one of its
        assets, ``asset``) that do not exist yet; return the added keys. A key a sensor
        adds concurrently counts as present, not as an error."""
        existing = set(self.partition_keys(asset))
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
                    "defName": definition,
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
                        f"Dagster refused to add partition {key!r} to {definition}: "
                        f"{result.get('message')}"
                    )
        return added

    # --- launches ----------------------------------------------------------------------
    def launch_run(
        self, job: str, tags: dict[str, str], run_config: dict[str, Any] | None = None
    ) -> str:
        """Launch one run of ``job`` with ``tags`` (and ``run_config``); its run id."""
        params: dict[str, Any] = {
            "selector": {**self.repository_selector(), "jobName": job},
            "executionMetadata": {"tags": [{"key": k, "value": v} for k, v in tags.items()]},
        }
        if run_config is not None:
            params["runConfigData"] = run_config
        result = self.query(_LAUNCH_RUN, {"params": params})["launchRun"]
        if result["__typename"] != "LaunchRunSuccess":
            raise DagsterError(
                f"Dagster refused the run ({result['__typename']}): {_refusal(result)}"
            )
        run_id: str = result["run"]["runId"]
        return run_id

    def launch_backfill(
        self,
        partition_keys: Sequence[str],
        assets: Sequence[str],
        *,
        tags: dict[str, str],
        title: str,
        run_config: dict[str, Any],
    ) -> str:
        """Backfill ``assets`` over ``partition_keys`` (which must exist); its id."""
        params = {
            "partitionNames": list(partition_keys),
            "assetSelection": [{"path": [name]} for name in assets],
            "tags": [{"key": k, "value": v} for k, v in tags.items()],
            "title": title,
            "runConfigData": run_config,
        }
        result = self.query(_LAUNCH_BACKFILL, {"params": params})["launchPartitionBackfill"]
        if result["__typename"] != "LaunchBackfillSuccess":
            raise DagsterError(
                f"Dagster refused the backfill ({result['__typename']}): {_refusal(result)}"
            )
        backfill_id: str = result["backfillId"]
        return backfill_id

    # --- backfills ---------------------------------------------------------------------
    def backfill(self, backfill_id: str) -> BackfillNode:
        """One backfill with its partitions, runs and error.

        Raises:
            BackfillNotFound: No backfill has this id.
        """
        if "\x00" in backfill_id:  # Postgres refuses NUL: no backfill can have this id
            raise BackfillNotFound(f"Dagster has no backfill {backfill_id!r}")
        result = self.query(_BACKFILL, {"id": backfill_id})["partitionBackfillOrError"]
        if result["__typename"] == "BackfillNotFoundError":
            raise BackfillNotFound(f"Dagster has no backfill {backfill_id!r}")
        if result["__typename"] != "PartitionBackfill":
            raise DagsterError(f"reading backfill {backfill_id!r} failed: {result.get('message')}")
        return _backfill_node(result)

    def backfills(self, *, cursor: str | None, limit: int) -> list[BackfillNode]:
        """A page of backfills, newest first, after ``cursor`` (a backfill id)."""
        result = self.query(_BACKFILLS, {"cursor": cursor, "limit": limit})[
            "partitionBackfillsOrError"
        ]
        if result["__typename"] != "PartitionBackfills":
            raise DagsterError(f"listing backfills failed: {result.get('message')}")
        return [_backfill_node(node) for node in result["results"]]

    # --- runs --------------------------------------------------------------------------
    def runs(self, run_filter: dict[str, Any], limit: int | None = None) -> list[RunNode]:
        """The runs a ``RunsFilter`` matches (at most ``limit``), as Dagster orders them."""
        result = self.query(_RUNS, {"filter": run_filter, "limit": limit})["runsOrError"]
        if result["__typename"] != "Runs":
            raise DagsterError(f"listing runs failed: {result.get('message')}")
        return [_run_node(node) for node in result["results"]]

    def in_flight_runs(self, run_filter: dict[str, Any] | None = None) -> list[RunNode]:
        """The runs queued, starting or started now (of ``run_filter``'s, when given)."""
        return self.runs({**(run_filter or {}), "statuses": list(IN_FLIGHT_RUN_STATUSES)})

    def run(self, run_id: str) -> RunNode:
        """One run.

        Raises:
            RunNotFound: No run has this id.
        """
        if "\x00" in run_id:  # Postgres refuses NUL: no run can have this id
            raise RunNotFound(f"Dagster has no run {run_id!r}")
        result = self.query(_RUN, {"id": run_id})["runOrError"]
        if result["__typename"] == "RunNotFoundError":
            raise RunNotFound(f"Dagster has no run {run_id!r}")
        if result["__typename"] != "Run":
            raise DagsterError(f"reading run {run_id!r} failed: {result.get('message')}")
        return _run_node(result)

    def run_statuses(self, run_ids: Sequence[str]) -> dict[str, str]:
        """Run id -> Dagster status of each of ``run_ids`` that exists."""
        if not run_ids:
            return {}
        found = self.query(_RUN_STATUSES, {"ids": list(run_ids)})["runsOrError"]
        return {r["runId"]: r["status"] for r in found.get("results") or []}

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

    def log_messages(self, run_id: str, after: str | None) -> tuple[list[str], str | None]:
        """The run's log messages after the cursor ``after`` (None: from its start), and
        the cursor to read on from."""
        cursor = after
        messages: list[str] = []
        while True:
            result = self.query(_RUN_LOG, {"id": run_id, "after": cursor, "limit": _LOG_PAGE})[
                "logsForRun"
            ]
            if result["__typename"] != "EventConnection":
                raise DagsterError(f"reading the log of run {run_id} failed: {result['message']}")
            messages.extend(
                event["message"]
                for event in result["events"]
                if event["__typename"] == "LogMessageEvent" and event.get("message")
            )
            cursor = result["cursor"] or cursor
            if not result["hasMore"] or not result["events"]:
                break
        return messages, cursor

    def worker_pids(self, run_id: str, *, first: int = _WORKER_LOGS) -> list[int]:
        """The process ids the run's worker logged in its ``first`` events (when it began
        executing), in order."""
        data = self.query(_FIRST_LOGS, {"id": run_id, "limit": first})["logsForRun"]
        return [
            int(found.group(1))
            for event in data.get("events") or []
            if (found := _WORKER_PID.search(event.get("message") or ""))
        ]

    def terminate(self, run_id: str) -> None:
        """Ask Dagster to stop a run: a started one is interrupted, a queued one canceled
        before it starts.

        Raises:
            RunNotFound: No run has this id.
            TerminateFailed: Dagster could not terminate it (it may have ended).
        """
        result = self.query(_TERMINATE, {"id": run_id, "policy": "SAFE_TERMINATE"})["terminateRun"]
        kind = result["__typename"]
        if kind == "RunNotFoundError":
            raise RunNotFound(f"Dagster has no run {run_id!r}")
        if kind == "TerminateRunFailure":
            raise TerminateFailed(run_id, result["message"])
        if kind != "TerminateRunSuccess":
            raise DagsterError(f"terminating run {run_id} failed: {result.get('message')}")

    def mark_run_canceled(self, run_id: str) -> None:
        """Mark a run whose worker is gone as canceled at once (nothing is interrupted:
        there is nobody left to interrupt), so its pool slots and partitions free."""
        result = self.query(_TERMINATE, {"id": run_id, "policy": "MARK_AS_CANCELED_IMMEDIATELY"})[
            "terminateRun"
        ]
        if result["__typename"] != "TerminateRunSuccess":
            raise DagsterError(f"marking run {run_id} canceled failed: {result.get('message')}")

    # --- the instance ------------------------------------------------------------------
    def pools(self) -> list[Pool]:
        """Every concurrency pool with the runs that hold its slots."""
        limits = self.query(_POOLS)["instance"]["concurrencyLimits"]
        return [
            Pool(
                key=p["concurrencyKey"],
                active_run_ids=list(p["activeRunIds"]),
                pending_steps=p["pendingStepCount"],
            )
            for p in limits
        ]

    def pipeline_reading(self, recent_runs: int = _RECENT_RUNS) -> PipelineReading:
        """Queue depth, recent step durations and the evaluation gates, in one query."""
        data = self.query(
            _PIPELINE_READING,
            {
                "ingest": INGEST_JOB,
                "contextualize": CONTEXTUALIZE_JOB,
                "recent": recent_runs,
                "evalAssets": [{"path": [name]} for name in EVAL_ASSETS],
            },
        )
        gates: dict[tuple[str, str], bool] = {}
        for node in data["assetNodes"]:
            asset = "/".join(node["assetKey"]["path"])
            for check in (node["assetChecksOrError"] or {}).get("checks", []):
                execution = check["executionForLatestMaterialization"]
                if execution and execution["status"] in (
                    "SUCCEEDED",
                    "FAILED",
                    "EXECUTION_FAILED",
                ):
                    gates[(asset, check["name"])] = execution["status"] == "SUCCEEDED"
        runs = data["ingest"].get("results", []) + data["contextualize"].get("results", [])
        return PipelineReading(
            runs_by_status={s: int(data[s].get("count", 0)) for s in IN_FLIGHT_RUN_STATUSES},
            step_seconds=_mean_step_seconds(runs),
            eval_gates=gates,
        )
