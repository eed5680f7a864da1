"""``varagity bench-load``: concurrent SSE chats while files are being ingested.

Against a private embedded stack (or a running one with ``--url``), it uploads a batch
of generated files through ``POST /api/documents/upload`` (so the sensor and the daemon
ingest them while the chats run) and starts N chats on ``POST /api/chat`` at once. Per
chat it records the seconds to the ``retrieval`` event, to the first ``queued`` event
and the last queue position, to the first answer token and to ``done``; it counts HTTP
failures, ``error`` events and streams that ended without ``done``. It prints p50/p95
of each and how many of the uploaded files were indexed by the end. Numbers depend on
the machine; it asserts nothing.

``--during-blurbs`` (:func:`run_blurb_benchmark`) measures instead what one chat waits
for while a corpus is being contextualized: chats asked one at a time on the idle
stack, then one at a time while the blurb runs of freshly uploaded files are under
way; it prints the first-token p50 of both, their ratio, and how many chats were told
they waited for search context.
"""

from __future__ import annotations

import json
import random
import shutil
import statistics
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from varagity_bench.ingest import generate_file
from varagity_bench.private_stack import private_stack_settings
from varagity_stack.supervisor import Stack

QUESTIONS = (
    "What do the documents say about tidal turbines?",
    "Summarise what the notes say about the harbour.",
    "Which measurements are reported, and where?",
    "What is said about maintenance schedules?",
)


@dataclass
class ChatTiming:
    """What one chat saw, in seconds from its request."""

    retrieval: float | None = None
    queued: float | None = None
    queue_position: int | None = None
    first_token: float | None = None
    done: float | None = None
    error: str | None = None
    events: list[str] = field(default_factory=list)


def _chat(base: str, question: str, headers: dict[str, str], out: ChatTiming) -> None:
    started = time.perf_counter()
    try:
        with httpx.stream(
            "POST",
            f"{base}/api/chat",
            json={"question": question},
            headers=headers,
            timeout=httpx.Timeout(900, connect=30),
        ) as response:
            if response.status_code != 200:
                out.error = f"HTTP {response.status_code}: {response.read()[:200]!r}"
                return
            event = ""
            for line in response.iter_lines():
                if line.startswith("event:"):
                    event = line.removeprefix("event:").strip()
                    continue
                if not line.startswith("data:") or not event:
                    continue
                now = time.perf_counter() - started
                out.events.append(event)
                if event == "retrieval":
                    out.retrieval = now
                elif event == "queued" and out.queued is None:  # its place when it arrived
                    out.queued = now
                    out.queue_position = json.loads(line.removeprefix("data:"))["position"]
                elif event in ("token", "reasoning") and out.first_token is None:
                    out.first_token = now
                elif event == "done":
                    out.done = now
                elif event == "error":
                    out.error = line.removeprefix("data:").strip()[:200]
                event = ""
    except httpx.HTTPError as exc:
        out.error = f"{type(exc).__name__}: {exc}"
    if out.error is None and out.done is None:
        out.error = f"stream ended without done (events: {out.events[-3:]})"
    status = out.error or f"done after {out.done:.1f}s"
    seen = f"{out.retrieval:.1f}s" if out.retrieval is not None else "never"
    place = f"queued at place {out.queue_position}" if out.queue_position else "not queued"
    print(f"  chat: retrieval after {seen}, {place}, {status}", flush=True)


def _upload(base: str, headers: dict[str, str], files: dict[str, str]) -> int:
    parts = [("files", (name, text.encode())) for name, text in files.items()]
    r = httpx.post(
        f"{base}/api/documents/upload",
        files=parts,
        data={"folder": "load-bench"},
        headers=headers,
        timeout=120,
    )
    r.raise_for_status()
    return int(r.json()["counts"].get("stored", 0))


def _indexed(base: str, headers: dict[str, str], prefix: str) -> int:
    r = httpx.get(f"{base}/api/documents", headers=headers, timeout=60)
    r.raise_for_status()
    return sum(
        1
        for d in r.json()["documents"]
        if d["relative_path"].startswith(prefix) and d["status"] == "indexed"
    )


