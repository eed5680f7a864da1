"""The blurb stage as Dagster runs it: sensor ticks and in-process materializations.

Embedded Postgres + pgvector, a Tantivy index in a temp dir, the packaged model
servers, an ephemeral Dagster instance. A file is ingested and searchable first; the
blurb sensor then requests ``contextualize_documents`` runs for its chunks.
"""

from __future__ import annotations

import dagster as dg
import pytest

from tests.conftest import SettingsFactory, free_port
from tests.support.pipeline import DEFS, Harness, write_file
from varagity.corpus import list_corpus
from varagity.pipeline import CONTEXTUALIZE_JOB, INGEST_JOB, RANGE_END_TAG, RANGE_START_TAG
from varagity.services import Services

pytestmark = pytest.mark.integration

STATION = (
    "# Aurora Research Station\n\nThe station opened in March 2019 on Brannfell Island.\n\n"
    "## Power\n\nWind turbines deliver a peak output of 4.2 megawatts.\n\n"
    "## Crew\n\nEleven researchers winter at the station; forty come in summer.\n"
)
SMALL = {"CHUNK_SIZE": 120, "CHUNK_OVERLAP": 0, "CONTEXT_MAX_TOKENS": 24}


def _metadata(run: dg.ExecuteInProcessResult, key: str) -> dict[str, object]:
    [event] = [
        e
        for e in run.get_asset_materialization_events()
        if e.asset_key == dg.AssetKey("chunk_contexts") and e.partition == key
    ]
    return {k: v.value for k, v in event.materialization.metadata.items()}


def test_file_is_searchable_before_its_blurbs_then_contextualized(
    make_settings: SettingsFactory, pg_url: str, model_urls: dict[str, str]
) -> None:
    settings = make_settings(DATABASE_URL=pg_url, CONTEXTUALIZE=True, **SMALL, **model_urls)
    write_file(settings.docs_path / "station.md", STATION)
    h = Harness()
    ingest = h.run_requests(h.tick())
    assert ingest and all(r.success for r in ingest)

    services = Services.open(settings)
    try:
        doc = services.pg.documents_at_path("station.md")[0]
        raw = services.pg.chunks_of(doc.doc_id)
        assert len(raw) >= 3 and all(c.context is None for c in raw)
        # searchable in both arms with no blurb written yet
        assert services.bm25.search("megawatts", 3)[0].doc_id == doc.doc_id
        [(dense, _)] = services.pg.search(services.embedder.embed_query("turbine output"), 1)
        assert dense.doc_id == doc.doc_id
        [entry] = list_corpus(services.pg, settings.docs_path, contextualize=True)
        assert (entry.n_contextualized, entry.n_chunks, entry.contextualizing) == (
            0,
            len(raw),
            True,
        )

        ticked = h.tick_contexts()
        assert isinstance(ticked, dg.SensorResult)
        assert [r.partition_key for r in ticked.run_requests] == ["station.md"]
        [blurbs] = h.run_requests(ticked, CONTEXTUALIZE_JOB)
        assert blurbs.success
        meta = _metadata(blurbs, "station.md")
        assert meta["contextualized"] == f"{len(raw)}/{len(raw)}"
        assert meta["doc_id"] == doc.doc_id and meta["blurbs_written"] == len(raw)
        # progress was reported while the step ran, one observation per group of chunks
        seen = [
            e.asset_observation_data.asset_observation.metadata["contextualized"].value
            for e in blurbs.get_asset_observation_events()
        ]
        assert seen and seen[-1] == meta["contextualized"]

        after = {c.chunk_id: c for c in services.pg.chunks_of(doc.doc_id)}
        assert set(after) == {c.chunk_id for c in raw}
        assert any(c.context for c in after.values())
        assert services.bm25.count() == len(raw)  # replaced, not added
        hits = services.bm25.search("megawatts", 10)
        assert len({h.chunk_id for h in hits}) == len(hits)
        assert all(
            h.contextualized_content == after[h.chunk_id].contextualized_content for h in hits
        )
        [entry] = list_corpus(services.pg, settings.docs_path, contextualize=True)
        assert (entry.n_contextualized, entry.contextualizing) == (len(raw), False)
    finally:
        services.close()
    # nothing waits any more: the sensor asks for nothing
    assert isinstance(h.tick_contexts(), dg.SkipReason)


