"""Isolated evaluation stores: each suite's corpus ingested apart from the live index.

Each ingest configuration gets its own database on the app's Postgres server
(``eval_<suite>_<ingest-hash>``) and its own Tantivy folder under
``VARAGITY_HOME/eval/<that name>/bm25``, so an evaluation never touches the live index.
A store whose suite and ingest settings were already ingested is reused: files whose
exact version is stored are skipped, new or changed ones are ingested, vanished ones
purged.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from varagity.config import REINGEST_AFFECTING, Settings, load_settings
from varagity.eval.suite import Suite
from varagity.services import Services

log = logging.getLogger(__name__)

Progress = Callable[[str], None]

_INGEST_EXTRA = ("EMBEDDING_MODEL", "EMBEDDING_DIM", "SEMANTIC_BREAKPOINT_PERCENTILE")
_CONTEXT_EXTRA = ("LLM_MODEL", "CONTEXT_MAX_TOKENS")
_SLUG = re.compile(r"[^a-z0-9]+")


def derive_settings(base: Settings, overrides: Mapping[str, Any]) -> Settings:
    """``base`` with ``overrides`` applied, validated again."""
    return load_settings(**{**base.model_dump(), **overrides})


def ingest_key(settings: Settings) -> str:
    """Short hash of the settings that decide what ingest writes."""
    names = list(REINGEST_AFFECTING) + list(_INGEST_EXTRA)
    if settings.CONTEXTUALIZE:
        names += list(_CONTEXT_EXTRA)
    values = {n: str(getattr(settings, n)) for n in sorted(names)}
    return hashlib.sha256(json.dumps(values, sort_keys=True).encode()).hexdigest()[:12]


def store_prefix(suite: Suite) -> str:
    """Common prefix of every isolated store of ``suite``: ``eval_<suite>_``."""
    slug = _SLUG.sub("_", suite.name.lower()).strip("_")[:30] or "suite"
    return f"eval_{slug}_"


def store_name(suite: Suite, settings: Settings) -> str:
    """Database (and folder) name of the isolated store: ``eval_<suite>_<ingest hash>``."""
    return store_prefix(suite) + ingest_key(settings)


def drop_stores(base: Settings, suite: Suite) -> list[str]:
    """Remove every isolated store of ``suite``: its databases, BM25 folders and markers.

    Returns:
        The names of the stores removed (databases and/or folders).
    """
    import shutil

    from varagity.stores.postgres import database_url, databases_with_prefix, drop_database

    prefix = store_prefix(suite)
    server = database_url(base)
    names = set(databases_with_prefix(server, prefix))
    for name in sorted(names):
        drop_database(server, name)
    root = base.home / "eval"
    if root.is_dir():
        for folder in root.iterdir():
            if folder.is_dir() and folder.name.startswith(prefix):
                shutil.rmtree(folder)
                names.add(folder.name)
    if base.ELASTICSEARCH_URL:
        log.warning(
            "Elasticsearch indices %s_%s* are not removed; delete them on the server",
            base.ELASTICSEARCH_INDEX,
            prefix,
        )
    return sorted(names)


def isolated_settings(base: Settings, suite: Suite, overrides: Mapping[str, Any]) -> Settings:
    """Settings pointing at the suite's corpus and its isolated store (created if missing).

    Args:
        base: The app's settings (which Postgres server, models, home folder).
        suite: The suite whose corpus is ingested.
        overrides: The configuration's settings overrides.
    """
    from varagity.stores.postgres import database_url, ensure_database

    derived = derive_settings(base, overrides)
    name = store_name(suite, derived)
    url = ensure_database(database_url(base), name)
    return derive_settings(
        base,
        {
            **overrides,
            "DATABASE_URL": url,
            "DOCS_PATH": suite.corpus,
            "BM25_INDEX_PATH": base.home / "eval" / name / "bm25",
            "ELASTICSEARCH_INDEX": f"{base.ELASTICSEARCH_INDEX}_{name}",
        },
    )


@dataclass(slots=True)
class IngestReport:
    """What preparing one isolated store did."""

    store: str
    files: int = 0
    ingested: int = 0
    reused: int = 0
    purged: int = 0
    chunks: int = 0
    seconds: float = 0.0
    failures: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "store": self.store,
            "files": self.files,
            "ingested": self.ingested,
            "reused": self.reused,
            "purged": self.purged,
            "chunks": self.chunks,
            "seconds": round(self.seconds, 2),
            "failures": self.failures,
        }


def marker_path(settings: Settings, name: str) -> Path:
    """Where a store records the corpus fingerprint it was ingested from."""
    return settings.home / "eval" / name / "ingested.json"


def ensure_ingested(
    services: Services, suite: Suite, progress: Progress | None = None
) -> IngestReport:
    """Bring the isolated store of ``services`` up to date with the suite's corpus.

    Args:
        services: Handles opened on :func:`isolated_settings`.
        suite: The suite whose corpus (``services.settings.docs_path``) is ingested.
        progress: Called with a line per ingested file.
    """
    from varagity.files import file_sha256
    from varagity.ingest.discovery import scan
    from varagity.ingest.stages import purge_path
    from varagity.records import doc_id_for
    from varagity.services import ingest_file

    settings = services.settings
    name = store_name(suite, settings)
    report = IngestReport(store=name)
    started = time.perf_counter()
    files, _ = scan(settings.docs_path)
    report.files = len(files)
    present = {f.relative_path for f in files}
    for row in services.pg.list_documents():
        if row.relative_path not in present:
            purge_path(row.relative_path, pg=services.pg, bm25=services.bm25)
            report.purged += 1
    for f in files:
        doc_id = doc_id_for(f.relative_path, file_sha256(f.path))
        stored = services.pg.get_document(doc_id)
        if stored is not None:
            report.reused += 1
            report.chunks += stored.n_chunks
            continue
        t0 = time.perf_counter()
        try:
            result = ingest_file(services, f.relative_path)
        except Exception as exc:  # one unparseable file must not stop the evaluation
            report.failures.append(f"{f.relative_path}: {type(exc).__name__}: {exc}")
            log.warning("eval ingest of %s failed: %s", f.relative_path, exc)
            continue
        report.ingested += 1
        report.chunks += result.n_chunks
        if progress:
            progress(
                f"  ingested {f.relative_path}: {result.n_chunks} chunks "
                f"in {time.perf_counter() - t0:.1f}s"
            )
    report.seconds = time.perf_counter() - started
    marker = marker_path(settings, name)
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.write_text(
        json.dumps({"fingerprint": suite.corpus_fingerprint(), **report.to_dict()}, indent=2)
    )
    return report
