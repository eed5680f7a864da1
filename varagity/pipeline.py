"""The names of the documents pipeline, shared by its Dagster code location and its clients.

``varagity_assets`` declares its partition set, assets, jobs, pools and run tags with
these names; :mod:`varagity.jobs` (the CLI's and the API's GraphQL client)
addresses them by the same names, and ``dagster_home/dagster.yaml`` limits runs by
:data:`STAGE_TAG`. Plain strings and
the pure helpers that shape runs over partitions: nothing here imports Dagster.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from datetime import date, timedelta
from itertools import pairwise
from typing import TypeVar

T = TypeVar("T")

# --- partitions -------------------------------------------------------------------------
# One dynamic partition per corpus file. Never rename: the instance stores the set
# under this name.
DOCUMENTS_PARTITIONS = "documents"
# One dynamic partition per message archive under GRAPH_DOCS_PATH (the message graph).
GRAPH_PARTITIONS = "graph_sources"
# One daily partition per conversation day (``YYYY-MM-DD``, the day part of a doc_key) from
# GRAPH_FIRST_DAY to GRAPH_DAYS_END_OFFSET days past today (UTC): the days a rebuild of
# the message graph re-extracts. The first partition stands for every day before it too,
# and a range reaching today (UTC) for every day after it (:func:`graph_rebuild_bounds`).
GRAPH_FIRST_DAY = "2000-01-01"
GRAPH_DAYS_END_OFFSET = 2

# --- assets -----------------------------------------------------------------------------
# The ingest stage, in order; a file counts as searchable once the last is materialized:
# its chunks stored in Postgres (``indexed_document``), then its BM25 entries written
# from those rows (``bm25_index``, rebuildable on its own from Postgres).
INGEST_ASSETS = (
    "parsed_document",
    "document_chunks",
    "chunk_embeddings",
    "indexed_document",
    "bm25_index",
)
# The asset holding a file's stored chunks: the partition a file's Dagster page links to.
INDEXED_ASSET = "indexed_document"
BM25_ASSET = "bm25_index"
SEARCHABLE_ASSET = INGEST_ASSETS[-1]
# The message-graph build, in order: an archive read, its transcripts diffed against the
# manifest, the diff applied to the engine's working directory (the single writer).
GRAPH_ASSETS = ("graph_archive", "graph_transcripts", "graph_workdir")
GRAPH_WORKDIR_ASSET = GRAPH_ASSETS[-1]
# Archives removed from GRAPH_DOCS_PATH: their days leave the graph.
GRAPH_REMOVED_ASSET = "graph_removed_sources"
# The graph emptied (its working directory and sidecars; the archives stay), and a range
# of days re-extracted from the archives (partitioned by day).
GRAPH_RESET_ASSET = "graph_reset"
GRAPH_REBUILD_ASSET = "graph_rebuilt_days"
# Whether the graph still matches the chat model and extraction settings (its stale flag).
GRAPH_STALENESS_ASSET = "graph_staleness"
# The assets whose runs write the graph's working directory, however launched (a job, a
# materialization or a backfill from the Dagster UI).
GRAPH_WRITER_ASSETS = (
    GRAPH_WORKDIR_ASSET,
    GRAPH_REMOVED_ASSET,
    GRAPH_RESET_ASSET,
    GRAPH_REBUILD_ASSET,
)
# One backup zip of a corpus, partitioned by corpus (static partitions, below).
BACKUP_ASSET = "backup_bundle"
# The corpora a backup covers: the documents (``rag``) and the message graph (``graph``),
# the partition keys of ``backup_bundle`` and ChatRequest.corpus's vocabulary.
BACKUP_CORPORA = ("rag", "graph")

# --- jobs -------------------------------------------------------------------------------
INGEST_JOB = "ingest_documents"
# bm25_index alone: the BM25 entries of the targeted files rewritten from their Postgres
# rows (over every partition: the whole index rebuilt), nothing parsed or embedded
BM25_JOB = "rebuild_bm25_index"
CONTEXTUALIZE_JOB = "contextualize_documents"
PURGE_JOB = "purge_documents"
STALENESS_JOB = "refresh_corpus_staleness"
EVALUATE_JOB = "evaluate_index"
# an answer evaluation: answer_eval_results (and its gates) alone, on a suite of the run's
ANSWER_EVAL_JOB = "evaluate_answers"
# the evaluation assets whose blocking checks are the release gates
EVAL_ASSETS = ("eval_results", "answer_eval_results")
# the graph suite answered from a graph of its own; its blocking gate guards the release
GRAPH_EVALUATE_JOB = "evaluate_message_graph"
GRAPH_BUILD_JOB = "build_message_graph"
GRAPH_REMOVE_JOB = "remove_graph_sources"
GRAPH_RESET_JOB = "reset_message_graph"
GRAPH_REBUILD_JOB = "rebuild_message_graph"  # graph_rebuilt_days over a range of days
GRAPH_STALENESS_JOB = "refresh_graph_staleness"
BACKUP_JOB = "export_bundle"  # materializes backup_bundle for one corpus (its partition)
RESTORE_JOB = "restore_bundle"  # run config: the corpus and the bundle's file name

# --- concurrency pools ------------------------------------------------------------------
# dagster.yaml sizes every pool to one slot: the local LLM server answers one request at
# a time. (Embedding needs no pool: the server serializes its requests, and dagster.yaml
# runs two ingest runs at once so one parses and stores while the other embeds.)
LLM_POOL = "llm"
# The message graph's single writer: every run that writes the engine's working directory
# (a build, a removal) holds this pool's one slot, so no two write it at once. Readers
# (chat turns, the graph view) take no slot and never wait.
GRAPH_POOL = "graph"

# --- run tags ---------------------------------------------------------------------------
# Which stage a run belongs to (one of the ``STAGE_*`` values); dagster.yaml runs at most
# one ``contextualize`` run at a time, so blurb runs never take every run slot.
STAGE_TAG = "varagity/stage"
STAGE_INGEST = "ingest"
STAGE_CONTEXTUALIZE = "contextualize"
STAGE_PURGE = "purge"
STAGE_BM25 = "bm25"  # a rebuild of BM25 entries from the Postgres rows
STAGE_STALENESS = "staleness"
STAGE_GRAPH = "graph"
STAGE_BACKUP = "backup"  # an export (backup_bundle) or a restore
# On a backup or restore run: the corpus it writes or reads (``rag`` or ``graph``), and
# on a restore the bundle's file name.
CORPUS_TAG = "varagity/corpus"
BUNDLE_TAG = "varagity/bundle"
# ``true`` on a reingest backfill: every file is re-processed, indexed or not.
REINGEST_TAG = "varagity/reingest"
# Who launched a backfill ("api", "cli"); the job listing shows the backfills carrying it.
SOURCE_TAG = "varagity/source"
# On a message-graph build: the content signature of the archive (database, -wal, -shm)
# when the build was asked for, so the graph-sources sensor can tell that a build of
# exactly these bytes was already launched (by an upload, the API or itself).
ARCHIVE_TAG = "varagity/archive_sha256"
# ``true`` on a rebuild of the message graph that re-extracts every day, whatever the
# range of day partitions it names (the days the graph held when it was launched).
REBUILD_ALL_TAG = "varagity/rebuild_all"
# On an answer evaluation launched with a suite of its own: the suite folder's path.
SUITE_TAG = "varagity/suite"
# On a sensor run over several new files: ``true``, and how many files it covers.
BATCH_TAG = "varagity/batch"
FILES_TAG = "varagity/files"
# On a one-file run that re-runs a file of a failed batch run: that run's id.
ISOLATED_TAG = "varagity/isolated_from"
# On a batch run that re-runs the files of a crashed batch run: that run's id.
RECOVERED_TAG = "varagity/recovered_from"
# On a run the folder sensor asks for because the stores and the folder disagree (a
# restore, a crash between its cursor and a store, a hand edit): ``ingest`` or ``purge``.
RECONCILE_TAG = "varagity/reconcile"
# dagster-celery's op tag naming the Celery queue a step is sent to (other executors
# ignore it): steps that write the embedded Tantivy index carry the queue of the host
# that owns the index directory (CELERY_INDEX_QUEUE).
CELERY_QUEUE_TAG = "dagster-celery/queue"
# Dagster's own tags naming the partition (or the range of partitions) a run covers.
PARTITION_TAG = "dagster/partition"
RANGE_START_TAG = "dagster/asset_partition_range_start"
RANGE_END_TAG = "dagster/asset_partition_range_end"


# What a backup or restore run writes into its log, read back by whoever follows it:
# ``backup progress: <phase> <done>/<total>`` and, once an export's zip is in place,
# ``backup bundle: <file name>``.
BACKUP_PROGRESS_PREFIX = "backup progress: "
BACKUP_BUNDLE_PREFIX = "backup bundle: "
# and once a restore has committed, how its corpus differs from its folder (what the
# folder sensor then ingests, purges or rebuilds):
# ``restore reconcile: to_ingest=<n> to_purge=<n> failed=<n>``
RESTORE_RECONCILE_PREFIX = "restore reconcile: "

# What an answer evaluation writes into its log: a line per question answered (as
# varagity.eval.answers words it: ``  [3/40] q07: facts 2/2, citations 1/1 valid ...``;
# the feedback suite's lines after it start ``feedback:``) and, once the suite is
# scored, ``answer eval figures: {"n": 40, "answer_correctness": 0.95, ...}``.
ANSWER_FIGURES_PREFIX = "answer eval figures: "
_QUESTION_LINE = re.compile(r"\s*\[(\d+)/(\d+)\] (\S+):")

# Jobs whose runs write the documents corpus (chunks, blurbs, purges) or read it
# throughout (an answer evaluation), or write the graph.
_RAG_JOBS = frozenset({INGEST_JOB, BM25_JOB, CONTEXTUALIZE_JOB, PURGE_JOB, ANSWER_EVAL_JOB})
_GRAPH_WRITER_JOBS = frozenset(
    {GRAPH_BUILD_JOB, GRAPH_REMOVE_JOB, GRAPH_RESET_JOB, GRAPH_REBUILD_JOB}
)
_RAG_WRITER_STAGES = frozenset({STAGE_INGEST, STAGE_BM25, STAGE_CONTEXTUALIZE, STAGE_PURGE})


def backup_progress_line(phase: str, done: int, total: int) -> str:
    """The log line of one backup progress report."""
    return f"{BACKUP_PROGRESS_PREFIX}{phase} {done}/{total}"


def reconcile_line(counts: Mapping[str, int]) -> str:
    """The log line of what a restore left for the folder sensor to do."""
    return RESTORE_RECONCILE_PREFIX + " ".join(f"{k}={v}" for k, v in counts.items())


def parse_reconcile_line(message: str) -> dict[str, int] | None:
    """The counts of a :func:`reconcile_line`, else ``None``."""
    if not message.startswith(RESTORE_RECONCILE_PREFIX):
        return None
    counts: dict[str, int] = {}
    for part in message[len(RESTORE_RECONCILE_PREFIX) :].split():
        name, sep, value = part.partition("=")
        if not (sep and value.isdigit()):
            return None
        counts[name] = int(value)
    return counts


def parse_backup_progress(message: str) -> tuple[str, int, int] | None:
    """``(phase, done, total)`` of a :func:`backup_progress_line`, else ``None``."""
    if not message.startswith(BACKUP_PROGRESS_PREFIX):
        return None
    phase, _, counts = message[len(BACKUP_PROGRESS_PREFIX) :].rpartition(" ")
    done, sep, total = counts.partition("/")
    if not (phase and sep and done.isdigit() and total.isdigit()):
        return None
    return phase, int(done), int(total)


@dataclass(frozen=True, slots=True)
class AnswerFigures:
    """An answer evaluation's figures over its golden suite (shares are 0..1)."""

    n: int
    answer_correctness: float
    fully_correct: float
    citation_validity: float
    abstention_accuracy: float
    loops: int
    first_token_p50_ms: float


