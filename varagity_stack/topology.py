"""``varagity topology``: the scaled-out deployment on several hosts of one machine.

Every host is a Linux network namespace (``ip netns``) with its own address on a private
bridge, its own processes and its own folder under the topology's root; hosts talk only
over that network, and share one folder: the corpus users drop files into. Each host's
processes are started the way an operator would start them on a machine of its own
(the same commands and settings; see ``docs/operations.md``)::

                         bridge vgt-br0 10.231.0.1/24 (the machine itself)
      ┌────────────────┬───────────────┼────────────────┬──────────────────┐
   db 10.231.0.10   orch 10.231.0.11   serving 10.231.0.12   worker1..N 10.231.0.21..
   PostgreSQL 18    redis (broker,     API + web client      Celery worker: queue
   + pgvector,      append-only)       code server (runs)    CELERY_QUEUE (parse,
   TCP + password   Dagster webserver  Celery worker: queue  chunk, embed, stores)
   (app + Dagster   + guarded front    CELERY_INDEX_QUEUE    embedding server
   instance)        + daemon (sensors) Tantivy index owner
                                       embedding server (queries)
                                       [chat server, --llm]

Settings drive the difference from the embedded stack, nothing else: ``DATABASE_URL``
(the db host), ``STEP_EXECUTOR=celery`` + ``CELERY_BROKER_URL`` (orch's redis),
``ARTIFACT_STORE=postgres`` (what a step hands the next crosses hosts through the
database), ``EMBEDDING_BASE_URL`` (each host's own server), ``LLM_BASE_URL``,
``DAGSTER_URL`` (orch's front), ``API_KEY`` (every address is beyond loopback).

The code server runs on the serving host: Dagster's default run launcher starts each
run's process there, beside the stores that live in a host's folder (the Tantivy index,
the message graph's working directory, backups), so jobs that do not spread their steps
(graph, backup, evaluation) run where their data is; the documents pipeline's runs only
orchestrate there and their steps go to the workers (:mod:`varagity_assets.executors`).

Teardown (:meth:`Topology.stop`, also on a failed start, Ctrl-C or SIGTERM) stops every
process, kills whatever is still inside a host's namespace, and deletes the namespaces,
their veth pairs and the bridge; :func:`teardown_leftovers` does the same for a launcher
that died (``varagity topology down``).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import psycopg
import yaml

from varagity.config import Settings
from varagity.pipeline import STAGE_INGEST, STAGE_TAG
from varagity.stores.postgres import sqlalchemy_psycopg2_url
from varagity.stores.vector_store import PgVectorStore
from varagity_stack.model_servers import OFFLINE_ENV, ManagedProcess, ProcessStartError
from varagity_stack.supervisor import api_argv, stop_on_signals

log = logging.getLogger(__name__)
REPO_ROOT = Path(__file__).resolve().parents[1]

PREFIX = "vgt-"
"""Namespaces, the bridge and host-side veth ends all start with it (teardown finds them)."""
BRIDGE = f"{PREFIX}br0"
DEFAULT_SUBNET = "10.231.0"
PG_PORT = 5432
REDIS_PORT = 6379
API_PORT = 8000
DAGSTER_PORT = 3000
CODE_PORT = 4000
EMBEDDING_PORT = 8092
LLM_PORT = 8091
DB_USER = "varagity"
DB_NAME = "varagity"
CLIENT_KEEPALIVES = (
    "keepalives=1&keepalives_idle=10&keepalives_interval=5&keepalives_count=3"
    "&tcp_user_timeout=20000&connect_timeout=10"
)
"""libpq options of every host's connections: a host cut off from the database gives up
its connections within ~20 s (a step it held fails there, and is retried elsewhere)
instead of waiting on TCP retransmissions for minutes; the server does the same for
the sessions of a vanished host (its ``tcp_keepalives_*`` settings)."""
PG_OS_USER = "pgserver"
"""The system user the embedded server's binaries run as (``pgserver`` creates it)."""


class TopologyError(RuntimeError):
    """The topology cannot start or stop; the message says what is in the way."""


