"""Forgetting a source, with a receipt that proves what went.

A forget removes a source from every store that derived something from it, then asks
each store again and writes down what it found: the **receipt**. The sources are
documents of ``DOCS_PATH`` (:func:`forget_documents`), a message archive of
``GRAPH_DOCS_PATH`` (:func:`forget_archive`), and messages within the archives: a
thread, a handle, a range of days (:func:`forget_messages`).

What each store gives up:

* **documents**: the documents rows, their chunks with their vectors and contextual
  blurbs (Postgres, one cascade), their BM25 entries (Tantivy or Elasticsearch) - the
  pipeline's own purge (:func:`varagity.corpus.delete_documents`) - and the page
  previews cached for their content hash (unless another stored document has the same
  bytes). Document answers are never cached, so there is no reply cache to empty.
* **the message graph**: a day all of whose messages are forgotten is deleted from the
  engine; a day that keeps some messages is deleted and extracted again without them
  (a bounded rebuild of exactly the affected days). LightRAG deletes per document: an
  entity or relation only the forgotten days supported goes, one the days shared with
  others is rebuilt from the remaining days' cached extractions (it loses only what the
  forgotten days said). The engine's cached extraction replies of the deleted days go
  too, and any other reply-cache entry that quotes a forgotten message. The build
  manifest stops listing their messages. Messages in an archive the user keeps are left
  in the file (it is never written) and left out of every later read of it
  (:mod:`varagity.graph.forgotten`).
* **conversations**: an answer that cited a forgotten source keeps its place in the
  history, but its source snapshots are **redacted**, not deleted: the cited text, the
  quotes, the excerpt go, the citation stays (``"forgotten": <forget id>``), and the
  forgotten text is cut out of the answer where it quotes it.
* **backups** are never rewritten: the receipt lists every bundle whose contents still
  include the source (a RAG bundle's ``documents.jsonl``, a graph bundle's build
  manifest), so the user can delete those too.

Every forget is kept in the ledger (``forgotten_sources``) by identifiers and hashes,
never text, so ``varagity doctor`` can check later that no store holds any of it again
(:func:`traces`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import re
import shutil
import uuid
import xml.sax.saxutils
import zipfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import psycopg
from psycopg.types.json import Jsonb

from varagity.backup.bundle import RAG_DOCUMENTS, list_bundles
from varagity.config import Settings
from varagity.corpus import DeleteReport, delete_documents
from varagity.graph.archives import scan_archives
from varagity.graph.base import ApplyReport
from varagity.graph.contacts import ContactsError, load_contacts
from varagity.graph.folder import RemovedSource, remove_source
from varagity.graph.forgotten import ForgetRule, add_rule, read_rules
from varagity.graph.manifest import (
    MANIFEST_FILE,
    ManifestEntry,
    read_manifest,
    summarize,
    update_after_apply,
    write_json_atomic,
    write_summary,
)
from varagity.graph.registry import workdir_for
from varagity.graph.service import GraphService
from varagity.graph.sources.base import MessageSourceError
from varagity.graph.sources.registry import read_archive, rejections
from varagity.graph.transcripts import graph_timezone
from varagity.graph.types import GraphDiff, ThreadDay
from varagity.ingest.discovery import partition_key_for
from varagity.preview.service import cache_root
from varagity.stores.bm25 import BM25Store
from varagity.stores.step_artifacts import artifact_name
from varagity.stores.vector_store import PgVectorStore

log = logging.getLogger(__name__)

ForgetKind = Literal["documents", "archive", "thread", "handle", "messages"]

#: What a redacted snapshot's text becomes, and what replaces forgotten text in answers.
REDACTED = "[forgotten]"
#: What the text of an answer that cited a forgotten source becomes.
REDACTED_ANSWER = "[forgotten] This answer cited a source that was forgotten since."
#: Forgotten message texts shorter than this are not looked for as text (a "Yes." is
#: in every archive); their days are still deleted, by key.
MIN_NEEDLE_CHARS = 12
#: A transcript line: ``[HH:MM] Sender: text`` (:func:`varagity.graph.transcripts.render_day`).
_LINE = re.compile(r"^\[\d{2}:\d{2}\] [^:\n]*: (?P<text>.+)$")

# LightRAG's file storages (the engine's working directory)
_DOC_STATUS = "kv_store_doc_status.json"
_FULL_DOCS = "kv_store_full_docs.json"
_LLM_CACHE = "kv_store_llm_response_cache.json"
_GRAPHML = "graph_chunk_entity_relation.graphml"
_SEP = "<SEP>"


# --- the receipt --------------------------------------------------------------------


@dataclass(frozen=True)
class StoreReceipt:
    """What one store gave up, and what asking it again found."""

    store: str
    """``chunks``, ``vectors``, ``blurbs``, ``bm25``, ``previews``, ``graph_days``,
    ``graph_entities``, ``graph_relations``, ``graph_files``, ``reply_cache``,
    ``manifest``, ``snapshots``."""
    label: str
    removed: int
    """Deleted (or, for ``snapshots``, redacted) by this forget."""
    remaining: int
    """What the store still holds of the source when asked again: 0 when verified."""
    updated: int = 0
    """Kept, but changed: shared graph entities and relations that lost the source's
    description, days extracted again without the forgotten messages."""
    note: str | None = None

    @property
    def verified(self) -> bool:
        """Whether the store was asked again and holds nothing of the source."""
        return self.remaining == 0


@dataclass(frozen=True)
class BackupHolding:
    """A backup bundle that still contains (part of) the forgotten source."""

    corpus: str
    name: str
    created_at: datetime | None
    holds: str


@dataclass
class ForgetReceipt:
    """What a forget removed from each store, verified, and the backups still holding it."""

    forget_id: str
    kind: ForgetKind
    target: str
    forgotten_at: datetime
    stores: list[StoreReceipt] = field(default_factory=list)
    backups: list[BackupHolding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def verified(self) -> bool:
        """Whether every store was asked again and holds nothing of the source."""
        return all(s.verified for s in self.stores)

    def to_json(self) -> dict[str, Any]:
        """The receipt as the API returns it and the ledger keeps it."""
        return {
            "forget_id": self.forget_id,
            "kind": self.kind,
            "target": self.target,
            "forgotten_at": self.forgotten_at.isoformat(),
            "verified": self.verified,
            "stores": [{**asdict(s), "verified": s.verified} for s in self.stores],
            "backups": [
                {**asdict(b), "created_at": b.created_at.isoformat() if b.created_at else None}
                for b in self.backups
            ],
            "notes": list(self.notes),
        }


def _new_receipt(kind: ForgetKind, target: str) -> ForgetReceipt:
    return ForgetReceipt(uuid.uuid4().hex, kind, target, datetime.now(UTC))


# --- the ledger ---------------------------------------------------------------------


@dataclass(frozen=True)
class Forgotten:
    """One ledger entry: a forget, by the identifiers of what it removed."""

    forget_id: str
    kind: ForgetKind
    target: str
    forgotten_at: datetime
    doc_ids: tuple[str, ...] = ()
    chunk_ids: tuple[str, ...] = ()
    content_hashes: tuple[str, ...] = ()
    relative_paths: tuple[str, ...] = ()
    doc_keys: tuple[str, ...] = ()
    """Transcript days the graph no longer holds at all."""
    message_guids: tuple[str, ...] = ()
    graph_chunks: tuple[str, ...] = ()
    """The engine's chunk ids of the forgotten text (content hashes of it)."""

    def identifiers(self) -> dict[str, list[str]]:
        """The ledger's ``identifiers`` column."""
        return {name: list(getattr(self, name)) for name in _ID_FIELDS}


