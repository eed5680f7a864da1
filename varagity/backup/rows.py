"""Row checks: what a bundle's members hold, judged before anything is written.

The digests in ``bundle.json`` prove that the members are the ones it records, not that
what it records is sound: a bundle can be edited and signed again. So every row of a
RAG bundle is read once, streamed and hashed, before a restore takes the corpus
(:func:`check_rag_rows`), and :func:`verify_bundle` (here, below) runs the
same pass, so a verify gives the verdict a restore would. What a row must be:

* text: valid UTF-8 without NUL (Postgres refuses ``\\u0000`` in ``text`` and
  ``jsonb``) or lone surrogates, anywhere in the row (``bundle_text_invalid``);
* shape: a JSON object with the columns of the member's first line, each of its type
  (ids non-empty strings, indexes integers in ``0 .. 2^31-1``, timestamps ISO 8601,
  no NaN or Infinity, which ``jsonb`` cannot hold), a chunk's ``metadata`` a chunk
  record as the BM25 rebuild reads it (``bundle_row_invalid``);
* a document's ``relative_path`` in the canonical form ingest stores (POSIX, relative,
  no ``..``, ``.`` or empty part, no backslash), neither hidden nor in
  ``varagity-exports/``, and resolving inside this stack's ``DOCS_PATH``
  (``bundle_path_outside_corpus``): a restore re-roots every source onto that file;
* ``doc_id`` unique, and each chunk's ``(doc_id, chunk_index)`` and ``(doc_id,
  original_index)`` (``bundle_duplicate_id``); every chunk's document in
  ``documents.jsonl`` (``bundle_unknown_document``); the chunk indices of each document
  exactly ``0 .. n_chunks - 1`` (``bundle_chunk_gap``); ``chunk_id`` is
  ``doc_id::chunk_index`` and the metadata says the row's ids and its document's path
  and hash (``bundle_ids_inconsistent``);
* every vector finite (``bundle_vector_invalid``); its dimension is the bundle's by the
  matrix's size (:func:`~varagity.backup.bundle.check_directory`).

Each refusal names the member, the line (or the matrix row) and the value. A damaged
member is reported as damaged (its digest) before whatever its damage broke. Memory
stays bounded: per document its ids, path and hash, per chunk two packed integers,
never a chunk's text.

A graph bundle's members are the engine's files, restored verbatim and confined by
name (:func:`~varagity.backup.bundle.check_directory`); the one whose content
Varagity reads paths from, the build manifest sidecar, must name archives inside the
graph folder (:func:`check_graph_sidecar`).
"""

from __future__ import annotations

import contextlib
import json
from array import array
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path, PurePosixPath
from typing import Any, NoReturn
from zipfile import ZipFile

import numpy as np
from pydantic import ValidationError

from varagity.backup.bundle import (
    RAG_CHUNKS,
    RAG_DOCUMENTS,
    RAG_EMBEDDINGS,
    BundleError,
    BundleErrorCode,
    BundleManifest,
    BundleVerdict,
    Corpus,
    HashingReader,
    Progress,
    check_directory,
    open_member,
    open_zip,
    read_manifest,
    verdict_of,
)
from varagity.config import Settings
from varagity.ingest.discovery import not_corpus, resolve_in_corpus
from varagity.records import ChunkRecord, normalize_relative_path

#: The longest line a member may have (a chunk's row holds its text about three times).
MAX_LINE_BYTES = 64 << 20
_INT32_MAX = 2**31 - 1
_READ_BYTES = 1 << 20
_PROGRESS_EVERY = 500
_SHOWN = 80  # characters of a value quoted in a refusal

#: ``(type, may be null)`` of the columns whose values the restore relies on.
_DOCUMENT_COLUMNS: dict[str, tuple[str, bool]] = {
    "doc_id": ("id", False),
    "source": ("text", False),
    "relative_path": ("text", False),
    "file_type": ("text", False),
    "content_hash": ("text", False),
    "n_chunks": ("int", False),
    "ingested_at": ("time", False),
}
_CHUNK_COLUMNS: dict[str, tuple[str, bool]] = {
    "chunk_id": ("id", False),
    "doc_id": ("id", False),
    "original_index": ("int", False),
    "chunk_index": ("int", False),
    "content": ("text", False),
    "context": ("text", True),
    "contextualized_content": ("text", False),
    "metadata": ("object", False),
    "created_at": ("time", False),
    "contextualized_at": ("time", True),
}
#: The columns a row cannot go without (the others have a default or may be null).
_DOCUMENT_REQUIRED = ("doc_id", "source", "relative_path", "file_type", "content_hash", "n_chunks")
_CHUNK_REQUIRED = (
    "chunk_id",
    "doc_id",
    "original_index",
    "chunk_index",
    "content",
    "contextualized_content",
    "metadata",
)


