"""The embedded stack's model servers, run as supervised child processes.

:class:`ManagedProcess` starts a command in its own session (so the whole process
group can be signalled), sends its output to a log file, waits for an HTTP readiness
endpoint, and stops the group with SIGTERM then SIGKILL.

:func:`llm_server_process` runs ``python -m llama_cpp.server`` on the ``LOCAL_LLM``
model's GGUF (verified, and assembled from its packages on first use: see
:mod:`varagity.local_models`), :func:`reader_server_process` the same server on the
``GRAPH_READER_LLM`` model (graph turns' short readings); :func:`embedding_server_process`
runs :mod:`varagity_stack.embedding_server`. All answer ``GET /v1/models`` once the
weights are loaded, and all children run with the model hubs switched off.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import IO

import httpx

from varagity.config import LocalLlmName, Settings
from varagity.local_models import LOCAL_MODELS, ModelFileError, model_gguf_path

#: Environment every model server child gets: no model hub, ever.
OFFLINE_ENV: dict[str, str] = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "TOKENIZERS_PARALLELISM": "false",
}

# The checkout that holds the varagity packages, so children import this checkout.
_SOURCE_ROOT = Path(__file__).resolve().parents[1]


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nobody listens on right now (for private stacks and tests)."""
    with socket.socket() as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


class ProcessStartError(RuntimeError):
    """A managed process exited or did not become ready; the message ends with its log tail."""


def cpu_count() -> int:
    """Cores this process may run on (CPU affinity aware).

    Returns:
        At least 1.
    """
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


