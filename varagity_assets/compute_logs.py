"""Dagster's local compute-log manager, without the two helper processes per stream.

The stock ``LocalComputeLogManager`` captures a run's stdout and stderr by pointing each
stream's file descriptor at a log file and *mirroring* that file back to the original
stream: for each stream it starts ``tail -F`` on the file and a fresh Python interpreter
(``watch_orphans.py``) that kills the tail should the run worker die. That is four
processes per ingest run, and the two interpreters' start-up alone was a tenth of a run
worker's CPU on the 2-core machine (py-spy over 200 files, five runs).

This manager writes the same files in the same place, so the Dagster UI shows a step's
output exactly as before; it only drops the mirror, so a run's output is no longer
copied into the code server's own log (``logs/code_server.log``). The files live under
``$VARAGITY_HOME/dagster/compute_logs`` (``VARAGITY_DAGSTER_LOG_DIR``).
``dagster_home/dagster.yaml`` selects it; its config is the stock manager's.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from dagster._core.execution.compute_logs import redirect_to_file
from dagster._core.storage.compute_log_manager import CapturedLogContext, ComputeIOType
from dagster._core.storage.local_compute_log_manager import (
    IO_TYPE_EXTENSION,
    LocalComputeLogManager,
)
from dagster._serdes import ConfigurableClassData
from dagster._utils import ensure_file, touch_file


class FileComputeLogManager(LocalComputeLogManager):
    """``LocalComputeLogManager`` that redirects each stream to its file, unmirrored."""

    @classmethod
    def from_config_value(
        cls, inst_data: ConfigurableClassData | None, config_value: Any
    ) -> FileComputeLogManager:
        """Built from the stock manager's config (``base_dir``, ``polling_timeout``)."""
        return cls(inst_data=inst_data, **config_value)

    @contextmanager
    def capture_logs(self, log_key: Sequence[str]) -> Iterator[CapturedLogContext]:
        """Point stdout and stderr at the step's log files for the block's duration."""
        out = self.get_captured_local_path(log_key, IO_TYPE_EXTENSION[ComputeIOType.STDOUT])
        err = self.get_captured_local_path(log_key, IO_TYPE_EXTENSION[ComputeIOType.STDERR])
        ensure_file(out)
        ensure_file(err)
        with redirect_to_file(sys.stdout, out), redirect_to_file(sys.stderr, err):
            yield CapturedLogContext(log_key)
        # the stock manager's marker: the UI stops polling a capture once it exists
        touch_file(self.complete_artifact_path(log_key))
