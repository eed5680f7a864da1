"""``varagity chaos``: crash trials against a private ``varagity up``.

A private stack (its own ``VARAGITY_HOME``, corpus folder and free ports) ingests a
generated corpus. Each trial changes the corpus (adds files, rewrites one, deletes one),
waits a random moment so the change is being ingested, then kills -9 one component, in
turn: a run worker, the Dagster daemon, the API, a model server (the chat server and the
embedding server alternately) and the embedded Postgres. It then waits for recovery:
the supervisor still up, the API answering, and every :mod:`varagity.doctor` invariant
holding (every file indexed exactly once, the same chunk ids in Postgres and BM25, no
orphans of deleted files, no stuck runs), and no run whose worker a trial killed still
marked started. A trial that does not get there within the
recovery timeout counts as not recovered, with the invariants still broken named.

Nothing is repaired by hand: whatever recovers, recovers through the supervisor's
restarts, Dagster's run monitoring and the folder sensor.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import psutil

from varagity.config import Settings, load_settings
from varagity.doctor import run_doctor
from varagity.jobs import DagsterClient, DagsterError
from varagity.stores.bm25.tantivy_store import TantivyBM25Store
from varagity.stores.postgres import embedded_postgres_pid, ensure_embedded_postgres
from varagity_bench.ingest import generate_file
from varagity_stack.model_servers import free_port

#: What the trials kill, in turn.
TARGETS = ("run-worker", "dagster-daemon", "api", "model-server", "postgres")
_MARKERS = {
    # run workers are forked from the code server's forkserver (they carry its command
    # line): the forkserver is found by this marker, the workers are its children
    "run-worker": "multiprocessing.forkserver",
    "dagster-daemon": "dagster-daemon",
    "api": "varagity_api.main:app",
    "llm": "llama_cpp.server",
    "embedding": "varagity_stack.embedding_server",
}
_STARTUP_S = 900.0


@dataclass(frozen=True)
class ChaosConfig:
    """What ``varagity chaos`` runs."""

    trials: int = 20
    files: int = 30
    seed: int = 12
    recovery_timeout_s: float = 300.0
    keep: bool = False
    contextualize: bool = True


@dataclass
class Trial:
    """One kill and what followed."""

    number: int
    target: str
    killed: str
    recovered: bool = False
    recovery_s: float = 0.0
    broken: list[str] = field(default_factory=list)


def _find(home: Path, marker: str, *, forked: bool = False) -> psutil.Process | None:
    """A process of this stack (its environment names our ``VARAGITY_HOME``) whose
    command line holds ``marker``; with ``forked``, one whose parent holds it too (a run
    worker, forked from the forkserver whose command line it inherits)."""

    def marked(proc: psutil.Process) -> bool:
        return marker in " ".join(proc.cmdline() or ()) and proc.environ().get(
            "VARAGITY_HOME"
        ) == str(home)

    for pid in psutil.pids():  # fresh objects: process_iter's cache can hold a reused pid
        try:
            proc = psutil.Process(pid)
            if not marked(proc):
                continue
            if not forked:
                return proc
            parent = proc.parent()
            if parent is not None and marked(parent) and proc.status() != psutil.STATUS_ZOMBIE:
                return proc
        except psutil.Error:
            continue
    return None


class ChaosStack:
    """A private ``varagity up`` and the corpus it watches."""

    def __init__(self, root: Path, config: ChaosConfig) -> None:
        self.root = root
        self.docs = root / "docs"
        self.home = root / "home"
        self.docs.mkdir(parents=True, exist_ok=True)
        ports = {
            k: str(free_port())
            for k in ("API_PORT", "DAGSTER_PORT", "LLM_PORT", "EMBEDDING_PORT", "GRAPH_READER_PORT")
        }
        self.env = {
            **os.environ,
            **ports,
            "VARAGITY_HOME": str(self.home),
            "DOCS_PATH": str(self.docs),
            "CONTEXTUALIZE": "true" if config.contextualize else "false",
        }
        for name in (
            "DATABASE_URL",
            "LLM_BASE_URL",
            "GRAPH_READER_BASE_URL",
            "EMBEDDING_BASE_URL",
            "ELASTICSEARCH_URL",
        ):
            self.env.pop(name, None)
        self.env.pop("DAGSTER_URL", None)
        self.api = f"http://127.0.0.1:{ports['API_PORT']}"
        self.dagster = f"http://127.0.0.1:{ports['DAGSTER_PORT']}"
        self.log_path = root / "up.log"
        self.proc: subprocess.Popen[bytes] | None = None
        self.settings: Settings = load_settings(
            VARAGITY_HOME=self.home, DOCS_PATH=self.docs, DATABASE_URL=None
        )
        self.db_url = ""
        self.killed_workers: set[int] = set()

    def start(self) -> None:
        """Start ``varagity up`` and wait until the corpus is indexed."""
        with self.log_path.open("ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "varagity_cli", "up"],
                cwd=self.root,
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        deadline = time.monotonic() + _STARTUP_S
        while "Corpus indexed" not in self.log():
            if self.proc.poll() is not None:
                raise RuntimeError(f"varagity up exited:\n{self.log()[-3000:]}")
            if time.monotonic() > deadline:
                raise RuntimeError("varagity up did not index the corpus in time")
            time.sleep(1)
        # the same URL the stack uses (a unix socket in the data folder); attaching here
        # never starts a server because this one runs
        self.db_url = ensure_embedded_postgres(self.settings)

    def log(self) -> str:
        """What the supervisor printed so far."""
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def stop(self) -> int | None:
        """SIGTERM the supervisor and wait for it."""
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else None
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(120)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            return self.proc.wait()

    def doctor(self) -> list[str]:
        """Every invariant broken, checked from outside the stack: the doctor's, and a
        run whose worker a trial killed that is still not ended (the doctor counts a run
        stuck only after an hour; this harness knows which workers it killed)."""
        bm25 = TantivyBM25Store(self.settings.bm25_path)
        client = DagsterClient(self.dagster, timeout=10)
        try:
            report = run_doctor(self.db_url, bm25, self.docs, client, settle_s=0)
        finally:
            bm25.close()
        broken = [f"{p.invariant}: {p.subject}: {p.detail}" for p in report.problems]
        return broken + self.runs_of_killed_workers(client)

    def runs_of_killed_workers(self, client: DagsterClient) -> list[str]:
        """A run still started whose worker process a trial killed: Dagster's code server
        fails such a run within a second or two, and until it does the run holds its
        concurrency slots."""
        if not self.killed_workers:
            return []
        broken = []
        # the worker's pid is in the run's first engine events ("Executing steps in
        # process (pid: N)")
        for run in client.runs({"statuses": ["STARTED"]}, limit=100):
            pids = set(client.worker_pids(run.run_id, first=20))
            for pid in sorted(pids & self.killed_workers):
                broken.append(
                    f"no_stuck_runs: run {run.run_id}: still STARTED though its worker "
                    f"(pid {pid}) was killed"
                )
        return broken

    def kill(self, target: str, trial: int) -> str:
        """kill -9 one component; returns what was killed."""
        assert self.proc is not None
        if target == "postgres":
            pid = embedded_postgres_pid(self.settings)
            if pid is None:
                return "postgres (not running)"
            os.kill(pid, signal.SIGKILL)
            return f"postgres (pid {pid})"
        name = target
        if target == "model-server":
            name = "llm" if (trial // len(TARGETS)) % 2 == 0 else "embedding"
        # a run worker appears once the sensor's next tick launched the change's run
        deadline = time.monotonic() + (90 if target == "run-worker" else 5)
        while True:
            victim = _find(self.home, _MARKERS[name], forked=target == "run-worker")
            if victim is not None or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        if victim is None:
            return f"{name} (none running)"
        with_note = f"{name} (pid {victim.pid})"
        try:
            victim.kill()
        except psutil.Error:
            return f"{name} (exited before the kill)"
        if target == "run-worker":
            self.killed_workers.add(victim.pid)
        return with_note


def _change_corpus(stack: ChaosStack, rng: random.Random, trial: int, next_id: list[int]) -> None:
    """Add two files, rewrite one, delete one: work for the sensor during the kill."""
    existing = sorted(p for p in stack.docs.rglob("*.md"))
    for _ in range(2):
        i = next_id[0]
        next_id[0] += 1
        (stack.docs / f"chaos-{i:04d}.md").write_text(generate_file(rng, i, 4), encoding="utf-8")
    if existing:
        victim = rng.choice(existing)
        victim.write_text(generate_file(rng, 90_000 + trial, 4), encoding="utf-8")
        doomed = rng.choice([p for p in existing if p != victim] or existing)
        if doomed.exists():
            doomed.unlink()


def _recover(stack: ChaosStack, timeout_s: float) -> tuple[bool, float, list[str]]:
    started = time.monotonic()
    last: list[str] = ["not checked yet"]
    while time.monotonic() - started < timeout_s:
        assert stack.proc is not None
        if stack.proc.poll() is not None:
            return False, time.monotonic() - started, ["varagity up exited"]
        try:
            # health probes every dependency: slow on a loaded machine, still an answer
            if httpx.get(f"{stack.api}/api/health", timeout=60).status_code == 200:
                last = stack.doctor()
                if not last:
                    return True, time.monotonic() - started, []
            else:
                last = ["the API answers health with an error"]
        except (httpx.HTTPError, DagsterError, OSError) as exc:
            last = [f"not answering yet: {type(exc).__name__}"]
        except Exception as exc:  # Postgres restarting, a store reopening ...
            last = [f"check failed: {type(exc).__name__}: {exc}"[:300]]
        time.sleep(5)
    return False, time.monotonic() - started, last


def run_chaos(settings: Settings, config: ChaosConfig) -> int:
    """Run the trials; prints one line per trial and a summary. Exit 0 only on 20/20-style
    success: every trial recovered with no invariant broken."""
    del settings  # the trials run on a private stack, never on the configured one
    if config.trials < 1 or config.files < 1:
        raise ValueError("--trials and --files must be at least 1")
    rng = random.Random(config.seed)

    def interrupted(signum: int, _frame: object) -> None:
        raise KeyboardInterrupt(signal.Signals(signum).name)

    # SIGTERM (and SIGINT, ignored in background jobs) end the trials and stop the stack
    signal.signal(signal.SIGTERM, interrupted)
    signal.signal(signal.SIGINT, interrupted)
    root = Path(tempfile.mkdtemp(prefix="varagity-chaos-"))
    stack = ChaosStack(root, config)
    for i in range(config.files):
        (stack.docs / f"base-{i:04d}.md").write_text(generate_file(rng, i, 5), encoding="utf-8")
    print(
        f"chaos: {config.trials} trial(s) on a private stack in {root} ({config.files} "
        f"generated files, contextualize {'on' if config.contextualize else 'off'})",
        flush=True,
    )
    trials: list[Trial] = []
    started = time.monotonic()
    try:
        stack.start()
        print(f"stack up and indexed after {time.monotonic() - started:.0f}s", flush=True)
        next_id = [10_000]
        for n in range(config.trials):
            target = TARGETS[n % len(TARGETS)]
            _change_corpus(stack, rng, n, next_id)
            time.sleep(rng.uniform(0.5, 8.0))  # a random moment of the ingest it started
            trial = Trial(n + 1, target, stack.kill(target, n))
            trial.recovered, trial.recovery_s, trial.broken = _recover(
                stack, config.recovery_timeout_s
            )
            trials.append(trial)
            verdict = (
                f"recovered in {trial.recovery_s:.0f}s, all invariants hold"
                if trial.recovered
                else f"NOT recovered after {trial.recovery_s:.0f}s: " + "; ".join(trial.broken[:5])
            )
            print(
                f"trial {trial.number:2d}/{config.trials}: killed {trial.killed}; {verdict}",
                flush=True,
            )
            if stack.proc is not None and stack.proc.poll() is not None:
                print("varagity up exited; stopping the trials", flush=True)
                break
    finally:
        code = stack.stop()
        restarts = stack.log().count("restarting it in") + stack.log().count(
            "embedded postgres died"
        )
        recovered = sum(t.recovered for t in trials)
        broken = Counter(b.split(":", 1)[0] for t in trials if not t.recovered for b in t.broken)
        print(
            f"\nchaos result: trials run {len(trials)}, recovered {recovered}, "
            f"invariants broken {sum(broken.values())}"
            + (f" ({dict(broken)})" if broken else "")
            + f"; supervisor restarts logged {restarts}; varagity up exit status {code}; "
            f"wall {time.monotonic() - started:.0f}s",
            flush=True,
        )
        mean = [t.recovery_s for t in trials if t.recovered]
        if mean:
            print(
                f"recovery time: mean {sum(mean) / len(mean):.0f}s, max {max(mean):.0f}s",
                flush=True,
            )
        print(f"supervisor log: {stack.log_path}; component logs: {stack.home / 'logs'}")
        if not config.keep and recovered == len(trials):
            shutil.rmtree(root, ignore_errors=True)
    ok = trials and recovered == len(trials) == config.trials
    return 0 if ok else 1