def _pcts(values: list[float]) -> str:
    if not values:
        return "     -        -"
    if len(values) == 1:
        return f"{values[0]:6.2f}s  {values[0]:6.2f}s"
    cuts = statistics.quantiles(values, n=20, method="inclusive")
    return f"{statistics.median(values):6.2f}s  {cuts[18]:6.2f}s"


def run_load_benchmark(
    *,
    chats: int = 20,
    files: int = 20,
    url: str | None = None,
    api_key: str | None = None,
    answer_tokens: int = 64,
) -> int:
    """Run the benchmark and print its table; returns a process exit code.

    Args:
        chats: Chats started at once.
        files: Files uploaded (and so ingested) while they run.
        url: A running API to load instead of a private stack.
        api_key: Its ``API_KEY``, when it has one.
        answer_tokens: ``LLM_MAX_TOKENS`` of the private stack (ignored with ``url``).
    """
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    stack: Stack | None = None
    root: Path | None = None
    try:
        if url is None:
            root, settings = private_stack_settings(
                "varagity-load-", CONTEXTUALIZE=False, LLM_MAX_TOKENS=answer_tokens
            )
            settings.docs_path.mkdir(parents=True)
            rng = random.Random(5)
            for i in range(4):
                (settings.docs_path / f"seed-{i}.md").write_text(generate_file(rng, i, 4))
            stack = Stack(settings)
            print(f"starting a private stack under {root} ...", flush=True)
            stack.start()
            url = f"http://{settings.HOST}:{settings.API_PORT}"
            deadline = time.monotonic() + 600
            while _indexed(url, headers, "seed-") < 4 and time.monotonic() < deadline:
                time.sleep(1)
        rng = random.Random(int(time.time()))
        batch = {
            f"load-{rng.randrange(10**8)}-{i}.md": generate_file(rng, i, 6) for i in range(files)
        }
        began = time.perf_counter()
        stored = _upload(url, headers, batch)
        timings = [ChatTiming() for _ in range(chats)]
        threads = [
            threading.Thread(
                target=_chat,
                args=(url, QUESTIONS[i % len(QUESTIONS)], headers, t),
                daemon=True,  # Ctrl-C reports the chats finished so far
            )
            for i, t in enumerate(timings)
        ]
        for t in threads:
            t.start()
        try:
            for t in threads:
                t.join()
        except KeyboardInterrupt:
            print("interrupted: the figures below cover the chats finished so far")
        wall = time.perf_counter() - began
        indexed = _indexed(url, headers, "load-bench/")
    finally:
        if stack is not None:
            stack.stop()
        if root is not None:
            shutil.rmtree(root, ignore_errors=True)

    errors = [t.error for t in timings if t.error]
    queued = [t for t in timings if t.queued is not None]
    print(f"\n{chats} concurrent chats during an ingest of {stored} uploaded files ({wall:.0f}s)")
    unfinished = sum(1 for t in timings if t.error is None and t.done is None)
    print(f"  errors: {len(errors)}, unfinished: {unfinished}")
    for e in errors[:5]:
        print(f"    {e}")
    print(f"  {'':28} {'p50':>7}  {'p95':>7}")
    rows = {
        "to retrieval event": [t.retrieval for t in timings],
        "to first queued event": [t.queued for t in timings],
        "to first token": [t.first_token for t in timings],
        "to done": [t.done for t in timings],
    }
    for label, values in rows.items():
        print(f"  {label:28} {_pcts([v for v in values if v is not None])}")
    positions = [t.queue_position for t in queued if t.queue_position is not None]
    print(
        f"  told 'queued' in-band: {len(queued)} of {chats}"
        + (f" (places in line up to {max(positions, default=0)})" if queued else "")
    )
    print(f"  uploaded files indexed when the chats ended: {indexed} of {stored}")
    return 1 if errors else 0


def _contextualizing(base: str, headers: dict[str, str], prefix: str) -> tuple[int, int]:
    """``(files still being contextualized, files indexed)`` under ``prefix``."""
    r = httpx.get(f"{base}/api/documents", headers=headers, timeout=60)
    r.raise_for_status()
    docs = [
        d
        for d in r.json()["documents"]
        if d["relative_path"].startswith(prefix) and d["status"] == "indexed"
    ]
    return sum(1 for d in docs if d.get("contextualizing")), len(docs)


