"""``bm25_index``: a file's BM25 entries as their own per-file asset, written from the
chunk rows in Postgres alone (issue 32, item 3).

Real parts: embedded Postgres + pgvector, a Tantivy index in the test's home, the
packaged model servers for the ingest runs, an ephemeral Dagster instance.
"""

from __future__ import annotations

import shutil

import dagster as dg
import pytest

from tests.conftest import SettingsFactory, free_port
from tests.support.pipeline import DEFS, Harness, search_paths, write_file
from varagity import pipeline
from varagity.config import Settings
from varagity.corpus import list_corpus
from varagity.services import Services
from varagity.stores.bm25.tantivy_store import TantivyBM25Store
from varagity_assets.defs.ingest.assets import build_bm25_index

pytestmark = pytest.mark.integration

FILES = {
    "kettle.md": "# Kettle\n\nThe Tern kettle has a warranty of 27 months.\n",
    "notes/station power.txt": "Aurora station peak output is 4.2 megawatts.\n",
    "garden/quokka.md": "# Quokka\n\nA grown quokka weighs about four kilograms.\n",
}
QUERIES = ("kettle warranty", "megawatts output", "quokka kilograms")


def _materialized(run: dg.ExecuteInProcessResult, asset: str) -> list[str]:
    return sorted(
        e.partition or ""
        for e in run.get_asset_materialization_events()
        if e.asset_key == dg.AssetKey(asset)
    )


def _steps(run: dg.ExecuteInProcessResult) -> set[str]:
    return {e.step_key for e in run.all_events if e.step_key}


def _hits(settings: Settings) -> dict[str, set[tuple[str, str]]]:
    """Each query's BM25 hits as (doc_id, chunk_id), straight from the index."""
    services = Services.open(settings)
    try:
        return {q: {(h.doc_id, h.chunk_id) for h in services.bm25.search(q, 10)} for q in QUERIES}
    finally:
        services.close()


def test_the_bm25_asset_rebuilds_an_index_from_postgres_rows_alone(
    make_settings: SettingsFactory, pg_url: str, model_urls: dict[str, str]
) -> None:
    settings = make_settings(DATABASE_URL=pg_url, **model_urls)
    for rel, text in FILES.items():
        write_file(settings.docs_path / rel, text)
    h = Harness()
    runs = h.run_requests(h.tick())
    assert runs and all(r.success for r in runs)
    before = _hits(settings)
    assert all(before.values()), before
    keys = sorted(h.partitions())

    # the whole Tantivy index directory is gone
    shutil.rmtree(settings.bm25_path)
    assert not settings.bm25_path.exists()
    assert TantivyBM25Store(settings.bm25_path).count() == 0

    # the rebuild needs Postgres and nothing else: no corpus folder, no embedding server
    # (nothing listens where it points; a step that called it would fail at once)
    rebuild = make_settings(
        DATABASE_URL=pg_url,
        LLM_BASE_URL=model_urls["LLM_BASE_URL"],
        EMBEDDING_BASE_URL=f"http://127.0.0.1:{free_port()}/v1",
        MODEL_MAX_RETRIES=0,
        MODEL_STEP_RETRIES=0,
        DOCS_PATH=settings.home / "no-corpus-here",
    )
    ordered = [k for k in h.instance.get_dynamic_partitions(pipeline.DOCUMENTS_PARTITIONS)]
    run = DEFS.resolve_job_def(pipeline.BM25_JOB).execute_in_process(
        instance=h.instance,
        tags=pipeline.range_request_tags(ordered),
        raise_on_error=False,
    )
    assert run.success
    # only the BM25 step ran: nothing was parsed, chunked, embedded or stored again
    assert _steps(run) == {pipeline.BM25_ASSET}
    assert _materialized(run, pipeline.BM25_ASSET) == keys
    for key in keys:
        (record,) = h.instance.fetch_materializations(
            dg.AssetRecordsFilter(
                asset_key=dg.AssetKey(pipeline.BM25_ASSET), asset_partitions=[key]
            ),
            limit=1,
        ).records
        metadata = record.asset_materialization.metadata  # type: ignore[union-attr]
        assert metadata["written"].value is True and metadata["entries"].value >= 1, key

    # the same documents and chunks are found as before the index was lost
    assert _hits(rebuild) == before
    services = Services.open(rebuild)
    try:
        pg_chunks = {
            c.chunk_id: d.doc_id
            for d in services.pg.list_documents()
            for c in services.pg.chunks_of(d.doc_id)
        }
        assert services.bm25.chunk_ids() == pg_chunks
        assert services.pg.awaiting_bm25() == set()
    finally:
        services.close()
    assert search_paths(settings, "quokka kilograms", "bm25")[0] == "garden/quokka.md"