_ID_FIELDS = (
    "doc_ids",
    "chunk_ids",
    "content_hashes",
    "relative_paths",
    "doc_keys",
    "message_guids",
    "graph_chunks",
)


def _record(pg: PgVectorStore, receipt: ForgetReceipt, forgotten: Forgotten) -> None:
    with pg.connection() as conn, conn.transaction():
        conn.execute(
            "INSERT INTO forgotten_sources (forget_id, kind, target, forgotten_at, identifiers,"
            " receipt) VALUES (%s, %s, %s, %s, %s, %s)",
            (
                receipt.forget_id,
                receipt.kind,
                receipt.target,
                receipt.forgotten_at,
                Jsonb(forgotten.identifiers()),
                Jsonb(receipt.to_json()),
            ),
        )


def read_ledger(conn: psycopg.Connection) -> list[Forgotten]:
    """Every forget the ledger holds, oldest first."""
    rows = conn.execute(
        "SELECT forget_id, kind, target, forgotten_at, identifiers FROM forgotten_sources"
        " ORDER BY forgotten_at, forget_id"
    ).fetchall()
    return [
        Forgotten(forget_id, kind, target, at, **{k: tuple(ids.get(k, ())) for k in _ID_FIELDS})
        for forget_id, kind, target, at, ids in rows
    ]


def receipts(pg: PgVectorStore, limit: int = 50) -> list[dict[str, Any]]:
    """The newest receipts the ledger keeps (as :meth:`ForgetReceipt.to_json`)."""
    with pg.connection() as conn:
        rows = conn.execute(
            "SELECT receipt FROM forgotten_sources ORDER BY forgotten_at DESC LIMIT %s", (limit,)
        ).fetchall()
    return [dict(r[0]) for r in rows]


# --- text: what to look for, in the forms files keep it -------------------------------


def _forms(text: str) -> tuple[str, ...]:
    """``text`` as a file may hold it: raw, JSON-escaped (both ways), XML-escaped."""
    forms = {
        text,
        json.dumps(text)[1:-1],
        json.dumps(text, ensure_ascii=False)[1:-1],
        xml.sax.saxutils.escape(text, {'"': "&quot;"}),
    }
    return tuple(sorted(forms))


def _needles(texts: Iterable[str]) -> tuple[str, ...]:
    return tuple(sorted({t for t in texts if len(t) >= MIN_NEEDLE_CHARS}))


def _holds(haystack: str, needles: Sequence[str]) -> bool:
    return any(form in haystack for n in needles for form in _forms(n))


def _cut(text: str, needles: Sequence[str]) -> str:
    for needle in sorted(needles, key=len, reverse=True):
        text = text.replace(needle, REDACTED)
    return text


# --- conversations: redacting source snapshots ----------------------------------------


def _redact_document_snapshots(
    conn: psycopg.Connection, doc_ids: Sequence[str], forget_id: str
) -> int:
    """Redact the snapshots of ``doc_ids``' chunks and the answers that cited them."""
    rows = conn.execute(
        "SELECT message_id, rank, trace FROM message_sources"
        " WHERE trace->>'doc_id' = ANY(%s) AND NOT trace ? 'forgotten'",
        (list(doc_ids),),
    ).fetchall()
    for message_id, rank, trace in rows:
        redacted = {
            **trace,
            "content": REDACTED,
            "context": None,
            "quotes": [{**q, "text": REDACTED} for q in trace.get("quotes") or []],
            "forgotten": forget_id,
        }
        conn.execute(
            "UPDATE message_sources SET trace = %s WHERE message_id = %s AND rank = %s",
            (Jsonb(redacted), message_id, rank),
        )
    _redact_answers(conn, {r[0] for r in rows})
    return len(rows)