def _run(argv: Sequence[str], *, check: bool = True, timeout: float = 30) -> str:
    """Run an ``ip``/system command, returning its stdout; raises with its stderr."""
    proc = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout)
    if check and proc.returncode != 0:
        raise TopologyError(f"{' '.join(argv)} failed ({proc.returncode}): {proc.stderr.strip()}")
    return proc.stdout


@dataclass(frozen=True)
class Host:
    """One host: its namespace, address, role and folder."""

    name: str
    ip: str
    role: str  # db | orch | serving | worker
    home: Path

    @property
    def ns(self) -> str:
        """Its network namespace."""
        return f"{PREFIX}{self.name}"

    @property
    def veth(self) -> str:
        """The machine-side end of its veth pair (on the bridge); inside it is ``eth0``."""
        return f"{PREFIX}{self.name}"[:15]

    @property
    def logs(self) -> Path:
        """Its processes' log files."""
        return self.home / "logs"


class Network:
    """The bridge and one namespace + veth pair per host (iproute2; needs root)."""

    def __init__(self, subnet: str = DEFAULT_SUBNET) -> None:
        """Nothing is created until :meth:`add`."""
        self.subnet = subnet
        self.gateway = f"{subnet}.1"

    @staticmethod
    def check_free() -> None:
        """Raise unless this machine can make the topology's network (root, ``ip``, no
        bridge of another topology)."""
        if os.geteuid() != 0:
            raise TopologyError("the topology makes network namespaces: run it as root")
        if shutil.which("ip") is None:
            raise TopologyError("`ip` (Debian iproute2) is not installed")
        if link_exists(BRIDGE):
            raise TopologyError(
                f"{BRIDGE} exists: another topology runs (or a dead one left it); "
                "`varagity topology down` removes it"
            )

    def create_bridge(self) -> None:
        """The bridge, with the machine's own address on it (how tests and the operator
        on the machine reach the hosts)."""
        _run(["ip", "link", "add", BRIDGE, "type", "bridge"])
        _run(["ip", "addr", "add", f"{self.gateway}/24", "dev", BRIDGE])
        _run(["ip", "link", "set", BRIDGE, "up"])

    def add(self, host: Host) -> None:
        """The host's namespace, loopback up, ``eth0`` with its address, plugged into the
        bridge."""
        _run(["ip", "netns", "add", host.ns])
        _run(
            [
                "ip",
                "link",
                "add",
                host.veth,
                "type",
                "veth",
                "peer",
                "name",
                "eth0",
                "netns",
                host.ns,
            ]
        )
        _run(["ip", "link", "set", host.veth, "master", BRIDGE, "up"])
        exec_ns = ["ip", "netns", "exec", host.ns]
        _run([*exec_ns, "ip", "addr", "add", f"{host.ip}/24", "dev", "eth0"])
        _run([*exec_ns, "ip", "link", "set", "eth0", "up"])
        _run([*exec_ns, "ip", "link", "set", "lo", "up"])

    @staticmethod
    def cut(host: Host) -> None:
        """Take the host off the network (its cable pulled): its processes keep running."""
        _run(["ip", "link", "set", host.veth, "down"])

    @staticmethod
    def reconnect(host: Host) -> None:
        """Plug the host back in."""
        _run(["ip", "link", "set", host.veth, "up"])


def link_exists(name: str) -> bool:
    return subprocess.run(["ip", "link", "show", name], capture_output=True).returncode == 0


def namespaces() -> list[str]:
    """The topology's namespaces that exist now."""
    out = _run(["ip", "netns", "list"], check=False)
    return [line.split()[0] for line in out.splitlines() if line.startswith(PREFIX)]


def namespace_pids(ns: str) -> list[int]:
    """The processes inside namespace ``ns``."""
    out = _run(["ip", "netns", "pids", ns], check=False)
    return [int(p) for p in out.split() if p.isdigit()]


def kill_namespace(ns: str, timeout: float = 10.0) -> int:
    """SIGTERM, then SIGKILL, every process inside ``ns``; returns how many there were."""
    pids = namespace_pids(ns)
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while namespace_pids(ns) and time.monotonic() < deadline:
        time.sleep(0.2)
    for pid in namespace_pids(ns):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 5
    while namespace_pids(ns) and time.monotonic() < deadline:
        time.sleep(0.1)
    return len(pids)


