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

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import httpx

from varagity.graph.progress import BuildProgress, parse_progress
from varagity.ingest.discovery import relative_path_for
from varagity.pipeline import (
    ARCHIVE_TAG,
    BACKUP_ASSET,
    BACKUP_BUNDLE_PREFIX,
    BACKUP_JOB,
    BATCH_TAG,
    BUNDLE_TAG,
    CONTEXTUALIZE_JOB,
    CORPUS_TAG,
    DOCUMENTS_PARTITIONS,
    EVAL_ASSETS,
    FILES_TAG,
    GRAPH_ASSETS,
    GRAPH_BUILD_JOB,
    GRAPH_PARTITIONS,
    GRAPH_REMOVE_JOB,
    INDEXED_ASSET,
    INGEST_ASSETS,
    INGEST_JOB,
    PARTITION_TAG,
    PURGE_JOB,
    RANGE_END_TAG,
    RANGE_START_TAG,
    REINGEST_TAG,
    RESTORE_JOB,
    SOURCE_TAG,
    STAGE_GRAPH,
    STAGE_TAG,
    contiguous_groups,
    corpus_of_run,
    ingest_batches,
    parse_backup_progress,
    parse_reconcile_line,
    range_request_tags,
    run_partitions,
)

if TYPE_CHECKING:
    from varagity.config import Settings

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

#: The jobs that write the message graph: build one archive, take removed ones out.
GRAPH_JOBS = (GRAPH_BUILD_JOB, GRAPH_REMOVE_JOB)
#: Run statuses of a run that is queued for, or doing, its work.
IN_FLIGHT_RUN_STATUSES = ("QUEUED", "NOT_STARTED", "STARTING", "STARTED")
#: Run statuses after which a run changes nothing more.
ENDED_RUN_STATUSES = frozenset({"SUCCESS", "FAILURE", "CANCELED"})


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


@dataclass(frozen=True, slots=True)
class GraphRun:
    """One run of a message-graph job (a build of one archive, or a removal).

    Times are Unix timestamps (seconds).
    """

    run_id: str
    job: str
    status: str
    partition_key: str | None
    tags: dict[str, str]
    created_at: float
    started_at: float | None
    ended_at: float | None

    @property
    def kind(self) -> Literal["build", "remove"]:
        """``build`` (one archive into the graph) or ``remove`` (removed archives out)."""
        return "remove" if self.job == GRAPH_REMOVE_JOB else "build"

    @property
    def relative_path(self) -> str | None:
        """The archive a build run reads, relative to ``GRAPH_DOCS_PATH``."""
        return relative_path_for(self.partition_key) if self.partition_key else None

    @property
    def source(self) -> str | None:
        """Who launched it (the ``varagity/source`` tag: sensor, api, upload)."""
        return self.tags.get(SOURCE_TAG)

    @property
    def done(self) -> bool:
        """Whether the run has ended (it will not change any more)."""
        return self.status in ENDED_RUN_STATUSES


@dataclass(frozen=True, slots=True)
class GraphRunLog:
    """What a graph run's log says so far: its latest progress line (parsed) and its
    latest log message."""

    progress: BuildProgress | None
    message: str | None


@dataclass(frozen=True, slots=True)
class BackupRunLog:
    """What a backup or restore run's log says so far: its latest progress report
    (``phase``, ``done`` of ``total``), the bundle an export wrote, its latest message."""

    phase: str | None
    done: int
    total: int
    bundle: str | None
    message: str | None
    reconcile: dict[str, int] | None = None
    """Once a restore has committed: what its folder holds that it does not
    (:func:`~varagity.pipeline.reconcile_line`)."""


#: What each job's run is, as a holder of its corpus is named (:meth:`CorpusRun.holder`).
_WHAT = {
    BACKUP_JOB: "an export",
    RESTORE_JOB: "a restore",
    GRAPH_BUILD_JOB: "a graph build",
    GRAPH_REMOVE_JOB: "a graph source removal",
    INGEST_JOB: "an ingest",
    CONTEXTUALIZE_JOB: "a blurb run",
    PURGE_JOB: "a purge",
}