def answer_figures_line(figures: AnswerFigures) -> str:
    """The log line of an answer evaluation's figures."""
    return ANSWER_FIGURES_PREFIX + json.dumps(asdict(figures))


def parse_answer_figures(message: str) -> AnswerFigures | None:
    """The figures of an :func:`answer_figures_line`, else ``None``."""
    if not message.startswith(ANSWER_FIGURES_PREFIX):
        return None
    try:
        return AnswerFigures(**json.loads(message[len(ANSWER_FIGURES_PREFIX) :]))
    except (ValueError, TypeError):
        return None


def parse_answer_question(message: str) -> tuple[int, int, str] | None:
    """``(done, total, question id)`` of an answer evaluation's question line, else
    ``None``."""
    found = _QUESTION_LINE.match(message)
    if found is None:
        return None
    return int(found[1]), int(found[2]), found[3]


def corpus_of_run(job: str, tags: Mapping[str, str], assets: Sequence[str] = ()) -> str | None:
    """The corpus a run writes, exports or restores (one writer per corpus: the API
    launches no second one beside it), or ``None`` for a run that touches neither.

    ``rag``: the ingest, BM25 rebuild, blurb and purge jobs (and a Dagster UI
    materialization of ``bm25_index``), and the API's and CLI's ingest backfills
    (their runs carry :data:`SOURCE_TAG` or :data:`REINGEST_TAG` and a backfill id);
    ``graph``: builds, removals, resets and rebuilds (also a Dagster UI materialization
    or backfill of one of :data:`GRAPH_WRITER_ASSETS`); either for a restore
    (:data:`CORPUS_TAG`) or an export (a run of ``backup_bundle``, however launched: its
    partition is the corpus).
    ``assets`` are the asset keys the run materializes. An answer evaluation writes
    nothing but reads the documents throughout: ``rag`` too, so no restore is launched
    beside it (an export is: both only read).
    """
    if tags.get(CORPUS_TAG) in BACKUP_CORPORA:
        return tags[CORPUS_TAG]
    if (job == BACKUP_JOB or BACKUP_ASSET in assets) and tags.get(PARTITION_TAG) in BACKUP_CORPORA:
        return tags[PARTITION_TAG]
    if job in _GRAPH_WRITER_JOBS or tags.get(STAGE_TAG) == STAGE_GRAPH:
        return "graph"
    if any(asset in GRAPH_WRITER_ASSETS for asset in assets):
        return "graph"
    if job in _RAG_JOBS or tags.get(STAGE_TAG) in _RAG_WRITER_STAGES or BM25_ASSET in assets:
        return "rag"
    if "dagster/backfill" in tags and (SOURCE_TAG in tags or REINGEST_TAG in tags):
        return "rag"
    return None