def teardown_leftovers() -> list[str]:
    """Remove every namespace, veth and the bridge of a topology (processes inside first).

    Returns:
        One line per thing removed.
    """
    done = []
    for ns in namespaces():
        n = kill_namespace(ns)
        _run(["ip", "netns", "del", ns], check=False)
        done.append(f"namespace {ns} ({n} process(es))")
    out = _run(["ip", "-o", "link", "show"], check=False)
    for line in out.splitlines():
        parts = line.split(": ")
        if len(parts) > 1:
            name = parts[1].split("@")[0]
            if name.startswith(PREFIX) and name != BRIDGE:
                _run(["ip", "link", "del", name], check=False)
                done.append(f"link {name}")
    if link_exists(BRIDGE):
        _run(["ip", "link", "del", BRIDGE], check=False)
        done.append(f"bridge {BRIDGE}")
    return done


def wait_tcp(host: str, port: int, timeout: float, proc: ManagedProcess | None = None) -> None:
    """Wait until ``host:port`` accepts connections (or ``proc`` exits, or time runs out)."""
    deadline = time.monotonic() + timeout
    while True:
        if proc is not None and not proc.running:
            raise ProcessStartError(
                f"{proc.name} exited ({proc.returncode}) before it listened on {host}:{port}; "
                f"last lines of {proc.log_path}:\n{proc.log_tail()}"
            )
        with contextlib.suppress(OSError), socket.create_connection((host, port), timeout=1.0):
            return
        if time.monotonic() > deadline:
            tail = f"; last lines of {proc.log_path}:\n{proc.log_tail()}" if proc else ""
            raise ProcessStartError(
                f"nothing listened on {host}:{port} within {timeout:.0f} s{tail}"
            )
        time.sleep(0.25)


@dataclass
class TopologySpec:
    """What to start: how many workers, where, and with which options."""

    root: Path
    workers: int = 2
    subnet: str = DEFAULT_SUBNET
    docs_path: Path | None = None
    llm: bool = False
    worker_concurrency: int = 1
    visibility_timeout_s: float = 300.0
    extra_env: dict[str, str] = field(default_factory=dict)
    """Further settings for every host (e.g. ``INGEST_BATCH_SIZE``)."""

    def __post_init__(self) -> None:
        if not 1 <= self.workers <= 9:
            raise ValueError(f"workers must be 1..9, got {self.workers}")