def _redact_answers(conn: psycopg.Connection, message_ids: Iterable[str]) -> None:
    """An answer that cited a forgotten source may say anything of it, in any words: its
    text is replaced by :data:`REDACTED_ANSWER` (the turn, its question and its other
    sources stay)."""
    ids = sorted(set(message_ids))
    if ids:
        conn.execute(
            "UPDATE messages SET content = %s, reasoning = NULL"
            " WHERE message_id = ANY(%s) AND role = 'assistant'",
            (REDACTED_ANSWER, ids),
        )


def _unredacted_document_snapshots(conn: psycopg.Connection, doc_ids: Sequence[str]) -> int:
    row = conn.execute(
        "SELECT count(*) FROM message_sources WHERE trace->>'doc_id' = ANY(%s)"
        " AND (NOT trace ? 'forgotten' OR trace->>'content' <> %s)",
        (list(doc_ids), REDACTED),
    ).fetchone()
    return int(row[0]) if row else 0


def _redact_graph_snapshots(
    conn: psycopg.Connection,
    *,
    gone: set[str],
    changed: set[str],
    guids: set[str],
    needles: Sequence[str],
    forget_id: str,
) -> int:
    """Redact the cited days that held forgotten messages (their excerpt, the forgotten
    messages' guids), what the graph evidence of any turn said of those days, and the
    answers of those turns (:func:`_redact_answers`). Returns the snapshots redacted."""
    keys = sorted(gone | changed)
    rows = conn.execute(
        "SELECT message_id, rank, trace FROM message_sources"
        " WHERE trace->>'kind' = 'graph_transcript' AND chunk_id = ANY(%s)"
        " AND NOT trace ? 'forgotten'",
        (keys,),
    ).fetchall()
    touched: set[str] = set()
    for message_id, rank, trace in rows:
        kept = [g for g in trace.get("message_guids") or [] if g not in guids]
        redacted = {**trace, "excerpt": REDACTED, "message_guids": kept, "forgotten": forget_id}
        conn.execute(
            "UPDATE message_sources SET trace = %s WHERE message_id = %s AND rank = %s",
            (Jsonb(redacted), message_id, rank),
        )
        touched.add(message_id)
    # the graph evidence of any graph turn that names a forgotten day or text
    evidence = conn.execute(
        "SELECT message_id, graph_evidence FROM messages WHERE graph_evidence IS NOT NULL"
    ).fetchall()
    for message_id, found in evidence:
        changed_any = False
        for item in (*found.get("entities", []), *found.get("relations", [])):
            item_keys = set(item.get("doc_keys") or [])
            if item_keys & (gone | changed):
                item["doc_keys"] = [k for k in item.get("doc_keys") or [] if k not in gone]
                item["description"] = REDACTED
                changed_any = True
            elif _holds(item.get("description") or "", needles):
                item["description"] = _cut(item.get("description") or "", needles)
                changed_any = True
        if changed_any:
            conn.execute(
                "UPDATE messages SET graph_evidence = %s WHERE message_id = %s",
                (Jsonb(found), message_id),
            )
            touched.add(message_id)
    _redact_answers(conn, touched)
    return len(rows)


def _graph_snapshot_traces(
    conn: psycopg.Connection, gone: Sequence[str], guids: Sequence[str], needles: Sequence[str]
) -> int:
    """Snapshots and graph evidence that still hold a forgotten day, message or text."""
    found = 0
    for key, trace in conn.execute(
        "SELECT chunk_id, trace FROM message_sources WHERE trace->>'kind' = 'graph_transcript'"
    ):
        text = json.dumps(trace, ensure_ascii=False)
        if (
            (key in gone and trace.get("excerpt") != REDACTED)
            or set(trace.get("message_guids") or []) & set(guids)
            or _holds(text, needles)
        ):
            found += 1
    if needles or gone:
        for content, evidence in conn.execute(
            "SELECT content, graph_evidence FROM messages WHERE role = 'assistant'"
        ):
            text = content + json.dumps(evidence or {}, ensure_ascii=False)
            if _holds(text, needles) or any(
                set(i.get("doc_keys") or []) & set(gone)
                for i in (
                    *(evidence or {}).get("entities", []),
                    *(evidence or {}).get("relations", []),
                )
            ):
                found += 1
    return found


# --- previews -------------------------------------------------------------------------


def _preview_paths(settings: Settings, digest: str) -> list[Path]:
    root = cache_root(settings)
    return [root / "pages" / digest, root / "pdf" / f"{digest}.pdf", root / "ocr" / digest]


def _count_files(paths: Iterable[Path]) -> int:
    n = 0
    for path in paths:
        if path.is_dir():
            n += sum(1 for p in path.rglob("*") if p.is_file())
        elif path.is_file():
            n += 1
    return n


def _remove_paths(paths: Iterable[Path]) -> None:
    for path in paths:
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()


# --- pipeline step artifacts ----------------------------------------------------------