# --- the graph's day partitions ---------------------------------------------------------


def graph_last_day(today: date) -> str:
    """The last day partition of the message graph when it is ``today`` (UTC)."""
    return (today + timedelta(days=GRAPH_DAYS_END_OFFSET - 1)).isoformat()


def graph_rebuild_range(first: str | None, last: str | None, *, today: date) -> tuple[str, str]:
    """The day partitions (first and last key) of a rebuild from ``first`` to ``last``
    (``YYYY-MM-DD``; ``None``: open on that side), clamped to the partitions that exist:
    a day before :data:`GRAPH_FIRST_DAY` is taken by the first partition, one after the
    last by the last (:func:`graph_rebuild_bounds` reads them back as open).

    Raises:
        ValueError: A day is not ``YYYY-MM-DD``, or ``first`` comes after ``last``.
    """
    for day in (first, last):
        if day is not None:
            date.fromisoformat(day)  # raises ValueError
    if first is not None and last is not None and first > last:
        raise ValueError(f"the range's first day {first} comes after its last day {last}")
    end = graph_last_day(today)
    start_key = min(max(first or GRAPH_FIRST_DAY, GRAPH_FIRST_DAY), end)
    end_key = max(min(last or end, end), GRAPH_FIRST_DAY)
    return start_key, end_key