def _refuse(code: BundleErrorCode, detail: str) -> NoReturn:
    raise BundleError(code, detail)


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= _SHOWN else f"{text[: _SHOWN - 3]}..."


class _NonFinite(ValueError):
    """A JSON ``NaN``, ``Infinity`` or ``-Infinity``."""


def _no_constant(name: str) -> NoReturn:
    raise _NonFinite(name)


_DECODER = json.JSONDecoder(parse_constant=_no_constant)


# --- text -------------------------------------------------------------------------------
def _text_problem(value: Any, where: str) -> str | None:
    """Why a JSON value cannot be stored as Postgres text or jsonb, or None."""
    if isinstance(value, str):
        at = value.find("\x00")
        if at >= 0:
            return f"{where} holds a NUL character (\\u0000) at offset {at}"
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            return (
                f"{where} holds a lone surrogate ({value[exc.start]!r}, not UTF-8) at offset "
                f"{exc.start}"
            )
        return None
    if isinstance(value, dict):
        for key, item in value.items():
            problem = _text_problem(key, f"a key of {where}") or _text_problem(
                item, f"{where}.{key}"
            )
            if problem:
                return problem
    elif isinstance(value, list):
        for i, item in enumerate(value):
            problem = _text_problem(item, f"{where}[{i}]")
            if problem:
                return problem
    return None


def _parse_line(raw: bytes, member: str, line: int) -> dict[str, Any]:
    """One line of a JSON-lines member as a row; refused when it is not UTF-8 text, not
    a JSON object, holds NaN or Infinity, or a string Postgres cannot store."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        _refuse(
            "bundle_text_invalid",
            f"{member} line {line} is not valid UTF-8: byte {raw[exc.start]:#04x} at offset "
            f"{exc.start} ({exc.reason})",
        )
    try:
        row = _DECODER.decode(text)
    except _NonFinite as exc:
        _refuse(
            "bundle_row_invalid",
            f"{member} line {line} holds the number {exc}, which Postgres jsonb cannot hold",
        )
    except json.JSONDecodeError as exc:
        _refuse(
            "bundle_row_invalid",
            f"{member} line {line} is not JSON ({exc.msg} at column {exc.colno})",
        )
    except RecursionError:
        _refuse("bundle_row_invalid", f"{member} line {line} nests too deep to be a row")
    if not isinstance(row, dict):
        _refuse("bundle_row_invalid", f"{member} line {line} is not a JSON object")
    if "\\u" in text:  # only an escape can put a NUL or a lone surrogate into a string
        for key, value in row.items():
            try:
                problem = _text_problem(key, "a column name") or _text_problem(value, key)
            except RecursionError:
                problem = f"{key} nests too deep to be stored"
            if problem:
                _refuse(
                    "bundle_text_invalid",
                    f"{member} line {line}: {problem}, which Postgres text cannot hold",
                )
    return row


def _lines(reader: HashingReader) -> Iterator[bytes]:
    """The lines of a member (without their newline), read in large blocks: much faster
    than ``readline`` on a zip member, and no line may grow past :data:`MAX_LINE_BYTES`."""
    pending: list[bytes] = []
    held = 0
    line = 1
    while block := reader.read(_READ_BYTES):
        pieces = block.split(b"\n")
        if len(pieces) > 1:
            pieces[0] = b"".join((*pending, pieces[0]))
            pending, held = [], 0
            yield from pieces[:-1]
            line += len(pieces) - 1
        held += len(pieces[-1])
        if held > MAX_LINE_BYTES:
            _refuse(
                "bundle_row_invalid",
                f"{reader.member.name} line {line} is longer than {MAX_LINE_BYTES} bytes",
            )
        if pieces[-1]:
            pending.append(pieces[-1])
    if pending:
        yield b"".join(pending)  # a last line without its newline


def _rows(reader: HashingReader) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line number, row)`` of a JSON-lines member."""
    name = reader.member.name
    for line, raw in enumerate(_lines(reader), start=1):
        yield line, _parse_line(raw, name, line)


