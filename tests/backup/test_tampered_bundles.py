"""A corpus of damaged, foreign and hostile bundles: each is refused with its own code and
a detail that names the problem, and the live corpus answers exactly as before."""

from __future__ import annotations

import copy
import hashlib
import json
import stat
import zipfile
from collections.abc import Callable
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
    verify_bundle,
)
from varagity.backup.graph import restore_graph
from varagity.backup.rag import export_rag, restore_rag
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
    extra: list[tuple[zipfile.ZipInfo, bytes]] = (),
) -> Path:  # type: ignore[assignment]
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


def renamed_column(g: Good, out: Path) -> Path:
    """Same size, a column name damaged: the digest speaks before the column does."""
    files = dict(g.files)
    files["chunks.jsonl"] = files["chunks.jsonl"].replace(b'"chunk_id"', b'"chonk_id"', 1)
    return write_zip(out, files, g.manifest)


#: (tamper, code, words the detail must contain, caught by the cheap verdict)
CASES: dict[str, tuple[Tamper, str, str, bool]] = {
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
    tamper, code, words, cheap = CASES[case]
    bundle = tamper(good, exports_dir(stack.settings, "rag") / f"tampered-{case}.zip")
    before = snapshot(stack)

    verified = verify_bundle(bundle, stack.settings, "rag")
    assert (verified.ok, verified.code) == (False, code)
    assert words in (verified.detail or ""), verified.detail
    inspected = inspect_bundle(bundle, stack.settings, "rag")
    assert inspected.ok is not cheap
    with pytest.raises(BundleError) as caught:
        restore_rag(bundle, stack.settings, stack.pg, stack.bm25)
    assert caught.value.code == code
    assert words in caught.value.detail, caught.value.detail
    assert snapshot(stack) == before  # the live corpus answers as before
    listed = {v.name: v for v in list_bundles(stack.settings, "rag")}
    assert listed[bundle.name].ok is not cheap
    assert listed[good.path.name].ok


def graph_bundle(
    settings: Any,
    out: Path,
    engine: dict[str, str],
    names: tuple[str, ...] = ("lightrag/kv_store_doc_status.json",),
) -> Path:
    files = {name: b"{}" for name in names}
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
