"""The message graph's folder over real HTTP: ``/api/graph/sources`` (list, upload,
delete), ``/api/graph/status`` and the graph gauges on ``/metrics``, and the kill
switch on every ``/api/graph`` route.

Archives are the synthetic iMessage ``chat.db`` of :mod:`tests.support.chatdb` (with
its ``-wal`` and ``-shm``); what the graph holds is written through the build's own
sidecar writers (:mod:`varagity.graph.manifest`), so nothing here needs an LLM build.
Dagster is not running (``DAGSTER_PORT`` is a free port): an upload still stores its
archives and leaves their builds to the graph-sources sensor.
"""

from __future__ import annotations

import os
import re
import sqlite3
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import SettingsFactory, free_port
from tests.support.api_server import serve
from tests.support.chatdb import ChatArchive, grow_chat_db, write_chat_db
from varagity.config import Settings
from varagity.graph.manifest import (
    ManifestEntry,
    read_manifest,
    summarize,
    write_manifest,
    write_summary,
)
from varagity.graph.registry import workdir_for
from varagity.ingest.discovery import RESERVED_DIR
from varagity_api.main import create_app

pytestmark = pytest.mark.integration

#: Small enough that a test can send a file over it (the fixture archive is ~100 KB).
MAX_ARCHIVE_BYTES = 2_000_000
PHONE = "phone/chat.db"


@pytest.fixture
def graph_settings(make_settings: SettingsFactory, pg_url: str, tmp_path: Path) -> Settings:
    """Settings with an empty graph folder and no Dagster listening."""
    settings = make_settings(
        DATABASE_URL=pg_url,
        GRAPH_DOCS_PATH=tmp_path / "graph-docs",
        GRAPH_MAX_ARCHIVE_BYTES=MAX_ARCHIVE_BYTES,
        DAGSTER_PORT=free_port(),
    )
    settings.graph_docs_path.mkdir(parents=True)
    return settings


@pytest.fixture
def api(graph_settings: Settings) -> Iterator[tuple[str, Settings]]:
    with serve(graph_settings) as base:
        yield base, graph_settings


def _entry(guids: int, span: str, source: str = PHONE, thread: str = "Maya Chen") -> ManifestEntry:
    return ManifestEntry(
        f"{span}-{thread}", tuple(f"g{i}" for i in range(guids)), thread, span, source
    )


#: What a build of PHONE left in the manifest: three days of two threads.
MANIFEST = {
    "iMessage;-;maya::2026-03-02": _entry(4, "2026-03-02"),
    "iMessage;-;maya::2026-03-04": _entry(2, "2026-03-04"),
    "iMessage;+;chat42::2026-03-03": _entry(5, "2026-03-03", thread="Lisbon trip"),
    "iMessage;-;dad::2026-03-01": _entry(1, "2026-03-01", source="old/chat.db", thread="Dad"),
}


def _multipart(files: list[tuple[str, bytes]], folder: str | None = None) -> dict[str, Any]:
    """A multipart body with the file names exactly as given (no client-side cleanup)."""
    body = b""
    for name, data in files:
        body += (
            b'--sep\r\nContent-Disposition: form-data; name="files"; filename="'
            + name.encode()
            + b'"\r\nContent-Type: application/octet-stream\r\n\r\n'
            + data
            + b"\r\n"
        )
    if folder is not None:
        body += b'--sep\r\nContent-Disposition: form-data; name="folder"\r\n\r\n'
        body += folder.encode() + b"\r\n"
    body += b"--sep--\r\n"
    return {"content": body, "headers": {"content-type": "multipart/form-data; boundary=sep"}}


def _upload(base: str, files: list[tuple[str, bytes]], folder: str | None = None) -> httpx.Response:
    return httpx.post(f"{base}/api/graph/sources", timeout=60, **_multipart(files, folder))


def _archive_files(archive: ChatArchive) -> list[tuple[str, bytes]]:
    return [(p.name, p.read_bytes()) for p in archive.files()]


def _listing(base: str) -> dict[str, dict[str, Any]]:
    r = httpx.get(f"{base}/api/graph/sources", timeout=30)
    assert r.status_code == 200, r.text
    return {s["path"]: s for s in r.json()["sources"]}


