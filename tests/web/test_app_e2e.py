"""The whole web client in Debian's chromium against ``varagity up`` on embedded defaults.

The real stack runs as a subprocess (embedded Postgres, the packaged model servers,
the Dagster webserver and daemon with the folder sensor, the API serving the build)
over a small corpus with free ports. ``web/e2e/app.mjs`` then drives the browser
through the corpus screen (tree, upload, pending -> indexed, folder delete), the chat
(an answer about the uploaded file and its evidence, restored by a reload), the
settings drawer (an inline validation error, a reingest-affecting change), the stale
banner's re-ingest with live progress, conversation groups, renaming and title search,
and the 375px layout; its screenshots land in ``tests/.artifacts/web/app/``.
Afterwards the API is asked whether what the browser did really happened, and the
stack must shut down cleanly.

Both tests share one stack (starting it costs minutes): the test above first, then
``test_the_message_graph_in_the_browser``, where ``web/e2e/graph.mjs``
uploads a generated iMessage ``chat.db`` (with its ``-wal``/``-shm``) on the Graph
screen, follows its build (a Dagster run extracting with the packaged model) to the
end, asks a question of the messages, reads the day-card evidence, and walks the
entity graph down to a transcript; screenshots in ``tests/.artifacts/web/graph/``.

Then ``test_page_previews_in_the_browser`` drops a text PDF, a PowerPoint deck and a
second PDF into the corpus, waits for the folder sensor to index them, and
``web/e2e/previews.mjs`` asks one question per file: each answer's evidence card shows
the highlighted page (a deck's slide converted by LibreOffice; for the PDF, only the
sentence the answer quotes) beside the passage, zoomable; the second PDF is then
deleted and the reloaded answer's card falls back to the passage's text with the
reason; screenshots in ``tests/.artifacts/web/previews/``.

Next, ``test_the_dagster_ui_through_its_guarded_front``: ``web/e2e/dagster.mjs`` opens the
Dagster UI at the stack's guarded address (``DAGSTER_URL``, the front of
``varagity_stack/dagster_front.py``; the webserver itself listens on loopback elsewhere),
materializes the ``rag`` partition of ``backup_bundle`` from the asset page's launch dialog
and launches a backfill of all its partitions, each followed to its end; the run, the
backfill and the bundle written are then checked through the front, and the bug
report's ``GET /graphql?query=mutation{...}`` and a rebinding Host are refused there;
screenshots in ``tests/.artifacts/web/dagster/``.

Then ``test_the_codebase_map_and_the_palette_in_the_browser``: ``web/e2e/map.mjs`` opens
``#/map`` (Cytoscape's cards in their groups), spotlights a card and reads its source
reference and relations, finds ``manuals/kettle.md`` with the Ctrl-K palette and opens it
in the corpus tree, and checks that developer mode off hides the Map link and the map
cards; screenshots in ``tests/.artifacts/web/map/``.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests.support.chatdb import FIRST_DAY, THREADS, write_chat_db
from tests.support.office_files import write_pptx
from tests.support.pdf_files import text_pdf
from tests.support.previews import wide_pdf
from tests.support.running_stack import RunningStack, varagity_up
from tests.web.harness import ARTIFACTS, missing_toolchain, run_script, screenshot_names
from varagity.jobs import DagsterClient
from varagity.jobs.model import FINISHED_STATUSES

pytestmark = [pytest.mark.slow, pytest.mark.integration]

OUT = ARTIFACTS / "app"
CORPUS = {
    "manuals/kettle.md": "# Tern K2 kettle\n\nThe Tern K2 kettle has a warranty of 27 months.\n",
    "station/power.md": "# Aurora station\n\nWind turbines deliver a peak of 4.2 megawatts.\n",
    "soup.txt": "Red lentil soup simmers for 25 minutes with cumin and paprika.\n",
}
UPLOAD = "velo-drone.txt"
UPLOAD_TEXT = "The Velo-9 drone battery lasts 47 minutes on a full charge.\n"
UPLOAD_MTIME = 1_700_000_000  # the file's own clock, which the upload must keep
QUESTION = "How long does the Velo-9 drone battery last?"
GRAPH_OUT = ARTIFACTS / "graph"
# the archive's first day only: two thread-days (the Lisbon group, Maya), so the build
# with the packaged 0.5B model stays a few minutes
GRAPH_DAYS = 1
# A one-fact question the packaged 0.5B model answers from the Lisbon day (it abstains
# on two-part ones such as "who is going, and where will they stay?")
GRAPH_QUESTION = "When is the flight to Lisbon?"
PREVIEWS_OUT = ARTIFACTS / "previews"
DAGSTER_OUT = ARTIFACTS / "dagster"
MAP_OUT = ARTIFACTS / "map"
PREVIEW_FILES = {
    "pdf": "harbour/report.pdf",
    "deck": "harbour/deck.pptx",
    "gone": "notes/notice.pdf",
}
PREVIEW_QUESTIONS = {
    "pdf": "How much silt did the dredging of the inner harbour remove?",
    "deck": "By how much did quarterly tonnage rise in the eastern basin?",
    "gone": "When does Aurora station log the first sensor sweep?",
}


@dataclass
class Stack:
    """The shared ``varagity up`` and the folders it was started on."""

    running: RunningStack
    docs: Path
    graph_docs: Path
    root: Path

    @property
    def api(self) -> str:
        return self.running.api


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """One ``varagity up`` for the module (embedded defaults, free ports, no blurbs, short
    answers); its clean shutdown is checked when the module ends."""
    missing = missing_toolchain()
    assert not missing, f"run `make install` first; missing: {', '.join(missing)}"
    root = tmp_path_factory.mktemp("web-app")
    docs = root / "docs"
    for rel, text in CORPUS.items():
        path = docs / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    graph_docs = root / "graph-docs"
    graph_docs.mkdir()
    with varagity_up(
        root / "home",
        docs,
        CONTEXTUALIZE="false",
        LLM_MAX_TOKENS="32",
        GRAPH_DOCS_PATH=str(graph_docs),
        GRAPH_TIMEZONE="UTC",
    ) as running:
        yield Stack(running=running, docs=docs, graph_docs=graph_docs, root=root)


def test_the_web_client_on_the_embedded_stack(stack: Stack, tmp_path: Path) -> None:
    docs = stack.docs
    picked = tmp_path / "picked"  # the files the browser's file input picks
    picked.mkdir()
    (picked / UPLOAD).write_text(UPLOAD_TEXT, encoding="utf-8")
    os.utime(picked / UPLOAD, (UPLOAD_MTIME, UPLOAD_MTIME))
    (picked / "tool.exe").write_bytes(b"MZ\x90\x00 not a document")

    api = stack.api
    report = run_script(
        "app.mjs",
        OUT,
        {
            "VARAGITY_URL": api,
            "E2E_UPLOAD": str(picked / UPLOAD),
            "E2E_REFUSED": str(picked / "tool.exe"),
            "E2E_QUESTION": QUESTION,
        },
        timeout=900,
    )
    # what the browser showed is what the service holds
    listing = httpx.get(f"{api}/api/documents", timeout=30).json()["documents"]
    statuses = {d["relative_path"]: d["status"] for d in listing}
    settings = httpx.get(f"{api}/api/settings", timeout=30).json()
    conversations = httpx.get(f"{api}/api/conversations", timeout=30).json()
    groups = httpx.get(f"{api}/api/groups", timeout=30).json()

    assert statuses == {"manuals/kettle.md": "indexed", "soup.txt": "indexed", UPLOAD: "indexed"}
    assert not (docs / "station").exists(), "the folder delete removed the files and the folder"
    assert (docs / UPLOAD).read_text(encoding="utf-8") == UPLOAD_TEXT
    assert (docs / UPLOAD).stat().st_mtime == UPLOAD_MTIME
    chunk_size = next(s for s in settings["settings"] if s["name"] == "CHUNK_SIZE")
    assert (chunk_size["value"], chunk_size["overridden"]) == (600, True)
    assert settings["stale"] is None, "the completed re-ingest cleared the stale flag"
    assert [g["name"] for g in groups] == ["Drones"]
    assert [(c["title"], c["group_id"]) for c in conversations] == [
        ("Velo-9 battery life", groups[0]["group_id"])
    ]

    assert report["uploadStatuses"] == ["pending", "indexed"]
    assert "unsupported_type" in report["refusal"]
    assert any(UPLOAD in title for title in report["sources"])
    assert report["conversationUrl"] == f"#/c/{conversations[0]['conversation_id']}"
    assert "must be smaller than CHUNK_SIZE" in report["settingsError"]
    assert "CHUNK_SIZE 1200->600" in report["stale"]
    # the export wrote a verified bundle into the corpus's reserved folder; the restore
    # from it left search answering with the same chunks
    bundle = docs / "varagity-exports" / report["bundle"]
    assert bundle.is_file() and "verified" in report["bundleRow"].lower()
    assert not any(d["relative_path"].startswith("varagity-exports") for d in listing)
    assert report["searchAfter"] == report["searchBefore"] != []
    assert "Re-ingest complete" in report["ingest"]
    assert screenshot_names(report) == {
        "01-corpus-tree.png",
        "02-upload-results.png",
        "03-corpus-delete.png",
        "04-chat.png",
        "05-evidence.png",
        "06-history-reloaded.png",
        "07-settings-error.png",
        "08-stale-banner.png",
        "09-ingest-progress.png",
        "10-ingest-done.png",
        "11-conversations-group.png",
        "12-backup-exported.png",
        "13-backup-restore-confirm.png",
        "14-backup-restored.png",
        "15-narrow.png",
    }


def test_the_message_graph_in_the_browser(stack: Stack, tmp_path: Path) -> None:
    picked = tmp_path / "picked"  # what the browser's file input picks
    archive = write_chat_db(picked, days=GRAPH_DAYS)
    (picked / "notes.txt").write_text("not a message archive\n", encoding="utf-8")
    api = stack.api
    report = run_script(
        "graph.mjs",
        GRAPH_OUT,
        {
            "VARAGITY_URL": api,
            "E2E_ARCHIVE": os.pathsep.join(str(p) for p in archive.files()),
            "E2E_REFUSED": str(picked / "notes.txt"),
            "E2E_QUESTION": GRAPH_QUESTION,
        },
        timeout=2400,
    )
    # what the browser did happened: the archive is stored and built, the turn recorded
    sources = httpx.get(f"{api}/api/graph/sources", timeout=30).json()["sources"]
    status = httpx.get(f"{api}/api/graph/status", timeout=60).json()
    builds = httpx.get(f"{api}/api/graph/builds", timeout=60).json()["builds"]
    conversation_id = report["conversationUrl"].removeprefix("#/c/")
    detail = httpx.get(f"{api}/api/conversations/{conversation_id}", timeout=30).json()

    listed = {s["path"]: s for s in sources}
    assert set(listed) == {"chat.db"}, sources  # the refused file was never stored
    assert listed["chat.db"]["supported"] and listed["chat.db"]["kind"] == "imessage"
    assert sorted(listed["chat.db"]["companions"]) == ["chat.db-shm", "chat.db-wal"]
    assert listed["chat.db"]["days"] == 2 and listed["chat.db"]["threads"] == 2
    for name in ("chat.db", "chat.db-wal", "chat.db-shm"):
        assert (stack.graph_docs / name).read_bytes() == (picked / name).read_bytes(), name
    assert not (stack.graph_docs / "notes.txt").exists()
    assert status["built"] and status["days"] == 2 and status["day_statuses"]["processed"] == 2
    assert status["entities"] > 0 and status["building"] == []
    assert any(b["kind"] == "build" and b["state"] == "succeeded" for b in builds), builds

    answers = [m for m in detail["messages"] if m["role"] == "assistant"]
    assert [m["target_corpus"] for m in answers] == ["graph"]
    assert answers[0]["days"], "the graph answer was saved with its day cards"
    assert answers[0]["graph_evidence"] is not None
    cited_keys = {d["doc_key"] for d in answers[0]["days"]}
    assert set(report["dayCards"]) == cited_keys

    assert "19" in report["answer"], report["answer"]  # Thursday March 19, from the day
    assert "not_an_archive" in report["refusal"]
    # the build was followed live to its end
    assert any(" running:" in line or " queued:" in line for line in report["progress"])
    assert "finished: 2 of 2 days processed" in report["buildFinal"], report["progress"]
    assert report["degraded"] is False
    assert report["corpusAfterReload"] == "graph"
    assert report["recentred"] != report["firstCenter"]
    # the day drilled into is one of the archive's two thread-days
    day = FIRST_DAY.isoformat()
    assert report["transcriptKey"] in {f"{THREADS[t].guid}::{day}" for t in ("lisbon", "maya")}
    assert screenshot_names(report) == {
        "01-graph-empty.png",
        "02-upload-results.png",
        "03-build-progress.png",
        "04-build-done.png",
        "05-chat-messages.png",
        "06-day-evidence.png",
        "07-reloaded.png",
        "08-entity-graph.png",
        "09-recentred.png",
        "10-transcript.png",
        "11-narrow.png",
    }


def _wait_indexed(api: str, paths: set[str], timeout: float = 420) -> None:
    """Until the folder sensor's runs have indexed every one of ``paths``."""
    deadline = time.monotonic() + timeout
    statuses: dict[str, str] = {}
    while time.monotonic() < deadline:
        listing = httpx.get(f"{api}/api/documents", timeout=30).json()["documents"]
        statuses = {d["relative_path"]: d["status"] for d in listing}
        if all(statuses.get(p) == "indexed" for p in paths):
            return
        time.sleep(2)
    raise AssertionError(f"not indexed in {timeout:.0f} s: {statuses}")