def test_contextualize_off_never_calls_the_llm(
    make_settings: SettingsFactory, pg_url: str, model_urls: dict[str, str]
) -> None:
    # nothing listens at this LLM address: any model call would fail the run
    dead_llm = f"http://127.0.0.1:{free_port()}/v1"
    settings = make_settings(
        DATABASE_URL=pg_url,
        CONTEXTUALIZE=False,
        MODEL_MAX_RETRIES=0,
        **SMALL,
        **{**model_urls, "LLM_BASE_URL": dead_llm},
    )
    write_file(settings.docs_path / "station.md", STATION)
    h = Harness()
    assert all(r.success for r in h.run_requests(h.tick()))
    assert isinstance(h.tick_contexts(), dg.SkipReason)
    # materialized anyway (from the UI, say): it does nothing and succeeds
    run = DEFS.resolve_job_def(CONTEXTUALIZE_JOB).execute_in_process(
        instance=h.instance, partition_key="station.md"
    )
    assert run.success
    meta = _metadata(run, "station.md")
    assert meta["blurbs_written"] == 0 and str(meta["contextualized"]).startswith("0/")
    services = Services.open(settings)
    try:
        doc = services.pg.documents_at_path("station.md")[0]
        assert all(c.context is None for c in services.pg.chunks_of(doc.doc_id))
    finally:
        services.close()


def test_blurb_sensor_batches_ranges_and_waits_for_runs_in_flight(
    make_settings: SettingsFactory, pg_url: str, model_urls: dict[str, str]
) -> None:
    settings = make_settings(DATABASE_URL=pg_url, CONTEXTUALIZE=True, **SMALL, **model_urls)
    for name in ("a.md", "b.md", "c.md"):
        write_file(settings.docs_path / name, f"# {name}\n\nA short note called {name}.\n")
    h = Harness()
    assert all(r.success for r in h.run_requests(h.tick()))
    ticked = h.tick_contexts()
    assert isinstance(ticked, dg.SensorResult)
    [request] = ticked.run_requests
    assert (request.tags[RANGE_START_TAG], request.tags[RANGE_END_TAG]) == ("a.md", "c.md")
    # the same state asks with the same run key (Dagster launches it once)
    again = h.tick_contexts()
    assert isinstance(again, dg.SensorResult)
    assert again.run_requests[0].run_key == request.run_key

    # while a blurb run for those partitions is in flight, the sensor waits for it
    queued = h.instance.create_run_for_job(
        DEFS.resolve_job_def(CONTEXTUALIZE_JOB),
        status=dg.DagsterRunStatus.NOT_STARTED,
        tags=dict(request.tags),
    )
    waiting = h.tick_contexts()
    assert isinstance(waiting, dg.SkipReason) and "in flight" in str(waiting.skip_message)
    h.instance.report_run_canceled(queued)
    assert isinstance(h.tick_contexts(), dg.SensorResult)

    # while any ingest run is queued or under way, no blurb run is asked for (the LLM
    # would take the cores new files need); once it is over, the request comes back
    # under a new run key, so a blurb run that gave way before writing is asked again
    ingesting = h.instance.create_run_for_job(
        DEFS.resolve_job_def(INGEST_JOB), status=dg.DagsterRunStatus.NOT_STARTED
    )
    held = h.tick_contexts()
    assert isinstance(held, dg.SkipReason) and "1 ingest run(s) in flight" in str(held.skip_message)
    h.instance.report_run_canceled(ingesting)
    after = h.tick_contexts()
    assert isinstance(after, dg.SensorResult)
    assert after.run_requests[0].tags == request.tags
    assert after.run_requests[0].run_key != request.run_key
