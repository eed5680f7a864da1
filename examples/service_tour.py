"""A tour of the Varagity service over plain HTTP, against a running stack.

Run it against ``make up`` (or any deployment) with::

    .venv/bin/python examples/service_tour.py --api http://127.0.0.1:8000

It walks the corpus, chat and run-control API the way a client would:

1. uploads a folder of small documents (keeping each file's modification time);
2. waits until the Dagster folder sensor has ingested every one of them;
3. chats two turns with the ``condense_context`` engine, the second a follow-up
   that only makes sense with the first;
4. reads the conversation back with its sources and their retrieval traces;
5. changes a reingest-affecting setting (``CHUNK_SIZE``) and sees the corpus
   flagged stale;
6. launches a reingest through Dagster, follows its progress stream, and sees the
   flag cleared;
7. deletes one document together with its file.

It changes ``CHUNK_SIZE`` on the stack it talks to (pass ``--chunk-size`` to pick the
value, and set it back in the settings drawer or with ``PATCH /api/settings``
``{"values": {"CHUNK_SIZE": null}}``, then reingest). Each step prints what it saw;
any unexpected answer stops the tour with exit status 1.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
from httpx_sse import connect_sse

FOLDER = "tour-ferries"
DOCUMENTS = {
    "timetable.md": (
        "# Halden ferry timetable\n\n"
        "The Halden ferry crosses the Iddefjord every 40 minutes between 06:20 and 22:40.\n"
        "The crossing itself takes 17 minutes, and the last boat on Sundays leaves at 21:00.\n"
    ),
    "tickets/prices.md": (
        "# Halden ferry tickets\n\n"
        "A single adult ticket costs 58 kroner; bicycles travel free of charge.\n"
        "A book of ten tickets costs 480 kroner and never expires.\n"
    ),
    "tickets/lost-property.txt": (
        "Lost property found on the Halden ferry is kept at the harbour office for 90 days.\n"
    ),
}


class TourError(RuntimeError):
    """The service answered something the tour did not expect."""


def step(title: str) -> None:
    """Print a step header."""
    print(f"\n== {title}", flush=True)


def expect(ok: bool, what: str) -> None:
    """Stop the tour when an expectation fails."""
    if not ok:
        raise TourError(what)


def wait_for(predicate: Callable[[], bool], timeout: float, what: str) -> None:
    """Poll ``predicate`` every second until it holds or ``timeout`` passes."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise TourError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(1.0)


def json_ok(response: httpx.Response, status: int = 200) -> Any:
    """The JSON body of an expected status, or a TourError quoting the error body."""
    if response.status_code != status:
        raise TourError(
            f"{response.request.method} {response.request.url.path} answered "
            f"{response.status_code}: {response.text[:500]}"
        )
    return response.json()


def write_folder(root: Path) -> Path:
    """The sample folder on disk (what a user would pick in a folder upload)."""
    folder = root / FOLDER
    for rel, text in DOCUMENTS.items():
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return folder


def upload_folder(client: httpx.Client, folder: Path) -> list[str]:
    """Upload every file of ``folder`` under its own name; returns the stored paths."""
    files = sorted(p for p in folder.rglob("*") if p.is_file())
    parts = [("files", (p.name, p.read_bytes(), "application/octet-stream")) for p in files]
    data = {
        "paths": [f"{folder.name}/{p.relative_to(folder).as_posix()}" for p in files],
        "mtimes": [str(int(p.stat().st_mtime * 1000)) for p in files],
    }
    body = json_ok(client.post("/api/documents/upload", files=parts, data=data))
    stored = []
    for result in body["results"]:
        print(f"  {result['status']:<9} {result.get('relative_path') or result['name']}")
        expect(result["status"] in ("stored", "replaced", "unchanged"), f"refused: {result}")
        stored.append(result["relative_path"])
    return stored


def documents(client: httpx.Client) -> dict[str, dict[str, Any]]:
    """The corpus listing keyed by relative path."""
    listing = json_ok(client.get("/api/documents"))
    return {d["relative_path"]: d for d in listing["documents"]}


def chat(client: httpx.Client, question: str, conversation_id: str | None) -> dict[str, Any]:
    """One streamed turn: returns the retrieval and done payloads and the token count."""
    body: dict[str, Any] = {"question": question, "chat_engine": "condense_context"}
    if conversation_id:
        body["conversation_id"] = conversation_id
    events: dict[str, Any] = {"tokens": 0}
    with connect_sse(client, "POST", "/api/chat", json=body) as source:
        expect(source.response.status_code == 200, f"chat answered {source.response.status_code}")
        for event in source.iter_sse():
            payload = json.loads(event.data)
            if event.event == "token":
                events["tokens"] += 1
            elif event.event == "error":
                raise TourError(f"chat failed in-band: {payload}")
            else:
                events[event.event] = payload
    expect("retrieval" in events and "done" in events, f"incomplete stream: {list(events)}")
    return events