def _artifacts(
    settings: Settings, pg: PgVectorStore, relative_paths: Iterable[str], *, remove: bool
) -> int:
    """The pipeline's per-partition step values (a file's parsed text and chunks, an
    archive's rendered days) of ``relative_paths``' partitions, in the artifacts folder
    and the ``step_artifacts`` table: counted, and with ``remove`` deleted. A later run
    of the partition computes them again from what its source holds then."""
    keys = sorted({partition_key_for(rel) for rel in relative_paths})
    if not keys:
        return 0
    names = {artifact_name(k) for k in keys}
    found = 0
    root = settings.home / "artifacts"
    if root.is_dir():
        for path in root.rglob("*.pkl"):
            if path.name in names:
                found += 1
                if remove:
                    path.unlink(missing_ok=True)
    with pg.connection() as conn:
        table = conn.execute("SELECT to_regclass('step_artifacts')").fetchone()
        if table and table[0] is not None:
            verb = "DELETE" if remove else "SELECT count(*)"
            cur = conn.execute(f"{verb} FROM step_artifacts WHERE partition_key = ANY(%s)", (keys,))
            found += cur.rowcount if remove else int((cur.fetchone() or (0,))[0])
        conn.commit()
    return found


def _artifacts_receipt(
    settings: Settings, pg: PgVectorStore, relative_paths: Sequence[str]
) -> StoreReceipt:
    removed = _artifacts(settings, pg, relative_paths, remove=True)
    return StoreReceipt(
        "step_artifacts",
        "Pipeline step artifacts",
        removed,
        _artifacts(settings, pg, relative_paths, remove=False),
    )


# --- backups --------------------------------------------------------------------------


def _rag_bundle_holds(path: Path, doc_ids: set[str], hashes: set[str]) -> int:
    with zipfile.ZipFile(path) as zf, zf.open(RAG_DOCUMENTS) as docs:
        held = 0
        for line in docs:
            row = json.loads(line)
            if row.get("doc_id") in doc_ids or row.get("content_hash") in hashes:
                held += 1
        return held


def _graph_bundle_manifest(path: Path) -> dict[str, Any]:
    with zipfile.ZipFile(path) as zf:
        for name in zf.namelist():
            if name.rsplit("/", 1)[-1] == MANIFEST_FILE:
                data = json.loads(zf.read(name))
                return dict(data.get("documents") or {})
    return {}


def backups_holding(
    settings: Settings,
    *,
    doc_ids: Iterable[str] = (),
    content_hashes: Iterable[str] = (),
    doc_keys: Iterable[str] = (),
    message_guids: Iterable[str] = (),
) -> list[BackupHolding]:
    """Every backup bundle whose contents still include any of the given documents
    (a RAG bundle's ``documents.jsonl``) or transcript days and messages (a graph
    bundle's build manifest). A bundle that cannot be read is listed as possibly
    holding it."""
    out: list[BackupHolding] = []
    docs, hashes = set(doc_ids), set(content_hashes)
    keys, guids = set(doc_keys), set(message_guids)
    for corpus, wanted in (("rag", docs or hashes), ("graph", keys or guids)):
        if not wanted:
            continue
        for verdict in list_bundles(settings, corpus):  # type: ignore[arg-type]
            when = verdict.manifest.created_at if verdict.manifest else None
            path = settings.docs_path if corpus == "rag" else settings.graph_docs_path
            bundle = path / "varagity-exports" / verdict.name
            try:
                if corpus == "rag":
                    held = _rag_bundle_holds(bundle, docs, hashes)
                    holds = f"{held} document(s)" if held else ""
                else:
                    entries = _graph_bundle_manifest(bundle)
                    days = sum(
                        1
                        for key, entry in entries.items()
                        if key in keys or set(entry.get("message_guids") or []) & guids
                    )
                    holds = f"{days} transcript day(s)" if days else ""
            except (OSError, KeyError, ValueError, zipfile.BadZipFile) as exc:
                holds = f"unreadable, may hold it ({exc})"
            if holds:
                out.append(BackupHolding(corpus, verdict.name, when, holds))
    return out


# --- documents ------------------------------------------------------------------------


@dataclass(frozen=True)
class _DocState:
    docs: dict[str, tuple[str, str]]  # doc_id -> (relative_path, content_hash)
    chunks: int
    chunk_ids: tuple[str, ...]
    vectors: int
    blurbs: int


def _doc_state(pg: PgVectorStore, doc_ids: Sequence[str]) -> _DocState:
    with pg.connection() as conn:
        docs = {
            d: (rel, h)
            for d, rel, h in conn.execute(
                "SELECT doc_id, relative_path, content_hash FROM documents WHERE doc_id = ANY(%s)",
                (list(doc_ids),),
            )
        }
        rows = conn.execute(
            "SELECT chunk_id, embedding IS NOT NULL, context IS NOT NULL AND context <> ''"
            " FROM chunks WHERE doc_id = ANY(%s)",
            (list(doc_ids),),
        ).fetchall()
    return _DocState(
        docs=docs,
        chunks=len(rows),
        chunk_ids=tuple(sorted(r[0] for r in rows)),
        vectors=sum(1 for r in rows if r[1]),
        blurbs=sum(1 for r in rows if r[2]),
    )


def _hashes_still_stored(pg: PgVectorStore, hashes: Sequence[str]) -> set[str]:
    with pg.connection() as conn:
        return {
            h
            for (h,) in conn.execute(
                "SELECT DISTINCT content_hash FROM documents WHERE content_hash = ANY(%s)",
                (list(hashes),),
            )
        }


