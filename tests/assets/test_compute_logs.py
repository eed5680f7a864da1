"""The compute-log manager of ``dagster_home/dagster.yaml``: a step's output reaches the
files the UI reads, with no helper process started to mirror it."""

import sys
from pathlib import Path

import dagster as dg
import psutil
import pytest
from dagster._core.storage.compute_log_manager import ComputeIOType

from varagity_assets.compute_logs import FileComputeLogManager

CHILDREN: list[str] = []


@dg.op
def talk() -> None:
    print("to stdout", flush=True)
    print("to stderr", file=sys.stderr, flush=True)
    CHILDREN.extend(" ".join(p.cmdline()) for p in psutil.Process().children(recursive=True))


@dg.job
def talking() -> None:
    talk()


@pytest.mark.parametrize(
    ("cls", "mirrored"),
    [("FileComputeLogManager", False), ("LocalComputeLogManager", True)],
)
def test_output_is_captured_without_helper_processes(
    tmp_path: Path, cls: str, mirrored: bool
) -> None:
    module = (
        "varagity_assets.compute_logs"
        if cls == "FileComputeLogManager"
        else "dagster.core.storage.local_compute_log_manager"
    )
    overrides = {
        "compute_logs": {"module": module, "class": cls, "config": {"base_dir": str(tmp_path)}}
    }
    CHILDREN.clear()
    with dg.instance_for_test(overrides=overrides) as instance:
        manager = instance.compute_log_manager
        assert (type(manager) is FileComputeLogManager) is not mirrored
        result = talking.execute_in_process(instance=instance)
        assert result.success
        captured = [
            e.logs_captured_data
            for e in result.all_events
            if e.event_type == dg.DagsterEventType.LOGS_CAPTURED
        ]
        assert captured, "the run captured no logs"
        key = manager.build_log_key_for_run(result.run_id, captured[0].file_key)
        out = manager.get_log_data_for_type(key, ComputeIOType.STDOUT, 0, None)[0]
        err = manager.get_log_data_for_type(key, ComputeIOType.STDERR, 0, None)[0]
        assert out is not None and b"to stdout" in out
        assert err is not None and b"to stderr" in err
        assert manager.is_capture_complete(key)
    # the stock manager runs `tail -F` and a watch_orphans.py interpreter per stream; the
    # stock case proves the check sees them
    helpers = [c for c in CHILDREN if "tail" in c or "watch_orphans" in c]
    assert bool(helpers) is mirrored, CHILDREN