def _samples(base: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    r = httpx.get(f"{base}/metrics", timeout=30)
    assert r.status_code == 200
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(r.text)
        for s in family.samples
    }


def _tree(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if not p.is_dir())


# --- listing --------------------------------------------------------------------------


def test_listing_judges_each_file_and_says_what_the_graph_holds(
    api: tuple[str, Settings],
) -> None:
    base, settings = api
    root = settings.graph_docs_path
    archive = write_chat_db(root / "phone", days=1)
    (root / "notes.txt").write_text("not an archive\n")
    (root / RESERVED_DIR).mkdir()
    write_chat_db(root / RESERVED_DIR, days=1)  # a backup's copy: never listed
    (root / ".hidden.db").write_bytes((root / PHONE).read_bytes())
    write_manifest(workdir_for(settings), MANIFEST)

    r = httpx.get(f"{base}/api/graph/sources", timeout=30)
    assert r.status_code == 200, r.text
    assert r.json()["root"] == str(root.resolve())
    listed = {s["path"]: s for s in r.json()["sources"]}
    assert set(listed) == {PHONE, "notes.txt"}

    phone = listed[PHONE]
    assert phone["supported"] is True and phone["kind"] == "imessage" and phone["reason"] is None
    assert phone["companions"] == [f"{PHONE}-shm", f"{PHONE}-wal"]
    assert phone["size_bytes"] == sum(p.stat().st_size for p in archive.files())
    newest = max(p.stat().st_mtime for p in archive.files())
    assert abs(_epoch(phone["modified_at"]) - newest) < 1e-3
    # the days the manifest records for this archive (not old/chat.db's)
    assert (phone["days"], phone["threads"]) == (3, 2)
    assert (phone["first_day"], phone["last_day"]) == ("2026-03-02", "2026-03-04")

    notes = listed["notes.txt"]
    assert notes["supported"] is False and notes["kind"] is None
    assert notes["reason"].startswith("imessage: ") and "SQLite" in notes["reason"]
    assert (notes["days"], notes["first_day"]) == (0, None)


def _epoch(value: str) -> float:
    return datetime.fromisoformat(value).timestamp()


# --- uploads --------------------------------------------------------------------------


def test_an_archive_uploads_with_its_companions_and_replaces_as_one(
    api: tuple[str, Settings], tmp_path: Path
) -> None:
    base, settings = api
    root = settings.graph_docs_path
    archive = write_chat_db(tmp_path / "export", days=1)
    wal = archive.files()[1].read_bytes()
    before = _samples(base)

    r = _upload(base, _archive_files(archive), folder="phone")
    assert r.status_code == 200, r.text
    body = r.json()
    assert [(x["status"], x["path"]) for x in body["results"]] == [
        ("stored", PHONE),
        ("stored", f"{PHONE}-wal"),
        ("stored", f"{PHONE}-shm"),
    ]
    assert body["counts"] == {"stored": 3}
    assert body["builds"] == []  # Dagster is down: the sensor builds it
    for source in archive.files():
        assert (root / "phone" / source.name).read_bytes() == source.read_bytes()
    assert _tree(root) == [PHONE, f"{PHONE}-shm", f"{PHONE}-wal"]  # no temporary file left
    assert _listing(base)[PHONE]["supported"] is True
    after = _samples(base)
    key = ("varagity_graph_uploaded_files_total", (("outcome", "stored"),))
    assert after[key] == before.get(key, 0) + 3

    again = _upload(base, _archive_files(archive), folder="phone")
    assert [x["status"] for x in again.json()["results"]] == ["unchanged"] * 3

    # a re-export checkpointed into the database alone: the old -wal/-shm must not be
    # read against it, so they go
    grown = grow_chat_db(archive)
    con = sqlite3.connect(grown.path)
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()
    r = _upload(base, [("chat.db", grown.path.read_bytes())], folder="phone")
    assert [x["status"] for x in r.json()["results"]] == ["replaced"], r.text
    assert _tree(root) == [PHONE]
    assert (root / PHONE).read_bytes() == grown.path.read_bytes()

    # a -wal for the database already in the folder is taken
    r = _upload(base, [("phone/chat.db-wal", wal)])
    assert [x["status"] for x in r.json()["results"]] == ["stored"], r.text
    assert _listing(base)[PHONE]["companions"] == [f"{PHONE}-wal"]


