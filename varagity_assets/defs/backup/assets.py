"""``backup_bundle``: one zip of a corpus (its partition: ``rag`` or ``graph``) written
into that corpus's ``varagity-exports/`` folder, and checked before it counts.

The bundle is read back and verified in the same step (every member's sha256 against
``bundle.json``, and the cheap verdict a listing shows): the blocking check
``bundle_verifies`` records the verdict, and a bundle that does not verify fails the
materialization, so the UI never shows an unverified backup as the latest one.

Runs of the two partitions are independent; within a corpus the library keeps one writer
(:mod:`varagity.backup.locks`): a graph export holds the graph's write lock for its copy
(a build running at the same moment makes it fail, saying which holder, rather than
wait or copy a half-written graph), and a RAG export reads one snapshot and blocks
nothing. No model is called. The backup library is imported by the step, not by the
code location: runs that never back up do not import it.
"""

import time
from collections.abc import Iterator

import dagster as dg

from varagity.pipeline import BACKUP_BUNDLE_PREFIX, backup_progress_line
from varagity_assets.defs.backup.partitions import corpus_partitions
from varagity_assets.resources import VaragityResource

VERIFY_CHECK = "bundle_verifies"
_PROGRESS_EVERY_S = 1.0  # at most one progress line per second (each is a Dagster event)


class ProgressLog:
    """The library's ``(phase, done, total)`` reports as run log lines
    (:func:`~varagity.pipeline.backup_progress_line`), at most one per second per phase
    plus each phase's last, so a follower sees progress without a flood of events."""

    def __init__(self, log: dg.DagsterLogManager) -> None:
        """Log into ``log``."""
        self.log = log
        self._phase = ""
        self._at = 0.0

    def __call__(self, phase: str, done: int, total: int) -> None:
        """Report one step of ``phase``."""
        now = time.monotonic()
        if phase == self._phase and done < total and now - self._at < _PROGRESS_EVERY_S:
            return
        self._phase, self._at = phase, now
        self.log.info(backup_progress_line(phase, done, total))


def corpus_failure(exc: Exception, corpus: str) -> dg.Failure:
    """The step failure for a refused backup or restore: the library's reason, whole."""
    from varagity.backup.bundle import BundleError
    from varagity.backup.locks import CorpusBusy

    if isinstance(exc, CorpusBusy):
        return dg.Failure(
            f"corpus_busy: the {corpus} corpus is being written by {exc.holder}; "
            "run this again once it has finished",
            allow_retries=False,
        )
    if isinstance(exc, BundleError):
        return dg.Failure(f"{exc.code}: {exc.detail}", allow_retries=False)
    raise TypeError(f"not a backup refusal: {exc!r}")


def require_graph(varagity: VaragityResource) -> None:
    """Fail the step, saying why, when the message graph is switched off."""
    if not varagity.settings.GRAPH_ENABLED:
        raise dg.Failure(
            "graph_disabled: the message graph is disabled (GRAPH_ENABLED=false); set "
            "GRAPH_ENABLED=true to back it up or restore it",
            allow_retries=False,
        )


@dg.asset(
    group_name="backup",
    kinds={"zip"},
    partitions_def=corpus_partitions,
    check_specs=[
        dg.AssetCheckSpec(
            VERIFY_CHECK,
            asset="backup_bundle",
            blocking=True,
            description="The new bundle read back: every member's sha256 matches bundle.json "
            "and this stack would accept it.",
        )
    ],
)
def backup_bundle(
    context: dg.AssetExecutionContext, varagity: VaragityResource
) -> Iterator[dg.AssetCheckResult | dg.MaterializeResult]:
    """A zip of one corpus in ``<corpus folder>/varagity-exports/``: the documents and
    chunks with their vectors (``rag``), or the graph engine's working directory with
    its sidecars (``graph``). Written whole or not at all, then verified."""
    from varagity.backup.bundle import BundleError
    from varagity.backup.corpora import export_corpus
    from varagity.backup.locks import CorpusBusy
    from varagity.backup.rows import verify_bundle

    corpus = context.partition_key
    services = varagity.services
    settings = services.settings
    progress = ProgressLog(context.log)
    try:
        if corpus == "graph":
            require_graph(varagity)
        result = export_corpus(corpus, settings, services.pg, progress=progress)
    except (BundleError, CorpusBusy) as exc:
        raise corpus_failure(exc, corpus) from exc
    except FileNotFoundError as exc:  # a graph nothing has built yet: nothing to back up
        raise dg.Failure(f"nothing_to_export: {exc}", allow_retries=False) from exc
    manifest = result.manifest
    size = result.path.stat().st_size
    context.log.info(f"{result.path.name} written in {result.seconds:.1f} s; verifying it")
    started = time.monotonic()
    verdict = verify_bundle(result.path, settings, corpus)
    verify_seconds = time.monotonic() - started
    chunks = manifest.counts.get("chunks")
    metadata: dict[str, dg.RawMetadataValue] = {
        "path": dg.MetadataValue.path(str(result.path)),
        "bundle": result.path.name,
        "size_bytes": size,
        "counts": dg.MetadataValue.json(dict(manifest.counts)),
        "stale": manifest.stale,
        "seconds": round(result.seconds, 3),
        "verify_seconds": round(verify_seconds, 3),
    }
    if chunks is not None and result.seconds > 0:
        metadata["chunks_per_second"] = round(chunks / result.seconds, 1)
    yield dg.AssetCheckResult(
        check_name=VERIFY_CHECK,
        passed=verdict.ok,
        severity=dg.AssetCheckSeverity.ERROR,
        description="verified: every member's sha256 matches"
        if verdict.ok
        else f"{verdict.code}: {verdict.detail}",
        metadata={
            "bundle": result.path.name,
            "verify_seconds": round(verify_seconds, 3),
            "code": verdict.code or "",
        },
    )
    if not verdict.ok:
        raise dg.Failure(
            f"{result.path.name} does not verify ({verdict.code}: {verdict.detail}); it stays "
            "in the folder, listed as refused, and is not a backup",
            metadata=metadata,
            allow_retries=False,
        )
    context.log.info(BACKUP_BUNDLE_PREFIX + result.path.name)
    yield dg.MaterializeResult(metadata=metadata)