def graph_rebuild_bounds(start: str, end: str, *, today: date) -> tuple[str | None, str | None]:
    """The days a rebuild over the day partitions ``start`` .. ``end`` re-extracts: the
    first and last day, ``None`` where it is open (the first partition takes every day
    before it, a range reaching ``today`` every day after it)."""
    low = None if start <= GRAPH_FIRST_DAY else start
    high = None if end >= today.isoformat() else end
    return low, high


def span_in_range(span: str, low: str | None, high: str | None) -> bool:
    """Whether a transcript's span (``YYYY-MM-DD`` or ``first..last``) meets the days
    ``low`` .. ``high`` (``None``: open on that side)."""
    first, _, last = span.partition("..")
    last = last or first
    return (low is None or last >= low) and (high is None or first <= high)


def range_request_tags(keys: Sequence[str]) -> dict[str, str]:
    """Tags of one run over the contiguous range ``keys[0]`` .. ``keys[-1]``."""
    return {RANGE_START_TAG: keys[0], RANGE_END_TAG: keys[-1]}


def run_partitions(
    tags: Mapping[str, str],
    ordered: Sequence[str],
    position: Mapping[str, int] | None = None,
) -> list[str] | None:
    """The partition keys a run targets, from its tags; ``None`` when it names none.

    Args:
        tags: The run's tags.
        ordered: The partition set in its order (a range is expanded over it).
        position: Each key's index in ``ordered``, when the caller has it (many runs).

    Returns:
        The single partition, every partition of the range, or, when an end of the
        range was deleted since the run, the ends that can still be named.
    """
    if tags.get(PARTITION_TAG):
        return [tags[PARTITION_TAG]]
    start, end = tags.get(RANGE_START_TAG), tags.get(RANGE_END_TAG)
    if not (start and end):
        return None
    if position is None:
        position = {key: i for i, key in enumerate(ordered)}
    if start in position and end in position:
        first, last = sorted((position[start], position[end]))
        return list(ordered[first : last + 1])
    return list(dict.fromkeys([start, end]))