def forget_documents(
    pg: PgVectorStore,
    bm25: BM25Store,
    settings: Settings,
    doc_ids: Sequence[str],
    *,
    remove_file: bool = False,
) -> tuple[DeleteReport, ForgetReceipt]:
    """Delete documents (:func:`varagity.corpus.delete_documents`), their cached page
    previews, and their text from conversations' source snapshots; verify each store
    and keep the forget in the ledger. Returns the delete's report and the receipt
    (over the documents that were stored; ids with none are the report's
    ``not_found``)."""
    requested = list(dict.fromkeys(doc_ids))
    before = _doc_state(pg, requested)
    bm25_before = bm25.chunk_ids(requested)
    receipt = _new_receipt("documents", ", ".join(sorted(r for r, _ in before.docs.values())))
    hashes = sorted({h for _, h in before.docs.values()})
    report = delete_documents(pg, bm25, settings.docs_path, requested, remove_file=remove_file)
    deleted = list(report.deleted)
    # previews: keyed by content hash, shared with any stored document of the same bytes
    shared = _hashes_still_stored(pg, hashes)
    previews = [p for h in hashes if h not in shared for p in _preview_paths(settings, h)]
    preview_files = _count_files(previews)
    _remove_paths(previews)
    with pg.connection() as conn, conn.transaction():
        redacted = _redact_document_snapshots(conn, deleted, receipt.forget_id)
    # ask every store again
    after = _doc_state(pg, deleted)
    bm25_after = bm25.chunk_ids(deleted)
    with pg.connection() as conn:
        snapshots_left = _unredacted_document_snapshots(conn, deleted)
    receipt.stores = [
        StoreReceipt("documents", "Documents (Postgres)", len(deleted), len(after.docs)),
        StoreReceipt("chunks", "Chunks (Postgres)", before.chunks, after.chunks),
        StoreReceipt("vectors", "Vectors (pgvector)", before.vectors, after.vectors),
        StoreReceipt("blurbs", "Contextual blurbs", before.blurbs, after.blurbs),
        StoreReceipt("bm25", f"BM25 entries ({bm25.backend})", len(bm25_before), len(bm25_after)),
        StoreReceipt(
            "previews",
            "Cached page previews",
            preview_files,
            _count_files(previews),
            note=(
                f"{len(shared)} content hash(es) kept: another stored document has the same bytes"
                if shared
                else None
            ),
        ),
        StoreReceipt(
            "reply_cache",
            "LLM reply cache",
            0,
            0,
            note="document answers are never cached: nothing to remove",
        ),
        _artifacts_receipt(settings, pg, sorted(r for r, _ in before.docs.values())),
        StoreReceipt(
            "snapshots", "Conversation source snapshots (redacted)", redacted, snapshots_left
        ),
    ]
    receipt.backups = backups_holding(settings, doc_ids=deleted, content_hashes=hashes)
    if any(f.removed for f in report.files):
        receipt.notes.append(
            f"{sum(1 for f in report.files if f.removed)} file(s) removed from the corpus folder"
        )
    elif deleted and not remove_file:
        receipt.notes.append(
            "the files stay in the corpus folder: the folder sensor ingests a file again "
            "when it changes; delete with the file to forget it for good"
        )
    if deleted:
        _record(
            pg,
            receipt,
            Forgotten(
                receipt.forget_id,
                "documents",
                receipt.target,
                receipt.forgotten_at,
                doc_ids=tuple(deleted),
                chunk_ids=before.chunk_ids,
                content_hashes=tuple(hashes),
                relative_paths=tuple(sorted(r for r, _ in before.docs.values())),
            ),
        )
    return report, receipt


# --- the message graph ----------------------------------------------------------------


@dataclass(frozen=True)
class _GraphFiles:
    """What the engine's files say, read without opening the engine."""

    chunks_of: dict[str, tuple[str, ...]]  # doc_key -> engine chunk ids
    lines_of: dict[str, tuple[str, ...]]  # doc_key -> message texts of its transcript
    entities: dict[str, frozenset[str]]  # entity -> chunk ids supporting it
    relations: dict[tuple[str, str], frozenset[str]]
    cache_keys: frozenset[str]

    @classmethod
    def read(cls, workdir: Path) -> _GraphFiles:
        status = _json(workdir / _DOC_STATUS)
        full = _json(workdir / _FULL_DOCS)
        chunks_of = {
            k: tuple(v.get("chunks_list") or ()) for k, v in status.items() if isinstance(v, dict)
        }
        lines_of = {
            k: tuple(
                m["text"] for m in map(_LINE.match, (v.get("content") or "").splitlines()) if m
            )
            for k, v in full.items()
            if isinstance(v, dict)
        }
        entities: dict[str, frozenset[str]] = {}
        relations: dict[tuple[str, str], frozenset[str]] = {}
        graphml = workdir / _GRAPHML
        if graphml.is_file():
            import networkx as nx  # type: ignore[import-untyped]

            graph = nx.read_graphml(graphml)
            for node, data in graph.nodes(data=True):
                entities[str(node)] = _chunk_set(data.get("source_id"))
            for a, b, data in graph.edges(data=True):
                relations[(str(a), str(b))] = _chunk_set(data.get("source_id"))
        cache = frozenset(_json(workdir / _LLM_CACHE))
        return cls(chunks_of, lines_of, entities, relations, cache)

    def all_chunks(self) -> set[str]:
        return {c for chunks in self.chunks_of.values() for c in chunks}


def _json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_bytes())
    except FileNotFoundError:
        return {}
    return data if isinstance(data, dict) else {}