# --- columns ----------------------------------------------------------------------------
def _check_columns(
    row: dict[str, Any],
    columns: list[str],
    spec: dict[str, tuple[str, bool]],
    member: str,
    line: int,
) -> None:
    """The row has the first line's columns, each of its type."""
    if list(row) != columns:
        _refuse(
            "bundle_row_invalid",
            f"{member} line {line} has the columns {', '.join(row)}; line 1 has "
            f"{', '.join(columns)} (every line must have the same)",
        )
    for name, value in row.items():
        kind = spec.get(name)
        if kind is None:
            continue  # a column the restore takes as it comes (or refuses as unknown)
        problem = _value_problem(value, *kind)
        if problem:
            _refuse(
                "bundle_row_invalid",
                f"{member} line {line}: {name} is {_shown(value)}, {problem}",
            )


def _value_problem(value: Any, kind: str, nullable: bool) -> str | None:
    if value is None:
        return None if nullable else "but it may not be null"
    if kind == "id":
        return None if isinstance(value, str) and value else "not a non-empty string"
    if kind == "text":
        return None if isinstance(value, str) else "not a string"
    if kind == "int":
        if isinstance(value, bool) or not isinstance(value, int):
            return "not an integer"
        return None if 0 <= value <= _INT32_MAX else f"not in 0 .. {_INT32_MAX}"
    if kind == "object":
        return None if isinstance(value, dict) else "not a JSON object"
    if kind == "time":
        if not isinstance(value, str):
            return "not an ISO 8601 timestamp"
        try:
            datetime.fromisoformat(value)
        except ValueError:
            return "not an ISO 8601 timestamp"
        return None
    raise AssertionError(kind)


def _first_columns(row: dict[str, Any], required: tuple[str, ...], member: str) -> list[str]:
    missing = [c for c in required if c not in row]
    if missing:
        _refuse(
            "bundle_row_invalid",
            f"{member} line 1 lacks the column(s) {', '.join(missing)} every row needs",
        )
    return list(row)


# --- paths ------------------------------------------------------------------------------
def corpus_path_problem(
    relative_path: str, root: Path | None, *, backslash: bool = False
) -> str | None:
    """Why ``relative_path`` cannot name a file of the corpus folder ``root`` (or of any
    corpus folder when ``root`` is None), or None.

    Only the canonical form counts (what a scan of the folder produces): a path that
    would name the file only after normalizing is refused rather than rewritten.

    Args:
        backslash: Whether a backslash may be part of a name (the graph's archives are
            opened by their path as it is; a document is found through
            :func:`~varagity.records.normalize_relative_path`, which reads a backslash
            as a folder separator, so no stored document has one).
    """
    if not relative_path:
        return "is empty"
    if "\x00" in relative_path:
        return "holds a NUL character"
    if "\\" in relative_path and not backslash:
        return "holds a backslash (a corpus path is POSIX: '/' between folders)"
    posix = PurePosixPath(relative_path)
    if posix.is_absolute() or ".." in posix.parts:
        return "is absolute or climbs out of the folder with '..'"
    try:
        canonical = posix.as_posix() if backslash else normalize_relative_path(relative_path)
    except ValueError:
        return "is absolute or climbs out of the folder with '..'"
    if canonical != relative_path:
        return f"is not in canonical form ({canonical!r}: no '.', empty or trailing part)"
    parts = canonical.split("/")
    if not_corpus(parts):
        return "is hidden or in varagity-exports/, which are never corpus"
    if root is not None:
        try:
            resolve_in_corpus(root, canonical)
        except (ValueError, OSError, RuntimeError):
            return f"resolves outside {root} (a symbolic link on the way)"
    return None


# --- the RAG bundle ---------------------------------------------------------------------
@dataclass(slots=True)
class _Document:
    ordinal: int
    line: int
    relative_path: str
    content_hash: str
    n_chunks: int


@contextlib.contextmanager
def _damage_first(*readers: HashingReader) -> Iterator[None]:
    """A row refused while ``readers`` stream: a damaged member is named as damaged (its
    digest) before whatever the damage broke."""
    try:
        yield
    except BundleError:
        for reader in readers:
            reader.check()
        raise


def _counted(name: str, rows: int, manifest: BundleManifest, key: str) -> None:
    expected = manifest.counts.get(key)
    if rows != expected:
        _refuse(
            "bundle_invalid",
            f"{name} has {rows} lines but bundle.json counts {expected}",
        )


