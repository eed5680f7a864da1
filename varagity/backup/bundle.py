"""Backup bundles: one zip per backup in the corpus's reserved ``varagity-exports/`` folder.

A bundle is a zip whose last member, ``bundle.json`` (:class:`BundleManifest`), records
what a restore judges it by: format and version, corpus, counts, the embedding model and
dimension (RAG), the ingest settings (RAG) or the engine that wrote the files (graph), the
stale flag, and every other member's size and sha256.

Two depths of checking:

* :func:`inspect_bundle` (every listed bundle, cheap): the zip's central directory and
  ``bundle.json`` only, nothing unpacked;
* :func:`~varagity.backup.rows.verify_bundle`: the same, then every member read once:
  its sha256, and the row checks a restore makes before it writes anything, so a verify
  gives the verdict a restore would.

Bundles are written by :class:`BundleWriter`: into a hidden ``.{name}.partial`` beside
the final name, synced, then linked into place under a name no file has yet, so a
listing sees a whole bundle or nothing. A crash leaves only the hidden partial, which
the next export sweeps.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import os
import re
import stat
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import IO, Any, Literal, cast, get_args

from varagity.config import Settings
from varagity.files import fsync_dir
from varagity.records import RESERVED_DIR

Corpus = Literal["rag", "graph"]
CORPORA: tuple[Corpus, ...] = ("rag", "graph")
BUNDLE_FORMAT = "varagity-backup"
BUNDLE_VERSION = 1
MANIFEST_NAME = "bundle.json"

#: The data members of a RAG bundle, in write order.
RAG_DOCUMENTS = "documents.jsonl"
RAG_CHUNKS = "chunks.jsonl"
RAG_EMBEDDINGS = "embeddings.f32"
RAG_MEMBERS = (RAG_DOCUMENTS, RAG_CHUNKS, RAG_EMBEDDINGS)

#: A graph member: a flat, visible file directly in ``<engine>/`` with a plain name.
_SAFE_FILE_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-]*$")
_PARTIAL_SUFFIX = ".partial"
_READ_CHUNK = 1 << 20

Progress = Callable[[str, int, int], None]
"""``(phase, done, total)``, e.g. ``("chunks", 1200, 5000)``."""

BundleErrorCode = Literal[
    "bundle_invalid",
    "bundle_incompatible",
    "bundle_row_invalid",
    "bundle_text_invalid",
    "bundle_path_outside_corpus",
    "bundle_duplicate_id",
    "bundle_unknown_document",
    "bundle_chunk_gap",
    "bundle_ids_inconsistent",
    "bundle_vector_invalid",
]

#: The codes of a bundle whose members match ``bundle.json`` but whose rows are unsound
#: (every code after the first two; :mod:`varagity.backup.rows`): each detail names the
#: member, the line and the value.
ROW_CODES: tuple[BundleErrorCode, ...] = get_args(BundleErrorCode)[2:]


class BundleError(Exception):
    """A bundle that cannot be restored here, and why.

    ``bundle_incompatible``: a sound bundle from another embedding model or dimension,
    another engine, format version or corpus (refused, never converted).
    ``bundle_invalid``: anything damaged or unsound in the zip or ``bundle.json`` (a
    member that does not match its digest included).
    The row codes (:data:`ROW_CODES`): members that match their digests but hold rows
    the stores cannot take (see :mod:`varagity.backup.rows`):
    ``bundle_row_invalid`` (not a row of the member's shape), ``bundle_text_invalid``
    (not UTF-8, a NUL), ``bundle_path_outside_corpus`` (a path not inside the corpus
    folder), ``bundle_duplicate_id``, ``bundle_unknown_document`` (a chunk of no
    document), ``bundle_chunk_gap`` (a document's chunk indexes not ``0 .. n-1``),
    ``bundle_ids_inconsistent`` (the members or a row's columns disagree on an id),
    ``bundle_vector_invalid`` (NaN or infinite).
    """

    def __init__(self, code: BundleErrorCode, detail: str) -> None:
        super().__init__(f"{code}: {detail}")
        self.code: BundleErrorCode = code
        self.detail = detail


def _invalid(detail: str) -> BundleError:
    return BundleError("bundle_invalid", detail)


def _incompatible(detail: str) -> BundleError:
    return BundleError("bundle_incompatible", detail)


@dataclass(frozen=True)
class MemberRecord:
    """One data member of a bundle as ``bundle.json`` records it."""

    name: str
    size_bytes: int
    sha256: str


@dataclass(frozen=True)
class BundleManifest:
    """``bundle.json``: the export-time facts a restore judges a bundle by."""

    format: str
    version: int
    corpus: Corpus
    created_at: datetime
    embedding_model: str
    embedding_dim: int
    stale: bool
    counts: dict[str, int]
    ingest_settings: dict[str, str] | None
    engine: dict[str, str] | None
    members: tuple[MemberRecord, ...]

    def to_json(self) -> bytes:
        """The manifest as ``bundle.json`` holds it."""
        payload = {
            "format": self.format,
            "version": self.version,
            "corpus": self.corpus,
            "created_at": self.created_at.astimezone(UTC).isoformat(),
            "embedding_model": self.embedding_model,
            "embedding_dim": self.embedding_dim,
            "stale": self.stale,
            "counts": dict(self.counts),
            "ingest_settings": self.ingest_settings,
            "engine": self.engine,
            "members": [
                {"name": m.name, "size_bytes": m.size_bytes, "sha256": m.sha256}
                for m in self.members
            ],
        }
        return json.dumps(payload, indent=2).encode("utf-8") + b"\n"

    @classmethod
    def from_json(cls, raw: bytes) -> BundleManifest:
        """Parse ``bundle.json``.

        Raises:
            BundleError: ``bundle_invalid`` when it is not a manifest (naming the field);
                ``bundle_incompatible`` when it is another format or version.
        """
        try:
            data = json.loads(raw)
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise _invalid(f"{MANIFEST_NAME} is not valid JSON ({exc})") from None
        if not isinstance(data, dict):
            raise _invalid(f"{MANIFEST_NAME} is not a JSON object")
        if data.get("format") != BUNDLE_FORMAT:
            raise _incompatible(
                f"{MANIFEST_NAME} says format {data.get('format')!r}, not {BUNDLE_FORMAT!r}: "
                "this zip is not a Varagity backup"
            )
        if data.get("version") != BUNDLE_VERSION:
            raise _incompatible(
                f"bundle format version {data.get('version')!r} is not the version this "
                f"Varagity reads ({BUNDLE_VERSION}); restore it with the release that wrote it"
            )
        try:
            corpus = data["corpus"]
            if corpus not in CORPORA:
                raise ValueError(f"corpus {corpus!r} is neither 'rag' nor 'graph'")
            members = tuple(
                MemberRecord(str(m["name"]), _int(m["size_bytes"]), str(m["sha256"]))
                for m in data["members"]
            )
            counts = {str(k): _int(v) for k, v in dict(data["counts"]).items()}
            ingest = data.get("ingest_settings")
            engine = data.get("engine")
            return cls(
                format=BUNDLE_FORMAT,
                version=BUNDLE_VERSION,
                corpus=cast(Corpus, corpus),
                created_at=datetime.fromisoformat(str(data["created_at"])),
                embedding_model=str(data["embedding_model"]),
                embedding_dim=_int(data["embedding_dim"]),
                stale=bool(data["stale"]),
                counts=counts,
                ingest_settings=(
                    {str(k): str(v) for k, v in dict(ingest).items()}
                    if ingest is not None
                    else None
                ),
                engine=(
                    {str(k): str(v) for k, v in dict(engine).items()}
                    if engine is not None
                    else None
                ),
                members=members,
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise _invalid(f"{MANIFEST_NAME} is malformed: {exc!r}") from None


def _int(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{value!r} is not a non-negative integer")
    return value


@dataclass(frozen=True)
class BundleVerdict:
    """What a listing shows of one zip in the exports folder."""

    name: str
    size_bytes: int
    corpus: Corpus
    ok: bool
    code: str | None
    detail: str | None
    manifest: BundleManifest | None
    drift: dict[str, tuple[str, str]] = field(default_factory=dict)


@dataclass(frozen=True)
class ExportResult:
    """A bundle written into the exports folder."""

    path: Path
    manifest: BundleManifest
    seconds: float


@dataclass(frozen=True)
class RestoreResult:
    """A bundle restored; ``stale_reason`` says why the corpus is flagged stale (or None)."""

    manifest: BundleManifest
    seconds: float
    stale_reason: str | None


# --- where bundles live ---------------------------------------------------------------
def corpus_root(settings: Settings, corpus: Corpus) -> Path:
    """The corpus's source folder: ``DOCS_PATH`` (rag) or ``GRAPH_DOCS_PATH`` (graph)."""
    if corpus == "rag":
        return settings.docs_path
    if corpus == "graph":
        return settings.graph_docs_path
    raise ValueError(f"corpus {corpus!r} is neither 'rag' nor 'graph'")


def exports_dir(settings: Settings, corpus: Corpus) -> Path:
    """``<DOCS_PATH or GRAPH_DOCS_PATH>/varagity-exports``."""
    return corpus_root(settings, corpus) / RESERVED_DIR


def bundle_name(corpus: Corpus, when: datetime, repeat: int = 1) -> str:
    """``varagity-<corpus>-<UTC yyyymmdd-HHMM>.zip``, ``-2``, ``-3`` ... on a repeat."""
    stamp = when.astimezone(UTC).strftime("%Y%m%d-%H%M")
    suffix = f"-{repeat}" if repeat > 1 else ""
    return f"varagity-{corpus}-{stamp}{suffix}.zip"


def resolve_bundle(settings: Settings, corpus: Corpus, name: str) -> Path:
    """The bundle called ``name`` in the corpus's exports folder.

    Raises:
        BundleError: ``bundle_invalid`` when ``name`` is not a bare, visible ``.zip``
            file name (a path, a traversal, a hidden or partial file).
        FileNotFoundError: No such bundle.
    """
    if (
        not name
        or name != name.strip()
        or "/" in name
        or "\\" in name
        or "\x00" in name
        or name in (".", "..")
        or name.startswith(".")
        or not name.lower().endswith(".zip")
    ):
        raise _invalid(
            f"{name!r} is not a bundle name: give the bare file name of a .zip in "
            f"{RESERVED_DIR}/ (as the listing shows it), without folders"
        )
    path = exports_dir(settings, corpus) / name
    if path.is_symlink() or not path.is_file():
        raise FileNotFoundError(f"no bundle {name} in {exports_dir(settings, corpus)}")
    return path


def list_bundles(settings: Settings, corpus: Corpus) -> list[BundleVerdict]:
    """Every visible ``.zip`` in the exports folder with its cheap verdict, newest first
    (by the manifest's ``created_at``; the file's modification time when unreadable)."""
    folder = exports_dir(settings, corpus)
    try:
        entries = [
            p
            for p in folder.iterdir()
            if not p.name.startswith(".")
            and p.name.lower().endswith(".zip")
            and p.is_file()
            and not p.is_symlink()
        ]
    except FileNotFoundError:
        return []
    keyed = []
    for path in entries:
        verdict = inspect_bundle(path, settings, corpus)
        if verdict.manifest is not None:
            when = verdict.manifest.created_at.timestamp()
        else:
            try:
                when = path.stat().st_mtime
            except FileNotFoundError:
                continue
        keyed.append(((when, path.name), verdict))
    keyed.sort(key=lambda item: item[0], reverse=True)
    return [verdict for _, verdict in keyed]


# --- checking -------------------------------------------------------------------------
def _entry_problem(info: zipfile.ZipInfo) -> str | None:
    """Why a zip entry may not be extracted anywhere (zip-slip), or None."""
    name = info.filename
    if "\\" in name:
        return f"entry {name!r} has a backslash in its name"
    if name.startswith("/") or re.match(r"^[A-Za-z]:", name):
        return f"entry {name!r} is an absolute path"
    if ".." in PurePosixPath(name).parts:
        return f"entry {name!r} climbs out of the bundle with '..'"
    mode = info.external_attr >> 16
    if info.create_system == 3 and stat.S_ISLNK(mode):
        return f"entry {name!r} is a symbolic link"
    return None


def _graph_member_problem(name: str, engine_dir: str) -> str | None:
    """Why ``name`` cannot be a member of a graph bundle, or None."""
    parts = name.split("/")
    if len(parts) != 2 or parts[0] != engine_dir:
        return f"member {name!r} is not a flat file directly in {engine_dir}/"
    if not _SAFE_FILE_NAME.match(parts[1]):
        return f"member {name!r} has a hidden or unsafe file name"
    return None


def check_directory(
    zf: zipfile.ZipFile, manifest: BundleManifest, settings: Settings, corpus: Corpus
) -> None:
    """The cheap checks of an open bundle whose manifest was read (no member is read).

    Raises:
        BundleError: The first problem found, with its code.
    """
    if manifest.corpus != corpus:
        raise _incompatible(
            f"this is a {manifest.corpus} bundle; it can only be restored into the "
            f"{manifest.corpus} corpus, not the {corpus} corpus"
        )
    infos = zf.infolist()
    for info in infos:
        problem = _entry_problem(info)
        if problem is not None:
            raise _invalid(f"unsafe zip entry: {problem}")
    recorded = {m.name: m for m in manifest.members}
    if len(recorded) != len(manifest.members):
        raise _invalid(f"{MANIFEST_NAME} records a member twice")
    if corpus == "rag":
        if sorted(recorded) != sorted(RAG_MEMBERS):
            raise _invalid(
                f"a RAG bundle records exactly {', '.join(RAG_MEMBERS)}; this one records "
                f"{', '.join(sorted(recorded)) or 'nothing'}"
            )
        allowed_dirs: set[str] = set()
    else:
        engine_dir = (manifest.engine or {}).get("name", "")
        if not engine_dir or not _SAFE_FILE_NAME.match(engine_dir):
            raise _invalid(f"{MANIFEST_NAME} names no usable engine ({manifest.engine!r})")
        if not recorded:
            raise _invalid("the graph bundle records no file of the engine's working directory")
        for name in recorded:
            problem = _graph_member_problem(name, engine_dir)
            if problem is not None:
                raise _invalid(problem)
        allowed_dirs = {f"{engine_dir}/"}
    present: dict[str, zipfile.ZipInfo] = {}
    for info in infos:
        name = info.filename
        if name == MANIFEST_NAME or (info.is_dir() and name in allowed_dirs):
            continue
        if name in present:
            raise _invalid(f"the zip holds {name!r} twice")
        if name not in recorded:
            raise _invalid(
                f"the zip holds {name!r}, which {MANIFEST_NAME} does not record (an "
                "unrecorded file can never be verified)"
            )
        present[name] = info
    for name, member in recorded.items():
        found = present.get(name)
        if found is None:
            raise _invalid(f"member {name!r} is recorded in {MANIFEST_NAME} but missing")
        if found.file_size != member.size_bytes:
            raise _invalid(
                f"member {name!r} is {found.file_size} bytes in the zip but "
                f"{member.size_bytes} bytes in {MANIFEST_NAME}"
            )
    if corpus == "rag":
        _check_rag_shape(manifest, recorded, settings)
    else:
        _check_engine(manifest, settings)


def _check_rag_shape(
    manifest: BundleManifest, recorded: dict[str, MemberRecord], settings: Settings
) -> None:
    chunks = manifest.counts.get("chunks")
    if chunks is None or "documents" not in manifest.counts:
        raise _invalid(f"{MANIFEST_NAME} counts no documents and chunks: {manifest.counts}")
    expected = chunks * manifest.embedding_dim * 4
    got = recorded[RAG_EMBEDDINGS].size_bytes
    if got != expected:
        raise _invalid(
            f"{RAG_EMBEDDINGS} is {got} bytes but {chunks} chunks x {manifest.embedding_dim} "
            f"dimensions x 4 bytes = {expected}"
        )
    if manifest.embedding_dim != settings.EMBEDDING_DIM:
        raise _incompatible(
            f"the bundle holds {manifest.embedding_dim}-d vectors; this stack's "
            f"EMBEDDING_DIM is {settings.EMBEDDING_DIM}"
        )
    if manifest.embedding_model != settings.EMBEDDING_MODEL:
        raise _incompatible(
            f"the bundle's vectors come from {manifest.embedding_model!r}; this stack embeds "
            f"with EMBEDDING_MODEL={settings.EMBEDDING_MODEL!r} (vectors of another model "
            "would quietly return the wrong passages)"
        )


def _major_minor(version: str) -> tuple[str, ...]:
    return tuple(version.split(".")[:2])


def _check_engine(manifest: BundleManifest, settings: Settings) -> None:
    from varagity.graph.registry import UnknownGraphEngine, running_engine_format

    engine = manifest.engine or {}
    try:
        running = running_engine_format(settings)
    except UnknownGraphEngine as exc:
        raise _incompatible(str(exc)) from None
    if engine.get("name") != running.name or engine.get("package") != running.package:
        raise _incompatible(
            f"the bundle was written by engine {engine.get('name')!r} "
            f"({engine.get('package')!r}); this stack runs {running.name!r} "
            f"({running.package!r}, GRAPH_ENGINE)"
        )
    theirs = engine.get("version", "")
    if _major_minor(theirs) != _major_minor(running.version):
        raise _incompatible(
            f"the bundle was written by {running.package} {theirs}; this stack has "
            f"{running.version} (major.minor must match: the engine's files are restored "
            "verbatim)"
        )


def read_manifest(zf: zipfile.ZipFile) -> BundleManifest:
    """``bundle.json`` of an open zip.

    Raises:
        BundleError: It is missing, too large or not a manifest.
    """
    try:
        info = zf.getinfo(MANIFEST_NAME)
    except KeyError:
        raise _invalid(f"the zip has no {MANIFEST_NAME}: not a Varagity bundle") from None
    if info.file_size > 64 << 20:
        raise _invalid(f"{MANIFEST_NAME} is {info.file_size} bytes, too large for a manifest")
    try:
        raw = zf.read(info)
    except (zipfile.BadZipFile, OSError, EOFError) as exc:
        raise _invalid(f"{MANIFEST_NAME} cannot be read: {exc}") from None
    return BundleManifest.from_json(raw)


def open_zip(path: Path) -> zipfile.ZipFile:
    """Open a bundle's zip.

    Raises:
        BundleError: ``bundle_invalid`` when it is not a readable zip (truncated, damaged).
    """
    try:
        return zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError, EOFError) as exc:
        raise _invalid(
            f"{path.name} is not a readable zip (truncated or damaged: {exc}); export again"
        ) from None


def drift(manifest: BundleManifest | None, settings: Settings) -> dict[str, tuple[str, str]]:
    """RAG: each reingest-affecting setting whose bundle value differs from this stack's."""
    if manifest is None or manifest.ingest_settings is None:
        return {}
    from varagity.stores.corpus_state import ingest_settings

    current = ingest_settings(settings)
    return {
        name: (manifest.ingest_settings.get(name, ""), value)
        for name, value in current.items()
        if manifest.ingest_settings.get(name) != value
    }


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


def inspect_bundle(path: Path, settings: Settings, corpus: Corpus) -> BundleVerdict:
    """The cheap verdict: the zip's directory and ``bundle.json``, nothing unpacked."""
    manifest: BundleManifest | None = None
    try:
        with open_zip(path) as zf:
            manifest = read_manifest(zf)
            check_directory(zf, manifest, settings, corpus)
    except BundleError as exc:
        return verdict_of(path, corpus, manifest, settings, exc)
    return verdict_of(path, corpus, manifest, settings, None)


def verdict_of(
    path: Path,
    corpus: Corpus,
    manifest: BundleManifest | None,
    settings: Settings,
    error: BundleError | None,
) -> BundleVerdict:
    """The verdict on ``path``: ok, or refused with ``error``'s code and detail."""
    return BundleVerdict(
        name=path.name,
        size_bytes=_size(path),
        corpus=corpus,
        ok=error is None,
        code=error.code if error else None,
        detail=error.detail if error else None,
        manifest=manifest,
        drift=drift(manifest, settings) if corpus == "rag" else {},
    )


class HashingReader:
    """Reads a member while hashing it; :meth:`check` compares with the manifest."""

    def __init__(self, raw: IO[bytes], member: MemberRecord) -> None:
        self._raw = raw
        self.member = member
        self._hash = hashlib.sha256()
        self.size = 0

    def read(self, n: int = -1) -> bytes:
        try:
            data = self._raw.read(n)
        except (zipfile.BadZipFile, OSError, EOFError) as exc:
            raise _invalid(f"member {self.member.name!r} cannot be read: {exc}") from None
        self._hash.update(data)
        self.size += len(data)
        return data

    def readline(self) -> bytes:
        try:
            data = self._raw.readline()
        except (zipfile.BadZipFile, OSError, EOFError) as exc:
            raise _invalid(f"member {self.member.name!r} cannot be read: {exc}") from None
        self._hash.update(data)
        self.size += len(data)
        return data

    def check(self) -> None:
        """Read what is left, then raise unless size and sha256 match the manifest."""
        while self.read(_READ_CHUNK):
            pass
        digest = self._hash.hexdigest()
        if self.size != self.member.size_bytes or digest != self.member.sha256:
            raise _invalid(
                f"member {self.member.name!r} does not match {MANIFEST_NAME}: sha256 "
                f"{digest[:16]}... ({self.size} bytes) where {self.member.sha256[:16]}... "
                f"({self.member.size_bytes} bytes) was recorded; the bundle is damaged"
            )


@contextlib.contextmanager
def open_member(zf: zipfile.ZipFile, member: MemberRecord) -> Iterator[HashingReader]:
    """A member of a checked bundle, hashed as it is read."""
    try:
        raw = zf.open(member.name)
    except (zipfile.BadZipFile, OSError, EOFError, KeyError) as exc:
        raise _invalid(f"member {member.name!r} cannot be read: {exc}") from None
    with raw:
        yield HashingReader(raw, member)


def load_checked(path: Path, settings: Settings, corpus: Corpus) -> BundleManifest:
    """Open ``path``, read its manifest and run the cheap checks; raise what fails."""
    with open_zip(path) as zf:
        manifest = read_manifest(zf)
        check_directory(zf, manifest, settings, corpus)
    return manifest


# --- writing --------------------------------------------------------------------------
def sweep_partials(folder: Path) -> list[str]:
    """Delete the ``.*.partial`` files no running export holds (each export holds a lock
    on its own); returns their names."""
    swept = []
    try:
        candidates = [
            p for p in folder.iterdir() if p.name.startswith(".") and p.name.endswith(".partial")
        ]
    except FileNotFoundError:
        return []
    for path in candidates:
        try:
            fd = os.open(path, os.O_RDWR)
        except (FileNotFoundError, IsADirectoryError):
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue  # an export in flight
        try:
            path.unlink(missing_ok=True)
            swept.append(path.name)
        finally:
            os.close(fd)
    return swept


class _HashingWriter:
    """Wraps a zip member being written: counts and hashes what goes in."""

    def __init__(self, raw: IO[bytes]) -> None:
        self._raw = raw
        self.hash = hashlib.sha256()
        self.size = 0

    def write(self, data: bytes) -> int:
        self.hash.update(data)
        self.size += len(data)
        return self._raw.write(data)


class BundleWriter:
    """Writes one bundle: members into a hidden partial, ``bundle.json`` last, then
    synced and linked into place (:meth:`finish`). Use through :func:`writing_bundle`."""

    def __init__(self, folder: Path, corpus: Corpus, created_at: datetime) -> None:
        self.folder = folder
        self.corpus = corpus
        self.created_at = created_at
        self.members: list[MemberRecord] = []
        self.name = self._free_name()
        self.partial = folder / f".{self.name}{_PARTIAL_SUFFIX}"
        self._fd = os.open(self.partial, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
        fcntl.flock(self._fd, fcntl.LOCK_EX)  # the sweep of a later export leaves it alone
        self._file = os.fdopen(self._fd, "w+b", closefd=False)
        self.zip = zipfile.ZipFile(self._file, "w", allowZip64=True)
        self.path: Path | None = None

    def _free_name(self) -> str:
        repeat = 1
        while True:
            name = bundle_name(self.corpus, self.created_at, repeat)
            if (
                not (self.folder / name).exists()
                and not (self.folder / f".{name}{_PARTIAL_SUFFIX}").exists()
            ):
                return name
            repeat += 1

    @contextlib.contextmanager
    def member(self, name: str, *, compress: bool = True) -> Iterator[_HashingWriter]:
        """Stream one member into the bundle; recorded with its size and sha256."""
        info = zipfile.ZipInfo(name, date_time=self.created_at.timetuple()[:6])
        info.compress_type = zipfile.ZIP_DEFLATED if compress else zipfile.ZIP_STORED
        info.external_attr = (stat.S_IFREG | 0o644) << 16
        with self.zip.open(info, "w", force_zip64=True) as raw:
            writer = _HashingWriter(raw)
            yield writer
        self.members.append(MemberRecord(name, writer.size, writer.hash.hexdigest()))

    def add_file(self, name: str, source: Path) -> None:
        """Copy a file into the bundle as ``name``."""
        with self.member(name) as out, source.open("rb") as src:
            while block := src.read(_READ_CHUNK):
                out.write(block)

    def finish(self, manifest: BundleManifest) -> Path:
        """Write ``bundle.json`` (with every member recorded), sync the zip and link it
        into place under a name no file has; returns the bundle's path."""
        info = zipfile.ZipInfo(MANIFEST_NAME, date_time=self.created_at.timetuple()[:6])
        info.compress_type = zipfile.ZIP_DEFLATED
        info.external_attr = (stat.S_IFREG | 0o644) << 16
        self.zip.writestr(info, manifest.to_json())
        self.zip.close()
        self._file.flush()
        os.fsync(self._fd)
        name = self.name
        repeat = 1
        while True:
            target = self.folder / name
            try:
                os.link(self.partial, target)  # fails rather than replace a file
                self.partial.unlink()
                break
            except FileExistsError:
                repeat += 1
                name = bundle_name(self.corpus, self.created_at, repeat)
            except OSError as exc:
                if exc.errno not in (errno.EPERM, errno.EXDEV, errno.ENOTSUP, errno.EMLINK):
                    raise
                if target.exists():  # no hard links here: replace only a free name
                    repeat += 1
                    name = bundle_name(self.corpus, self.created_at, repeat)
                    continue
                os.replace(self.partial, target)
                break
        fsync_dir(self.folder)
        self.name = name
        self.path = self.folder / name
        return self.path

    def discard(self) -> None:
        """Drop the partial (a failed export)."""
        with contextlib.suppress(Exception):
            self.zip.close()
        self.partial.unlink(missing_ok=True)

    def close(self) -> None:
        """Release the partial's lock."""
        self._file.close()
        os.close(self._fd)


@contextlib.contextmanager
def writing_bundle(
    settings: Settings, corpus: Corpus, created_at: datetime
) -> Iterator[BundleWriter]:
    """A :class:`BundleWriter` in the corpus's exports folder (created if missing), after
    sweeping the partials earlier crashed exports left; any failure deletes the partial."""
    folder = exports_dir(settings, corpus)
    folder.mkdir(parents=True, exist_ok=True)
    sweep_partials(folder)
    writer = BundleWriter(folder, corpus, created_at)
    try:
        yield writer
        if writer.path is None:
            raise RuntimeError("a bundle writer was left without finish()")
    except BaseException:
        writer.discard()
        raise
    finally:
        writer.close()