def test_uploads_refuse_what_is_not_an_archive_and_store_the_rest(
    api: tuple[str, Settings], tmp_path: Path
) -> None:
    base, settings = api
    root = settings.graph_docs_path
    archive = write_chat_db(tmp_path / "export", days=1)
    plain = tmp_path / "plain.db"
    with sqlite3.connect(plain) as con:
        con.execute("CREATE TABLE notes (body TEXT)")
    con.close()
    outside = sorted(p.name for p in tmp_path.iterdir())

    files = [
        ("chat.db", b"just some text, named like a database\n"),  # 0: sniffed, not named
        ("chat.db-wal", b"its -wal"),  # 1: its database was refused
        ("other.db-wal", b"a -wal alone"),  # 2
        ("plain.db", plain.read_bytes()),  # 3: SQLite, not Messages
        ("../escape.db", archive.path.read_bytes()),  # 4
        ("/tmp/abs.db", archive.path.read_bytes()),  # 5
        (".hidden.db", archive.path.read_bytes()),  # 6
        (f"{RESERVED_DIR}/x.db", archive.path.read_bytes()),  # 7
        ("big.db", b"\0" * (MAX_ARCHIVE_BYTES + 1)),  # 8
        ("good/chat.db", archive.path.read_bytes()),  # 9: stored with its companions
        ("good/chat.db-wal", archive.files()[1].read_bytes()),  # 10
        ("good/chat.db-shm", archive.files()[2].read_bytes()),  # 11
        ("good/chat.db", archive.path.read_bytes()),  # 12: twice in one upload
    ]
    r = _upload(base, files)
    assert r.status_code == 200, r.text
    results = r.json()["results"]
    codes = [x["code"] for x in results]
    assert codes == [
        "not_an_archive",
        "companion_without_database",
        "companion_without_database",
        "not_an_archive",
        "path_traversal",
        "absolute_path",
        "hidden_name",
        "reserved_path",
        "too_large",
        None,
        None,
        None,
        "duplicate_path",
    ]
    assert "not an SQLite database" in results[0]["message"]
    assert "imessage" in results[0]["message"]
    assert "missing" in results[3]["message"] and "chat_message_join" in results[3]["message"]
    assert "chat.db" in results[1]["message"] and "refused" in results[1]["message"]
    assert "other.db" in results[2]["message"]
    assert "GRAPH_MAX_ARCHIVE_BYTES" in results[8]["message"]
    assert all(x["message"] for x in results if x["status"] == "refused")
    assert r.json()["counts"] == {"refused": 10, "stored": 3}
    assert _tree(root) == ["good/chat.db", "good/chat.db-shm", "good/chat.db-wal"]
    assert sorted(p.name for p in tmp_path.iterdir()) == outside  # nothing escaped the folder
    assert not Path("/tmp/abs.db").exists()

    # one file of an archive that cannot be placed keeps the whole archive out
    (root / "clash" / "chat.db-wal").mkdir(parents=True)
    r = _upload(base, _archive_files(archive), folder="clash")
    results = r.json()["results"]
    assert [x["code"] for x in results] == ["write_failed", "path_conflict", "write_failed"]
    assert "clash/chat.db-wal" in results[0]["message"]
    assert _tree(root / "clash") == []

    # a folder that is unsafe refuses the whole batch, and stores nothing
    for folder, code in (("..", "path_traversal"), (RESERVED_DIR, "reserved_path")):
        r = _upload(base, _archive_files(archive), folder=folder)
        assert r.status_code == 422 and r.json()["code"] == code, r.text
    r = httpx.post(f"{base}/api/graph/sources", json={"files": []}, timeout=30)
    assert r.status_code == 415 and r.json()["code"] == "unsupported_media_type"
    assert _tree(root) == ["good/chat.db", "good/chat.db-shm", "good/chat.db-wal"]