def _chunk_set(value: object) -> frozenset[str]:
    if not isinstance(value, str):
        return frozenset()
    return frozenset(p.strip() for p in value.split(_SEP) if p.strip())


def _sweep_reply_cache(
    workdir: Path,
    forgotten_chunks: set[str],
    kept_chunks: set[str],
    needles: Sequence[str],
    *,
    dry_run: bool = False,
) -> int:
    """Remove the engine's cached replies that belong to a forgotten chunk or quote a
    forgotten message (a kept chunk's own extraction stays: the engine rebuilds shared
    entities from it). Returns how many went (``dry_run``: how many would)."""
    path = workdir / _LLM_CACHE
    cache = _json(path)
    if not cache:
        return 0
    kept: dict[str, Any] = {}
    for key, entry in cache.items():
        chunk = entry.get("chunk_id") if isinstance(entry, dict) else None
        text = json.dumps(entry, ensure_ascii=False)
        own = chunk in kept_chunks and entry.get("cache_type") == "extract"
        if chunk in forgotten_chunks or (not own and _holds(text, needles)):
            continue
        kept[key] = entry
    removed = len(cache) - len(kept)
    if removed and not dry_run:
        write_json_atomic(path, kept)
    return removed


def _file_traces(workdir: Path, needles: Sequence[str], chunks: Iterable[str]) -> list[str]:
    """The engine's files (sidecars included) that hold a forgotten text or chunk id."""
    wanted = [*needles]
    ids = sorted(set(chunks))
    found: list[str] = []
    if not workdir.is_dir():
        return found
    for path in sorted(workdir.rglob("*")):
        if not path.is_file():
            continue
        try:
            text = path.read_bytes().decode("utf-8", errors="replace")
        except OSError:
            continue
        if _holds(text, wanted) or any(i in text for i in ids):
            found.append(path.relative_to(workdir).as_posix())
    return found


class NothingToForget(LookupError):
    """No archive holds a message a forget asked for."""


def _manifest_traces(
    manifest: Mapping[str, ManifestEntry],
    kind: str,
    doc_keys: Iterable[str],
    guids: set[str],
    archives: Iterable[str],
) -> list[str]:
    """The build manifest's days that still hold what a forget took out: a forgotten
    archive's days (by source: the same chat exported into another archive the user
    keeps is that archive's), or, for forgotten messages, a day deleted whole or any
    day naming a forgotten message."""
    if kind == "archive":
        paths = set(archives)
        return sorted(k for k, e in manifest.items() if e.source in paths)
    keys = set(doc_keys)
    return sorted(k for k, e in manifest.items() if k in keys or set(e.message_guids) & guids)


@dataclass(frozen=True)
class _GraphPlan:
    """The days a forget changes: deleted whole, or extracted again without messages."""

    gone: tuple[str, ...]
    changed: tuple[ThreadDay, ...]
    guids: frozenset[str]
    sources: frozenset[str]
    """The archives that held forgotten messages."""


def _read_all(
    settings: Settings, rules: Sequence[ForgetRule], archives: Iterable[str] | None = None
) -> dict[str, ThreadDay]:
    root = settings.graph_docs_path
    tz = graph_timezone(settings)
    days: dict[str, ThreadDay] = {}
    wanted = set(archives) if archives is not None else None
    for candidate in scan_archives(root):
        rel = candidate.relative_path
        if (wanted is not None and rel not in wanted) or rejections(candidate.path):
            continue
        try:
            contacts = load_contacts(root, rel, owner=settings.GRAPH_OWNER_NAME)
            rendered = read_archive(root, rel, tz=tz, contacts=contacts, forgotten=rules)
        except (ContactsError, MessageSourceError, OSError) as exc:
            log.warning(
                "forget: %s cannot be read now (%s); its days are left as they are", rel, exc
            )
            continue
        for day in rendered:
            days.setdefault(day.doc_key, day)
    return days


def _plan(
    manifest: Mapping[str, ManifestEntry],
    before: Mapping[str, ThreadDay],
    after: Mapping[str, ThreadDay],
) -> _GraphPlan:
    gone: list[str] = []
    changed: list[ThreadDay] = []
    guids: set[str] = set()
    sources: set[str] = set()
    for key, day in before.items():
        later = after.get(key)
        kept = set(later.message_guids) if later else set()
        lost = set(day.message_guids) - kept
        if not lost:
            continue
        guids |= lost
        sources.add(day.source)
        if key not in manifest:
            continue  # never built: nothing to take out
        if later is None:
            gone.append(key)
        else:
            changed.append(later)
    return _GraphPlan(tuple(sorted(gone)), tuple(changed), frozenset(guids), frozenset(sources))


