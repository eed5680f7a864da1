"""Data-quality checks: the great-expectations suite on handcrafted frames (no database),
and the ``indexed_document`` asset checks on real ingest runs over Postgres.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import dagster as dg
import numpy as np
import pandas as pd
import pytest

from tests.support.pipeline import DEFS, Harness, write_file
from varagity import quality
from varagity.config import Settings, load_settings
from varagity.pipeline import (
    DOCUMENTS_PARTITIONS,
    INGEST_JOB,
    PARTITION_TAG,
    RANGE_END_TAG,
    RANGE_START_TAG,
)
from varagity.services import Services
from varagity.stores.postgres import connect, database_url
from varagity_assets.defs.ingest.checks import chunk_checks
from varagity_assets.defs.ingest.partitions import run_partition_keys
from varagity_assets.resources import VaragityResource

DIM = 8
CHECK_KEYS = {
    dg.AssetCheckKey(dg.AssetKey("indexed_document"), "chunk_quality"),
    dg.AssetCheckKey(dg.AssetKey("indexed_document"), "embedding_quality"),
}


# --- the suite on handcrafted frames ------------------------------------------------
def _row(i: int, **changes: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "chunk_id": f"doc1::{i}",
        "doc_id": "doc1",
        "relative_path": "a.md",
        "original_index": 100 + i,
        "chunk_index": i,
        "content": f"chunk number {i}",
        "n_tokens": 4,
        "page": None,
        "extraction": "text",
        "embedding_dim": DIM,
        "embedding_norm": 1.0,
    }
    row.update(changes)
    return row


def _validate(rows: list[dict[str, Any]]) -> quality.QualityReport:
    frame = quality.chunk_frame(pd.DataFrame(rows) if rows else quality.empty_chunk_frame())
    specs = quality.chunk_expectations(max_tokens=50, embedding_dim=DIM)
    return quality.validate_chunks(frame, specs)


def _outcome(report: quality.QualityReport, name: str) -> quality.ExpectationOutcome:
    return next(o for o in report.outcomes if o.name == name)


def test_clean_chunks_pass_every_expectation() -> None:
    report = _validate([_row(0), _row(1, page=3, extraction="ocr"), _row(2, page=1)])
    assert report.success, report.expectations_markdown()
    assert report.n_chunks == 3 and report.n_documents == 1
    assert [o.name for o in report.outcomes] == [
        "content_not_blank",
        "n_tokens_present",
        "n_tokens_in_range",
        "identity_unique",
        "page_valid",
        "extraction_present",
        "extraction_known",
        "embedding_dimension",
        "embedding_unit_norm",
    ]
    assert report.examples_markdown() == "No failing chunks."
    assert _outcome(report, "page_valid").observed == "min 1, max 3, 1 null"


@pytest.mark.parametrize(
    ("name", "changes", "shown"),
    [
        ("content_not_blank", {"content": ""}, "''"),
        ("content_not_blank", {"content": " \n\t "}, "' \\n\\t '"),
        ("n_tokens_in_range", {"n_tokens": 0}, "0"),
        ("n_tokens_in_range", {"n_tokens": 51}, "51"),
        ("n_tokens_present", {"n_tokens": None}, "null"),
        ("identity_unique", {"original_index": 100}, "doc_id='doc1', original_index=100"),
        ("page_valid", {"page": 0}, "0"),
        ("extraction_known", {"extraction": "magic"}, "'magic'"),
        ("extraction_present", {"extraction": None}, "null"),
        ("embedding_dimension", {"embedding_dim": DIM - 1}, str(DIM - 1)),
        ("embedding_unit_norm", {"embedding_norm": 1.002}, "1.002"),
        ("embedding_unit_norm", {"embedding_norm": 0.5}, "0.5"),
    ],
)
def test_each_rule_names_its_offender(name: str, changes: dict[str, Any], shown: str) -> None:
    report = _validate([_row(0), _row(1), _row(2, **changes)])
    assert not report.success
    assert [o.name for o in report.failed] == [name]
    bad = _outcome(report, name)
    assert bad.unexpected_count >= 1 and bad.element_count == 3
    assert "doc1::2" in [e.chunk_id for e in bad.examples]
    example = next(e for e in bad.examples if e.chunk_id == "doc1::2")
    assert example.relative_path == "a.md"
    assert example.value == shown
    assert "doc1::2" in report.failing_chunk_ids
    assert "| **FAIL** |" in report.expectations_markdown()
    assert "`doc1::2`" in report.examples_markdown()


def test_examples_are_capped_and_counts_are_not() -> None:
    rows = [_row(i, content="   ") for i in range(25)]
    report = _validate(rows)
    bad = _outcome(report, "content_not_blank")
    assert bad.unexpected_count == 25
    assert len(bad.examples) == quality.MAX_EXAMPLES
    assert report.unexpected_values == 25


def test_no_chunks_is_a_pass() -> None:
    report = _validate([])
    assert report.success and report.n_chunks == 0
    assert all(o.observed == "no chunks" for o in report.outcomes)


def test_bounds_come_from_settings(tmp_path: Path) -> None:
    settings = load_settings(
        VARAGITY_HOME=tmp_path, DOCS_PATH=tmp_path, CHUNK_SIZE=300, CHUNK_OVERLAP=10
    )
    assert quality.max_tokens_for(settings) == 600
    specs = quality.expectations_for(settings, groups=("embedding",))
    assert [s.name for s in specs] == ["embedding_dimension", "embedding_unit_norm"]
    assert str(settings.EMBEDDING_DIM) in specs[0].description


def test_run_partition_keys_from_tags() -> None:
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions(DOCUMENTS_PARTITIONS, ["b.md", "a.md", "c%2E..md", "d.md"])
    assert run_partition_keys({PARTITION_TAG: "a.md"}, instance) == ["a.md"]
    # the range follows the partition set's order (insertion), not the alphabet
    tags = {RANGE_START_TAG: "a.md", RANGE_END_TAG: "d.md"}
    assert run_partition_keys(tags, instance) == ["a.md", "c%2E..md", "d.md"]
    assert run_partition_keys({RANGE_START_TAG: "b.md", RANGE_END_TAG: "gone.md"}, instance) == [
        "b.md",
        "gone.md",
    ]
    assert run_partition_keys({"other": "x"}, instance) is None


# --- the checks on real runs --------------------------------------------------------
def _evaluations(
    result: dg.ExecuteInProcessResult,
) -> dict[str, dg.AssetCheckEvaluation]:
    return {e.check_name: e for e in result.get_asset_check_evaluations()}


def _meta(evaluation: dg.AssetCheckEvaluation | dg.AssetCheckResult, key: str) -> Any:
    return evaluation.metadata[key].value


@pytest.mark.integration
def test_checks_pass_on_ingest_and_name_corrupted_chunks(stack_settings: Settings) -> None:
    docs = stack_settings.docs_path
    write_file(docs / "kettle.md", "# Kettle\n\nThe Tern kettle has a warranty of 27 months.\n")
    write_file(docs / "notes/power.txt", "Aurora station peak output is 4.2 megawatts.\n" * 40)
    write_file(docs / "zeta.txt", "Zeta is the last file of the batch.\n")
    job = DEFS.resolve_job_def(INGEST_JOB)
    assert set(job.asset_layer.asset_graph.asset_check_keys) >= CHECK_KEYS

    h = Harness()
    runs = h.run_requests(h.tick())
    assert len(runs) == 1 and runs[0].success
    assert runs[0].dagster_run.tags[RANGE_START_TAG] == "kettle.md"
    evaluations = _evaluations(runs[0])
    assert set(evaluations) == {"chunk_quality", "embedding_quality"}

    services = Services.open(stack_settings)
    try:
        frame = quality.load_chunk_frame(services.pg)
    finally:
        services.close()
    assert len(frame) > 3  # power.txt is several chunks
    for evaluation in evaluations.values():
        assert evaluation.passed, _meta(evaluation, "expectations")
        assert evaluation.severity == dg.AssetCheckSeverity.ERROR
        assert _meta(evaluation, "chunks_checked") == len(frame)
        assert _meta(evaluation, "documents_checked") == 3
        assert _meta(evaluation, "failed_expectations") == 0
        assert _meta(evaluation, "failing_chunk_ids") == []
        assert _meta(evaluation, "scope") == "3 files: kettle.md … zeta.txt"
    assert "| embedding_unit_norm |" in _meta(evaluations["embedding_quality"], "expectations")

    # corrupt three chunks of power.txt and one of kettle.md
    power = frame[frame.relative_path == "notes/power.txt"].chunk_id.tolist()
    kettle = frame[frame.relative_path == "kettle.md"].chunk_id.tolist()
    blank, magic, skewed = power[0], power[1], kettle[0]
    vector = np.zeros(stack_settings.EMBEDDING_DIM, dtype=np.float32)
    vector[0] = 0.5
    with connect(database_url(stack_settings), autocommit=True) as conn:
        conn.execute("UPDATE chunks SET content = '' WHERE chunk_id = %s", (blank,))
        conn.execute(
            "UPDATE chunks SET metadata = jsonb_set(metadata, '{extraction}', '\"magic\"')"
            " WHERE chunk_id = %s",
            (magic,),
        )
        conn.execute(
            "UPDATE chunks SET embedding = %s::vector WHERE chunk_id = %s",
            (str(vector.tolist()).replace(" ", ""), skewed),
        )

    # the check functions invoked directly: no run tags, so the whole corpus
    ctx = dg.build_asset_check_context(resources={"varagity": VaragityResource()})
    with ctx.op_execution_context:  # closes the resource's stores afterwards
        direct, direct_embeddings = chunk_checks(ctx)
    assert (direct.check_name, direct_embeddings.check_name) == (
        "chunk_quality",
        "embedding_quality",
    )
    assert isinstance(direct, dg.AssetCheckResult)
    assert not direct.passed
    assert direct.severity == dg.AssetCheckSeverity.ERROR
    assert _meta(direct, "scope").startswith("whole corpus")
    assert _meta(direct, "chunks_checked") == len(frame)
    assert _meta(direct, "failing_chunk_ids") == [blank, magic]
    assert _meta(direct, "failed_expectations") == 2
    examples = _meta(direct, "failing_examples")
    assert f"| content_not_blank | `{blank}` | notes/power.txt | '' |" in examples
    assert f"| extraction_known | `{magic}` | notes/power.txt | 'magic' |" in examples
    assert isinstance(direct_embeddings, dg.AssetCheckResult)
    assert not direct_embeddings.passed
    assert _meta(direct_embeddings, "failing_chunk_ids") == [skewed]
    assert "| min 0.5, max 1 |" in _meta(direct_embeddings, "expectations")

    # the checks alone, re-executed for one partition (the dagster/partition tag)
    checks_only = job.get_subset(asset_selection=set(), asset_check_selection=CHECK_KEYS)
    rerun = checks_only.execute_in_process(
        instance=h.instance, partition_key="notes/power.txt", raise_on_error=False
    )
    assert rerun.success  # the checks are not blocking: a failed check fails no step
    assert not rerun.get_asset_materialization_events()
    evaluations = _evaluations(rerun)
    content = evaluations["chunk_quality"]
    assert not content.passed
    assert _meta(content, "scope") == "1 file: notes/power.txt"
    assert _meta(content, "chunks_checked") == len(power)
    assert _meta(content, "failing_chunk_ids") == [blank, magic]
    assert evaluations["embedding_quality"].passed  # the skewed vector is in kettle.md
    # both checks are one step, which reads the chunks once ...
    steps = {e.step_key for e in rerun.all_events if e.step_key}
    assert steps == {"chunk_checks"}
    # ... and either can run alone
    embedding_key = dg.AssetCheckKey(dg.AssetKey("indexed_document"), "embedding_quality")
    alone = job.get_subset(asset_selection=set(), asset_check_selection={embedding_key})
    one = alone.execute_in_process(
        instance=h.instance, partition_key="kettle.md", raise_on_error=False
    )
    assert set(_evaluations(one)) == {"embedding_quality"}
    assert not _evaluations(one)["embedding_quality"].passed  # the skewed vector
    assert _meta(_evaluations(one)["embedding_quality"], "failing_chunk_ids") == [skewed]