# --- deleting ---------------------------------------------------------------------------


def test_delete_removes_an_archive_and_never_reaches_outside(
    api: tuple[str, Settings], tmp_path: Path
) -> None:
    base, settings = api
    root = settings.graph_docs_path
    write_chat_db(root / "phone", days=1)
    write_manifest(workdir_for(settings), MANIFEST)
    victim = write_chat_db(tmp_path / "victim", days=1)
    os.symlink(victim.path.parent, root / "linkout", target_is_directory=True)
    os.symlink(victim.path, root / "linked.db")
    kept = {p: p.read_bytes() for p in victim.files()}

    for path, status, code in (
        ("..%2F..%2Fvictim%2Fchat.db", 422, "path_traversal"),
        ("%2e%2e%2f%2e%2e%2fvictim%2fchat.db", 422, "path_traversal"),
        ("%252e%252e%252fvictim%252fchat.db", 404, "not_found"),
        ("phone/..%5C..%5C..%5Cvictim%5Cchat.db", 422, "path_traversal"),
        (f"{str(victim.path).lstrip('/')}", 404, "not_found"),
        ("%2F" + str(victim.path).lstrip("/").replace("/", "%2F"), 422, "absolute_path"),
        ("linkout/chat.db", 422, "outside_corpus"),
        (".hidden.db", 422, "hidden_name"),
        (f"{RESERVED_DIR}/x.db", 422, "reserved_path"),
        ("phone/chat.db-wal", 404, "not_found"),  # a companion goes with its archive
        ("phone/nothing.db", 404, "not_found"),
    ):
        r = httpx.delete(f"{base}/api/graph/sources/{path}", timeout=30)
        assert (r.status_code, r.json()["code"]) == (status, code), (path, r.text)
        assert r.json()["message"]
    assert {p: p.read_bytes() for p in victim.files()} == kept

    # a symlinked archive: the link goes, never what it points to
    r = httpx.delete(f"{base}/api/graph/sources/linked.db", timeout=30)
    assert r.status_code == 200, r.text
    assert not (root / "linked.db").is_symlink() and victim.path.is_file()

    r = httpx.delete(f"{base}/api/graph/sources/{PHONE}", timeout=30)
    assert r.status_code == 200, r.text
    body = r.json()
    assert {k: body[k] for k in ("path", "removed_files", "days")} == {
        "path": PHONE,
        "removed_files": [PHONE, f"{PHONE}-shm", f"{PHONE}-wal"],
        "days": 3,
    }
    # its days left the graph at once (the build manifest no longer lists them)
    receipt = body["receipt"]
    assert (receipt["kind"], receipt["target"], receipt["verified"]) == ("archive", PHONE, True), [
        s for s in receipt["stores"] if not s["verified"]
    ]
    stores = {s["store"]: (s["removed"], s["remaining"]) for s in receipt["stores"]}
    assert stores["manifest"] == stores["graph_days"] == (3, 0)
    assert set(read_manifest(workdir_for(settings))) == {"iMessage;-;dad::2026-03-01"}
    assert not (root / "phone").exists() or not any((root / "phone").iterdir())
    assert PHONE not in _listing(base)
    assert httpx.delete(f"{base}/api/graph/sources/{PHONE}", timeout=30).status_code == 404
    assert {p: p.read_bytes() for p in victim.files()} == kept


# --- status and gauges ----------------------------------------------------------------