def contiguous_groups(
    keys: Sequence[str], position: Mapping[str, int], limit: int
) -> list[list[str]]:
    """``keys`` (in ``position`` order) cut into groups of consecutive positions of at
    most ``limit`` keys each: one run per group can name its partitions as a range."""
    groups: list[list[str]] = []
    for key in keys:
        last = groups[-1] if groups else None
        if last and position[key] == position[last[-1]] + 1 and len(last) < limit:
            last.append(key)
        else:
            groups.append([key])
    return groups


def ingest_batches(
    items: Sequence[T],
    size: int,
    *,
    weight: Callable[[T], int] | None = None,
    max_weight: int | None = None,
) -> list[Sequence[T]]:
    """``items`` cut into ingest runs of at most ``size``, in order; with ``weight`` (a
    file's bytes) each run also holds at most ``max_weight`` of it, an item heavier
    than that alone in a run of its own.

    A burst of more than one run starts with two short runs, a sixteenth of ``size``
    and a sixteenth more than half of it, then full ones. dagster.yaml runs two ingest
    runs at once and the embedding server shares itself fairly between them, so two
    runs that start together end together and then leave it idle while the next two
    start (about a second: the queue's dequeue, a worker, parsing); runs that end
    together go on doing so. Started together, the short first run ends when the second
    has half a run of embedding left, so from then on each run starts while the other
    is half way through. The first run is short so that the burst's first files are
    searchable in seconds: a 1,000-file burst in runs of 100 had its first file
    searchable after 6.2 s with a first run of 12 files, 14.2 s with one of 50, and
    9.1 s in runs of 200 with one of 25. (Measured on 1,000 files in runs of 50: the
    embedder idle 6.3 s of 114 s in step, 1.7 s out of step, but the same wall time: on
    two cores the other processes used the freed seconds.)

    The count alone does not bound a run worker's memory: it holds every chunk, vector
    and stored value of its files, about 20 MiB per MiB of text (a run of six 1.2 MB
    text files peaked at 522 MiB against 379 for small ones), so runs of 200 large
    files would take gigabytes. ``INGEST_BATCH_BYTES`` cuts by file size too.
    """
    if size < 1:
        raise ValueError("size must be at least 1")
    if len(items) <= size:
        runs = [items] if items else []
    else:
        first = max(1, size // 16)
        second = first + min(size, size // 2 + first)
        cuts = [0, first, *range(second, len(items), size), len(items)]
        runs = [items[a:b] for a, b in pairwise(cuts)]
    if weight is None or max_weight is None:
        return runs
    if max_weight < 1:
        raise ValueError("max_weight must be at least 1")
    out: list[Sequence[T]] = []
    for run in runs:
        start, held = 0, 0
        for i, item in enumerate(run):
            w = weight(item)
            if i > start and held + w > max_weight:
                out.append(run[start:i])
                start, held = i, 0
            held += w
        out.append(run[start:])
    return out