@dataclass(frozen=True, slots=True)
class CorpusRun:
    """A run that writes, exports or restores one corpus (``rag`` or ``graph``):
    what :meth:`DagsterClient.in_flight_corpus_runs` finds, and every backup run.
    Times are Unix timestamps (seconds)."""

    run_id: str
    job: str
    status: str
    corpus: str
    tags: dict[str, str]
    assets: tuple[str, ...]
    created_at: float
    started_at: float | None
    ended_at: float | None

    @property
    def kind(self) -> Literal["export", "restore", "other"]:
        """``export`` (a ``backup_bundle`` run), ``restore``, or another writer."""
        if self.job == RESTORE_JOB:
            return "restore"
        if self.job == BACKUP_JOB or BACKUP_ASSET in self.assets:
            return "export"
        return "other"

    @property
    def bundle(self) -> str | None:
        """The bundle a restore reads (its file name)."""
        return self.tags.get(BUNDLE_TAG)

    @property
    def source(self) -> str | None:
        """Who launched it (the ``varagity/source`` tag: api, cli, schedule...)."""
        return self.tags.get(SOURCE_TAG)

    @property
    def done(self) -> bool:
        """Whether the run has ended (it will not change any more)."""
        return self.status in ENDED_RUN_STATUSES

    def holder(self) -> str:
        """The run as a ``corpus_busy`` answer names it: ``an ingest (run 1a2b...)``."""
        if self.kind == "export":
            what = "an export"
        elif self.job in _WHAT:
            what = _WHAT[self.job]
        elif self.corpus == "rag":
            what = "an ingest" if "dagster/backfill" in self.tags else "a documents run"
        else:
            what = "a graph run"
        return f"{what} (run {self.run_id})"


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


_RUN_FIELDS = "runId status jobName creationTime startTime endTime tags { key value }"

_CORPUS_RUN_FIELDS = _RUN_FIELDS + " assetSelection { path }"


def _runs_query(name: str, fields: str) -> str:
    """A GraphQL query for the runs a ``RunsFilter`` matches, each with ``fields``."""
    return f"""
query {name}($filter: RunsFilter, $limit: Int) {{
  runsOrError(filter: $filter, limit: $limit) {{
    __typename
    ... on Runs {{ results {{ {fields} }} }}
    ... on InvalidPipelineRunsFilterError {{ message }}
    ... on PythonError {{ message }}
  }}
}}
"""


def _run_query(name: str, fields: str) -> str:
    """A GraphQL query for one run by id, with ``fields``."""
    return f"""
query {name}($id: ID!) {{
  runOrError(runId: $id) {{
    __typename
    ... on Run {{ {fields} }}
    ... on RunNotFoundError {{ message }}
    ... on PythonError {{ message }}
  }}
}}
"""