def test_an_ingest_run_materializes_both_stores_and_the_file_is_searchable(
    stack_settings: Settings,
) -> None:
    docs = stack_settings.docs_path
    write_file(docs / "lamp.md", "# Lamp\n\nThe Orbo lamp runs for 40 hours on one charge.\n")
    write_file(docs / "kite.md", "# Kite\n\nThe Pemba kite bag holds two kites and a line.\n")
    h = Harness()
    [run] = h.run_requests(h.tick())
    assert run.success
    assert {"indexed_document", pipeline.BM25_ASSET} <= _steps(run)
    assert _materialized(run, "indexed_document") == ["kite.md", "lamp.md"]
    assert _materialized(run, pipeline.BM25_ASSET) == ["kite.md", "lamp.md"]
    assert search_paths(stack_settings, "Orbo lamp hours", "bm25")[0] == "lamp.md"
    assert search_paths(stack_settings, "Pemba kite bag", "bm25")[0] == "kite.md"
    services = Services.open(stack_settings)
    try:
        assert services.pg.awaiting_bm25() == set()
        assert {e.relative_path: e.status for e in list_corpus(services.pg, docs)} == {
            "kite.md": "indexed",
            "lamp.md": "indexed",
        }
    finally:
        services.close()


def test_a_file_stored_without_its_bm25_entries_is_pending_until_they_are_written(
    stack_settings: Settings,
) -> None:
    """A run that stopped after ``indexed_document`` (its BM25 step never ran): the rows
    are stored but the file is not searchable by keyword, and the corpus listing says
    so; the next ingest run of the file parses nothing and writes its entries."""
    docs = stack_settings.docs_path
    write_file(docs / "drone.md", "# Drone\n\nThe drone battery lasts 31 minutes.\n")
    h = Harness()
    result = h.tick()
    assert isinstance(result, dg.SensorResult)
    [request] = result.run_requests
    stored_only = DEFS.resolve_job_def(pipeline.INGEST_JOB).execute_in_process(
        instance=h.instance,
        partition_key=request.partition_key,
        asset_selection=[dg.AssetKey(a) for a in pipeline.INGEST_ASSETS[:-1]],
        raise_on_error=False,
    )
    assert stored_only.success and pipeline.BM25_ASSET not in _steps(stored_only)
    services = Services.open(stack_settings)
    try:
        [doc] = services.pg.list_documents()
        assert services.pg.awaiting_bm25() == {doc.doc_id}
        assert search_paths(stack_settings, "drone battery", "bm25") == []
        [entry] = list_corpus(services.pg, docs)
        assert (entry.relative_path, entry.status) == ("drone.md", "pending")

        again = DEFS.resolve_job_def(pipeline.INGEST_JOB).execute_in_process(
            instance=h.instance, partition_key=request.partition_key, raise_on_error=False
        )
        assert again.success
        (parsed,) = [
            e
            for e in again.get_asset_materialization_events()
            if e.asset_key == dg.AssetKey("parsed_document")
        ]
        assert "characters" not in parsed.materialization.metadata  # not parsed again
        assert services.pg.awaiting_bm25() == set()
        assert search_paths(stack_settings, "drone battery", "bm25") == ["drone.md"]
        [entry] = list_corpus(services.pg, docs)
        assert entry.status == "indexed"
    finally:
        services.close()


def test_the_celery_queue_tag_is_set_only_for_the_tantivy_backend(
    make_settings: SettingsFactory,
) -> None:
    tantivy = make_settings(CELERY_INDEX_QUEUE="bm25-host")
    asset = build_bm25_index(tantivy)
    assert asset.op.tags == {pipeline.CELERY_QUEUE_TAG: "bm25-host"}
    assert {"tantivy", "postgres"} == set(next(iter(asset.specs)).kinds)
    # the location's own: built when it loads, from the test session's (Tantivy) settings
    loaded = DEFS.resolve_assets_def(pipeline.BM25_ASSET).op.tags
    assert set(loaded) == {pipeline.CELERY_QUEUE_TAG}

    elastic = make_settings(ELASTICSEARCH_URL="http://127.0.0.1:9200")
    asset = build_bm25_index(elastic)
    assert pipeline.CELERY_QUEUE_TAG not in asset.op.tags
    assert "elasticsearch" in next(iter(asset.specs)).kinds
    # the other ingest steps run on any worker
    for name in pipeline.INGEST_ASSETS[:-1]:
        assert pipeline.CELERY_QUEUE_TAG not in DEFS.resolve_assets_def(name).op.tags


def test_the_rebuild_job_and_the_stage_order() -> None:
    rebuild = DEFS.resolve_job_def(pipeline.BM25_JOB)
    assert set(rebuild.graph.node_dict) == {pipeline.BM25_ASSET}
    assert rebuild.tags[pipeline.STAGE_TAG] == pipeline.STAGE_BM25
    graph = DEFS.resolve_asset_graph()
    bm25 = graph.get(dg.AssetKey(pipeline.BM25_ASSET))
    assert bm25.parent_keys == {dg.AssetKey(pipeline.INDEXED_ASSET)}
    assert bm25.partitions_def is not None
    assert bm25.partitions_def == graph.get(dg.AssetKey(pipeline.INDEXED_ASSET)).partitions_def
    # blurbs re-index chunks that are searchable; the evaluations read the whole index
    assert graph.get(dg.AssetKey("chunk_contexts")).parent_keys == {bm25.key}
    assert bm25.key in graph.get(dg.AssetKey("eval_results")).parent_keys
    assert pipeline.corpus_of_run("__ASSET_JOB", {}, [pipeline.BM25_ASSET]) == "rag"
    assert pipeline.corpus_of_run(pipeline.BM25_JOB, {}) == "rag"