def _apply_forget(
    graph: GraphService,
    pg: PgVectorStore,
    receipt: ForgetReceipt,
    plan: _GraphPlan,
) -> Forgotten:
    """Take ``plan`` out of the graph as its writer, verify, redact the snapshots; fill
    ``receipt``'s stores; returns the ledger entry."""
    workdir = graph.workdir
    guids = set(plan.guids)
    with graph.writing("a forget"):
        before = _GraphFiles.read(workdir)
        diff = GraphDiff(changed=plan.changed, removed=plan.gone)
        report = None
        if not diff.empty:
            result = graph.build(diff, forget=True)
            report = result.report
            failed = report.failed or {}
            # a changed day deleted but not inserted again leaves the manifest (it looks new
            # to the next build), never keeps an entry naming forgotten messages
            inserted = {k for k in report.inserted if k not in failed}
            deleted = set(report.deleted) | set(plan.gone)
            deleted |= {d.doc_key for d in plan.changed if d.doc_key not in inserted}
            recorded = ApplyReport(
                inserted=tuple(sorted(inserted & {d.doc_key for d in plan.changed})),
                deleted=tuple(sorted(deleted)),
                failed=failed or None,
            )
            manifest = update_after_apply(workdir, diff, recorded)
            size = result.size
            write_summary(
                workdir,
                summarize(
                    manifest,
                    entities=size.entities,
                    relations=size.relations,
                    statuses=size.statuses,
                ),
            )
        after = _GraphFiles.read(workdir)
        affected = {*plan.gone, *(d.doc_key for d in plan.changed)}
        old_chunks = {c for k in affected for c in before.chunks_of.get(k, ())}
        kept_chunks = after.all_chunks()
        forgotten_chunks = old_chunks - kept_chunks
        old_lines = {t for k in affected for t in before.lines_of.get(k, ())}
        kept_lines = {t for lines in after.lines_of.values() for t in lines}
        needles = _needles(old_lines - kept_lines)
        swept = _sweep_reply_cache(workdir, forgotten_chunks, kept_chunks, needles)
        cache_now = _GraphFiles.read(workdir).cache_keys
        cache_removed = len(before.cache_keys - cache_now)
        cache_left = _sweep_reply_cache(
            workdir, forgotten_chunks, kept_chunks, needles, dry_run=True
        )
        files_left = _file_traces(workdir, needles, forgotten_chunks)
        manifest_now = read_manifest(workdir)
    only = {e for e, c in before.entities.items() if c and c <= forgotten_chunks}
    shared = {e for e, c in before.entities.items() if c & forgotten_chunks and e not in only}
    rel_only = {r for r, c in before.relations.items() if c and c <= forgotten_chunks}
    rel_shared = {
        r for r, c in before.relations.items() if c & forgotten_chunks and r not in rel_only
    }
    entities_left = sum(1 for c in after.entities.values() if c & forgotten_chunks)
    relations_left = sum(1 for c in after.relations.values() if c & forgotten_chunks)
    with pg.connection() as conn, conn.transaction():
        redacted = _redact_graph_snapshots(
            conn,
            gone=set(plan.gone),
            changed={d.doc_key for d in plan.changed},
            guids=guids,
            needles=needles,
            forget_id=receipt.forget_id,
        )
    with pg.connection() as conn:
        snapshots_left = _graph_snapshot_traces(conn, plan.gone, sorted(guids), needles)
    manifest_left = len(
        _manifest_traces(manifest_now, receipt.kind, plan.gone, guids, plan.sources)
    )
    failed_days = len(report.failed or {}) if report else 0
    receipt.stores = [
        StoreReceipt(
            "graph_days",
            "Transcript days (graph engine)",
            len(plan.gone),
            sum(1 for k in plan.gone if k in after.chunks_of),
            updated=len(plan.changed) - failed_days,
            note=(
                f"{len(plan.changed)} day(s) that keep other messages were extracted again "
                "without the forgotten ones (a bounded rebuild of those days)"
                if plan.changed
                else None
            ),
        ),
        StoreReceipt(
            "graph_entities",
            "Graph entities",
            sum(1 for e in only if e not in after.entities),
            entities_left,
            updated=len(shared),
            note="shared entities keep only what other days said of them" if shared else None,
        ),
        StoreReceipt(
            "graph_relations",
            "Graph relations",
            sum(1 for r in rel_only if r not in after.relations),
            relations_left,
            updated=len(rel_shared),
        ),
        StoreReceipt(
            "reply_cache",
            "LLM reply cache (graph engine)",
            cache_removed,
            cache_left,
            note=(
                f"{swept} entr(y/ies) of other days quoting forgotten text swept" if swept else None
            ),
        ),
        StoreReceipt("manifest", "Build manifest", len(plan.gone), manifest_left),
        StoreReceipt(
            "graph_files",
            "Graph engine files holding forgotten text",
            0,
            len(files_left),
            note=", ".join(files_left) or None,
        ),
        StoreReceipt(
            "snapshots", "Conversation source snapshots (redacted)", redacted, snapshots_left
        ),
        _artifacts_receipt(graph.settings, pg, sorted(plan.sources)),
    ]
    if failed_days:
        receipt.notes.append(
            f"{failed_days} day(s) could not be extracted again; they left the graph and the "
            "next build extracts them"
        )
    return Forgotten(
        receipt.forget_id,
        receipt.kind,
        receipt.target,
        receipt.forgotten_at,
        doc_keys=plan.gone,
        message_guids=tuple(sorted(guids)),
        graph_chunks=tuple(sorted(forgotten_chunks)),
    )


def forget_messages(
    settings: Settings, pg: PgVectorStore, graph: GraphService, rule: ForgetRule
) -> ForgetReceipt:
    """Forget the messages ``rule`` matches in every archive of ``GRAPH_DOCS_PATH``:
    the rule is kept beside the archives (so no later read renders them), the days
    they were in are deleted from the graph or extracted again without them, and the
    graph's stores, the snapshots and the backups are checked.

    Raises:
        CorpusBusy: Another process writes the graph (a build, a backup).
        NothingToForget: No archive holds a message the rule matches.
        ValueError: The graph folder's rules are unreadable.
    """
    kind: ForgetKind = "messages" if rule.kind == "range" else rule.kind
    receipt = ForgetReceipt(rule.forget_id, kind, rule.described, datetime.now(UTC))
    with graph.writing("a forget"):
        rules = read_rules(settings.graph_docs_path)
        before = _read_all(settings, rules)
        after = _read_all(settings, (*rules, rule))
        plan = _plan(read_manifest(graph.workdir), before, after)
        if not plan.guids:
            raise NothingToForget(f"no archive of the graph folder holds {rule.described}")
        add_rule(settings.graph_docs_path, rule)
        forgotten = _apply_forget(graph, pg, receipt, plan)
    receipt.backups = backups_holding(
        settings, doc_keys=plan.gone, message_guids=forgotten.message_guids
    )
    receipt.notes.append(
        f"{len(plan.guids)} message(s) matched; the archives keep them (they are never "
        "written) and every later build leaves them out"
    )
    _record(pg, receipt, forgotten)
    return receipt