class RagRowCheck:
    """The row checks of one RAG bundle: feed :meth:`documents`, :meth:`chunks` and
    :meth:`vectors` their members in that order (each checks its digest at the end, and
    the chunks what only all of them can tell: repeats and gaps)."""

    def __init__(self, manifest: BundleManifest, docs_path: Path | None) -> None:
        self.manifest = manifest
        self.docs_path = docs_path
        self.total_chunks = manifest.counts.get("chunks", 0)
        self._docs: dict[str, _Document] = {}
        self._doc_ids: list[str] = []
        # per chunk line (index = line - 1): (document ordinal << 32) | index
        self._slots: array[int] = array("q")
        self._origins: array[int] = array("q")

    # -- documents.jsonl
    def documents(self, reader: HashingReader) -> int:
        """Check every document row; returns the rows."""
        columns: list[str] = []
        n = 0
        with _damage_first(reader):
            for line, row in _rows(reader):
                if line == 1:
                    columns = _first_columns(row, _DOCUMENT_REQUIRED, RAG_DOCUMENTS)
                self._document(row, columns, line)
                n = line
        reader.check()
        _counted(RAG_DOCUMENTS, n, self.manifest, "documents")
        return n

    def _document(self, row: dict[str, Any], columns: list[str], line: int) -> None:
        _check_columns(row, columns, _DOCUMENT_COLUMNS, RAG_DOCUMENTS, line)
        doc_id: str = row["doc_id"]
        rel: str = row["relative_path"]
        problem = corpus_path_problem(rel, self.docs_path)
        if problem:
            _refuse(
                "bundle_path_outside_corpus",
                f"{RAG_DOCUMENTS} line {line}: document {doc_id} has relative_path "
                f"{_shown(rel)}, which {problem}; a document is a file inside the corpus "
                "folder",
            )
        seen = self._docs.get(doc_id)
        if seen is not None:
            _refuse(
                "bundle_duplicate_id",
                f"{RAG_DOCUMENTS} line {line} repeats doc_id {doc_id} of line {seen.line}",
            )
        n_chunks: int = row["n_chunks"]
        if n_chunks > self.total_chunks:
            _refuse(
                "bundle_chunk_gap",
                f"{RAG_DOCUMENTS} line {line}: document {doc_id} has n_chunks {n_chunks}, "
                f"more than the {self.total_chunks} chunks the bundle holds",
            )
        self._docs[doc_id] = _Document(len(self._doc_ids), line, rel, row["content_hash"], n_chunks)
        self._doc_ids.append(doc_id)

    # -- chunks.jsonl
    def chunks(self, reader: HashingReader, report: Progress) -> int:
        """Check every chunk row against its document; returns the rows."""
        columns: list[str] = []
        n = 0
        report("check", 0, self.total_chunks)
        with _damage_first(reader):
            for line, row in _rows(reader):
                if line == 1:
                    columns = _first_columns(row, _CHUNK_REQUIRED, RAG_CHUNKS)
                    if "embedding" in columns:
                        _refuse(
                            "bundle_row_invalid",
                            f"{RAG_CHUNKS} carries embeddings as a column (they are the "
                            f"rows of {RAG_EMBEDDINGS})",
                        )
                self._chunk(row, columns, line)
                n = line
                if n % _PROGRESS_EVERY == 0:
                    report("check", n, self.total_chunks)
        reader.check()
        _counted(RAG_CHUNKS, n, self.manifest, "chunks")
        self._chunks_complete()
        return n

    def _chunk(self, row: dict[str, Any], columns: list[str], line: int) -> None:
        _check_columns(row, columns, _CHUNK_COLUMNS, RAG_CHUNKS, line)
        where = f"{RAG_CHUNKS} line {line}"
        doc_id: str = row["doc_id"]
        chunk_id: str = row["chunk_id"]
        index: int = row["chunk_index"]
        doc = self._docs.get(doc_id)
        if doc is None:
            _refuse(
                "bundle_unknown_document",
                f"{where}: chunk {_shown(chunk_id)} belongs to document {_shown(doc_id)}, "
                f"which {RAG_DOCUMENTS} does not hold",
            )
        if chunk_id != f"{doc_id}::{index}":
            _refuse(
                "bundle_ids_inconsistent",
                f"{where}: chunk_id {_shown(chunk_id)} is not doc_id::chunk_index "
                f"({doc_id}::{index})",
            )
        if index >= doc.n_chunks:
            _refuse(
                "bundle_chunk_gap",
                f"{where}: chunk {chunk_id} has chunk_index {index}, but its document "
                f"({RAG_DOCUMENTS} line {doc.line}) has n_chunks {doc.n_chunks} (indexes "
                f"0 .. {doc.n_chunks - 1})",
            )
        self._metadata(row, doc, where)
        self._slots.append(doc.ordinal << 32 | index)
        self._origins.append(doc.ordinal << 32 | row["original_index"])

    def _metadata(self, row: dict[str, Any], doc: _Document, where: str) -> None:
        metadata: dict[str, Any] = row["metadata"]
        try:
            ChunkRecord.model_validate(metadata)
        except ValidationError as exc:
            first = exc.errors()[0]
            field = ".".join(str(p) for p in first["loc"]) or "(the record)"
            _refuse(
                "bundle_row_invalid",
                f"{where}: metadata is not a chunk record ({field}: {first['msg']})",
            )
        expected = {
            "doc_id": row["doc_id"],
            "chunk_id": row["chunk_id"],
            "chunk_index": row["chunk_index"],
            "original_index": row["original_index"],
            "relative_path": doc.relative_path,
            "content_hash": doc.content_hash,
        }
        for key, value in expected.items():
            if metadata.get(key) != value:
                owner = (
                    f"its document ({RAG_DOCUMENTS} line {doc.line})"
                    if key in ("relative_path", "content_hash")
                    else "the row"
                )
                _refuse(
                    "bundle_ids_inconsistent",
                    f"{where}: metadata.{key} is {_shown(metadata.get(key))} but {owner} "
                    f"says {_shown(value)}",
                )

    def _chunks_complete(self) -> None:
        """After the last chunk: no id twice, every document's indexes all there."""
        slots = np.frombuffer(self._slots, dtype=np.int64)
        order = np.argsort(slots, kind="stable")
        ordered = slots[order]
        twice = np.flatnonzero(ordered[1:] == ordered[:-1])
        if twice.size:
            first, again = self._earliest_repeat(order, twice)
            key = int(slots[again])
            doc_id = self._doc_ids[key >> 32]
            _refuse(
                "bundle_duplicate_id",
                f"{RAG_CHUNKS} line {again + 1} repeats chunk_id {doc_id}::{key & 0xFFFFFFFF} "
                f"of line {first + 1}",
            )
        held = np.bincount(ordered >> 32, minlength=len(self._doc_ids))
        for ordinal, doc_id in enumerate(self._doc_ids):
            doc = self._docs[doc_id]
            if int(held[ordinal]) == doc.n_chunks:
                continue
            # each index is below n_chunks and none repeats: one is missing
            lo, hi = np.searchsorted(ordered, [ordinal << 32, (ordinal + 1) << 32])
            indexes = ordered[lo:hi] & 0xFFFFFFFF
            gaps = np.flatnonzero(indexes != np.arange(indexes.size))
            missing = int(gaps[0]) if gaps.size else int(indexes.size)
            _refuse(
                "bundle_chunk_gap",
                f"document {doc_id} ({RAG_DOCUMENTS} line {doc.line}) has n_chunks "
                f"{doc.n_chunks} but {RAG_CHUNKS} holds no chunk_index {missing} of it "
                f"({int(held[ordinal])} of its chunks are there)",
            )
        origins = np.frombuffer(self._origins, dtype=np.int64)
        order = np.argsort(origins, kind="stable")
        ordered = origins[order]
        twice = np.flatnonzero(ordered[1:] == ordered[:-1])
        if twice.size:
            first, again = self._earliest_repeat(order, twice)
            key = int(origins[again])
            _refuse(
                "bundle_duplicate_id",
                f"{RAG_CHUNKS} line {again + 1} repeats original_index {key & 0xFFFFFFFF} of "
                f"document {self._doc_ids[key >> 32]} (line {first + 1}); (doc_id, "
                "original_index) names one chunk in both stores",
            )

    @staticmethod
    def _earliest_repeat(order: np.ndarray, twice: np.ndarray) -> tuple[int, int]:
        """(first line index, repeating line index) of the repeat met earliest in the file
        (a stable sort keeps equal keys in line order)."""
        at = int(twice[np.argmin(order[twice + 1])])
        return int(order[at]), int(order[at + 1])

    # -- embeddings.f32
    def vectors(self, reader: HashingReader) -> int:
        """Check every vector is finite; returns the rows."""
        dim = self.manifest.embedding_dim
        width = 4 * dim
        per_block = max(1, _READ_BYTES // width)
        row = 0
        with _damage_first(reader):
            while block := reader.read(per_block * width):
                if len(block) % width:
                    _refuse(
                        "bundle_invalid",
                        f"{RAG_EMBEDDINGS} ends inside row {row + len(block) // width + 1}",
                    )
                matrix = np.frombuffer(block, dtype="<f4").reshape(-1, dim)
                finite = np.isfinite(matrix)
                if not finite.all():
                    bad = np.argwhere(~finite)[0]
                    i, j = int(bad[0]), int(bad[1])
                    _refuse(
                        "bundle_vector_invalid",
                        f"{RAG_EMBEDDINGS} row {row + i + 1} (the vector of {RAG_CHUNKS} "
                        f"line {row + i + 1}) holds {float(matrix[i, j])} at dimension {j}: "
                        "a vector must be finite",
                    )
                row += matrix.shape[0]
        reader.check()
        return row


def check_rag_rows(
    zf: ZipFile,
    manifest: BundleManifest,
    docs_path: Path | None,
    *,
    progress: Progress | None = None,
) -> None:
    """Read every member of a RAG bundle whose directory was checked
    (:func:`~varagity.backup.bundle.check_directory`) once, hashed, and check its rows.

    Args:
        docs_path: The corpus folder the documents must lie in (this stack's
            ``DOCS_PATH``).

    Raises:
        BundleError: The first problem, with its code; a damaged member as
            ``bundle_invalid``.
    """
    report = progress or _quiet
    members = {m.name: m for m in manifest.members}
    check = RagRowCheck(manifest, docs_path)
    with open_member(zf, members[RAG_DOCUMENTS]) as reader:
        check.documents(reader)
    with open_member(zf, members[RAG_CHUNKS]) as reader:
        chunks = check.chunks(reader, report)
    with open_member(zf, members[RAG_EMBEDDINGS]) as reader:
        rows = check.vectors(reader)
    if rows != chunks:  # the matrix's size is checked against the counts already
        _refuse("bundle_invalid", f"{RAG_EMBEDDINGS} has {rows} rows for {chunks} chunks")
    report("check", chunks, chunks)


def _quiet(phase: str, done: int, total: int) -> None:
    return None


# --- the graph bundle -------------------------------------------------------------------
def graph_sidecar(member: str) -> bool:
    """Whether the graph bundle's member ``member`` is the build manifest sidecar."""
    from varagity.graph.manifest import MANIFEST_FILE

    return member.rsplit("/", 1)[-1] == MANIFEST_FILE


def check_graph_sidecar(raw: bytes, member: str) -> None:
    """The build manifest sidecar names only archives inside the graph folder.

    A sidecar that does not read as one (another schema, not JSON) is left alone: the
    graph reads it as absent and rebuilds what it lists. One that does read must not
    record a day of an archive outside the folder, which no removal could ever reach.

    Raises:
        BundleError: ``bundle_path_outside_corpus`` naming the entry and its source.
    """
    try:
        payload = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        return
    if not isinstance(payload, dict) or not isinstance(payload.get("documents"), dict):
        return
    for key, entry in payload["documents"].items():
        source = entry.get("source") if isinstance(entry, dict) else None
        if not isinstance(source, str) or not source:
            continue  # not an archive's day (or an entry the graph reads as absent)
        problem = corpus_path_problem(source, None, backslash=True)
        if problem:
            _refuse(
                "bundle_path_outside_corpus",
                f"{member}: the day {_shown(key)} records the archive {_shown(source)}, "
                f"which {problem}; an archive is a file inside the graph folder",
            )


# --- the verdict ------------------------------------------------------------------------
def verify_bundle(path: Path, settings: Settings, corpus: Corpus) -> BundleVerdict:
    """The cheap verdict, then every member read once: its sha256, and the row checks of
    a restore (a RAG bundle's rows, a graph bundle's build manifest sidecar; see
    :mod:`varagity.backup.rows`)."""
    manifest: BundleManifest | None = None
    try:
        with open_zip(path) as zf:
            manifest = read_manifest(zf)
            check_directory(zf, manifest, settings, corpus)
            if corpus == "rag":
                check_rag_rows(zf, manifest, settings.docs_path)
            else:
                for member in manifest.members:
                    sidecar = graph_sidecar(member.name)
                    kept: list[bytes] = []
                    with open_member(zf, member) as reader:
                        while block := reader.read(_READ_BYTES):
                            if sidecar:
                                kept.append(block)
                        reader.check()
                    if sidecar:
                        check_graph_sidecar(b"".join(kept), member.name)
    except BundleError as exc:
        return verdict_of(path, corpus, manifest, settings, exc)
    return verdict_of(path, corpus, manifest, settings, None)
