"""A corpus of damaged, foreign and hostile bundles: each is refused with its own code and
a detail that names the problem, and the live corpus answers exactly as before.

The ``row_*`` kinds are signed again after the edit (every member's size and sha256
recorded truly, the counts too), so only the row checks can tell: each is refused by
verify and by restore with its row code and a detail naming the member, the line and
the value, never a message of Postgres."""

from __future__ import annotations

import copy
import hashlib
import json
import stat
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.backup.conftest import DIM, Stack
from varagity.backup.bundle import (
    BundleError,
    exports_dir,
    inspect_bundle,
    list_bundles,
)
from varagity.backup.graph import restore_graph
from varagity.backup.rag import export_rag, restore_rag
from varagity.backup.rows import verify_bundle
from varagity.graph.registry import running_engine_format, workdir_for

Files = dict[str, bytes]
Manifest = dict[str, Any]


def record(manifest: Manifest, name: str, data: bytes) -> None:
    """Record ``name`` with its true size and digest (replacing its entry)."""
    entry = {"name": name, "size_bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    members = [m for m in manifest["members"] if m["name"] != name]
    manifest["members"] = [*members, entry]


def write_zip(
    path: Path,
    files: Files,
    manifest: Manifest | bytes | None,
    extra: Sequence[tuple[zipfile.ZipInfo, bytes]] = (),
) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in files.items():
            zf.writestr(name, data)
        for info, data in extra:
            zf.writestr(info, data)
        if manifest is not None:
            raw = manifest if isinstance(manifest, bytes) else json.dumps(manifest).encode()
            zf.writestr("bundle.json", raw)
    return path


@dataclass
class Good:
    path: Path
    files: Files
    manifest: Manifest


@pytest.fixture
def good(stack: Stack) -> Good:
    path = export_rag(stack.settings, stack.pg).path
    with zipfile.ZipFile(path) as zf:
        files = {n: zf.read(n) for n in zf.namelist() if n != "bundle.json"}
        manifest = json.loads(zf.read("bundle.json"))
    return Good(path, files, manifest)


def symlink_entry(name: str) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name)
    info.create_system = 3
    info.external_attr = (stat.S_IFLNK | 0o777) << 16
    return info


Tamper = Callable[[Good, Path], Path]