def test_page_previews_in_the_browser(stack: Stack) -> None:
    docs = stack.docs
    wide_pdf(docs / PREVIEW_FILES["pdf"])
    write_pptx(docs / "harbour")
    (docs / "notes").mkdir(exist_ok=True)
    gone = text_pdf(docs / PREVIEW_FILES["gone"])
    api = stack.api
    _wait_indexed(api, set(PREVIEW_FILES.values()))

    report = run_script(
        "previews.mjs",
        PREVIEWS_OUT,
        {
            "VARAGITY_URL": api,
            "E2E_PDF": "report.pdf",
            "E2E_PDF_QUESTION": PREVIEW_QUESTIONS["pdf"],
            "E2E_DECK": "deck.pptx",
            "E2E_DECK_QUESTION": PREVIEW_QUESTIONS["deck"],
            "E2E_GONE": "notice.pdf",
            "E2E_GONE_PATH": str(gone),
            "E2E_GONE_QUESTION": PREVIEW_QUESTIONS["gone"],
        },
        timeout=900,
    )
    pdf, deck, before = report["pdf"], report["deck"], report["goneBefore"]
    # each card showed the page its passage is on, highlighted, beside the passage
    assert pdf["page"] in (1, 2, 3) and pdf["caption"].startswith(f"Page {pdf['page']} of 3")
    assert deck["caption"].startswith("Slide ") and deck["caption"].endswith(" of 2")
    assert before["caption"].startswith("Page ")
    for shown in (pdf, deck, before):
        assert shown["marks"] > 0 and shown["naturalWidth"] > 500 and shown["besideText"], shown
    assert report["pdfZoom"]["zoomed"] > 1.9 * report["pdfZoom"]["fitted"]
    # the answer rests on one sentence of the PDF's paragraph: the card marks that quote
    # and the page highlights it, fewer lines than the whole passage would take
    quote = report["pdfQuote"]
    assert any("eleven thousand cubic metres" in q for q in quote["quoted"]), quote
    assert 0 < quote["quoteMarks"] < quote["passageMarks"], quote
    # the page shown is the one the words are on, as the API says
    sources = httpx.post(
        f"{api}/api/search", json={"query": PREVIEW_QUESTIONS["deck"], "k": 8}, timeout=60
    ).json()["results"]
    slide = next(s for s in sources if s["relative_path"] == PREVIEW_FILES["deck"])
    envelope = httpx.get(f"{api}/api/chunks/{slide['chunk_id']}/preview", timeout=60).json()
    assert envelope["available"] and envelope["page"] == deck["page"]
    # the deleted file: its answer's card fell back to the text, saying why
    assert not gone.exists()
    assert report["goneReason"] == "file_missing", report["goneNote"]
    assert "The file is gone" in report["goneNote"]
    assert "notice.pdf is no longer in the corpus folder" in report["goneNote"]
    assert "Aurora station" in report["goneText"]
    assert screenshot_names(report) == {
        "01-pdf-page.png",
        "02-pdf-answer.png",
        "03-pdf-zoomed.png",
        "04-deck-slide.png",
        "05-deck-zoomed.png",
        "06-deleted-fallback.png",
    }


