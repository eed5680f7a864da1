"""How a per-file asset is declared and maps over the files of its run.

Every asset partitioned by corpus file is declared with :func:`file_asset`. One run may
target several partitions (the sensors batch), so each such asset maps over
its run's keys (:func:`run_keys`) with :func:`each_file` / :func:`each_outcome` and returns a
:class:`PerFile` value: each partition's outcome, by partition key. An outcome is the
stage's value, or an :class:`IngestFailure` (carried downstream instead of sinking the
whole batch), or :class:`Unchanged` (this exact version is already indexed). The last
asset of a stage finishes every good file, then :func:`fail_on_failures` fails the step
naming each bad file and its reason. An outage is not a bad file
(:func:`~varagity_assets.retries.is_outage`: a model server down or failing, Postgres
gone): it is raised, and the whole step is retried under the one policy of
:mod:`varagity_assets.retries` while the service comes back.
"""

from __future__ import annotations

import time
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar, Union

import dagster as dg

from varagity.config import get_settings
from varagity.ingest.discovery import relative_path_for
from varagity_assets.defs.ingest.partitions import documents_partitions
from varagity_assets.retries import is_outage, retry_on_outage

T = TypeVar("T")
U = TypeVar("U")


@dataclass(frozen=True, slots=True)
class IngestFailure:
    """A file that failed a stage: carried downstream so the rest of the batch proceeds."""

    relative_path: str
    stage: str
    message: str


@dataclass(frozen=True, slots=True)
class Unchanged:
    """This exact file version is already indexed: later stages do nothing."""

    relative_path: str
    doc_id: str


Outcome = Union[T, IngestFailure, Unchanged]  # noqa: UP007 (a generic alias needs Union)


class PerFile(Mapping[str, Outcome[T]]):
    """One stage's outcome for each file of a run, keyed by partition.

    Each stage subclasses it with its value type, so Dagster checks what flows between
    the assets; the ``artifacts`` IO manager stores each partition's outcome on its own
    and loads the upstream outcomes of a run's partitions back as the declared subclass.
    """

    __slots__ = ("_outcomes",)

    def __init__(self, outcomes: Mapping[str, Outcome[T]]) -> None:
        """Hold ``outcomes``, one per partition key."""
        self._outcomes = dict(outcomes)

    def __getitem__(self, key: str) -> Outcome[T]:
        return self._outcomes[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._outcomes)

    def __len__(self) -> int:
        return len(self._outcomes)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._outcomes!r})"

    def value(self, key: str) -> T:
        """The stage's value for a file that neither failed nor was unchanged."""
        outcome = self._outcomes[key]
        if isinstance(outcome, IngestFailure | Unchanged):
            raise LookupError(f"{outcome.relative_path} has no value here: {outcome!r}")
        return outcome

    def count(self, kind: type) -> int:
        """How many outcomes are of ``kind``."""
        return sum(1 for v in self._outcomes.values() if isinstance(v, kind))

    def failures(self) -> list[IngestFailure]:
        """The files that failed, in partition order."""
        return [v for v in self._outcomes.values() if isinstance(v, IngestFailure)]


def batch_policy() -> dg.BackfillPolicy:
    """A backfill runs ``INGEST_BATCH_SIZE`` files per run, as the folder sensor does.

    Read when the code location loads: a runtime override of the setting changes the
    sensor's batches at once and backfills' after the location reloads.
    """
    return dg.BackfillPolicy.multi_run(max_partitions_per_run=get_settings().INGEST_BATCH_SIZE)


def file_asset(
    *,
    group_name: str,
    kinds: Iterable[str],
    pool: str | None = None,
    deps: Iterable[dg.AssetsDefinition] | None = None,
    op_tags: Mapping[str, str] | None = None,
) -> Callable[[Callable[..., Any]], dg.AssetsDefinition]:
    """The decorator of a per-file asset: one partition per corpus file, values stored per
    partition by the ``artifacts`` IO manager, backfills batched by :func:`batch_policy`.

    Args:
        group_name: The stage the asset belongs to (``ingest``, ``contextualize``).
        kinds: What the asset runs on or writes to (shown in the UI).
        pool: The concurrency pool of a step that holds a model server.
        deps: Upstream assets it reads from the stores rather than as inputs.
        op_tags: Tags of the asset's steps (where an executor may run them).

    An outage the step raises retries it (:func:`~varagity_assets.retries.retry_on_outage`).
    """
    define = dg.asset(
        partitions_def=documents_partitions,
        group_name=group_name,
        io_manager_key="artifacts",
        backfill_policy=batch_policy(),
        pool=pool,
        deps=list(deps) if deps else None,
        kinds=set(kinds),
        op_tags=dict(op_tags) if op_tags else None,
    )

    def decorate(fn: Callable[..., Any]) -> dg.AssetsDefinition:
        return define(retry_on_outage(fn))

    return decorate