def truncated(g: Good, out: Path) -> Path:
    out.write_bytes(g.path.read_bytes()[: g.path.stat().st_size // 2])
    return out


def no_manifest(g: Good, out: Path) -> Path:
    return write_zip(out, g.files, None)


def manifest_not_json(g: Good, out: Path) -> Path:
    return write_zip(out, g.files, b"{ this is not json")


def other_version(g: Good, out: Path) -> Path:
    return write_zip(out, g.files, {**g.manifest, "version": 2})


def wrong_corpus(g: Good, out: Path) -> Path:
    return write_zip(out, g.files, {**g.manifest, "corpus": "graph"})


def other_model(g: Good, out: Path) -> Path:
    return write_zip(out, g.files, {**g.manifest, "embedding_model": "text-embedding-3-small"})


def other_dim(g: Good, out: Path) -> Path:
    manifest = copy.deepcopy(g.manifest)
    manifest["embedding_dim"] = DIM * 2
    files = dict(g.files)
    files["embeddings.f32"] = np.zeros((manifest["counts"]["chunks"], DIM * 2), "<f4").tobytes()
    record(manifest, "embeddings.f32", files["embeddings.f32"])
    return write_zip(out, files, manifest)


def slip(name: str) -> Tamper:
    def tamper(g: Good, out: Path) -> Path:
        manifest = copy.deepcopy(g.manifest)
        record(manifest, name, b"owned")
        return write_zip(out, g.files, manifest, [(zipfile.ZipInfo(name), b"owned")])

    return tamper


def symlink(g: Good, out: Path) -> Path:
    manifest = copy.deepcopy(g.manifest)
    record(manifest, "documents.jsonl", b"/etc/passwd")
    files = {k: v for k, v in g.files.items() if k != "documents.jsonl"}
    return write_zip(out, files, manifest, [(symlink_entry("documents.jsonl"), b"/etc/passwd")])


def unrecorded(g: Good, out: Path) -> Path:
    return write_zip(out, {**g.files, "notes.txt": b"hello"}, g.manifest)


def missing_member(g: Good, out: Path) -> Path:
    return write_zip(out, {k: v for k, v in g.files.items() if k != "documents.jsonl"}, g.manifest)


def size_mismatch(g: Good, out: Path) -> Path:
    files = dict(g.files)
    files["chunks.jsonl"] += b"\n"
    return write_zip(out, files, g.manifest)


def matrix_vs_counts(g: Good, out: Path) -> Path:
    manifest = copy.deepcopy(g.manifest)
    manifest["counts"]["chunks"] += 1
    return write_zip(out, g.files, manifest)


def flipped_byte(g: Good, out: Path) -> Path:
    """Same size, one vector byte changed: only the digest can tell."""
    files = dict(g.files)
    data = bytearray(files["embeddings.f32"])
    data[-1] ^= 0x01
    files["embeddings.f32"] = bytes(data)
    return write_zip(out, files, g.manifest)


def edited_chunk_text(g: Good, out: Path) -> Path:
    """Same size, one letter of a chunk's text changed case: still valid rows."""
    files = dict(g.files)
    data = bytearray(files["chunks.jsonl"])
    at = data.index(b'"content":"') + len(b'"content":"')
    data[at] ^= 0x20
    files["chunks.jsonl"] = bytes(data)
    return write_zip(out, files, g.manifest)


# --- rows edited and the bundle signed again: only the row checks can tell ------------
DOCS, CHUNKS, VECTORS = "documents.jsonl", "chunks.jsonl", "embeddings.f32"
Rows = list[dict[str, Any]]


def rows_of(data: bytes) -> Rows:
    return [json.loads(line) for line in data.splitlines()]


def dumped(rows: Rows) -> bytes:
    return b"".join(
        json.dumps(row, ensure_ascii=False, separators=(",", ":")).encode() + b"\n" for row in rows
    )


def resigned(g: Good, out: Path, members: Files) -> Path:
    """``g`` with ``members`` replaced, each recorded in bundle.json with its true size
    and sha256, and the counts of what the bundle now holds."""
    manifest = copy.deepcopy(g.manifest)
    files = {**g.files, **members}
    for name, data in members.items():
        record(manifest, name, data)
    manifest["counts"] = {
        "documents": files[DOCS].count(b"\n"),
        "chunks": files[CHUNKS].count(b"\n"),
    }
    return write_zip(out, files, manifest)


def edit_documents(edit: Callable[[Rows], None]) -> Tamper:
    def tamper(g: Good, out: Path) -> Path:
        docs = rows_of(g.files[DOCS])
        edit(docs)
        return resigned(g, out, {DOCS: dumped(docs)})

    return tamper


def edit_chunks(edit: Callable[[Rows], None]) -> Tamper:
    """Chunk lines follow the export's order: line ``7 * d + i + 1`` is chunk ``i`` of
    the ``d``-th generated document."""

    def tamper(g: Good, out: Path) -> Path:
        chunks = rows_of(g.files[CHUNKS])
        edit(chunks)
        return resigned(g, out, {CHUNKS: dumped(chunks)})

    return tamper


def path_of(rel: str) -> Tamper:
    def edit(docs: Rows) -> None:
        docs[0]["relative_path"] = rel

    return edit_documents(edit)


def duplicate_doc_id(docs: Rows) -> None:
    docs[1]["doc_id"] = docs[0]["doc_id"]


def bad_timestamp(docs: Rows) -> None:
    docs[1]["ingested_at"] = "yesterday"


def unknown_document(chunks: Rows) -> None:
    chunks[4]["doc_id"] = "0000000000000000"


def metadata_of_another_document(chunks: Rows) -> None:
    chunks[2]["metadata"]["doc_id"] = chunks[20]["doc_id"]


def metadata_not_a_record(chunks: Rows) -> None:
    chunks[1]["metadata"]["n_tokens"] = -1


def set_chunk_index(chunk: dict[str, Any], index: int) -> None:
    """Move a chunk to another index with every id following (ids stay consistent)."""
    chunk_id = f"{chunk['doc_id']}::{index}"
    chunk["chunk_index"] = chunk["metadata"]["chunk_index"] = index
    chunk["chunk_id"] = chunk["metadata"]["chunk_id"] = chunk_id


def duplicate_chunk(chunks: Rows) -> None:
    set_chunk_index(chunks[3], 2)  # line 4, chunk 3 of its document, becomes chunk 2


def duplicate_original_index(chunks: Rows) -> None:
    chunks[8]["original_index"] = chunks[8]["metadata"]["original_index"] = chunks[7][
        "original_index"
    ]


def nul_in_text(chunks: Rows) -> None:
    chunks[3]["content"] += "\x00"


def chunk_gap(g: Good, out: Path) -> Path:
    """Chunk 3 of the first document gone, with its vector: the rest still agree."""
    chunks = rows_of(g.files[CHUNKS])
    assert chunks[3]["chunk_index"] == 3
    del chunks[3]
    matrix = np.frombuffer(g.files[VECTORS], dtype="<f4").reshape(-1, DIM)
    vectors = np.delete(matrix, 3, axis=0).tobytes()
    return resigned(g, out, {CHUNKS: dumped(chunks), VECTORS: vectors})


def nan_vector(g: Good, out: Path) -> Path:
    matrix = np.frombuffer(g.files[VECTORS], dtype="<f4").reshape(-1, DIM).copy()
    matrix[10, 2] = np.nan
    return resigned(g, out, {VECTORS: matrix.tobytes()})


def invalid_utf8(g: Good, out: Path) -> Path:
    lines = g.files[CHUNKS].splitlines(keepends=True)
    at = lines[5].index(b'"content":"') + len(b'"content":"')
    lines[5] = lines[5][:at] + b"\xff\xfe" + lines[5][at:]
    return resigned(g, out, {CHUNKS: b"".join(lines)})


def renamed_column(g: Good, out: Path) -> Path:
    """Same size, a column name damaged: the digest speaks before the column does."""
    files = dict(g.files)
    files["chunks.jsonl"] = files["chunks.jsonl"].replace(b'"chunk_id"', b'"chonk_id"', 1)
    return write_zip(out, files, g.manifest)


#: (tamper, code, words the detail must contain, caught by the cheap verdict)
CASES: dict[str, tuple[Tamper, str, str | tuple[str, ...], bool]] = {
    "truncated_zip": (truncated, "bundle_invalid", "not a readable zip", True),
    "no_manifest": (no_manifest, "bundle_invalid", "no bundle.json", True),
    "manifest_not_json": (manifest_not_json, "bundle_invalid", "not valid JSON", True),
    "other_format_version": (other_version, "bundle_incompatible", "format version 2", True),
    "wrong_corpus": (wrong_corpus, "bundle_incompatible", "graph bundle", True),
    "other_embedding_model": (other_model, "bundle_incompatible", "text-embedding-3-small", True),
    "other_embedding_dim": (other_dim, "bundle_incompatible", f"{DIM * 2}-d", True),
    "zip_slip_dotdot": (slip("../../evil.sh"), "bundle_invalid", "'..'", True),
    "zip_slip_absolute": (slip("/tmp/evil.sh"), "bundle_invalid", "absolute path", True),
    "zip_slip_backslash": (slip("..\\evil.sh"), "bundle_invalid", "backslash", True),
    "zip_slip_symlink": (symlink, "bundle_invalid", "symbolic link", True),
    "unrecorded_member": (unrecorded, "bundle_invalid", "'notes.txt'", True),
    "missing_member": (missing_member, "bundle_invalid", "'documents.jsonl' is recorded", True),
    "size_mismatch": (size_mismatch, "bundle_invalid", "'chunks.jsonl' is", True),
    "matrix_vs_counts": (matrix_vs_counts, "bundle_invalid", "embeddings.f32 is", True),
    "sha256_vectors": (flipped_byte, "bundle_invalid", "'embeddings.f32' does not match", False),
    "sha256_chunks": (edited_chunk_text, "bundle_invalid", "'chunks.jsonl' does not match", False),
    "sha256_column": (renamed_column, "bundle_invalid", "'chunks.jsonl' does not match", False),
    # signed again: the row checks refuse
    "row_path_dotdot": (
        path_of("../../../etc/passwd"),
        "bundle_path_outside_corpus",
        ("documents.jsonl line 1: document", "relative_path '../../../etc/passwd'", "'..'"),
        False,
    ),
    "row_path_absolute": (
        path_of("/etc/passwd"),
        "bundle_path_outside_corpus",
        ("documents.jsonl line 1", "'/etc/passwd'", "absolute"),
        False,
    ),
    "row_path_backslash": (
        path_of("..\\..\\evil.md"),
        "bundle_path_outside_corpus",
        ("documents.jsonl line 1", "backslash"),
        False,
    ),
    "row_path_reserved": (
        path_of("varagity-exports/x.md"),
        "bundle_path_outside_corpus",
        ("documents.jsonl line 1", "'varagity-exports/x.md'", "never corpus"),
        False,
    ),
    "row_path_not_canonical": (
        path_of("generated/./x.md"),
        "bundle_path_outside_corpus",
        ("documents.jsonl line 1", "canonical", "'generated/x.md'"),
        False,
    ),
    "row_duplicate_doc_id": (
        edit_documents(duplicate_doc_id),
        "bundle_duplicate_id",
        "documents.jsonl line 2 repeats doc_id",
        False,
    ),
    "row_bad_timestamp": (
        edit_documents(bad_timestamp),
        "bundle_row_invalid",
        "documents.jsonl line 2: ingested_at is 'yesterday', not an ISO 8601",
        False,
    ),
    "row_unknown_document": (
        edit_chunks(unknown_document),
        "bundle_unknown_document",
        ("chunks.jsonl line 5", "document '0000000000000000'", "documents.jsonl does not hold"),
        False,
    ),
    "row_chunk_gap": (
        chunk_gap,
        "bundle_chunk_gap",
        ("documents.jsonl line", "has n_chunks 7 but chunks.jsonl holds no chunk_index 3"),
        False,
    ),
    "row_duplicate_chunk_id": (
        edit_chunks(duplicate_chunk),
        "bundle_duplicate_id",
        ("chunks.jsonl line 4 repeats chunk_id", "::2 of line 3"),
        False,
    ),
    "row_duplicate_original_index": (
        edit_chunks(duplicate_original_index),
        "bundle_duplicate_id",
        ("chunks.jsonl line 9 repeats original_index", "(line 8)"),
        False,
    ),
    "row_ids_inconsistent": (
        edit_chunks(metadata_of_another_document),
        "bundle_ids_inconsistent",
        ("chunks.jsonl line 3: metadata.doc_id is", "but the row says"),
        False,
    ),
    "row_metadata_not_a_record": (
        edit_chunks(metadata_not_a_record),
        "bundle_row_invalid",
        ("chunks.jsonl line 2: metadata is not a chunk record", "n_tokens"),
        False,
    ),
    "row_nan_vector": (
        nan_vector,
        "bundle_vector_invalid",
        ("embeddings.f32 row 11", "chunks.jsonl line 11", "nan at dimension 2"),
        False,
    ),
    "row_nul_text": (
        edit_chunks(nul_in_text),
        "bundle_text_invalid",
        "chunks.jsonl line 4: content holds a NUL character",
        False,
    ),
    "row_invalid_utf8": (
        invalid_utf8,
        "bundle_text_invalid",
        ("chunks.jsonl line 6 is not valid UTF-8", "byte 0xff"),
        False,
    ),
}


def snapshot(stack: Stack) -> tuple[Any, ...]:
    with stack.pg.connection() as conn:
        rows = conn.execute(
            "SELECT chunk_id, vector_send(embedding), metadata FROM chunks ORDER BY chunk_id"
        ).fetchall()
        docs = conn.execute("SELECT * FROM documents ORDER BY doc_id").fetchall()
    hits = [[h.chunk_id for h in stack.bm25.search(q, 5)] for q in ("turbine", "saffron")]
    return rows, docs, hits, stack.bm25.count()


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_tampered_rag_bundle_is_refused(case: str, stack: Stack, good: Good) -> None:
    tamper, code, expected, cheap = CASES[case]
    words = expected if isinstance(expected, tuple) else (expected,)
    bundle = tamper(good, exports_dir(stack.settings, "rag") / f"tampered-{case}.zip")
    before = snapshot(stack)

    verified = verify_bundle(bundle, stack.settings, "rag")
    assert (verified.ok, verified.code) == (False, code), verified.detail
    assert all(w in (verified.detail or "") for w in words), verified.detail
    inspected = inspect_bundle(bundle, stack.settings, "rag")
    assert inspected.ok is not cheap
    with pytest.raises(BundleError) as caught:
        restore_rag(bundle, stack.settings, stack.pg, stack.bm25)
    assert caught.value.code == code
    assert caught.value.detail == verified.detail  # a verify tells what a restore would
    assert "violates" not in caught.value.detail  # never a message of Postgres
    assert snapshot(stack) == before  # the live corpus answers as before
    listed = {v.name: v for v in list_bundles(stack.settings, "rag")}
    assert listed[bundle.name].ok is not cheap
    assert listed[good.path.name].ok


def graph_bundle(
    settings: Any,
    out: Path,
    engine: dict[str, str],
    names: tuple[str, ...] = ("lightrag/kv_store_doc_status.json",),
    contents: Files | None = None,
) -> Path:
    files = {name: b"{}" for name in names} | (contents or {})
    manifest: Manifest = {
        "format": "varagity-backup",
        "version": 1,
        "corpus": "graph",
        "created_at": "2026-12-01T10:00:00+00:00",
        "embedding_model": "all-MiniLM-L6-v2",
        "embedding_dim": 384,
        "stale": False,
        "counts": {},
        "ingest_settings": None,
        "engine": engine,
        "members": [],
    }
    for name, data in files.items():
        record(manifest, name, data)
    return write_zip(out, files, manifest)


@pytest.mark.parametrize(
    ("case", "code", "words"),
    [
        ("other_engine_version", "bundle_incompatible", "major.minor"),
        ("other_engine", "bundle_incompatible", "'nano-graphrag'"),
        ("nested_member", "bundle_invalid", "flat file"),
        ("hidden_member", "bundle_invalid", "hidden or unsafe"),
        ("rag_bundle_as_graph", "bundle_incompatible", "rag bundle"),
    ],
)
def test_a_tampered_graph_bundle_is_refused(
    case: str, code: str, words: str, stack: Stack, good: Good
) -> None:
    settings = stack.settings
    running = running_engine_format(settings)
    engine = {"name": running.name, "package": running.package, "version": running.version}
    folder = exports_dir(settings, "graph")
    folder.mkdir(parents=True)
    out = folder / f"{case}.zip"
    if case == "other_engine_version":
        bundle = graph_bundle(settings, out, {**engine, "version": "0.0.1"})
    elif case == "other_engine":
        bundle = graph_bundle(
            settings, out, {**engine, "name": "nano-graphrag"}, ("nano-graphrag/kv.json",)
        )
    elif case == "nested_member":
        bundle = graph_bundle(settings, out, engine, ("lightrag/sub/kv.json",))
    elif case == "hidden_member":
        bundle = graph_bundle(settings, out, engine, ("lightrag/.hidden.json",))
    else:
        bundle = out.with_name("rag.zip")
        bundle.write_bytes(good.path.read_bytes())
    assert graph_bundle(settings, folder / "sound.zip", engine).exists()
    assert inspect_bundle(folder / "sound.zip", settings, "graph").ok

    workdir = workdir_for(settings)
    workdir.mkdir(parents=True)
    (workdir / "kv_store_doc_status.json").write_text('{"live": true}')
    verdict = inspect_bundle(bundle, settings, "graph")
    assert (verdict.ok, verdict.code) == (False, code)
    assert words in (verdict.detail or ""), verdict.detail
    with pytest.raises(BundleError) as caught:
        restore_graph(bundle, settings)
    assert caught.value.code == code and words in caught.value.detail
    assert [p.name for p in workdir.iterdir()] == ["kv_store_doc_status.json"]
    assert (workdir / "kv_store_doc_status.json").read_text() == '{"live": true}'
    assert sorted(p.name for p in workdir.parent.iterdir() if not p.name.startswith(".")) == [
        "lightrag"
    ]


def build_manifest(*sources: str) -> bytes:
    """A graph build manifest sidecar recording one day of each archive in ``sources``."""
    documents = {
        f"thread-{i}::2026-01-0{i + 1}": {
            "content_sha256": "0" * 64,
            "message_guids": [f"g{i}"],
            "thread_name": f"thread {i}",
            "span": f"2026-01-0{i + 1}..2026-01-0{i + 1}",
            "source": source,
            "senders": [],
        }
        for i, source in enumerate(sources)
    }
    return json.dumps({"schema_version": 1, "documents": documents}).encode()


@pytest.mark.parametrize(
    ("source", "words"),
    [
        ("../../../etc/passwd", "'..'"),
        ("/var/mail/chat.db", "absolute"),
        ("varagity-exports/chat.db", "never corpus"),
    ],
)
def test_a_graph_sidecar_naming_an_archive_outside_the_folder_is_refused(
    source: str, words: str, stack: Stack
) -> None:
    """The graph's members are confined by name; the build manifest sidecar is the one
    whose content names paths (the archive of each day): a day of an archive outside the
    graph folder could never be removed, so such a bundle is refused by verify and
    restore alike, and the live graph stays as it was."""
    settings = stack.settings
    running = running_engine_format(settings)
    engine = {"name": running.name, "package": running.package, "version": running.version}
    folder = exports_dir(settings, "graph")
    folder.mkdir(parents=True)
    names = ("lightrag/kv_store_doc_status.json", "lightrag/varagity_manifest.json")
    sound = graph_bundle(
        settings,
        folder / "sound.zip",
        engine,
        names,
        {names[1]: build_manifest("archives/chat.db", "")},
    )
    assert verify_bundle(sound, settings, "graph").ok
    bundle = graph_bundle(
        settings,
        folder / "outside.zip",
        engine,
        names,
        {names[1]: build_manifest("archives/chat.db", source)},
    )
    workdir = workdir_for(settings)
    workdir.mkdir(parents=True)
    (workdir / "kv_store_doc_status.json").write_text('{"live": true}')

    assert inspect_bundle(bundle, settings, "graph").ok  # the cheap verdict reads no member
    verified = verify_bundle(bundle, settings, "graph")
    assert (verified.ok, verified.code) == (False, "bundle_path_outside_corpus")
    detail = verified.detail or ""
    assert "lightrag/varagity_manifest.json: the day 'thread-1::2026-01-02'" in detail, detail
    assert repr(source) in detail and words in detail, detail
    with pytest.raises(BundleError) as caught:
        restore_graph(bundle, settings)
    assert (caught.value.code, caught.value.detail) == (verified.code, verified.detail)
    assert [p.name for p in workdir.iterdir()] == ["kv_store_doc_status.json"]
    assert (workdir / "kv_store_doc_status.json").read_text() == '{"live": true}'
    assert sorted(p.name for p in workdir.parent.iterdir() if not p.name.startswith(".")) == [
        "lightrag"
    ]


def test_a_graph_export_carries_only_plain_files_and_names_the_rest(
    stack: Stack, caplog: pytest.LogCaptureFixture
) -> None:
    from varagity.backup.graph import export_graph

    workdir = workdir_for(stack.settings)
    workdir.mkdir(parents=True)
    (workdir / "kv_store_doc_status.json").write_text("{}")
    (workdir / "graph_chunk_entity_relation.graphml.tmp.12.34.56").write_text("<")
    (workdir / ".hidden").write_text("x")
    (workdir / "sub").mkdir()
    (workdir / "link.json").symlink_to(workdir / "kv_store_doc_status.json")
    with caplog.at_level("WARNING"):
        exported = export_graph(stack.settings)
    assert [m.name for m in exported.manifest.members] == ["lightrag/kv_store_doc_status.json"]
    assert exported.manifest.counts == {}  # no size summary yet: empty counts
    warned = caplog.text
    assert ".hidden" in warned and "sub" in warned and "link.json" in warned
    assert ".tmp." not in warned
    assert verify_bundle(exported.path, stack.settings, "graph").ok
