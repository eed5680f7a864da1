"""What a dead supervisor leaves behind (issue 12 #2), on real processes: children die
with their supervisor, and a new ``varagity up`` stops what a dead supervisor recorded
but refuses to touch the stack of a live one."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from varagity.config import load_settings
from varagity_stack.supervisor import StackError, state_path, stop_leftovers


def _group(tmp_path: Path) -> tuple[subprocess.Popen[bytes], dict[str, object]]:
    """A process group like a component's: a leader and a grandchild of its own."""
    proc = subprocess.Popen(
        ["sh", "-c", "sleep 300 & sleep 300"], start_new_session=True, cwd=tmp_path
    )
    deadline = time.monotonic() + 10
    while len(psutil.Process(proc.pid).children()) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    record = {
        "name": "api",
        "pid": proc.pid,
        "pgid": proc.pid,
        "argv": ["sh"],
        "create_time": psutil.Process(proc.pid).create_time(),  # as the supervisor records
        "port": None,
    }
    return proc, record


def _write_state(path: Path, supervisor: dict[str, object], children: list[object]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"supervisor": supervisor, "children": children}))


def _alive(pids: list[int]) -> list[int]:
    return [
        p
        for p in pids
        if psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE
    ]


def test_leftovers_of_a_dead_supervisor_are_stopped(tmp_path: Path) -> None:
    settings = load_settings(VARAGITY_HOME=tmp_path / "home")
    dead = subprocess.Popen(["true"])
    dead.wait()
    proc, record = _group(tmp_path)
    members = [proc.pid, *(c.pid for c in psutil.Process(proc.pid).children())]
    _write_state(state_path(settings), {"pid": dead.pid, "create_time": time.time()}, [record])

    stopped = stop_leftovers(settings)

    proc.wait(10)
    assert stopped == [f"api (pid {proc.pid}, 3 process(es))"]
    deadline = time.monotonic() + 5
    while _alive(members) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(members)
    assert not state_path(settings).exists()


_LAST_PID = Path("/proc/sys/kernel/ns_last_pid")


@pytest.mark.skipif(not os.access(_LAST_PID, os.W_OK), reason="choosing the next pid needs root")
def test_a_reused_pid_in_the_group_is_stopped(tmp_path: Path) -> None:
    """A long test run wraps the pids: the leader of the group may carry the pid of a
    process that psutil saw earlier, and that one must not pass for an older process."""
    settings = load_settings(VARAGITY_HOME=tmp_path / "home")
    dead = subprocess.Popen(["true"])
    dead.wait()
    for _ in range(20):  # another process may take the pid first: try again
        earlier = subprocess.Popen(["sleep", "300"])
        list(psutil.process_iter(["create_time"]))  # psutil now knows this pid
        earlier.kill()
        earlier.wait()
        time.sleep(1.5)  # the reuse starts more than the second of slack later
        _LAST_PID.write_text(str(earlier.pid - 1))
        proc, record = _group(tmp_path)
        if proc.pid == earlier.pid:
            break
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    else:
        pytest.fail("the pid was never reused")
    _write_state(state_path(settings), {"pid": dead.pid, "create_time": time.time()}, [record])

    stopped = stop_leftovers(settings)

    proc.wait(10)
    assert stopped == [f"api (pid {proc.pid}, 3 process(es))"]


def test_the_stack_of_a_live_supervisor_is_left_alone(tmp_path: Path) -> None:
    settings = load_settings(VARAGITY_HOME=tmp_path / "home")
    supervisor = subprocess.Popen(["sleep", "300"])
    proc, record = _group(tmp_path)
    try:
        sup = psutil.Process(supervisor.pid)
        _write_state(
            state_path(settings),
            {"pid": supervisor.pid, "create_time": sup.create_time()},
            [record],
        )
        with pytest.raises(StackError, match=rf"another `varagity up` \(pid {supervisor.pid}\)"):
            stop_leftovers(settings)
        assert proc.poll() is None
        assert state_path(settings).exists()
    finally:
        supervisor.kill()
        os.killpg(proc.pid, signal.SIGKILL)
        supervisor.wait()
        proc.wait()


# what the supervisor may inherit from whoever started it: a blocked or ignored SIGTERM
# also survives exec into its children, where it would defeat the parent-death signal
_INHERITED = {
    "plain": "",
    "blocked": "signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})\n",
    "ignored": "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n",
}


@pytest.mark.parametrize("sigterm", sorted(_INHERITED))
def test_children_die_with_a_killed_supervisor(tmp_path: Path, sigterm: str) -> None:
    script = (
        "import signal, sys, time\n"
        + _INHERITED[sigterm]
        + "from varagity_stack.model_servers import ManagedProcess\n"
        f"p = ManagedProcess('sleeper', ['sleep', '300'], log_dir={str(tmp_path)!r}).start()\n"
        "print(p.pid, flush=True)\n"
        "time.sleep(300)\n"
    )
    parent = subprocess.Popen(
        [sys.executable, "-c", script],
        stdout=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
    )
    assert parent.stdout is not None
    child = int(parent.stdout.readline())
    assert _alive([child])
    parent.kill()  # -9: no handler runs in the supervisor
    parent.wait()
    deadline = time.monotonic() + 10
    while _alive([child]) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive([child])