def follow_job(client: httpx.Client, job_id: str) -> Iterator[dict[str, Any]]:
    """The job's SSE progress events, ending with its ``done`` event."""
    with connect_sse(client, "GET", f"/api/ingest/{job_id}/events") as source:
        expect(source.response.status_code == 200, f"events answered {source.response.status_code}")
        for event in source.iter_sse():
            payload = json.loads(event.data)
            if event.event == "error":
                raise TourError(f"progress stream failed: {payload}")
            yield payload
            if event.event == "done":
                return


def tour(api: str, chunk_size: int, timeout: float) -> None:
    """Run every step against the API at ``api``."""
    with (
        httpx.Client(base_url=api, timeout=600) as client,
        tempfile.TemporaryDirectory() as tmp,
    ):
        step("1. upload a folder")
        stored = upload_folder(client, write_folder(Path(tmp)))

        step("2. wait for the folder sensor to ingest it")

        def indexed() -> bool:
            listing = documents(client)
            return all(listing.get(p, {}).get("status") == "indexed" for p in stored)

        wait_for(indexed, timeout, "the uploaded files to be indexed")
        listing = documents(client)
        for path in stored:
            print(f"  indexed  {path} ({listing[path]['n_chunks']} chunk(s))")

        step("3. two chat turns with condense_context")
        first = chat(client, "How long does the Halden ferry crossing take?", None)
        conversation = first["done"]["conversation_id"]
        print(f"  searched for: {first['retrieval']['query']!r}")
        print(f"  answer: {first['done']['answer'][:160]!r}")
        second = chat(client, "And what does a single ticket for it cost?", conversation)
        expect(second["done"]["conversation_id"] == conversation, "the follow-up changed thread")
        print(f"  follow-up condensed to: {second['retrieval']['condensed_query']!r}")
        print(f"  searched for: {second['retrieval']['query']!r}")
        print(f"  answer: {second['done']['answer'][:160]!r}")
        top = [s["relative_path"] for s in second["retrieval"]["sources"]]
        print(f"  evidence: {top}")

        step("4. the conversation, with its sources")
        detail = json_ok(client.get(f"/api/conversations/{conversation}"))
        print(f"  title: {detail['title']!r}, {len(detail['messages'])} message(s)")
        answers = [m for m in detail["messages"] if m["role"] == "assistant"]
        expect(len(answers) == 2, f"expected two answers, got {len(answers)}")
        for m in answers:
            expect(bool(m["sources"]), "an answer was stored without its sources")
            src = m["sources"][0]
            print(
                f"  [{m['chat_engine']}/{m['retrieval_method']}] condensed="
                f"{m['condensed_query']!r} first source {src['relative_path']} "
                f"trace={json.dumps(src['trace'])[:120]}"
            )

        step(f"5. change CHUNK_SIZE to {chunk_size}: the corpus goes stale")
        change = {"values": {"CHUNK_SIZE": chunk_size}}
        patched = json_ok(client.patch("/api/settings", json=change))
        print(f"  changed: {patched['changed']}")
        stale = patched["stale"] or json_ok(client.get("/api/settings"))["stale"]
        expect(stale is not None, "the corpus was not flagged stale")
        print(f"  stale: {stale['reason']}")

        step("6. reingest through Dagster; the flag clears")
        launched = json_ok(client.post("/api/ingest", json={"reingest": True}), 202)
        print(f"  job {launched['job_id']}, {len(launched['paths'])} file(s)")
        print(f"  in the Dagster UI: {launched['dagster_url']}")
        last = None
        for progress in follow_job(client, launched["job_id"]):
            files = progress["files"]
            print(
                f"  {progress['status']}: {files['materialized']}/{files['targeted']} done, "
                f"{files['failed']} failed"
            )
            last = progress
        expect(last is not None and last["succeeded"], f"the reingest did not succeed: {last}")
        wait_for(
            lambda: json_ok(client.get("/api/settings"))["stale"] is None,
            60,
            "the stale flag to clear",
        )
        print("  stale flag cleared")

        step("7. delete a document together with its file")
        victim = f"{FOLDER}/tickets/lost-property.txt"
        doc_id = documents(client)[victim]["doc_id"]
        deleted = json_ok(client.delete(f"/api/documents/{doc_id}", params={"remove_file": True}))
        print(f"  deleted {deleted['deleted']}, files {deleted['files']}")
        expect(victim not in documents(client), "the deleted document is still listed")
        print("\nTour complete.")


def main(argv: list[str] | None = None) -> int:
    """Run the tour; exit 1 with the reason when a step fails."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--api", default="http://127.0.0.1:8000", help="the API's base URL")
    parser.add_argument("--chunk-size", type=int, default=600, help="CHUNK_SIZE to switch to")
    parser.add_argument("--timeout", type=float, default=300, help="seconds to wait for ingest")
    args = parser.parse_args(argv)
    try:
        tour(args.api.rstrip("/"), args.chunk_size, args.timeout)
    except (TourError, httpx.HTTPError) as exc:
        print(f"\ntour failed: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