class Topology:
    """The hosts of one deployment, their processes, and how to stop them all."""

    def __init__(self, spec: TopologySpec) -> None:
        """Hosts and secrets are decided here; nothing starts until :meth:`start`."""
        self.spec = spec
        self.root = spec.root.resolve()
        self.network = Network(spec.subnet)
        sub = spec.subnet
        hosts = [
            Host("db", f"{sub}.10", "db", self.root / "hosts" / "db"),
            Host("orch", f"{sub}.11", "orch", self.root / "hosts" / "orch"),
            Host("serving", f"{sub}.12", "serving", self.root / "hosts" / "serving"),
        ]
        hosts += [
            Host(f"worker{i}", f"{sub}.{20 + i}", "worker", self.root / "hosts" / f"worker{i}")
            for i in range(1, spec.workers + 1)
        ]
        self.hosts = {h.name: h for h in hosts}
        self.docs_path = (spec.docs_path or self.root / "corpus").resolve()
        secrets_file = self.root / "secrets.json"
        if secrets_file.exists():
            known = json.loads(secrets_file.read_text())
        else:
            known = {k: secrets.token_hex(16) for k in ("db", "redis", "api")}
        self.secrets: dict[str, str] = known
        self.procs: dict[str, list[ManagedProcess]] = {name: [] for name in self.hosts}
        self.stopping = threading.Event()
        self._network_made = False

    # --- addresses -----------------------------------------------------------------------
    def host(self, name: str) -> Host:
        """The host called ``name`` (db, orch, serving, worker1, ...)."""
        return self.hosts[name]

    @property
    def workers(self) -> list[Host]:
        """The worker hosts, in order."""
        return [h for h in self.hosts.values() if h.role == "worker"]

    @property
    def database_url(self) -> str:
        """The app's (and Dagster's) database on the db host, over TCP with a password."""
        db = self.host("db")
        return (
            f"postgresql://{DB_USER}:{self.secrets['db']}@{db.ip}:{PG_PORT}/{DB_NAME}"
            f"?{CLIENT_KEEPALIVES}"
        )

    @property
    def broker_url(self) -> str:
        """The Celery broker on the orchestration host."""
        return f"redis://:{self.secrets['redis']}@{self.host('orch').ip}:{REDIS_PORT}/0"

    @property
    def api_url(self) -> str:
        """The API on the serving host."""
        return f"http://{self.host('serving').ip}:{API_PORT}"

    @property
    def dagster_url(self) -> str:
        """The Dagster UI's guarded front on the orchestration host."""
        return f"http://{self.host('orch').ip}:{DAGSTER_PORT}"

    @property
    def api_key(self) -> str:
        """The bearer key of the API and the Dagster front."""
        return self.secrets["api"]

    def host_env(self, host: Host) -> dict[str, str]:
        """The settings of every process on ``host`` (the same names an operator sets)."""
        serving = self.host("serving")
        env = {
            **OFFLINE_ENV,
            "PYTHONPATH": str(REPO_ROOT),
            "PYTHONUNBUFFERED": "1",
            "HOME": str(host.home),
            "VARAGITY_HOME": str(host.home),
            "DOCS_PATH": str(self.docs_path),
            "DATABASE_URL": self.database_url,
            "STEP_EXECUTOR": "celery",
            "ARTIFACT_STORE": "postgres",
            "CELERY_BROKER_URL": self.broker_url,
            "CELERY_VISIBILITY_TIMEOUT_S": str(self.spec.visibility_timeout_s),
            "HOST": host.ip,
            "API_PORT": str(API_PORT),
            "DAGSTER_PORT": str(DAGSTER_PORT),
            "EMBEDDING_PORT": str(EMBEDDING_PORT),
            "LLM_PORT": str(LLM_PORT),
            "EMBEDDING_BASE_URL": f"http://{host.ip}:{EMBEDDING_PORT}/v1",
            "LLM_BASE_URL": f"http://{serving.ip}:{LLM_PORT}/v1",
            "CONTEXTUALIZE": "true" if self.spec.llm else "false",
            "DAGSTER_URL": self.dagster_url,
            "API_KEY": self.api_key,
            "DAGSTER_HOME": str(host.home / "dagster"),
            "VARAGITY_DAGSTER_PG_URL": sqlalchemy_psycopg2_url(self.database_url),
            "VARAGITY_DAGSTER_LOG_DIR": str(host.home / "dagster" / "compute_logs"),
            **self.spec.extra_env,
        }
        return env

    def settings_for(self, name: str) -> Settings:
        """The settings the processes of host ``name`` run with (for clients in tests)."""
        env = self.host_env(self.host(name))
        fields = {k: v for k, v in env.items() if k in Settings.model_fields}
        return Settings(_env_file=None, **fields)  # type: ignore[call-arg,arg-type]

    # --- processes -----------------------------------------------------------------------
    def process(
        self, host: Host, name: str, argv: Sequence[str], env: dict[str, str] | None = None
    ) -> ManagedProcess:
        """A process of ``host`` (started inside its namespace; not started yet). The
        machine's own settings are not inherited: each host has only its own."""
        proc = ManagedProcess(
            name,
            ["ip", "netns", "exec", host.ns, *argv],
            log_dir=host.logs,
            env={**self.host_env(host), **(env or {})},
            unset=(*Settings.model_fields, "DAGSTER_HOME", "VIRTUAL_ENV"),
            cwd=host.home,
        )
        self.procs[host.name].append(proc)
        return proc

    def _prepare_folders(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        (self.root / "secrets.json").write_text(json.dumps(self.secrets))
        os.chmod(self.root / "secrets.json", 0o600)
        self.docs_path.mkdir(parents=True, exist_ok=True)
        instance = instance_config(self.ingest_runs)
        for host in self.hosts.values():
            (host.home / "dagster" / "compute_logs").mkdir(parents=True, exist_ok=True)
            host.logs.mkdir(parents=True, exist_ok=True)
            (host.home / "dagster" / "dagster.yaml").write_text(instance, encoding="utf-8")

    @property
    def ingest_runs(self) -> int:
        """Ingest runs at once: one per worker host (at least the embedded stack's two),
        so every worker has a run's steps to take."""
        return max(2, len(self.workers))

    # --- db host -------------------------------------------------------------------------
    def _start_db(self) -> None:
        from pgserver._commands import POSTGRES_BIN_PATH

        db = self.host("db")
        pgdata = db.home / "pgdata"
        bin_dir = Path(POSTGRES_BIN_PATH)
        _ensure_os_user(PG_OS_USER)
        _traversable(db.home)
        as_pg = ["runuser", "-u", PG_OS_USER, "--"]
        if not (pgdata / "PG_VERSION").exists():
            pgdata.mkdir(parents=True, exist_ok=True)
            pwfile = db.home / "pwfile"
            pwfile.write_text(self.secrets["db"] + "\n")
            shutil.chown(pgdata, PG_OS_USER, PG_OS_USER)
            shutil.chown(pwfile, PG_OS_USER, PG_OS_USER)
            os.chmod(pgdata, 0o700)
            _run(
                [
                    *as_pg,
                    str(bin_dir / "initdb"),
                    "-D",
                    str(pgdata),
                    "-U",
                    DB_USER,
                    f"--pwfile={pwfile}",
                    "--auth-host=scram-sha-256",
                    "--auth-local=trust",
                    "-E",
                    "UTF8",
                    "--no-instructions",
                ],
                timeout=120,
            )
            pwfile.unlink()
            with open(pgdata / "pg_hba.conf", "a", encoding="utf-8") as hba:
                hba.write(f"host all all {self.spec.subnet}.0/24 scram-sha-256\n")
        db.logs.mkdir(parents=True, exist_ok=True)
        shutil.chown(db.logs, PG_OS_USER, PG_OS_USER)
        proc = self.process(
            db,
            "postgres",
            [
                *as_pg,
                str(bin_dir / "postgres"),
                "-D",
                str(pgdata),
                "-c",
                f"listen_addresses={db.ip}",
                "-p",
                str(PG_PORT),
                "-c",
                f"unix_socket_directories={pgdata}",
                "-c",
                "max_connections=300",
                # a peer that vanished (host cut off) is noticed in ~25 s, so its session's
                # locks go rather than blocking the step retried on another host
                "-c",
                "tcp_keepalives_idle=10",
                "-c",
                "tcp_keepalives_interval=5",
                "-c",
                "tcp_keepalives_count=3",
                "-c",
                "tcp_user_timeout=25000",
            ],
        )
        proc.start()
        deadline = time.monotonic() + 60
        admin = self.database_url.replace(f"/{DB_NAME}?", "/postgres?")
        while True:
            try:
                with psycopg.connect(admin, autocommit=True, connect_timeout=3) as conn:
                    if not conn.execute(
                        "SELECT 1 FROM pg_database WHERE datname = %s", (DB_NAME,)
                    ).fetchone():
                        conn.execute(f'CREATE DATABASE "{DB_NAME}"')
                break
            except psycopg.OperationalError as exc:
                if not proc.running or time.monotonic() > deadline:
                    raise ProcessStartError(
                        f"postgres on {db.ip} did not accept connections ({exc}); last lines "
                        f"of {proc.log_path}:\n{proc.log_tail()}"
                    ) from exc
                time.sleep(0.3)
        PgVectorStore(
            self.database_url, embedding_dim=self.settings_for("db").EMBEDDING_DIM
        ).close()

    # --- orchestration host ----------------------------------------------------------------
    def _start_redis(self) -> ManagedProcess:
        orch = self.host("orch")
        data = orch.home / "redis"
        data.mkdir(parents=True, exist_ok=True)
        proc = self.process(
            orch,
            "redis",
            [
                shutil.which("redis-server") or "redis-server",
                "--bind",
                orch.ip,
                "--port",
                str(REDIS_PORT),
                "--requirepass",
                self.secrets["redis"],
                "--dir",
                str(data),
                # queued and taken-but-unacknowledged steps survive a broker restart
                "--appendonly",
                "yes",
                "--appendfsync",
                "always",
                "--save",
                "",
                "--daemonize",
                "no",
            ],
        )
        proc.start()
        wait_tcp(orch.ip, REDIS_PORT, 30, proc)
        return proc

    def restart_broker(self, *, kill: bool = True) -> None:
        """Stop the broker (SIGKILL: the host crashed; else a clean shutdown) and start it
        again on its append-only file."""
        orch = self.host("orch")
        redis = next(p for p in self.procs["orch"] if p.name == "redis")
        if kill and redis.pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(redis.pid, signal.SIGKILL)
        redis.stop(timeout=10)
        redis.start()
        wait_tcp(orch.ip, REDIS_PORT, 30, redis)

    def _start_dagster(self) -> None:
        orch, serving = self.host("orch"), self.host("serving")
        code = self.process(
            serving,
            "dagster-code-server",
            [
                sys.executable,
                "-m",
                "varagity_assets.code_server",
                "--host",
                serving.ip,
                "--port",
                str(CODE_PORT),
                "--module-name",
                "varagity_assets.definitions",
                "--location-name",
                "varagity",
            ],
        )
        code.start()
        workspace = orch.home / "dagster" / "workspace.yaml"
        workspace.write_text(
            "# written by `varagity topology up`: the location is served from the serving host\n"
            "load_from:\n"
            "  - grpc_server:\n"
            f"      host: {serving.ip}\n"
            f"      port: {CODE_PORT}\n"
            "      location_name: varagity\n",
            encoding="utf-8",
        )
        bin_dir = Path(sys.executable).parent
        web = self.process(
            orch,
            "dagster-webserver",
            [
                str(bin_dir / "dagster-webserver"),
                "-h",
                "127.0.0.1",
                "-p",
                "3070",
                "-w",
                str(workspace),
            ],
        )
        front = self.process(
            orch,
            "dagster-front",
            [
                sys.executable,
                "-m",
                "varagity_stack.dagster_front",
                "--upstream",
                "http://127.0.0.1:3070",
                "--host",
                orch.ip,
                "--port",
                str(DAGSTER_PORT),
            ],
        )
        daemon = self.process(
            orch, "dagster-daemon", [str(bin_dir / "dagster-daemon"), "run", "-w", str(workspace)]
        )
        wait_tcp(serving.ip, CODE_PORT, 300, code)
        web.start()
        front.start()
        self._wait_signed_in(front, f"{self.dagster_url}/server_info")
        daemon.start()

    def _wait_signed_in(self, proc: ManagedProcess, url: str) -> None:
        """Wait until ``url`` answers a request carrying the deployment's API key."""
        proc.wait_ready(
            url,
            timeout=300,
            request_timeout=30,
            cancel=self.stopping,
            headers={"Authorization": f"Bearer {self.api_key}"},
        )

    # --- serving and worker hosts ----------------------------------------------------------
    def _embedding(self, host: Host) -> ManagedProcess:
        proc = self.process(
            host,
            "embedding",
            [
                sys.executable,
                "-m",
                "varagity_stack.embedding_server",
                "--host",
                host.ip,
                "--port",
                str(EMBEDDING_PORT),
                "--model",
                self.settings_for(host.name).EMBEDDING_MODEL,
                "--threads",
                str(os.cpu_count() or 1),
                "--log-level",
                "warning",
            ],
        )
        proc.ready_url = f"http://{host.ip}:{EMBEDDING_PORT}/v1/models"
        return proc.start()

    def _celery_worker(self, host: Host, queues: Sequence[str]) -> ManagedProcess:
        proc = self.process(
            host,
            "celery-worker",
            [
                sys.executable,
                "-m",
                "varagity_assets.celery_worker",
                "--queues",
                ",".join(queues),
                "--concurrency",
                str(self.spec.worker_concurrency),
                "--hostname",
                f"{host.name}@varagity",
            ],
        )
        return proc.start()

    def start_worker(self, name: str) -> None:
        """(Re)start the Celery worker of worker host ``name`` (its embedding server too,
        unless it runs)."""
        host = self.host(name)
        procs = {p.name: p for p in self.procs[name]}
        emb = procs.get("embedding")
        if emb is None or not emb.running:
            if emb is not None:
                self.procs[name].remove(emb)
            self._embedding(host).wait_ready(timeout=300, cancel=self.stopping)
        worker = procs.get("celery-worker")
        if worker is not None:
            self.procs[name].remove(worker)
            worker.stop(timeout=5)
        self._celery_worker(host, [self.settings_for(name).CELERY_QUEUE])

    def kill_worker(self, name: str) -> int | None:
        """SIGKILL the Celery worker of host ``name`` (its whole process group: the worker
        and its pool child mid-step); returns its pid."""
        worker = next(p for p in self.procs[name] if p.name == "celery-worker")
        pid = worker.pid
        if pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)
        worker.stop(timeout=5)
        return pid

    def _start_serving_and_workers(self) -> None:
        serving = self.host("serving")
        started = [self._embedding(serving)]
        started += [self._embedding(w) for w in self.workers]
        if self.spec.llm:
            from varagity_stack.model_servers import llm_argv

            # the serving host's settings name its address (HOST) and LLM_PORT
            llm = self.process(
                serving,
                "llm",
                llm_argv(self.settings_for("serving")),
                env={"API_KEY": ""},
            )
            llm.ready_url = f"http://{serving.ip}:{LLM_PORT}/v1/models"
            started.append(llm.start())
        for proc in started:
            proc.wait_ready(timeout=600, cancel=self.stopping)
        index_queue = self.settings_for("serving").CELERY_INDEX_QUEUE
        self._celery_worker(serving, [index_queue])
        for w in self.workers:
            self._celery_worker(w, [self.settings_for(w.name).CELERY_QUEUE])
        api = self.process(serving, "api", api_argv(serving.ip, API_PORT))
        api.start()
        self._wait_signed_in(api, f"{self.api_url}/api/health")
        self.wait_workers(timeout=120)

    def wait_workers(self, timeout: float = 120.0, names: Sequence[str] | None = None) -> None:
        """Wait until the Celery workers of ``names`` (default: every host's) answer a ping
        through the broker."""
        from varagity_assets.celery_worker import worker_app

        wanted = {f"{n}@varagity" for n in (names or ["serving", *[w.name for w in self.workers]])}
        app = worker_app(self.settings_for("serving"))
        deadline = time.monotonic() + timeout
        seen: set[str] = set()
        try:
            while time.monotonic() < deadline:
                with contextlib.suppress(Exception):
                    replies = app.control.ping(timeout=1.0) or []
                    seen = {name for reply in replies for name in reply}
                if wanted <= seen:
                    return
                time.sleep(0.5)
        finally:
            app.close()
        raise TopologyError(
            f"Celery workers {sorted(wanted - seen)} did not answer within {timeout:.0f} s"
        )

    # --- whole topology ------------------------------------------------------------------
    def start(self) -> None:
        """Make the network and start every host, in dependency order; on any failure
        everything already made is torn down before the error propagates."""
        try:
            self._prepare_folders()
            self.network.check_free()
            self._network_made = True  # from here on, whatever exists of it is ours
            self.network.create_bridge()
            for host in self.hosts.values():
                self.network.add(host)
            self._start_db()
            self._start_redis()
            self._start_dagster()
            self._start_serving_and_workers()
            self.write_state()
        except BaseException:
            self.stop()
            raise

    def write_state(self) -> None:
        """Record the hosts and processes in ``root/topology.json`` (for ``status``)."""
        state = {
            "launcher": os.getpid(),
            "api": self.api_url,
            "dagster": self.dagster_url,
            "docs_path": str(self.docs_path),
            "hosts": {
                h.name: {
                    "ip": h.ip,
                    "namespace": h.ns,
                    "home": str(h.home),
                    "processes": {p.name: p.pid for p in self.procs[h.name]},
                }
                for h in self.hosts.values()
            },
        }
        (self.root / "topology.json").write_text(json.dumps(state, indent=2))

    def dead(self) -> list[str]:
        """``host/process`` for each started process that has exited."""
        return [
            f"{name}/{p.name}"
            for name, procs in self.procs.items()
            for p in procs
            if p.pid is not None and not p.running
        ]

    def stop(self) -> None:
        """Stop every process (workers, serving, orchestration, then the database), then
        remove the namespaces, veths and bridge. Safe to call twice and after a failed
        start."""
        self.stopping.set()

        def stop_host(name: str) -> None:
            for proc in reversed(self.procs[name]):
                try:
                    if proc.name == "postgres" and proc.pid is not None:
                        # a fast shutdown (SIGINT): no waiting for sessions to end
                        with contextlib.suppress(ProcessLookupError):
                            os.killpg(proc.pid, signal.SIGINT)
                    proc.stop(timeout=10)
                except Exception as exc:  # keep stopping the rest
                    log.warning("stopping %s/%s: %s", name, proc.name, exc)

        # the hosts that use the database stop together (as machines shut down would),
        # then the database
        users = [name for name in self.hosts if name != "db"]
        threads = [threading.Thread(target=stop_host, args=(name,)) for name in users]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        stop_host("db")
        if self._network_made:  # never another topology's (a start refused by its bridge)
            for line in teardown_leftovers():
                log.info("removed %s", line)
            self._network_made = False
        with contextlib.suppress(FileNotFoundError):
            (self.root / "topology.json").unlink()

    def __enter__(self) -> Topology:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def instance_config(ingest_runs: int) -> str:
    """The Dagster instance of every host: ``dagster_home/dagster.yaml`` (storage in
    Postgres through ``VARAGITY_DAGSTER_PG_URL``) with ``ingest_runs`` ingest runs at once
    instead of the embedded stack's two (whose embedding server is the bottleneck)."""
    config = yaml.safe_load((REPO_ROOT / "dagster_home" / "dagster.yaml").read_text())
    for limit in config["concurrency"]["runs"]["tag_concurrency_limits"]:
        if limit.get("key") == STAGE_TAG and limit.get("value") == STAGE_INGEST:
            limit["limit"] = ingest_runs
    header = (
        "# written by `varagity topology up` from dagster_home/dagster.yaml (see the comments "
        f"there); ingest runs at once: {ingest_runs}\n"
    )
    return header + yaml.safe_dump(config, sort_keys=False)