class ManagedProcess:
    """A child process in its own process group, logging to a file.

    Attributes:
        name: Short name, used for the log file and in messages.
        argv: The command line.
        env: Variables added to (and overriding) the parent's environment.
        unset: Variables of the parent's environment the child does not inherit.
        log_path: Where stdout and stderr go (appended).
        ready_url: Default URL :meth:`wait_ready` polls.
    """

    def __init__(
        self,
        name: str,
        argv: Sequence[str],
        *,
        log_dir: Path | str,
        env: Mapping[str, str] | None = None,
        unset: Sequence[str] = (),
        cwd: Path | str | None = None,
        ready_url: str | None = None,
    ) -> None:
        """Describe the process; nothing starts until :meth:`start`.

        Args:
            name: Short name (log file ``<log_dir>/<name>.log``).
            argv: Command line.
            log_dir: Folder for the log file (created when missing).
            env: Extra environment variables for the child.
            unset: Names left out of the environment the child inherits.
            cwd: Working directory of the child (the parent's when None).
            ready_url: URL that answers 200 once the process is ready.
        """
        self.name = name
        self.argv = [str(a) for a in argv]
        self.env = dict(env or {})
        self.unset = frozenset(name.upper() for name in unset)
        self.cwd = Path(cwd) if cwd is not None else None
        self.ready_url = ready_url
        self.log_path = Path(log_dir) / f"{name}.log"
        self._proc: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None

    def __repr__(self) -> str:
        state = "running" if self.running else "stopped"
        return f"ManagedProcess(name={self.name!r}, pid={self.pid}, {state})"

    def __enter__(self) -> ManagedProcess:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def pid(self) -> int | None:
        """Process id of the child (None before :meth:`start`)."""
        return self._proc.pid if self._proc is not None else None

    @property
    def running(self) -> bool:
        """Whether the child has been started and has not exited."""
        return self._proc is not None and self._proc.poll() is None

    @property
    def returncode(self) -> int | None:
        """Exit status once the child has exited, else None."""
        return self._proc.poll() if self._proc is not None else None

    def start(self) -> ManagedProcess:
        """Start the child in a new session (its own process group).

        Returns:
            self, for chaining.

        Raises:
            ProcessStartError: It is already running, or the executable cannot be run.
        """
        if self.running:
            raise ProcessStartError(f"{self.name} is already running (pid {self.pid})")
        self._close_log()
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = open(self.log_path, "ab", buffering=0)  # noqa: SIM115 - closed in stop()
        stamp = time.strftime("%Y-%m-%d %H:%M:%S")
        self._log.write(f"\n=== {stamp} starting {self.name}: {' '.join(self.argv)}\n".encode())
        try:
            self._proc = subprocess.Popen(
                self.argv,
                stdin=subprocess.DEVNULL,
                stdout=self._log,
                stderr=subprocess.STDOUT,
                env={
                    **{k: v for k, v in os.environ.items() if k.upper() not in self.unset},
                    **self.env,
                },
                cwd=self.cwd,
                start_new_session=True,
                preexec_fn=_die_with_parent if sys.platform == "linux" else None,
            )
        except OSError as exc:
            self._close_log()
            raise ProcessStartError(f"cannot start {self.name} ({self.argv[0]}): {exc}") from exc
        return self

    def log_tail(self, lines: int = 40) -> str:
        """The last lines of the log file.

        Args:
            lines: How many lines.

        Returns:
            The text ("" when there is no log yet).
        """
        try:
            with open(self.log_path, encoding="utf-8", errors="replace") as fh:
                return "".join(deque(fh, maxlen=lines))
        except FileNotFoundError:
            return ""

    def _failure(self, what: str) -> ProcessStartError:
        return ProcessStartError(
            f"{self.name} {what}; last log lines ({self.log_path}):\n{self.log_tail(40)}"
        )

    def wait_ready(
        self,
        url: str | None = None,
        timeout: float = 120.0,
        interval: float = 0.25,
        *,
        request_timeout: float = 5.0,
        cancel: threading.Event | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        """Poll ``url`` until it answers 200.

        Args:
            url: Readiness URL; :attr:`ready_url` when None.
            timeout: Seconds to wait in all.
            interval: Seconds between polls.
            request_timeout: Seconds one poll may take (a health route that probes its
                own dependencies answers slowly on a loaded machine).
            cancel: Stop waiting (raising) once this is set.
            headers: Sent with each poll (the bearer key of a limited health route).

        Raises:
            ProcessStartError: The process exited or the timeout passed (the message
                carries the last 40 log lines). The process is left as it is; call
                :meth:`stop`.
            ValueError: No URL was given and the process has no ``ready_url``.
        """
        target = url or self.ready_url
        if not target:
            raise ValueError(f"{self.name}: no readiness URL given")
        if self._proc is None:
            raise ProcessStartError(f"{self.name} was never started")
        deadline = time.monotonic() + timeout
        last = "no answer yet"
        with httpx.Client(
            timeout=min(request_timeout, max(0.5, timeout)), headers=headers
        ) as client:
            while True:
                if cancel is not None and cancel.is_set():
                    raise ProcessStartError(f"{self.name}: stopped waiting (shutting down)")
                code = self._proc.poll()
                if code is not None:
                    raise self._failure(f"exited with status {code} before it became ready")
                try:
                    resp = client.get(target)
                    if resp.status_code == 200:
                        return
                    last = f"HTTP {resp.status_code}"
                except httpx.HTTPError as exc:
                    last = type(exc).__name__
                if time.monotonic() >= deadline:
                    raise self._failure(
                        f"was not ready at {target} within {timeout:g}s (last: {last})"
                    )
                time.sleep(interval)

    def stop(self, timeout: float = 10.0) -> int | None:
        """Stop the whole process group: SIGTERM, then SIGKILL after ``timeout``.

        Safe to call more than once, and on a process that already exited.

        Args:
            timeout: Seconds to wait after SIGTERM before SIGKILL.

        Returns:
            The child's exit status (None when it was never started).
        """
        proc = self._proc
        if proc is None:
            return None
        pgid = proc.pid  # start_new_session: the child leads its own group
        _signal_group(pgid, signal.SIGTERM)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            _signal_group(pgid, signal.SIGKILL)
            proc.wait()
        # Grandchildren that outlived the leader (or ignored SIGTERM) go too.
        deadline = time.monotonic() + min(timeout, 2.0)
        while _group_alive(pgid) and time.monotonic() < deadline:
            time.sleep(0.05)
        if _group_alive(pgid):
            _signal_group(pgid, signal.SIGKILL)
        self._close_log()
        return proc.returncode

    def _close_log(self) -> None:
        if self._log is not None:
            self._log.close()
            self._log = None


_PR_SET_PDEATHSIG = 1
# loaded up front: the pre-exec hook runs between fork and exec, where importing is unsafe
_LIBC = ctypes.CDLL(None, use_errno=True) if sys.platform == "linux" else None


def _die_with_parent() -> None:
    """In the child before exec (Linux): get SIGTERM when the process that started it
    dies, so a supervisor killed with -9 leaves no unsupervised children behind.

    The signal follows the parent *thread*; the supervisor starts children from its
    main thread only. SIGTERM is unblocked and its default action restored first: a
    blocked or ignored signal survives exec, and a supervisor started from a process
    that blocks or ignores it (measured: a test run whose earlier tests left it so)
    would have children that outlive it.
    """
    if _LIBC is not None:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        _LIBC.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def local_llm_gguf(settings: Settings, name: LocalLlmName | None = None) -> Path:
    """The verified GGUF of a packaged chat model, assembled into the cache on first use.

    Args:
        settings: Supplies LOCAL_LLM (the model when ``name`` is None) and
            MODEL_CACHE_PATH.
        name: The packaged model (:data:`~varagity.local_models.LOCAL_MODELS`).

    Returns:
        The GGUF path (size and sha256 checked against :mod:`varagity.local_models`).

    Raises:
        ProcessStartError: A weight package is missing or its file differs from the
            catalog; the message names it and the pip command that fixes it.
    """
    try:
        model = LOCAL_MODELS[name or settings.LOCAL_LLM]
        return model_gguf_path(model, settings.model_cache_path)
    except ModelFileError as exc:
        raise ProcessStartError(str(exc)) from exc


def _child_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    env = dict(OFFLINE_ENV)
    python_path = [str(_SOURCE_ROOT)]
    inherited = os.environ.get("PYTHONPATH")
    if inherited:
        python_path.append(inherited)
    env["PYTHONPATH"] = os.pathsep.join(python_path)
    env.update(extra or {})
    return env


#: RAM prompt-cache budget of the local chat server (KV bytes; see llm_server_argv).
LLM_CACHE_BYTES = 256 << 20
#: Prompt-eval batch of the local chat server (tokens).
LLM_BATCH_TOKENS = 128


def llm_server_argv(
    settings: Settings,
    model_path: Path,
    *,
    alias: str,
    port: int,
    context_tokens: int,
    prompt_cache: bool,
) -> list[str]:
    """Command line of a packaged llama.cpp chat server.

    Flags beyond the obvious ones:

    * ``--interrupt_requests False``: by default llama_cpp.server cuts a streaming
      answer short (sends ``[DONE]``) as soon as another request queues; with it off,
      requests wait their turn instead.
    * ``--cache True --cache_type ram --cache_size 256 MiB``: keeps KV states of past
      prompts in RAM and restores the one with the longest common prefix. Without it
      the server reuses only the prefix shared with the *previous* request; with it,
      interleaved prefixes (chunks of two documents being contextualised, a chat turn
      between ingest calls) skip their prompt eval too (measured: 6 interleaved
      ~950-token prompts 10 s instead of 35 s, SmolLM2). ``--cache_size`` counts only
      KV bytes (~23 KB a token for SmolLM2, ~12 KB for Qwen-0.5B, ~28 KB for
      Qwen-1.5B), so it is kept small.
    * ``--n_batch 128 --n_ubatch 128``: each cached state also copies an
      ``n_batch x vocab`` float32 score buffer that the cache size does not count
      (SmolLM2: 100 MB at 512, 25 MB at 128; Qwen's 152k vocabulary: 78 MB at 128);
      128 halved SmolLM2's RSS with the cache on and did not slow prompt eval
      measurably on 2 cores. Kept for Qwen (Qwen-0.5B: 1.4 GB RSS after six
      interleaved ~1,000-token prompts); not re-tuned, because the shared machine was
      too loaded for a fair prompt-speed comparison.
    * ``--logits_all False``: logits only for the last position (no logprobs needed):
      less compute per prompt token and no ``n_ctx x vocab`` score buffer.
    * ``--n_threads/--n_threads_batch``: every core, for generation and prompt eval.

    Args:
        settings: Supplies HOST.
        model_path: GGUF to serve.
        alias: The model name it answers to.
        port: Where it listens.
        context_tokens: Its context window (``n_ctx``).
        prompt_cache: Keep past prompts' KV states in RAM (``--cache``, above); without
            it only the previous request's prefix is reused.

    Returns:
        The argv list.
    """
    threads = str(cpu_count())
    return [
        sys.executable,
        "-m",
        "llama_cpp.server",
        "--model",
        str(model_path),
        "--model_alias",
        alias,
        "--host",
        settings.HOST,
        "--port",
        str(port),
        "--n_ctx",
        str(context_tokens),
        "--n_threads",
        threads,
        "--n_threads_batch",
        threads,
        "--n_batch",
        str(LLM_BATCH_TOKENS),
        "--n_ubatch",
        str(LLM_BATCH_TOKENS),
        "--logits_all",
        "False",
        "--cache",
        str(prompt_cache),
        *(["--cache_type", "ram", "--cache_size", str(LLM_CACHE_BYTES)] if prompt_cache else []),
        "--interrupt_requests",
        "False",
    ]


def llm_server_process(settings: Settings, log_dir: Path | str) -> ManagedProcess:
    """The local chat server as a managed process (not started).

    Building it makes the ``LOCAL_LLM`` GGUF ready (see :func:`local_llm_gguf`).

    Args:
        settings: Supplies LOCAL_LLM, MODEL_CACHE_PATH, HOST, LLM_PORT, LLM_MODEL (served
            alias), LLM_CONTEXT_TOKENS.
        log_dir: Folder for ``llm.log``.

    Returns:
        The process; its :attr:`ManagedProcess.ready_url` is ``/v1/models``.
    """
    return _server_process("llm", llm_argv(settings), settings.HOST, settings.LLM_PORT, log_dir)


def llm_argv(settings: Settings) -> list[str]:
    """Command line of the local chat server: the ``LOCAL_LLM`` GGUF (made ready) served
    as ``LLM_MODEL`` on ``HOST:LLM_PORT``, with its prompt cache.

    Args:
        settings: Supplies LOCAL_LLM, MODEL_CACHE_PATH, HOST, LLM_PORT, LLM_MODEL,
            LLM_CONTEXT_TOKENS.

    Returns:
        The argv list.
    """
    return llm_server_argv(
        settings,
        local_llm_gguf(settings),
        alias=settings.LLM_MODEL,
        port=settings.LLM_PORT,
        context_tokens=settings.LLM_CONTEXT_TOKENS,
        prompt_cache=True,
    )


#: Context window of the local graph reader: an exchange of three messages, the
#: question and a short reply (measured: under 400 tokens on the LiHua-World year).
READER_CONTEXT_TOKENS = 2048


def reader_server_process(settings: Settings, log_dir: Path | str) -> ManagedProcess:
    """The local graph reader (``GRAPH_READER_LLM``) as a managed process (not
    started): a second chat server, for the short readings of graph turns only
    (:func:`~varagity.graph.exchange.read_exchange`).

    Building it makes the reader's GGUF ready (see :func:`local_llm_gguf`).

    Args:
        settings: Supplies GRAPH_READER_LLM, MODEL_CACHE_PATH, HOST, GRAPH_READER_PORT.
        log_dir: Folder for ``reader.log``.

    Returns:
        The process; its :attr:`ManagedProcess.ready_url` is ``/v1/models``.

    Raises:
        ValueError: The chat model reads (``settings.local_reader`` is false).
    """
    name = settings.GRAPH_READER_LLM
    if not settings.local_reader or name == "chat":
        raise ValueError("no local graph reader is configured (the chat model reads)")
    argv = llm_server_argv(
        settings,
        local_llm_gguf(settings, name),
        alias=LOCAL_MODELS[name].alias,
        port=settings.GRAPH_READER_PORT,
        context_tokens=READER_CONTEXT_TOKENS,
        prompt_cache=False,  # each reading is a new exchange: only the system prompt repeats
    )
    return _server_process("reader", argv, settings.HOST, settings.GRAPH_READER_PORT, log_dir)


def embedding_server_argv(settings: Settings) -> list[str]:
    """Command line of the packaged embeddings server.

    Args:
        settings: Supplies HOST, EMBEDDING_PORT, EMBEDDING_MODEL.

    Returns:
        The argv list.
    """
    return [
        sys.executable,
        "-m",
        "varagity_stack.embedding_server",
        "--host",
        settings.HOST,
        "--port",
        str(settings.EMBEDDING_PORT),
        "--model",
        settings.EMBEDDING_MODEL,
        "--threads",
        str(cpu_count()),
        "--log-level",
        "warning",
    ]


def embedding_server_process(settings: Settings, log_dir: Path | str) -> ManagedProcess:
    """The packaged MiniLM embeddings server as a managed process (not started).

    Args:
        settings: Supplies HOST, EMBEDDING_PORT, EMBEDDING_MODEL.
        log_dir: Folder for ``embedding.log``.

    Returns:
        The process; its :attr:`ManagedProcess.ready_url` is ``/v1/models``.
    """
    return _server_process(
        "embedding",
        embedding_server_argv(settings),
        settings.HOST,
        settings.EMBEDDING_PORT,
        log_dir,
    )


def _server_process(
    name: str, argv: list[str], host: str, port: int, log_dir: Path | str
) -> ManagedProcess:
    """An OpenAI-compatible server child, ready once ``/v1/models`` answers. The stack's
    ``API_KEY`` is not passed on: llama.cpp's server reads a variable of that name as its
    own key and would refuse the stack's unauthenticated calls (and readiness probe)."""
    return ManagedProcess(
        name,
        argv,
        log_dir=log_dir,
        env=_child_env(),
        unset=("API_KEY",),
        ready_url=f"http://{host}:{port}/v1/models",
    )


def _answers(url: str) -> bool:
    try:
        return httpx.get(url, timeout=3).status_code == 200
    except httpx.HTTPError:
        return False


@contextlib.contextmanager
def local_model_servers(
    settings: Settings, log_dir: Path | str, *, chat: bool = True
) -> Iterator[list[str]]:
    """Make sure the local chat, graph reader and embedding servers answer for the
    duration.

    A server whose ``*_BASE_URL`` is set is the operator's to run and is left alone; a
    local one already answering (a running ``varagity up``) is reused; otherwise it is
    started here and stopped on exit. Yields the names of the servers started.
    ``chat=False`` leaves the chat servers out (retrieval-only work).
    """
    wanted = []
    if chat and settings.LLM_BASE_URL is None and not _answers(f"{settings.llm_url}/models"):
        wanted.append(llm_server_process(settings, log_dir))
    if chat and settings.local_reader and not _answers(f"{settings.reader_url}/models"):
        wanted.append(reader_server_process(settings, log_dir))
    if settings.EMBEDDING_BASE_URL is None and not _answers(f"{settings.embedding_url}/models"):
        wanted.append(embedding_server_process(settings, log_dir))
    started: list[ManagedProcess] = []
    try:
        for proc in wanted:
            Path(log_dir).mkdir(parents=True, exist_ok=True)
            started.append(proc.start())
        for proc in started:
            proc.wait_ready(timeout=300)
        yield [p.name for p in started]
    finally:
        for proc in reversed(started):
            proc.stop()