def _one_at_a_time(base: str, headers: dict[str, str], n: int, rng: random.Random) -> ChatTiming:
    timing = ChatTiming()
    _chat(base, QUESTIONS[n % len(QUESTIONS)] + f" ({rng.randrange(10**6)})", headers, timing)
    return timing


def run_blurb_benchmark(
    *,
    chats: int = 8,
    files: int = 4,
    url: str | None = None,
    api_key: str | None = None,
    answer_tokens: int = 64,
    paragraphs: int = 12,
) -> int:
    """First token of a chat while a corpus is contextualized vs idle; prints the table.

    Chats are asked one after another (never two at once), ``chats`` on the idle stack,
    then ``chats`` while the blurb runs of ``files`` uploaded files are under way; a
    chat counts for the busy figure only when blurbs were still being written when it
    ended. With ``url`` the running stack must contextualize (``CONTEXTUALIZE=true``)
    and be idle when this starts.
    """
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    stack: Stack | None = None
    root: Path | None = None
    idle: list[ChatTiming] = []
    busy: list[ChatTiming] = []
    late = 0
    try:
        if url is None:
            root, settings = private_stack_settings(
                "varagity-load-", CONTEXTUALIZE=True, LLM_MAX_TOKENS=answer_tokens
            )
            settings.docs_path.mkdir(parents=True)
            rng = random.Random(5)
            for i in range(2):
                (settings.docs_path / f"seed-{i}.md").write_text(generate_file(rng, i, 3))
            stack = Stack(settings)
            print(f"starting a private stack under {root} ...", flush=True)
            stack.start()
            url = f"http://{settings.HOST}:{settings.API_PORT}"
        deadline = time.monotonic() + 1800
        while time.monotonic() < deadline:  # idle: seeds indexed and contextualized
            pending, indexed = _contextualizing(url, headers, "")
            if indexed and not pending:
                break
            time.sleep(2)
        rng = random.Random(int(time.time()))
        print(f"{chats} chats one at a time on the idle stack ...", flush=True)
        idle = [_one_at_a_time(url, headers, n, rng) for n in range(chats)]
        batch = {
            f"blurbs-{rng.randrange(10**8)}-{i}.md": generate_file(rng, 100 + i, paragraphs)
            for i in range(files)
        }
        _upload(url, headers, batch)
        print(f"uploaded {files} files; waiting for their blurb runs ...", flush=True)
        while time.monotonic() < deadline:
            pending, indexed = _contextualizing(url, headers, "load-bench/")
            if indexed == files and pending:
                break
            time.sleep(1)
        # the blurb sensor asks for the runs after the ingest; give them a moment
        time.sleep(10)
        print(f"{chats} chats one at a time while they are contextualized ...", flush=True)
        while len(busy) < chats and time.monotonic() < deadline:
            timing = _one_at_a_time(url, headers, len(busy), rng)
            if _contextualizing(url, headers, "load-bench/")[0] == 0:
                late += 1  # the blurbs were done before this chat was: not counted
                break
            busy.append(timing)
    finally:
        if stack is not None:
            stack.stop()
        if root is not None:
            shutil.rmtree(root, ignore_errors=True)

    def firsts(timings: list[ChatTiming]) -> list[float]:
        return [t.first_token for t in timings if t.first_token is not None]

    errors = [t.error for t in idle + busy if t.error]
    told = [t for t in busy if "queued" in t.events]
    print(f"\nfirst token of a chat asked alone, idle vs while {files} files are contextualized")
    print(f"  errors: {len(errors)}" + "".join(f"\n    {e}" for e in errors[:5]))
    print(f"  {'':34} {'p50':>7}  {'p95':>7}  chats")
    print(f"  {'idle':34} {_pcts(firsts(idle))}  {len(firsts(idle))}")
    print(f"  {'while blurbs are written':34} {_pcts(firsts(busy))}  {len(firsts(busy))}")
    if firsts(idle) and firsts(busy):
        ratio = statistics.median(firsts(busy)) / statistics.median(firsts(idle))
        print(f"  ratio of p50s: {ratio:.2f}x (goal: at most 1.25x)")
    print(f"  told 'queued' in-band while blurbs were written: {len(told)} of {len(busy)}")
    if late:
        print("  the blurbs were all written before the last chat ended (it is not counted)")
    return 1 if errors else 0
