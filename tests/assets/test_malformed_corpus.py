"""Issue 12 #6: a generated corpus of 40-odd kinds of malformed input, next to good
files, through the real folder sensor and real Dagster runs of the ingest job (real
Postgres, Tantivy and model servers). Every good file is searchable, every bad one is
named with its own reason (a failed step's message or the sensor's skip report), and
the process's memory stays bounded (zip bombs, gigapixel images and million-deep HTML
are refused before anything inflates them)."""

from __future__ import annotations

import resource

import dagster as dg
import pytest

from tests.support.malformed_corpus import FAILED, INDEXED, KINDS, SKIPPED, TEXTLESS, write_corpus
from tests.support.pipeline import Harness, search_paths
from varagity.config import Settings
from varagity.services import Services

pytestmark = pytest.mark.integration

# Growth of the test process's peak RSS over the whole ingest (models run in their own
# servers): generous, but far below what one inflated bomb or bitmap would take.
MAX_PEAK_GROWTH_MIB = 1500


def _step_failures(runs: list[dg.ExecuteInProcessResult]) -> list[str]:
    return [
        str(e.event_specific_data.error.message)
        for r in runs
        for e in r.all_events
        if e.event_type_value == "STEP_FAILURE"
    ]


def _reason_for(name: str, failures: list[str]) -> str | None:
    """The reason a step failure gives for ``name``: a batch's message lists each failed
    file as ``<path>: <what failed> - <reason>``, separated by ``; ``."""
    for error in reversed(failures):  # the file's own run comes last
        message = error.split("Failure: ", 1)[-1]  # after the exception's class name
        for start in (0, *(i + 2 for i in range(len(message)) if message.startswith("; ", i))):
            if message.startswith(f"{name}: ", start):
                rest = message[start + len(name) + 2 :]
                following = [rest.find(f"; {k.name}: ") for k in KINDS]
                end = min([i for i in following if i >= 0], default=len(rest))
                return rest[:end]
    return None


def _peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


@pytest.mark.timeout(1200)
def test_malformed_corpus_through_the_sensor_and_runs(stack_settings: Settings) -> None:
    kinds = write_corpus(stack_settings.docs_path)
    assert len([k for k in KINDS if k.outcome != INDEXED]) >= 30
    before = _peak_rss_mib()

    h = Harness()
    runs = h.run_requests(h.tick())
    for _ in range(3):  # a failed batch is retried file by file until only failures remain
        more = h.run_requests(h.tick())
        if not more:
            break
        runs += more
    failures = _step_failures(runs)
    skips = h.reported_skips()

    outcomes: dict[str, str] = {}
    wrong: list[str] = []
    for name, kind in kinds.items():
        if kind.outcome == FAILED:
            reason = _reason_for(name, failures)
            if reason is None or kind.reason not in reason:
                wrong.append(f"{name}: expected {kind.reason!r}, got {reason!r}")
            outcomes[name] = f"failed: {reason}"
        elif kind.outcome == SKIPPED:
            if name in h.partitions() or kind.reason not in skips.get(name, ""):
                wrong.append(f"{name}: expected the skip {kind.reason!r}, got {skips.get(name)!r}")
            outcomes[name] = f"skipped: {skips.get(name)}"
    assert "symlink loop" in skips["fs/loop-partner.md"]

    services = Services.open(stack_settings)
    try:
        chunks = {d.relative_path: d.n_chunks for d in services.pg.list_documents()}
    finally:
        services.close()
    for name, kind in kinds.items():
        if kind.outcome == INDEXED:
            if chunks.get(name, 0) < 1:
                wrong.append(f"{name} was not indexed")
            elif name not in search_paths(stack_settings, kind.query, "bm25"):
                wrong.append(f"{name}: search for {kind.query!r} does not find it")
            outcomes[name] = f"indexed, {chunks.get(name)} chunks"
        elif kind.outcome == TEXTLESS:
            if chunks.get(name) != 0:
                wrong.append(f"{name}: expected a textless record, got {chunks.get(name)}")
            outcomes[name] = "recorded without text"
        elif name in chunks:
            wrong.append(f"{name} was indexed")
    assert not wrong, "\n".join(wrong)
    # nothing beyond the corpus was recorded, and no good file's run was disturbed
    assert set(chunks) == {n for n, k in kinds.items() if k.outcome in (INDEXED, TEXTLESS)}

    growth = _peak_rss_mib() - before
    assert growth < MAX_PEAK_GROWTH_MIB, f"peak RSS grew {growth:.0f} MiB"
    print("\nmalformed corpus:")  # the table the closing note quotes (pytest -s)
    for name in sorted(outcomes):
        print(f"  {name!r:34} {outcomes[name]}")
    print(f"  peak RSS growth: {growth:.0f} MiB")
