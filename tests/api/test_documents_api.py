"""``/api/documents`` on a real uvicorn: corpus listing, deletion and uploads."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient
from prometheus_client import REGISTRY

from tests.conftest import SettingsFactory, free_port
from tests.support.api_server import index_files, serve
from varagity.config import Settings
from varagity_api.main import create_app

pytestmark = pytest.mark.integration

NESTED = "Reports 2024/Q1 Über café/summary.md"
CORPUS = {
    "kettle.md": "# Tern K2 kettle\n\nThe Tern K2 kettle has a warranty of 27 months.\n",
    NESTED: "# Summary\n\nThe café in Zürich sold 412 croissants in March.\n",
    "empty.txt": "",
    "gone.md": "# Gone\n\nThis file is removed after ingest.\n",
    "changed.md": "# Changed\n\nThe first version says seven.\n",
    "linked/inside.md": "# Linked\n\nA file in a folder that later moves out.\n",
}
MTIME_MS = 1_600_000_000_123


def _tree(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*"))


def _counter(name: str, labels: dict[str, str] | None = None) -> float:
    return REGISTRY.get_sample_value(name, labels or {}) or 0.0


def _epoch(value: str) -> float:
    return datetime.fromisoformat(value).timestamp()


def _listing(base: str) -> dict[str, dict[str, Any]]:
    r = httpx.get(f"{base}/api/documents", timeout=30)
    assert r.status_code == 200, r.text
    return {d["relative_path"]: d for d in r.json()["documents"]}


def _bm25_paths(base: str, query: str) -> set[str]:
    r = httpx.post(
        f"{base}/api/search", json={"query": query, "k": 10, "method": "bm25"}, timeout=60
    )
    assert r.status_code == 200, r.text
    return {s["relative_path"] for s in r.json()["results"]}


@pytest.fixture
def corpus(stack_settings: Settings) -> Iterator[tuple[str, Settings, dict[str, str]]]:
    """The corpus ingested for real, then changed on disk; yields (base URL, settings, ids)."""
    docs = stack_settings.docs_path
    ids = index_files(stack_settings, CORPUS)
    (docs / "gone.md").unlink()
    (docs / "changed.md").write_text("# Changed\n\nThe second version says nine.\n")
    stat = (docs / "changed.md").stat()
    os.utime(docs / "changed.md", ns=(stat.st_atime_ns, stat.st_mtime_ns + 5_000_000_000))
    (docs / "new.md").write_text("# New\n\nNot ingested yet.\n")
    (docs / "tool.exe").write_bytes(b"MZ")  # not ingestible: never listed
    with serve(stack_settings) as base:
        yield base, stack_settings, ids


def test_listing_reports_each_status(corpus: tuple[str, Settings, dict[str, str]]) -> None:
    base, settings, ids = corpus
    r = httpx.get(f"{base}/api/documents", timeout=30)
    assert r.status_code == 200, r.text
    body = r.json()
    listed = {d["relative_path"]: d for d in body["documents"]}
    assert [d["relative_path"] for d in body["documents"]] == sorted(listed)
    assert {p: d["status"] for p, d in listed.items()} == {
        "kettle.md": "indexed",
        NESTED: "indexed",
        "empty.txt": "no_text",
        "gone.md": "missing",
        "changed.md": "outdated",
        "linked/inside.md": "indexed",
        "new.md": "pending",
    }
    assert body["counts"] == {
        "indexed": 3,
        "no_text": 1,
        "missing": 1,
        "outdated": 1,
        "pending": 1,
    }
    nested = listed[NESTED]
    assert nested["doc_id"] == ids[NESTED]
    assert (nested["file_name"], nested["file_type"]) == ("summary.md", "md")
    assert nested["n_chunks"] == 1 and nested["extractions"] == ["text"]
    # CONTEXTUALIZE is off here: no chunk has a blurb and none is waiting for one
    assert (nested["n_contextualized"], nested["contextualizing"]) == (0, False)
    assert nested["size_bytes"] == len(CORPUS[NESTED].encode())
    assert nested["ingested_at"] and nested["content_hash"]
    on_disk = (settings.docs_path / NESTED).stat().st_mtime
    assert abs(_epoch(nested["file_modified_at"]) - on_disk) < 0.001
    assert listed["empty.txt"]["n_chunks"] == 0
    assert listed["gone.md"]["size_bytes"] is None
    assert listed["gone.md"]["file_modified_at"] is not None  # as recorded at ingest
    new = listed["new.md"]
    assert new["doc_id"] is None and new["n_chunks"] is None and new["size_bytes"] > 0
    assert (new["n_contextualized"], new["contextualizing"]) == (None, False)


def test_delete_one_then_a_set(corpus: tuple[str, Settings, dict[str, str]]) -> None:
    base, settings, ids = corpus
    docs = settings.docs_path
    deleted_before = _counter("varagity_deleted_documents_total")
    assert "kettle.md" in _bm25_paths(base, "Tern kettle warranty")

    r = httpx.delete(f"{base}/api/documents/{ids['kettle.md']}", timeout=30)
    assert r.status_code == 200, r.text
    body = r.json()
    assert {k: body[k] for k in ("deleted", "not_found", "files", "pruned_folders")} == {
        "deleted": [ids["kettle.md"]],
        "not_found": [],
        "files": [],
        "pruned_folders": [],
    }
    assert (body["receipt"]["kind"], body["receipt"]["target"]) == ("documents", "kettle.md")
    assert body["receipt"]["verified"]
    assert "kettle.md" not in _bm25_paths(base, "Tern kettle warranty")
    assert (docs / "kettle.md").exists()  # the file stays without remove_file...
    assert _listing(base)["kettle.md"]["status"] == "pending"  # ...and lists as pending
    r = httpx.delete(f"{base}/api/documents/{ids['kettle.md']}", timeout=30)
    assert r.status_code == 404 and r.json()["code"] == "not_found"

    unknown = "0123456789abcdef"
    r = httpx.post(
        f"{base}/api/documents/delete",
        json={"doc_ids": [ids[NESTED], unknown, ids["gone.md"], ids[NESTED]]},
        timeout=30,
    )
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["deleted"] == [ids[NESTED], ids["gone.md"]]
    assert body["not_found"] == [unknown]
    assert "Reports 2024/Q1 Über café/summary.md" not in _bm25_paths(base, "croissants café")
    listed = _listing(base)
    assert "gone.md" not in listed and listed[NESTED]["status"] == "pending"
    assert _counter("varagity_deleted_documents_total") == deleted_before + 3


def test_delete_with_remove_file_prunes_folders_and_stays_in_the_corpus(
    corpus: tuple[str, Settings, dict[str, str]], tmp_path: Path
) -> None:
    base, settings, ids = corpus
    docs = settings.docs_path
    # the "linked" folder moves out of the corpus and a symlink takes its place
    outside = tmp_path / "outside"
    outside.mkdir()
    shutil.move(docs / "linked", outside / "linked")
    (docs / "linked").symlink_to(outside / "linked", target_is_directory=True)

    r = httpx.post(
        f"{base}/api/documents/delete",
        json={
            "doc_ids": [ids[NESTED], ids["linked/inside.md"], ids["gone.md"]],
            "remove_file": True,
        },
        timeout=30,
    )
    assert r.status_code == 200, r.text
    body = r.json()
    assert sorted(body["deleted"]) == sorted([ids[NESTED], ids["linked/inside.md"], ids["gone.md"]])
    files = {f["relative_path"]: f for f in body["files"]}
    assert files[NESTED]["removed"] is True
    assert files["gone.md"]["removed"] is False and files["gone.md"]["code"] == "already_gone"
    assert files["linked/inside.md"]["code"] == "outside_corpus"
    assert (outside / "linked" / "inside.md").exists()  # never touched outside the corpus
    assert body["pruned_folders"] == ["Reports 2024/Q1 Über café", "Reports 2024"]
    assert not (docs / "Reports 2024").exists()

    # the last file of the corpus root goes too: the root itself stays
    rest = [ids["kettle.md"], ids["empty.txt"], ids["changed.md"]]
    r = httpx.post(
        f"{base}/api/documents/delete", json={"doc_ids": rest, "remove_file": True}, timeout=30
    )
    assert r.status_code == 200, r.text
    assert all(f["removed"] for f in r.json()["files"])
    assert docs.is_dir()
    assert _tree(docs) == ["linked", "new.md", "tool.exe"]
    r = httpx.delete(f"{base}/api/documents/{ids['kettle.md']}?remove_file=true", timeout=30)
    assert r.status_code == 404


@pytest.fixture
def upload_api(make_settings: SettingsFactory, pg_url: str) -> Iterator[tuple[str, Settings]]:
    """The API with a 2000-byte MAX_FILE_BYTES (uploads need no model server) and no
    Dagster at DAGSTER_URL: an upload stands when its ingest runs cannot be launched."""
    settings = make_settings(DATABASE_URL=pg_url, MAX_FILE_BYTES=2000, DAGSTER_PORT=free_port())
    with serve(settings) as base:
        yield base, settings


def _upload(base: str, files: list[tuple[str, bytes]], **fields: Any) -> httpx.Response:
    return httpx.post(
        f"{base}/api/documents/upload",
        files=[("files", (name, data)) for name, data in files],
        data=fields,
        timeout=30,
    )


def _raw_upload(base: str, parts: list[tuple[str, str | None, bytes]]) -> httpx.Response:
    """A hand-built multipart body: (field, filename or None, data) parts in this order."""
    body = b""
    for name, filename, data in parts:
        disposition = f'form-data; name="{name}"'
        if filename is not None:
            disposition += f'; filename="{filename}"'
        body += f"--sep\r\nContent-Disposition: {disposition}\r\n\r\n".encode() + data + b"\r\n"
    return httpx.post(
        f"{base}/api/documents/upload",
        content=body + b"--sep--\r\n",
        headers={"content-type": "multipart/form-data; boundary=sep"},
        timeout=30,
    )


def test_upload_files_and_a_folder_with_their_mtimes(
    upload_api: tuple[str, Settings],
) -> None:
    base, settings = upload_api
    docs = settings.docs_path
    stored_before = _counter("varagity_uploaded_files_total", {"outcome": "stored"})
    r = _upload(
        base,
        [("a.md", b"# A\n"), ("b.txt", b"bee\n"), ("c.md", b"# C\n")],
        paths=["Project X/a.md", "Project X/deep/b.txt", ""],
        mtimes=[str(MTIME_MS), "", str(MTIME_MS)],
    )
    assert r.status_code == 200, r.text
    body = r.json()
    assert [(x["status"], x["relative_path"]) for x in body["results"]] == [
        ("stored", "Project X/a.md"),
        ("stored", "Project X/deep/b.txt"),
        ("stored", "c.md"),
    ]
    assert body["counts"] == {"stored": 3}
    assert (docs / "Project X/deep/b.txt").read_bytes() == b"bee\n"
    assert (docs / "Project X/a.md").stat().st_mtime_ns == MTIME_MS * 1_000_000
    assert (docs / "c.md").stat().st_mtime_ns == MTIME_MS * 1_000_000
    assert _counter("varagity_uploaded_files_total", {"outcome": "stored"}) == stored_before + 3

    # curl style: the relative path in the filename, into a target folder
    r = _upload(base, [("sub/d.md", b"# D\n"), ("c.md", b"# C\n")], folder="inbox")
    assert [(x["status"], x["relative_path"]) for x in r.json()["results"]] == [
        ("stored", "inbox/sub/d.md"),
        ("stored", "inbox/c.md"),
    ]
    # again: identical bytes are left alone, different bytes replace the file
    r = _upload(
        base, [("c.md", b"# C\n"), ("a.md", b"# A, edited\n")], paths=["", "Project X/a.md"]
    )
    assert [x["status"] for x in r.json()["results"]] == ["unchanged", "replaced"]
    assert (docs / "Project X/a.md").read_bytes() == b"# A, edited\n"
    # the per-file fields may come after the files they describe (any part order)
    r = _raw_upload(
        base,
        [
            ("files", "e.md", b"# E\n"),
            ("paths", None, "Über/é.md".encode()),
            ("mtimes", None, str(MTIME_MS).encode()),
        ],
    )
    assert r.status_code == 200, r.text
    assert r.json()["results"][0]["relative_path"] == "Über/é.md"
    assert (docs / "Über/é.md").stat().st_mtime_ns == MTIME_MS * 1_000_000
    # the uploads list as pending: the folder sensor ingests them
    listed = _listing(base)
    assert {p: d["status"] for p, d in listed.items()} == dict.fromkeys(
        [
            "Project X/a.md",
            "Project X/deep/b.txt",
            "c.md",
            "inbox/c.md",
            "inbox/sub/d.md",
            "Über/é.md",
        ],
        "pending",
    )


def test_upload_refuses_each_bad_file_and_stores_the_rest(
    upload_api: tuple[str, Settings],
) -> None:
    base, settings = upload_api
    docs = settings.docs_path
    (docs / "taken.md").mkdir()
    refused_before = _counter("varagity_uploaded_files_total", {"outcome": "refused"})
    batch = [
        ("ok.md", b"fine", "ok.md", ""),
        ("x.md", b"x", "../escape.md", ""),
        ("x.md", b"x", "/etc/passwd.md", ""),
        ("x.md", b"x", "varagity-exports/bundle.md", ""),
        ("x.md", b"x", "notes/.secret.md", ""),
        ("x.md", b"x", "bad\x07name.md", ""),
        ("x.exe", b"MZ", "x.exe", ""),
        ("big.md", b"y" * 5000, "big.md", ""),
        ("x.md", b"x", "when.md", "last tuesday"),
        ("x.md", b"x", "ok.md", ""),
        ("x.md", b"x", "taken.md", ""),
        ("second.md", b"also fine", "", ""),
    ]
    r = _upload(
        base,
        [(name, data) for name, data, _, _ in batch],
        paths=[p for _, _, p, _ in batch],
        mtimes=[m for _, _, _, m in batch],
    )
    assert r.status_code == 200, r.text
    results = r.json()["results"]
    assert [(x["status"], x["code"]) for x in results] == [
        ("stored", None),
        ("refused", "path_traversal"),
        ("refused", "absolute_path"),
        ("refused", "reserved_path"),
        ("refused", "hidden_name"),
        ("refused", "invalid_name"),
        ("refused", "unsupported_type"),
        ("refused", "too_large"),
        ("refused", "invalid_mtime"),
        ("refused", "duplicate_path"),
        ("refused", "path_conflict"),
        ("stored", None),
    ]
    assert all(x["message"] for x in results if x["status"] == "refused")
    assert "MAX_FILE_BYTES" in results[7]["message"]
    assert _counter("varagity_uploaded_files_total", {"outcome": "refused"}) == refused_before + 10
    # only the two good files landed: no temporary files, folders or staged leftovers
    assert _tree(docs) == ["ok.md", "second.md", "taken.md"]
    assert list((settings.home / "uploads").iterdir()) == []
    assert set(_listing(base)) == {"ok.md", "second.md"}


def test_malformed_upload_requests_are_refused_whole(upload_api: tuple[str, Settings]) -> None:
    base, settings = upload_api
    cases = [
        (_upload(base, [("a.md", b"a")], folder="../up"), 422, "path_traversal"),
        (_upload(base, [("a.md", b"a")], folder="varagity-exports"), 422, "reserved_path"),
        (_upload(base, [("a.md", b"a")], paths=["a.md", "b.md"]), 422, "invalid_upload"),
        (_upload(base, [("a.md", b"a")], comment="hi"), 422, "invalid_upload"),
        (_raw_upload(base, [("paths", None, b"a.md")]), 422, "no_files"),
        (
            httpx.post(f"{base}/api/documents/upload", json={"files": []}, timeout=30),
            415,
            "unsupported_media_type",
        ),
    ]
    for response, status, code in cases:
        assert response.status_code == status, response.text
        assert response.json()["code"] == code, response.text
    assert _tree(settings.docs_path) == []


def test_a_truncated_upload_stores_nothing(upload_api: tuple[str, Settings]) -> None:
    base, settings = upload_api
    cut = b'--sep\r\nContent-Disposition: form-data; name="files"; filename="cut.md"\r\n\r\nabc'
    r = httpx.post(
        f"{base}/api/documents/upload",
        content=cut,
        headers={"content-type": "multipart/form-data; boundary=sep"},
        timeout=30,
    )
    assert r.status_code == 400, r.text
    assert r.json()["code"] == "truncated_multipart"
    assert _tree(settings.docs_path) == []
    assert list((settings.home / "uploads").iterdir()) == []


def test_bidi_and_invisible_characters_in_names_are_refused(
    upload_api: tuple[str, Settings],
) -> None:
    base, settings = upload_api
    names = ["report\u202egnp.md", "a\u2066b.md", "zero\u200bwidth.md", "c1\x85.md", "ok.md"]
    r = _upload(base, [(n, b"x") for n in names], paths=names)
    assert r.status_code == 200, r.text
    results = r.json()["results"]
    assert [x["code"] for x in results] == ["invalid_name"] * 4 + [None]
    assert "U+202E" in results[0]["message"]
    assert _tree(settings.docs_path) == ["ok.md"]


@pytest.mark.parametrize("watch", [True, False])
def test_the_api_watches_the_folder_unless_told_not_to(
    make_settings: SettingsFactory, pg_url: str, watch: bool
) -> None:
    settings = make_settings(DATABASE_URL=pg_url, FOLDER_WATCH=watch, DAGSTER_PORT=free_port())
    app = create_app(settings)
    with TestClient(app):
        watcher = app.state.folder_watcher
        assert (watcher is not None and watcher.running) is watch
        if watcher is not None:
            assert watcher.docs_path == settings.docs_path
    assert watcher is None or not watcher.running  # stopped with the app