def forget_archive(
    settings: Settings, pg: PgVectorStore, graph: GraphService, relative_path: str
) -> tuple[RemovedSource, ForgetReceipt]:
    """Delete an archive from ``GRAPH_DOCS_PATH`` (:func:`varagity.graph.folder.remove_source`)
    and take its days out of the graph now, as the graph's writer, with their cached
    replies; verify and keep the forget in the ledger.

    Raises:
        UploadRefused, SourceNotFound: As :func:`~varagity.graph.folder.remove_source`.
        CorpusBusy: Another process writes the graph (a build, a backup).
    """
    receipt = _new_receipt("archive", relative_path)
    with graph.writing("a forget"):
        manifest = read_manifest(graph.workdir)
        removed = remove_source(settings.graph_docs_path, relative_path, manifest)
        receipt.target = removed.path
        keys = sorted(k for k, e in manifest.items() if e.source == removed.path)
        guids = {g for k in keys for g in manifest[k].message_guids}
        plan = _GraphPlan(tuple(keys), (), frozenset(guids), frozenset({removed.path}))
        forgotten = _apply_forget(graph, pg, receipt, plan)
    receipt.backups = backups_holding(settings, doc_keys=keys, message_guids=guids)
    receipt.notes.append(f"{len(removed.removed_files)} file(s) removed from the graph folder")
    _record(
        pg,
        receipt,
        dataclasses.replace(forgotten, relative_paths=(removed.path,)),
    )
    return removed, receipt


# --- doctor: traces of forgotten sources ----------------------------------------------


@dataclass(frozen=True)
class Trace:
    """Something a store still holds of a forgotten source."""

    forget_id: str
    target: str
    store: str
    detail: str


def traces(conn: psycopg.Connection, bm25: BM25Store, settings: Settings | None) -> Iterator[Trace]:
    """Every trace of every forgotten source the ledger lists: documents, chunks,
    BM25 entries, cached previews, snapshots not redacted, graph days and messages
    in the build manifest, the engine's files holding a forgotten chunk id."""
    ledger = read_ledger(conn)
    manifest = read_manifest(_workdir(settings)) if settings is not None else {}
    stored_hashes = {
        h for (h,) in conn.execute("SELECT DISTINCT content_hash FROM documents").fetchall()
    }
    graph_chunks = {c for f in ledger for c in f.graph_chunks}
    files_with: dict[str, list[str]] = {}
    if settings is not None and graph_chunks:
        workdir = _workdir(settings)
        for name in _file_traces(workdir, (), graph_chunks):
            text = (workdir / name).read_text(errors="replace")
            for c in graph_chunks:
                if c in text:
                    files_with.setdefault(c, []).append(name)
    for f in ledger:
        if f.doc_ids or f.chunk_ids:
            for what, sql, ids in (
                ("documents", "SELECT doc_id FROM documents WHERE doc_id = ANY(%s)", f.doc_ids),
                ("chunks", "SELECT chunk_id FROM chunks WHERE chunk_id = ANY(%s)", f.chunk_ids),
            ):
                found = [r[0] for r in conn.execute(sql, (list(ids),))]
                if found:
                    yield Trace(f.forget_id, f.target, what, f"{len(found)} row(s): {found[0]}")
            in_bm25 = bm25.chunk_ids(list(f.doc_ids))
            if in_bm25:
                yield Trace(f.forget_id, f.target, "bm25", f"{len(in_bm25)} entr(y/ies)")
            n = _unredacted_document_snapshots(conn, f.doc_ids)
            if n:
                yield Trace(f.forget_id, f.target, "snapshots", f"{n} snapshot(s) not redacted")
            if settings is not None:
                for digest in f.content_hashes:
                    if digest in stored_hashes:
                        continue  # the same bytes are stored again: their previews are theirs
                    held = _count_files(_preview_paths(settings, digest))
                    if held:
                        yield Trace(f.forget_id, f.target, "previews", f"{held} cached file(s)")
        if f.doc_keys or f.message_guids:
            guids = set(f.message_guids)
            days = _manifest_traces(manifest, f.kind, f.doc_keys, guids, f.relative_paths)
            if days:
                yield Trace(f.forget_id, f.target, "manifest", f"{len(days)} day(s): {days[0]}")
            n = _graph_snapshot_traces(conn, f.doc_keys, sorted(guids), ())
            if n:
                yield Trace(f.forget_id, f.target, "snapshots", f"{n} snapshot(s) not redacted")
        held_in = sorted({name for c in f.graph_chunks for name in files_with.get(c, ())})
        if held_in:
            yield Trace(f.forget_id, f.target, "graph_files", ", ".join(held_in))


def _workdir(settings: Settings) -> Path:
    return workdir_for(settings)
