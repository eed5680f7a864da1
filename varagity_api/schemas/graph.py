"""The message graph's resource bodies: its sources (archives in ``GRAPH_DOCS_PATH``),
its builds (Dagster runs of ``build_message_graph``), its status and its view data.

Every ``/api/graph`` route answers ``403 graph_disabled`` while ``GRAPH_ENABLED=false``.
"""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from varagity.jobs import Run
from varagity.jobs.graph import GraphProgress, Launched
from varagity_api.schemas.common import EvidenceEntity, EvidenceRelation
from varagity_api.schemas.forget import ForgetReceiptInfo
from varagity_api.schemas.settings import StaleFlag

#: Where a build run stands (Dagster's run status, lower-cased into three families).
BuildState = Literal["queued", "running", "succeeded", "failed", "canceled"]
#: What a run of the graph does: build one archive into it, take removed ones out, empty
#: it (the archives kept), or extract a range of days (or every day) again.
BuildKind = Literal["build", "remove", "reset", "rebuild"]


class GraphEngineInfo(BaseModel):
    """The engine that writes this stack's graph."""

    name: str = Field(description="GRAPH_ENGINE (lightrag).")
    package: str
    version: str


class DayCounts(BaseModel):
    """Transcript days in the engine, by its document status."""

    processed: int
    pending: int
    processing: int
    failed: int


class GraphSourceInfo(BaseModel):
    """One file of ``GRAPH_DOCS_PATH``: a message archive, or a file that is not one."""

    path: str = Field(description="Path under GRAPH_DOCS_PATH (the database file).")
    companions: list[str] = Field(
        description="Its -wal / -shm files present beside it (read with it, as one archive)."
    )
    size_bytes: int = Field(description="Bytes of the database and its companions together.")
    modified_at: datetime = Field(description="The newest modification time of those files.")
    supported: bool = Field(
        description="Recognised by a message source (e.g. an iMessage chat.db)."
    )
    kind: str | None = Field(
        description="The message source that reads it (imessage); null if none."
    )
    reason: str | None = Field(description="Why it is not a supported archive; null when it is.")
    days: int = Field(description="Its transcript days the graph holds (from the build manifest).")
    threads: int = Field(description="Its conversations the graph holds days of.")
    first_day: str | None = Field(description="Its earliest day in the graph (YYYY-MM-DD).")
    last_day: str | None = Field(description="Its latest day in the graph (YYYY-MM-DD).")


class GraphSourceList(BaseModel):
    """The archives of ``GRAPH_DOCS_PATH`` (``varagity-exports/`` is never listed)."""

    root: str = Field(description="GRAPH_DOCS_PATH, absolute.")
    sources: list[GraphSourceInfo]


class GraphUploadResult(BaseModel):
    """What happened to one uploaded file."""

    index: int = Field(description="Position of the file in the request.")
    name: str = Field(description="The file name the client sent.")
    status: Literal["stored", "replaced", "unchanged", "refused"]
    path: str | None = Field(description="Where it is (or would have been) stored.")
    size_bytes: int | None
    code: str | None = Field(
        description="Refusal reason: invalid_path, absolute_path, path_traversal, reserved_path, "
        "hidden_name, invalid_name, outside_corpus, path_conflict, not_an_archive, "
        "companion_without_database, too_large, duplicate_path, write_failed."
    )
    message: str | None


class GraphBuildProgress(BaseModel):
    """The transcript days of a build and where they stand (from its last progress line)."""

    total: int = Field(description="Days the engine was given by this build.")
    processed: int
    processing: int
    pending: int
    failed: int


class GraphBuild(BaseModel):
    """One Dagster run that writes the message graph."""

    run_id: str
    kind: BuildKind
    path: str | None = Field(
        description="The archive it builds (null for a removal, a reset or a rebuild)."
    )
    first_day: str | None = Field(
        description="A rebuild's first day (YYYY-MM-DD; the first day partition, 2000-01-01, "
        "takes every day before it too); null for a rebuild of every day and other runs.",
    )
    last_day: str | None = Field(
        description="A rebuild's last day (a range reaching today takes every later day too).",
    )
    state: BuildState
    status: str = Field(description="Dagster's run status (QUEUED, STARTED, SUCCESS, ...).")
    done: bool = Field(description="The run has ended and will not change any more.")
    source: str | None = Field(description="Who launched it: sensor, api, ui (null if untagged).")
    created_at: datetime
    started_at: datetime | None
    ended_at: datetime | None
    progress: GraphBuildProgress | None = Field(
        description="Days processed so far; null before extraction starts (or for a run "
        "that had nothing to extract)."
    )
    message: str | None = Field(description="The run's latest log line about the build.")
    error: str | None = Field(description="Why it failed; null unless it did.")
    dagster_url: str = Field(description="The run's page in the Dagster UI.")


class GraphUploadResponse(BaseModel):
    """Per-file results (a partly refused batch stores the rest) and the builds launched
    for the archives it stored (the graph-sources sensor starts them if Dagster cannot be
    reached now)."""

    results: list[GraphUploadResult]
    counts: dict[str, int]
    builds: list[GraphBuild]


class GraphSourceRemoved(BaseModel):
    """An archive deleted from ``GRAPH_DOCS_PATH``, its days taken out of the graph."""

    path: str
    removed_files: list[str] = Field(description="The database and its companions removed.")
    days: int = Field(description="Its transcript days that left the graph.")
    receipt: ForgetReceiptInfo = Field(
        description="Per store, what was removed and verified gone, and the backups that "
        "still hold the archive's days."
    )