_CORPUS_RUNS = _runs_query("CorpusRuns", _CORPUS_RUN_FIELDS)
_CORPUS_RUN = _run_query("CorpusRun", _CORPUS_RUN_FIELDS)
_GRAPH_RUNS = _runs_query("GraphRuns", _RUN_FIELDS)
_GRAPH_RUN = _run_query("GraphRun", _RUN_FIELDS)

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
query FirstLogs($id: ID!) {
  logsForRun(runId: $id, limit: 60) {
    ... on EventConnection { events { ... on MessageEvent { message } } }
  }
}
"""
#: How a run worker names itself in its first log lines ("Executing steps in process
#: (pid: 1234)", "... parent process (pid: 1234)").
_WORKER_PID = re.compile(r"\(pid: (\d+)\)")
_RUN_STATUSES = """
query Statuses($ids: [String!]) {
  runsOrError(filter: {runIds: $ids}) { ... on Runs { results { runId status } } }
}
"""
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


def _graph_run(node: dict[str, Any]) -> GraphRun:
    tags = _tags(node)
    return GraphRun(
        run_id=node["runId"],
        job=node["jobName"],
        status=node["status"],
        partition_key=tags.get(PARTITION_TAG),
        tags=tags,
        created_at=float(node["creationTime"]),
        started_at=node.get("startTime"),
        ended_at=node.get("endTime"),
    )


def _corpus_run(node: dict[str, Any]) -> CorpusRun | None:
    """The run as a :class:`CorpusRun`, or ``None`` when it touches no corpus."""
    tags = _tags(node)
    assets = tuple("/".join(a["path"]) for a in node.get("assetSelection") or [])
    corpus = corpus_of_run(node["jobName"], tags, assets)
    if corpus is None:
        return None
    return CorpusRun(
        run_id=node["runId"],
        job=node["jobName"],
        status=node["status"],
        corpus=corpus,
        tags=tags,
        assets=assets,
        created_at=float(node["creationTime"]),
        started_at=node.get("startTime"),
        ended_at=node.get("endTime"),
    )


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
        # a finished run's error and partitions never change: look them up once per client
        self._run_errors: dict[str, str | None] = {}
        self._run_keys: dict[str, list[str]] = {}
        # where this client's reading of each run's log stopped, and what it said so far
        self._log_cursors: dict[str, str | None] = {}
        self._graph_logs: dict[str, GraphRunLog] = {}
        self._backup_logs: dict[str, BackupRunLog] = {}

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

    def _partition_keys(self, asset: str) -> list[str]:
        data = self.query(
            "query Keys($path: [String!]!) { assetNodeOrError(assetKey: {path: $path}) "
            "{ ... on AssetNode { partitionKeys } } }",
            {"path": [asset]},
        )
        keys: list[str] = data["assetNodeOrError"].get("partitionKeys") or []
        return keys

    def document_partitions(self) -> list[str]:
        """Every partition key of the ``documents`` partitions, in definition order."""
        return self._partition_keys(INDEXED_ASSET)

    def add_document_partitions(self, partition_keys: Iterable[str]) -> list[str]:
        """Add the ``documents`` partitions that do not exist yet; return the added keys.

        A key the folder sensor adds concurrently counts as present, not as an error.
        """
        return self._add_partitions(DOCUMENTS_PARTITIONS, INDEXED_ASSET, partition_keys)

    def _add_partitions(
        self, definition: str, asset: str, partition_keys: Iterable[str]
    ) -> list[str]:
        """Add the keys of the dynamic partitions ``definition`` (read through one of its
        assets, ``asset``) that do not exist yet; return the added keys."""
        existing = set(self._partition_keys(asset))
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
        Returns the ids of the runs launched.
        """
        keys = list(dict.fromkeys(partition_keys))
        if not keys:
            raise DagsterError("there is nothing to ingest: no partitions were given")
        batches = ingest_batches(
            keys,
            batch_size,
            weight=None if sizes is None else lambda key: sizes.get(key, 0),
            max_weight=batch_bytes,
        )
        run_ids = self._launch_ingest_batches(batches[:2], batch_size, source=source)
        if len(batches) > 2:
            run_ids += self._launch_ingest_batches(batches[2:], batch_size, source=source)
        return run_ids

    def _launch_ingest_batches(
        self, batches: Sequence[Sequence[str]], batch_size: int, *, source: str
    ) -> list[str]:
        """Add the partitions of ``batches``, then launch a run per contiguous range (in
        the partition set's order, at most ``batch_size``) of each batch's keys, leaving
        out keys a run is busy with."""
        keys = [key for batch in batches for key in batch]
        self.add_document_partitions(keys)
        position = {key: i for i, key in enumerate(self.document_partitions())}
        missing = [k for k in keys if k not in position]
        if missing:
            raise DagsterError(f"Dagster has no partition {missing[0]!r} after adding it")
        busy = self._in_flight_ingest_partitions(list(position))
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
                run_ids.append(self._launch_run(INGEST_JOB, tags))
        return run_ids

    def _launch_run(
        self, job: str, tags: dict[str, str], run_config: dict[str, Any] | None = None
    ) -> str:
        """Launch one run of ``job`` with ``tags`` (and ``run_config``); its run id."""
        params: dict[str, Any] = {
            "selector": {**self.repository_selector(), "jobName": job},
            "executionMetadata": {"tags": [{"key": k, "value": v} for k, v in tags.items()]},
        }
        if run_config is not None:
            params["runConfigData"] = run_config
        data = self.query(_LAUNCH_RUN, {"params": params})
        result = data["launchRun"]
        if result["__typename"] != "LaunchRunSuccess":
            reason = result.get("message") or "; ".join(
                e["message"] for e in result.get("errors") or []
            )
            raise DagsterError(f"Dagster refused the run ({result['__typename']}): {reason}")
        run_id: str = result["run"]["runId"]
        return run_id

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

    # --- the message graph's runs -----------------------------------------------------
    def graph_partitions(self) -> list[str]:
        """Every partition key of the ``graph_sources`` partitions (one per archive)."""
        return self._partition_keys(GRAPH_ASSETS[0])

    def add_graph_partitions(self, partition_keys: Iterable[str]) -> list[str]:
        """Add the ``graph_sources`` partitions that do not exist yet (the graph-sources
        sensor may not have seen a new archive yet); return the added keys."""
        return self._add_partitions(GRAPH_PARTITIONS, GRAPH_ASSETS[0], partition_keys)

    def launch_graph_build(
        self, partition_key: str, *, source: str, archive_sha256: str | None = None
    ) -> str:
        """Launch a ``build_message_graph`` run of one archive's partition (added first
        when missing), tagged with ``source`` and, when given, the archive's content
        signature (which tells the graph-sources sensor these bytes are being built);
        its run id. A build of an archive a killed or failed run left half done resumes
        it."""
        self.add_graph_partitions([partition_key])
        tags = {SOURCE_TAG: source, PARTITION_TAG: partition_key}
        if archive_sha256:
            tags[ARCHIVE_TAG] = archive_sha256
        return self._launch_run(GRAPH_BUILD_JOB, tags)

    def _graph_runs(self, run_filter: dict[str, Any], limit: int | None) -> list[GraphRun]:
        result = self.query(_GRAPH_RUNS, {"filter": run_filter, "limit": limit})["runsOrError"]
        if result["__typename"] != "Runs":
            raise DagsterError(f"listing graph runs failed: {result.get('message')}")
        return [_graph_run(node) for node in result["results"] if node["jobName"] in GRAPH_JOBS]

    def graph_runs(self, limit: int = 20) -> list[GraphRun]:
        """The newest runs of the graph jobs (builds and removals), newest first."""
        if limit < 1:
            raise ValueError(f"limit must be at least 1, got {limit}")
        runs = self._graph_runs({"tags": [{"key": STAGE_TAG, "value": STAGE_GRAPH}]}, limit)
        runs.sort(key=lambda run: run.created_at, reverse=True)
        return runs[:limit]

    def in_flight_graph_builds(self) -> list[GraphRun]:
        """The ``build_message_graph`` runs queued, starting or started now (at most one
        per archive is useful: a second only waits behind the first), newest first. Read
        each one's archive from :attr:`GraphRun.partition_key` / ``relative_path``."""
        runs = self._graph_runs(
            {"pipelineName": GRAPH_BUILD_JOB, "statuses": list(IN_FLIGHT_RUN_STATUSES)}, None
        )
        runs.sort(key=lambda run: run.created_at, reverse=True)
        return runs

    def graph_run(self, run_id: str) -> GraphRun:
        """One run of a graph job.

        Raises:
            RunNotFound: No run has this id, or it is not a graph job's run.
        """
        if "\x00" in run_id:  # Postgres refuses NUL: no run can have this id
            raise RunNotFound(f"Dagster has no run {run_id!r}")
        result = self.query(_GRAPH_RUN, {"id": run_id})["runOrError"]
        if result["__typename"] == "RunNotFoundError":
            raise RunNotFound(f"Dagster has no run {run_id!r}")
        if result["__typename"] != "Run":
            raise DagsterError(f"reading run {run_id!r} failed: {result.get('message')}")
        if result["jobName"] not in GRAPH_JOBS:
            raise RunNotFound(
                f"run {run_id!r} is a {result['jobName']} run, not a message-graph build"
            )
        return _graph_run(result)

    def _new_log_messages(self, run_id: str) -> list[str]:
        """The run's log messages this client has not read yet (its cursor kept per run)."""
        cursor = self._log_cursors.get(run_id)
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
        self._log_cursors[run_id] = cursor
        return messages

    def graph_run_log(self, run_id: str) -> GraphRunLog:
        """The run's latest build progress (the last ``graph build: N/M transcripts
        processed ...`` line, :mod:`varagity.graph.progress`) and its latest log message.
        The log is read on from where this client's last read of it stopped."""
        seen = self._graph_logs.get(run_id, GraphRunLog(None, None))
        progress, message = seen.progress, seen.message
        for message in self._new_log_messages(run_id):
            progress = parse_progress(message) or progress
        seen = GraphRunLog(progress, message)
        self._graph_logs[run_id] = seen
        return seen

    def launch_purge(self, relative_paths: Sequence[str], *, source: str) -> str:
        """Launch a ``purge_documents`` run over files gone from ``DOCS_PATH``; its id."""
        tags = {SOURCE_TAG: source, FILES_TAG: str(len(relative_paths))}
        config = {"ops": {"purged_documents": {"config": {"relative_paths": list(relative_paths)}}}}
        return self._launch_run(PURGE_JOB, tags, config)

    def run_worker_pid(self, run_id: str) -> int | None:
        """The process id the run's worker logged when it began executing, if it did."""
        data = self.query(_FIRST_LOGS, {"id": run_id})["logsForRun"]
        for event in data.get("events") or []:
            found = _WORKER_PID.search(event.get("message") or "")
            if found:
                return int(found.group(1))
        return None

    def mark_run_canceled(self, run_id: str) -> None:
        """Mark a run whose worker is gone as canceled at once (nothing is interrupted:
        there is nobody left to interrupt), so its pool slots and partitions free."""
        result = self.query(_TERMINATE, {"id": run_id, "policy": "MARK_AS_CANCELED_IMMEDIATELY"})[
            "terminateRun"
        ]
        if result["__typename"] != "TerminateRunSuccess":
            raise DagsterError(f"marking run {run_id} canceled failed: {result.get('message')}")

    def run_statuses(self, run_ids: Sequence[str]) -> dict[str, str]:
        """Run id -> Dagster status of each of ``run_ids`` that exists."""
        if not run_ids:
            return {}
        found = self.query(_RUN_STATUSES, {"ids": list(run_ids)})["runsOrError"]
        return {r["runId"]: r["status"] for r in found.get("results") or []}

    def terminate_graph_run(self, run_id: str) -> GraphRun:
        """Stop a graph run: a started one is terminated (its worker is interrupted; a
        build launched again later resumes), a queued one is canceled before it starts.
        Returns the run as it stands after the request.

        Raises:
            RunNotFound: No graph run has this id.
            RunEnded: The run had already ended.
        """
        run = self.graph_run(run_id)
        if run.done:
            raise RunEnded(f"run {run_id} has already ended ({run.status})")
        result = self.query(_TERMINATE, {"id": run_id, "policy": "SAFE_TERMINATE"})["terminateRun"]
        kind = result["__typename"]
        if kind == "RunNotFoundError":
            raise RunNotFound(f"Dagster has no run {run_id!r}")
        if kind == "TerminateRunFailure":
            now = self.graph_run(run_id)
            if now.done:
                raise RunEnded(f"run {run_id} has already ended ({now.status})")
            raise DagsterError(f"Dagster could not terminate run {run_id}: {result['message']}")
        if kind != "TerminateRunSuccess":
            raise DagsterError(f"terminating run {run_id} failed: {result.get('message')}")
        return self.graph_run(run_id)

    # --- backups, and every corpus's writers -------------------------------------------
    def _corpus_runs(self, run_filter: dict[str, Any], limit: int | None) -> list[CorpusRun]:
        result = self.query(_CORPUS_RUNS, {"filter": run_filter, "limit": limit})["runsOrError"]
        if result["__typename"] != "Runs":
            raise DagsterError(f"listing runs failed: {result.get('message')}")
        runs = [run for node in result["results"] if (run := _corpus_run(node)) is not None]
        runs.sort(key=lambda run: run.created_at, reverse=True)
        return runs

    def in_flight_corpus_runs(self, corpus: str) -> list[CorpusRun]:
        """The runs queued, starting or started now that write, export or restore
        ``corpus`` (:func:`~varagity.pipeline.corpus_of_run`), newest first."""
        runs = self._corpus_runs({"statuses": list(IN_FLIGHT_RUN_STATUSES)}, None)
        return [run for run in runs if run.corpus == corpus]

    def launch_export(self, corpus: str, *, source: str) -> str:
        """Launch an ``export_bundle`` run of ``corpus`` (its ``backup_bundle``
        partition); its run id."""
        tags = {SOURCE_TAG: source, PARTITION_TAG: corpus, CORPUS_TAG: corpus}
        return self._launch_run(BACKUP_JOB, tags)

    def launch_restore(self, corpus: str, name: str, *, source: str) -> str:
        """Launch a ``restore_bundle`` run replacing ``corpus`` with its bundle ``name``;
        its run id."""
        tags = {SOURCE_TAG: source, CORPUS_TAG: corpus, BUNDLE_TAG: name}
        config = {"ops": {"restore_corpus": {"config": {"corpus": corpus, "name": name}}}}
        return self._launch_run(RESTORE_JOB, tags, config)

    def backup_runs(self, corpus: str, limit: int = 20) -> list[CorpusRun]:
        """The newest export and restore runs of ``corpus``, newest first (exports
        launched from the Dagster UI carry no corpus tag and are not listed)."""
        if limit < 1:
            raise ValueError(f"limit must be at least 1, got {limit}")
        runs = self._corpus_runs({"tags": [{"key": CORPUS_TAG, "value": corpus}]}, limit)
        return [run for run in runs if run.kind != "other"]

    def backup_run(self, run_id: str) -> CorpusRun:
        """One export or restore run.

        Raises:
            RunNotFound: No run has this id, or it is not an export or a restore.
        """
        if "\x00" in run_id:  # Postgres refuses NUL: no run can have this id
            raise RunNotFound(f"Dagster has no run {run_id!r}")
        result = self.query(_CORPUS_RUN, {"id": run_id})["runOrError"]
        if result["__typename"] == "RunNotFoundError":
            raise RunNotFound(f"Dagster has no run {run_id!r}")
        if result["__typename"] != "Run":
            raise DagsterError(f"reading run {run_id!r} failed: {result.get('message')}")
        run = _corpus_run(result)
        if run is None or run.kind == "other":
            raise RunNotFound(f"run {run_id!r} is a {result['jobName']} run, not a backup")
        return run

    def backup_run_log(self, run_id: str) -> BackupRunLog:
        """The run's latest progress report, the bundle an export wrote (once it is in
        place) and its latest log message; read on from where the last read stopped."""
        seen = self._backup_logs.get(run_id, BackupRunLog(None, 0, 0, None, None))
        phase, done, total, bundle, message, reconcile = (
            seen.phase,
            seen.done,
            seen.total,
            seen.bundle,
            seen.message,
            seen.reconcile,
        )
        for message in self._new_log_messages(run_id):
            progress = parse_backup_progress(message)
            if progress is not None:
                phase, done, total = progress
            elif message.startswith(BACKUP_BUNDLE_PREFIX):
                bundle = message[len(BACKUP_BUNDLE_PREFIX) :].strip()
            else:
                reconcile = parse_reconcile_line(message) or reconcile
        seen = BackupRunLog(phase, done, total, bundle, message, reconcile)
        self._backup_logs[run_id] = seen
        return seen


