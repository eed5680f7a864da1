"""The message graph's bundle: the engine's working directory, verbatim.

Export copies every file the engine wrote (the LLM cache, the doc-status ledger, the
build manifest and the size summary included) under ``<engine>/`` in the bundle,
holding the graph's write lock for the copy, so no build changes the graph meanwhile;
reads take no lock and go on. In-flight temp files (``*.tmp*``) are skipped; anything a
bundle cannot carry (a folder, a symlink, an unsafe name) is named in a warning instead.
The counts come from the size summary and the manifest sidecars, never from parsing the
engine's files. No model service is involved.

Restore extracts the files beside the live workdir (each synced; the build manifest
sidecar, the one file whose content Varagity reads paths from, must name archives
inside the graph folder), swaps them in and opens them through
:class:`~varagity.graph.service.GraphService`; a graph that will not open is replaced
by the previous one again (:mod:`varagity.graph.swap`). The graph's stale flag becomes
the bundle's.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shutil
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

from varagity.backup.bundle import (
    BUNDLE_FORMAT,
    BUNDLE_VERSION,
    BundleError,
    BundleManifest,
    ExportResult,
    Progress,
    RestoreResult,
    check_directory,
    load_checked,
    open_member,
    open_zip,
    read_manifest,
    writing_bundle,
)
from varagity.backup.locks import restore_holder
from varagity.backup.rows import check_graph_sidecar, graph_sidecar
from varagity.config import Settings
from varagity.corpus_lock import graph_write_lock
from varagity.files import fsync_dir
from varagity.graph.manifest import read_summary
from varagity.graph.registry import running_engine_format, workdir_for
from varagity.graph.service import GraphService
from varagity.graph.swap import heal_graph_workdir, staged_dir
from varagity.stores.corpus_state import GRAPH_STALE_KEY
from varagity.stores.postgres import connect, database_url

__all__ = ["export_graph", "heal_graph_workdir", "restore_graph"]

log = logging.getLogger(__name__)

_SAFE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-]*$")


def _noop(phase: str, done: int, total: int) -> None:
    return None


def _graph_stale(settings: Settings) -> str | None:
    with connect(database_url(settings), autocommit=True) as conn:
        row = conn.execute(
            "SELECT value FROM app_settings WHERE key = %s", (GRAPH_STALE_KEY,)
        ).fetchone()
    return str(row[0]) if row else None


def _set_graph_stale(settings: Settings, reason: str | None) -> None:
    with connect(database_url(settings), autocommit=True) as conn:
        if reason is None:
            conn.execute("DELETE FROM app_settings WHERE key = %s", (GRAPH_STALE_KEY,))
        else:
            conn.execute(
                "INSERT INTO app_settings (key, value, updated_at) VALUES (%s, %s, now())"
                " ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, updated_at = now()",
                (GRAPH_STALE_KEY, reason),
            )


def _members(workdir: Path) -> list[Path]:
    """The files a bundle carries, by name; what it cannot carry is warned about."""
    try:
        entries = sorted(workdir.iterdir())
    except FileNotFoundError:
        return []
    files = []
    for path in entries:
        if ".tmp" in path.name:
            continue  # a save in flight; the whole file it replaces is copied
        if path.is_symlink() or not path.is_file():
            log.warning("graph export: %s is not a plain file; not exported", path)
        elif not _SAFE.match(path.name):
            log.warning("graph export: %s has a hidden or unsafe name; not exported", path)
        else:
            files.append(path)
    return files


def graph_counts(workdir: Path) -> dict[str, int]:
    """The bundle's counts: thread days and messages, entities and relations, from the
    size summary (empty when no build wrote one)."""
    summary = read_summary(workdir)
    if summary is None:
        return {}
    return {
        "thread_days": summary.docs,
        "messages": summary.message_guids,
        "entities": summary.entities,
        "relations": summary.relations,
    }


def export_graph(settings: Settings, *, progress: Progress | None = None) -> ExportResult:
    """Write a bundle of the message graph into ``GRAPH_DOCS_PATH/varagity-exports/``.

    Raises:
        CorpusBusy: A graph build or another backup holds the graph.
        FileNotFoundError: The graph holds no file yet (nothing was built).
    """
    report = progress or _noop
    started = time.monotonic()
    engine = running_engine_format(settings)
    workdir = workdir_for(settings)
    with graph_write_lock(settings, holder="a graph export"):
        files = _members(workdir)
        if not files:
            raise FileNotFoundError(
                f"the message graph has no files in {workdir} yet: build it before exporting"
            )
        created_at = datetime.now(UTC)
        with writing_bundle(settings, "graph", created_at) as writer:
            for i, path in enumerate(files):
                report("files", i, len(files))
                writer.add_file(f"{engine.name}/{path.name}", path)
            report("files", len(files), len(files))
            stale = _graph_stale(settings)  # last: a source deleted mid-copy still counts
            manifest = BundleManifest(
                format=BUNDLE_FORMAT,
                version=BUNDLE_VERSION,
                corpus="graph",
                created_at=created_at,
                embedding_model=settings.EMBEDDING_MODEL,
                embedding_dim=settings.EMBEDDING_DIM,
                stale=stale is not None,
                counts=graph_counts(workdir),
                ingest_settings=None,
                engine={"name": engine.name, "package": engine.package, "version": engine.version},
                members=tuple(writer.members),
            )
            path = writer.finish(manifest)
    seconds = time.monotonic() - started
    log.info("exported %d graph files to %s in %.1f s", len(files), path, seconds)
    return ExportResult(path=path, manifest=manifest, seconds=seconds)


def _extract(path: Path, settings: Settings, staged: Path, report: Progress) -> BundleManifest:
    """Check the bundle and write its files into ``staged``, each synced; raises
    :class:`BundleError` (and leaves ``staged`` to the caller) on any mismatch.

    Every file lands directly in ``staged`` (the member names were checked flat and
    plain; this is checked again on the path itself), and the build manifest sidecar
    must name archives inside the graph folder (:func:`check_graph_sidecar`)."""
    with open_zip(path) as zf:
        manifest = read_manifest(zf)
        check_directory(zf, manifest, settings, "graph")
        staged.mkdir()
        total = len(manifest.members)
        for i, member in enumerate(manifest.members):
            report("files", i, total)
            name = member.name.split("/", 1)[1]
            target = staged / name
            if target.parent != staged or not _SAFE.match(name):
                raise BundleError(
                    "bundle_invalid", f"member {member.name!r} would land outside the graph"
                )
            try:
                out = target.open("xb")
            except FileExistsError:
                raise BundleError(
                    "bundle_invalid",
                    f"member {member.name!r} names a file written already (names that "
                    "differ only in case?)",
                ) from None
            with out, open_member(zf, member) as reader:
                while block := reader.read(1 << 20):
                    out.write(block)
                reader.check()
                out.flush()
                os.fsync(out.fileno())
            if graph_sidecar(member.name):
                check_graph_sidecar(target.read_bytes(), member.name)
        report("files", total, total)
    fsync_dir(staged)
    return manifest


def restore_graph(
    path: Path,
    settings: Settings,
    *,
    progress: Progress | None = None,
    service: GraphService | None = None,
) -> RestoreResult:
    """Replace the message graph with the bundle at ``path``.

    Args:
        service: This process's graph service, when it has one (a process holds one
            engine at a time, so its reader must be the one that reopens); else one is
            made for the check that the restored graph opens.

    Raises:
        BundleError: The bundle is incompatible or unsound, or the restored graph would
            not open (the previous graph is back in place).
        CorpusBusy: A graph build or another backup holds the graph.
    """
    report = progress or _noop
    started = time.monotonic()
    load_checked(path, settings, "graph")  # refuse before taking anything
    run = uuid.uuid4().hex[:12]
    workdir = workdir_for(settings)
    with graph_write_lock(settings, holder=restore_holder(path.name), restore=True):
        staged = staged_dir(workdir, run)
        try:
            manifest = _extract(path, settings, staged, report)
        except BaseException:
            shutil.rmtree(staged, ignore_errors=True)
            raise
        with contextlib.ExitStack() as own:
            if service is None:  # the clients are never called: the open reads files
                from varagity.models.chat import ChatClient
                from varagity.models.embeddings import EmbeddingClient

                chat = own.enter_context(contextlib.closing(ChatClient.from_settings(settings)))
                embedder = own.enter_context(
                    contextlib.closing(EmbeddingClient.from_settings(settings))
                )
                service = own.enter_context(
                    contextlib.closing(GraphService(settings, chat, embedder))
                )
            try:
                service.replace_workdir(staged, run)
            except Exception as exc:
                raise BundleError(
                    "bundle_invalid",
                    f"the restored graph would not open ({exc}); the previous graph is back",
                ) from exc
        stale = "the graph was stale when this bundle was exported" if manifest.stale else None
        _set_graph_stale(settings, stale)
    seconds = time.monotonic() - started
    log.info("restored the message graph from %s in %.1f s", path.name, seconds)
    return RestoreResult(manifest=manifest, seconds=seconds, stale_reason=stale)