def _ensure_os_user(name: str) -> None:
    """The system user the database runs as (created like ``pgserver`` does, if missing)."""
    if subprocess.run(["id", name], capture_output=True).returncode != 0:
        _run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", name])


def _traversable(path: Path) -> None:
    """Let the database's system user reach ``path`` (search permission on its parents)."""
    path.mkdir(parents=True, exist_ok=True)
    for folder in [path, *path.parents]:
        mode = folder.stat().st_mode
        if not mode & 0o001:
            os.chmod(folder, mode | 0o001)


@contextlib.contextmanager
def running(spec: TopologySpec) -> Iterator[Topology]:
    """A started topology, always torn down on exit."""
    topo = Topology(spec)
    topo.start()
    try:
        yield topo
    finally:
        topo.stop()


def run(spec: TopologySpec) -> int:
    """``varagity topology up``: start, print the addresses, watch until Ctrl-C/SIGTERM
    (or a process dies), then tear everything down."""
    topo = Topology(spec)
    stop_on_signals(topo.stopping, "tearing the topology down", log)
    try:
        topo.start()
    except Exception as exc:
        log.error("topology start failed: %s", exc)
        return 1
    print(describe(topo), flush=True)
    code = 0
    try:
        while not topo.stopping.wait(2.0):
            dead = topo.dead()
            if dead:
                log.error("process(es) exited: %s; stopping the topology", ", ".join(dead))
                code = 1
                break
    finally:
        topo.stop()
    return code


def describe(topo: Topology) -> str:
    """The hosts, their addresses and processes, and how to reach the deployment."""
    lines = ["Varagity topology is up:"]
    for h in topo.hosts.values():
        names = ", ".join(p.name for p in topo.procs[h.name])
        lines.append(f"  {h.name:<9} {h.ip:<13} ns {h.ns:<13} {names}")
    lines += [
        f"  API + web client : {topo.api_url}/  (Authorization: Bearer <API_KEY>)",
        f"  Dagster UI       : {topo.dagster_url}/",
        f"  API_KEY          : in {topo.root / 'secrets.json'} (key 'api')",
        f"  Corpus folder    : {topo.docs_path}  (shared by every host)",
        f"  Host folders     : {topo.root / 'hosts'}/<host> (logs/ in each)",
        "Ctrl-C tears it down.",
    ]
    return "\n".join(lines)


def status() -> str:
    """The namespaces that exist and the processes inside each."""
    found = namespaces()
    if not found:
        return "no topology namespaces"
    return "\n".join(f"{ns}: {len(namespace_pids(ns))} process(es)" for ns in found)