_RUN = """query Run($id: ID!) { runOrError(runId: $id) { __typename ... on Run {
  status assetSelection { path } tags { key value } } } }"""
_BACKFILL = """query Backfill($id: String!) { partitionBackfillOrError(backfillId: $id) {
  __typename ... on PartitionBackfill { status partitionNames runs { status tags { key value } } }
} }"""


def test_the_dagster_ui_through_its_guarded_front(stack: Stack) -> None:
    dagster = stack.running.dagster  # what `varagity up` printed: the front
    assert f"Dagster UI       : {dagster}\n" in stack.running.log()
    exports = stack.docs / "varagity-exports"
    bundles_before = set(exports.glob("*.zip")) if exports.is_dir() else set()

    report = run_script(
        "dagster.mjs",
        DAGSTER_OUT,
        {"DAGSTER_URL": dagster, "E2E_ASSET": "backup_bundle", "E2E_PARTITION": "rag"},
        timeout=900,
    )
    assert report["refused"] == [], "the front refused a request of the UI itself"
    # the UI's GraphQL subscriptions ran over the front's websocket
    sockets = [
        w for w in report["websockets"] if w["url"].startswith(dagster.replace("http", "ws"))
    ]
    assert any(w["framesReceived"] > 0 for w in sockets), report["websockets"]

    # what the browser launched happened: asked through the front, as the API does
    client = DagsterClient(dagster)
    run = client.query(_RUN, {"id": report["runId"]})["runOrError"]
    tags = {t["key"]: t["value"] for t in run["tags"]}
    assert run["status"] == report["runStatus"] == "SUCCESS", run
    assert tags["dagster/partition"] == "rag"
    assert run["assetSelection"] == [{"path": ["backup_bundle"]}]
    new_bundles = set(exports.glob("*.zip")) - bundles_before
    assert new_bundles, "the materialized partition wrote no bundle"
    backfill = client.query(_BACKFILL, {"id": report["backfillId"]})["partitionBackfillOrError"]
    assert backfill["status"] == report["backfillStatus"], backfill
    assert backfill["status"] in FINISHED_STATUSES, backfill  # the UI saw it finish
    assert sorted(backfill["partitionNames"]) == ["graph", "rag"]
    by_partition = {
        {t["key"]: t["value"] for t in r["tags"]}["dagster/partition"]: r["status"]
        for r in backfill["runs"]
    }
    # the graph partition succeeds once the module's graph test has built the graph
    assert by_partition.keys() == {"graph", "rag"} and by_partition["rag"] == "SUCCESS", backfill
    assert len(new_bundles) >= 2, "the backfill's rag run wrote a bundle too"
    assert screenshot_names(report) == {
        "02-asset.png",
        "03-partition-dialog.png",
        "04-run.png",
        "05-backfill-dialog.png",
        "06-backfill.png",
    }

    # the front refuses the bug report's probe and a rebinding Host; the webserver
    # itself listens on loopback, on a port of its own
    probe = httpx.get(f"{dagster}/graphql?query=mutation{{reloadWorkspace{{__typename}}}}")
    assert probe.status_code == 405 and probe.json()["code"] == "graphql_mutation_in_url"
    rebound = httpx.get(f"{dagster}/server_info", headers={"host": "attacker.example"})
    assert rebound.status_code == 400 and rebound.json()["code"] == "host_not_allowed"
    state = json.loads((stack.root / "home" / "run" / "stack.json").read_text())
    (web,) = [c for c in state["children"] if c["name"] == "dagster-webserver"]
    port = state["ports"]["dagster_webserver"]
    assert web["argv"][1:5] == ["-h", "127.0.0.1", "-p", str(port)]
    assert str(port) not in dagster


def test_the_codebase_map_and_the_palette_in_the_browser(stack: Stack) -> None:
    report = run_script(
        "map.mjs",
        MAP_OUT,
        {"VARAGITY_URL": stack.api, "E2E_DOCUMENT": "manuals/kettle.md"},
        timeout=300,
    )
    # the script asserts what it saw; the report carries it for the reader
    assert report["screens"] == ["Chat", "Corpus", "Graph", "Map"]
    assert report["screensWithoutDeveloperMode"] == ["Chat", "Corpus", "Graph"]
    assert report["cards"] >= 40
    assert "reranked composes a base retriever" in report["spotlight"]
    assert report["focused"] == "manuals/kettle.md", "the palette opened the document"
    assert screenshot_names(report) == {
        "map.png",
        "map-spotlight.png",
        "palette.png",
        "palette-document.png",
        "map-narrow.png",
    }