_RUN_KEYS: weakref.WeakKeyDictionary[dg.AssetExecutionContext, tuple[str, ...]] = (
    weakref.WeakKeyDictionary()
)


def run_keys(context: dg.AssetExecutionContext) -> tuple[str, ...]:
    """The partitions the step targets, looked up once per step.

    ``context.partition_keys`` lists every partition of the corpus on each access (three
    storage queries, and a list that grows with the corpus) to cut the run's range out
    of it.
    """
    keys = _RUN_KEYS.get(context)
    if keys is None:
        keys = _RUN_KEYS[context] = tuple(context.partition_keys)
    return keys


def _add_file_metadata(
    context: dg.AssetExecutionContext, key: str, metadata: Mapping[str, Any]
) -> None:
    """``context.add_asset_metadata(metadata, partition_key=key)`` for a key of
    :func:`run_keys`, without the per-call check that re-lists the corpus's partitions to
    find ``key`` in the run's range: at 1,000 files, 4,000 such listings per 1,000 files
    ingested. Relies on the step context's private ``_metadata_accumulator`` (Dagster is
    pinned; the pipeline tests read this metadata back from the materializations)."""
    step = context.op_execution_context._step_execution_context
    step._metadata_accumulator = step._metadata_accumulator.with_additional_asset_metadata(
        asset_key=context.asset_key, partition_key=key, metadata=metadata
    )


def each_file(
    context: dg.AssetExecutionContext,
    stage: str,
    fn: Callable[[str], T],
    keys: Iterable[str] | None = None,
    describe: Callable[[Any], Mapping[str, Any]] | None = None,
    extra: Mapping[str, Mapping[str, Any]] | None = None,
) -> dict[str, Outcome[T]]:
    """Apply ``fn`` to each targeted partition (or to ``keys``, a subset of them); a file
    whose ``fn`` raises becomes an :class:`IngestFailure` (logged), the others go on.

    Each file's materialization gets ``<stage>_seconds``, what ``describe`` says of its
    value and ``extra[key]`` (what a stage done for several files at once took).
    """
    targeted = run_keys(context)
    out: dict[str, Outcome[T]] = {}
    for key in targeted if keys is None else keys:
        if key not in targeted:
            raise ValueError(f"{key!r} is not a partition of this run")
        started = time.perf_counter()
        try:
            value = fn(key)
        except Exception as exc:  # one bad file must not sink the batch
            if is_outage(exc):  # a service is down: no file's fault, the step retries
                raise
            rel = relative_path_for(key)
            message = f"{type(exc).__name__}: {exc}"
            context.log.error(f"{stage} failed for {rel}: {message}")
            out[key] = IngestFailure(rel, stage, message)
            continue
        out[key] = value
        metadata = dict(describe(value)) if describe else {}
        metadata.update((extra or {}).get(key, {}))
        metadata[f"{stage}_seconds"] = round(time.perf_counter() - started, 3)
        _add_file_metadata(context, key, metadata)
    return out


def each_outcome(
    context: dg.AssetExecutionContext,
    stage: str,
    upstream: PerFile[U],
    fn: Callable[[str, U], T],
    describe: Callable[[Any], Mapping[str, Any]] | None = None,
    extra: Mapping[str, Mapping[str, Any]] | None = None,
) -> dict[str, Outcome[T]]:
    """:func:`each_file` over the upstream stage's values; its failures and unchanged
    files pass through untouched."""
    out: dict[str, Outcome[T]] = {}
    todo = []
    for key in run_keys(context):
        previous = upstream[key]
        if isinstance(previous, IngestFailure | Unchanged):
            out[key] = previous
        else:
            todo.append(key)
    out.update(
        each_file(context, stage, lambda key: fn(key, upstream.value(key)), todo, describe, extra)
    )
    return {key: out[key] for key in run_keys(context)}


def fail_on_failures(result: PerFile[Any], others: str) -> None:
    """Fail the step naming every file of ``result`` that failed, once the others are done."""
    failures = result.failures()
    if not failures:
        return
    raise dg.Failure(
        description="; ".join(
            f"{f.relative_path}: {f.stage} failed - {f.message}" for f in failures
        )
        + f" ({others})",
        metadata={
            "failed_files": dg.MetadataValue.md(
                "| file | stage | reason |\n|---|---|---|\n"
                + "\n".join(
                    f"| {f.relative_path} | {f.stage} | {f.message.replace('|', '/')} |"
                    for f in failures
                )
            )
        },
    )