class GraphBuildRequest(BaseModel):
    """Which archives to build (a build resumes where a killed or failed one stopped),
    or which days to rebuild."""

    model_config = ConfigDict(populate_by_name=True)

    paths: list[str] | None = Field(
        default=None,
        min_length=1,
        max_length=1000,
        description="Archive paths under GRAPH_DOCS_PATH; omit for every supported archive.",
    )
    rebuild: bool = Field(
        default=False,
        description="Extract the days again, whatever the manifest says of them: one run "
        "of rebuild_message_graph over every archive, every day (or the from/to range). "
        "A rebuild of every day that succeeds clears the graph's stale flag.",
    )
    first_day: date | None = Field(
        default=None,
        alias="from",
        description="A rebuild's first day (YYYY-MM-DD); implies rebuild. Omitted: from "
        "the first day.",
    )
    last_day: date | None = Field(
        default=None,
        alias="to",
        description="A rebuild's last day (YYYY-MM-DD, included); implies rebuild. "
        "Omitted: to the newest day.",
    )

    @model_validator(mode="after")
    def _one_kind(self) -> GraphBuildRequest:
        if self.first_day and self.last_day and self.first_day > self.last_day:
            raise ValueError(f"from ({self.first_day}) comes after to ({self.last_day})")
        if self.rebuilds and self.paths is not None:
            raise ValueError(
                "a rebuild takes every archive's days in its range: leave out paths "
                "(or build those archives without rebuild, from and to)"
            )
        return self

    @property
    def rebuilds(self) -> bool:
        """A rebuild, not a build of archives."""
        return self.rebuild or self.first_day is not None or self.last_day is not None


class GraphBuildsLaunched(BaseModel):
    """The builds launched (``202``), and those already queued or running that a new one
    would only have waited behind."""

    launched: list[GraphBuild]
    in_flight: list[GraphBuild]


class GraphBuildList(BaseModel):
    """Recent runs that wrote the graph, newest first."""

    builds: list[GraphBuild]


class GraphStatus(BaseModel):
    """The graph's size and state, read from its summary sidecar and the engine."""

    engine: GraphEngineInfo
    built: bool = Field(description="At least one transcript day is in the graph.")
    entities: int
    relations: int
    days: int = Field(description="Transcript days in the build manifest.")
    messages: int = Field(description="Messages those days hold.")
    day_statuses: DayCounts
    sources: int = Field(description="Supported archives in GRAPH_DOCS_PATH.")
    refreshed_at: datetime | None = Field(description="When a build last wrote the summary.")
    building: list[GraphBuild] = Field(
        description="Builds, rebuilds and resets queued or running now."
    )
    stale: StaleFlag | None = Field(
        description="Set when the chat model (LLM_MODEL) or an extraction setting changed "
        "since the graph was built, or a restored backup was stale: the days extracted "
        "before keep what the old settings made of them until a rebuild of every day "
        '(POST /api/graph/builds {"rebuild": true}) succeeds; null when current.',
    )


class GraphEntityInfo(BaseModel):
    """An entity as the graph view lists it."""

    name: str
    type: str
    description: str
    degree: int = Field(description="How many relations touch it.")
    days: int = Field(description="How many transcript days it was extracted from.")


class GraphEntityList(BaseModel):
    """Entities matching a search (or the most connected ones), best first."""

    entities: list[GraphEntityInfo]
    total: int = Field(description="Entities in the graph.")


class GraphDayRef(BaseModel):
    """A transcript day the view's entities and relations come from."""

    doc_key: str = Field(description="thread_id::YYYY-MM-DD.")
    thread_name: str
    span: str
    messages: int = Field(description="Messages of that day in the graph.")


class GraphNeighbourhood(BaseModel):
    """An entity, what lies within ``depth`` hops of it, and the days they come from."""

    center: str
    depth: int
    entities: list[EvidenceEntity]
    relations: list[EvidenceRelation]
    days: list[GraphDayRef]
    truncated: bool = Field(description="More lay within reach than ``limit`` allowed.")


class GraphDay(BaseModel):
    """One transcript day, as the engine was given it (day-grain evidence)."""

    doc_key: str
    thread_name: str
    span: str
    source: str = Field(description="The archive it was read from, under GRAPH_DOCS_PATH.")
    text: str = Field(description="The rendered transcript: one line per message.")
    message_guids: list[str]
    status: str = Field(description="The engine's status of the day (processed, failed, ...).")


def _when(timestamp: float | None) -> datetime | None:
    return None if timestamp is None else datetime.fromtimestamp(timestamp, UTC)


_KINDS: dict[str, BuildKind] = {"remove": "remove", "reset": "reset", "rebuild": "rebuild"}


def build_from(run: Run[GraphProgress]) -> GraphBuild:
    """The wire form of a graph run: its state, progress, last log line and error."""
    progress = run.progress.build
    return GraphBuild(
        run_id=run.id,
        kind=_KINDS.get(run.kind, "build"),
        path=run.progress.path,
        first_day=run.progress.first_day,
        last_day=run.progress.last_day,
        state=run.state,
        status=run.status,
        done=run.done,
        source=run.source,
        created_at=datetime.fromtimestamp(run.created_at, UTC),
        started_at=_when(run.started_at),
        ended_at=_when(run.ended_at),
        progress=None
        if progress is None or progress.total == 0
        else GraphBuildProgress(
            total=progress.total,
            processed=progress.processed,
            processing=progress.processing,
            pending=progress.pending,
            failed=progress.failed,
        ),
        message=run.progress.message,
        error=run.error,
        dagster_url=run.url,
    )


def launched_from(launched: Launched) -> GraphBuildsLaunched:
    """The wire form of a launch of builds."""
    return GraphBuildsLaunched(
        launched=[build_from(run) for run in launched.launched],
        in_flight=[build_from(run) for run in launched.in_flight],
    )