# --- what /metrics reports of the pipeline ------------------------------------------------

# Run statuses a run waits or works in; their counts are the pipeline's queue.
QUEUE_RUN_STATUSES = ("QUEUED", "NOT_STARTED", "STARTING", "STARTED")
_RECENT_RUNS = 20

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


@dataclass(frozen=True, slots=True)
class PipelineReading:
    """What Dagster says of the pipeline at one moment, for ``/metrics``."""

    runs_by_status: dict[str, int]
    """Runs waiting or working, by status (every status of :data:`QUEUE_RUN_STATUSES`)."""
    step_seconds: dict[str, float]
    """Mean duration of each step (an asset) over the newest finished ingest and
    contextualize runs, by step key."""
    eval_gates: dict[tuple[str, str], bool]
    """``(asset, check) -> passed`` for the evaluation gates that have run."""


def _mean_step_seconds(runs: list[dict[str, Any]]) -> dict[str, float]:
    durations: dict[str, list[float]] = {}
    for run in runs:
        for step in run["stepStats"]:
            if step["startTime"] is not None and step["endTime"] is not None:
                durations.setdefault(step["stepKey"], []).append(
                    step["endTime"] - step["startTime"]
                )
    return {key: sum(v) / len(v) for key, v in durations.items()}


def pipeline_reading(client: DagsterClient, recent_runs: int = _RECENT_RUNS) -> PipelineReading:
    """Queue depth, recent step durations and the evaluation gates, in one query.

    Raises:
        DagsterUnavailable: the webserver is unreachable.
        DagsterError: it rejected the query.
    """
    data = client.query(
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
            if execution and execution["status"] in ("SUCCEEDED", "FAILED", "EXECUTION_FAILED"):
                gates[(asset, check["name"])] = execution["status"] == "SUCCEEDED"
    runs = data["ingest"].get("results", []) + data["contextualize"].get("results", [])
    return PipelineReading(
        runs_by_status={s: int(data[s].get("count", 0)) for s in QUEUE_RUN_STATUSES},
        step_seconds=_mean_step_seconds(runs),
        eval_gates=gates,
    )