def _graph_gauges(base: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    names = ("varagity_graph_documents", "varagity_graph_entities", "varagity_graph_relations")
    return {k: v for k, v in _samples(base).items() if k[0] in names}


def test_status_and_gauges_of_an_empty_then_a_built_graph(api: tuple[str, Settings]) -> None:
    base, settings = api
    r = httpx.get(f"{base}/api/graph/status", timeout=60)
    assert r.status_code == 200, r.text
    status = r.json()
    assert status["engine"]["name"] == "lightrag"
    assert status["engine"]["package"] == "lightrag-hku"
    assert re.fullmatch(r"\d+\.\d+\.\d+.*", status["engine"]["version"])
    assert status["built"] is False
    assert [status[k] for k in ("entities", "relations", "days", "messages", "sources")] == [0] * 5
    assert status["day_statuses"] == {"processed": 0, "pending": 0, "processing": 0, "failed": 0}
    assert (status["refreshed_at"], status["building"]) == (None, [])
    assert not workdir_for(settings).exists()  # reading the status opened no engine
    gauges = _graph_gauges(base)
    assert gauges[("varagity_graph_entities", ())] == 0
    assert gauges[("varagity_graph_documents", (("status", "processed"),))] == 0

    # a build wrote its sidecars: three days of the phone archive, one failed day
    write_chat_db(settings.graph_docs_path / "phone", days=1)
    (settings.graph_docs_path / "notes.txt").write_text("not an archive\n")
    workdir = workdir_for(settings)
    write_manifest(workdir, MANIFEST)
    counts = {"processed": 4, "failed": 1}
    write_summary(workdir, summarize(MANIFEST, entities=17, relations=9, statuses=counts))

    status = httpx.get(f"{base}/api/graph/status", timeout=60).json()
    assert status["built"] is True
    assert (status["entities"], status["relations"]) == (17, 9)
    assert (status["days"], status["messages"]) == (4, 12)
    assert status["day_statuses"] == {"processed": 4, "pending": 0, "processing": 0, "failed": 1}
    assert status["sources"] == 1
    assert status["refreshed_at"] is not None
    # the engine's files cannot be read: the status still answers, with the build's counts
    (workdir / "kv_store_doc_status.json").write_text("{ not json")
    r = httpx.get(f"{base}/api/graph/status", timeout=120)
    assert r.status_code == 200, r.text
    assert r.json()["day_statuses"] == status["day_statuses"]
    assert _graph_gauges(base) == {
        ("varagity_graph_documents", (("status", "processed"),)): 4,
        ("varagity_graph_documents", (("status", "pending"),)): 0,
        ("varagity_graph_documents", (("status", "processing"),)): 0,
        ("varagity_graph_documents", (("status", "failed"),)): 1,
        ("varagity_graph_entities", ()): 17,
        ("varagity_graph_relations", ()): 9,
    }


# --- the kill switch --------------------------------------------------------------------


def _graph_routes() -> list[tuple[str, str]]:
    """(method, path template) of every ``/api/graph`` route the app serves."""
    paths = create_app().openapi()["paths"]
    return [
        (method.upper(), path)
        for path, operations in sorted(paths.items())
        if path.startswith("/api/graph")
        for method in sorted(operations)
    ]


def test_every_graph_route_answers_graph_disabled_when_switched_off(
    make_settings: SettingsFactory, pg_url: str, tmp_path: Path
) -> None:
    settings = make_settings(
        DATABASE_URL=pg_url,
        GRAPH_ENABLED=False,
        GRAPH_DOCS_PATH=tmp_path / "graph-docs",
        DAGSTER_PORT=free_port(),
    )
    write_chat_db(settings.graph_docs_path / "phone", days=1)
    before = _tree(settings.graph_docs_path)
    routes = _graph_routes()
    # every module's routes: sources, builds, status and the view
    paths = {path for _, path in routes}
    for expected in ("/api/graph/sources", "/api/graph/builds", "/api/graph/status"):
        assert expected in paths
    assert len(routes) >= 12
    with serve(settings) as base:
        for method, path in routes:
            url = base + re.sub(r"\{[^}]+\}", "phone/chat.db" if "sources" in path else "x", path)
            extra: dict[str, Any] = {}
            if method == "POST" and path == "/api/graph/sources":
                extra = _multipart([("chat.db", b"x")])
            elif method == "POST":
                extra = {"json": {}}
            r = httpx.request(method, url, timeout=30, **extra)
            assert r.status_code == 403, (method, path, r.text)
            assert r.json()["code"] == "graph_disabled", (method, path)
        names = {k[0] for k in _samples(base)}
        assert not names & {"varagity_graph_documents", "varagity_graph_entities"}
    assert _tree(settings.graph_docs_path) == before  # the delete removed nothing
