"""The message graph's bundle: a real LightRAG working directory exported verbatim and
restored by a swap, with the model servers unreachable during the restore."""

from __future__ import annotations

import hashlib
import os
import shutil
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.backup.worker import kill9, start_worker
from tests.support.graph_build import guard_pipmaster
from tests.support.graph_days import GRAPH_DAYS
from varagity.backup.bundle import BundleError
from varagity.backup.graph import export_graph, restore_graph
from varagity.backup.rows import verify_bundle
from varagity.config import Settings, load_settings
from varagity.corpus_lock import CorpusBusy
from varagity.graph.manifest import summarize, update_after_apply, write_summary
from varagity.graph.registry import workdir_for
from varagity.graph.service import GraphService
from varagity.graph.status import read_graph
from varagity.graph.swap import previous_dir, staged_dir
from varagity.graph.types import GraphDiff
from varagity.models.chat import ChatClient
from varagity.models.embeddings import EmbeddingClient
from varagity.stores.corpus_state import GRAPH_STALE_KEY
from varagity.stores.postgres import connect
from varagity_stack.model_servers import free_port

#: Model endpoints nothing listens on: a restore must not need the model servers.
DEAD_MODELS = {
    "LLM_BASE_URL": f"http://127.0.0.1:{free_port()}/v1",
    "EMBEDDING_BASE_URL": f"http://127.0.0.1:{free_port()}/v1",
}


@pytest.fixture(scope="module")
def built_workdir(tmp_path_factory: pytest.TempPathFactory, model_urls: dict[str, str]) -> Path:
    """One real graph (one transcript day) built once with the packaged models, with
    the manifest and size summary the build asset writes."""
    root = tmp_path_factory.mktemp("bk-graph")
    settings = load_settings(
        VARAGITY_HOME=root / "home",
        DOCS_PATH=root / "docs",
        GRAPH_STORAGE_PATH=root / "graph",
        MODEL_TIMEOUT_S=600,
        MODEL_MAX_RETRIES=1,
        **model_urls,
    )
    replaced = guard_pipmaster()
    chat = ChatClient.from_settings(settings)
    embedder = EmbeddingClient.from_settings(settings)
    try:
        service = GraphService(settings, chat, embedder)
        diff = GraphDiff(new=GRAPH_DAYS[:1])
        result = service.build(diff)
        manifest = update_after_apply(service.workdir, diff, result.report)
        size = result.size
        write_summary(
            service.workdir,
            summarize(
                manifest, entities=size.entities, relations=size.relations, statuses=size.statuses
            ),
        )
        service.close()
    finally:
        chat.close()
        embedder.close()
        for owner, name, original in replaced:
            setattr(owner, name, original)
    assert result.report.inserted, result.report
    return service.workdir


@pytest.fixture
def graph_settings(
    make_settings: Callable[..., Settings], pg_url: str, tmp_path: Path, built_workdir: Path
) -> Settings:
    """A stack holding a copy of the built graph (its model servers unreachable)."""
    settings = make_settings(
        DATABASE_URL=pg_url,
        GRAPH_DOCS_PATH=tmp_path / "graph-docs",
        GRAPH_STORAGE_PATH=tmp_path / "graph",
        **DEAD_MODELS,
    )
    from varagity.stores.vector_store import PgVectorStore

    PgVectorStore(pg_url, embedding_dim=settings.EMBEDDING_DIM).close()  # migrated
    shutil.copytree(built_workdir, workdir_for(settings))
    return settings


def files_of(workdir: Path) -> dict[str, str]:
    return {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(workdir.iterdir())
        if p.is_file()
    }


def statuses(settings: Settings) -> dict[str, str]:
    chat, embedder = ChatClient.from_settings(settings), EmbeddingClient.from_settings(settings)
    service = GraphService(settings, chat, embedder)
    try:
        return service.statuses()
    finally:
        service.close()
        chat.close()
        embedder.close()


def test_round_trip_restores_the_workdir_verbatim(graph_settings: Settings, tmp_path: Path) -> None:
    workdir = workdir_for(graph_settings)
    before = files_of(workdir)
    status_before, reading_before = statuses(graph_settings), read_graph(workdir)
    (workdir / "kv_store_llm_response_cache.json.tmp.1.2.3").write_text("{")  # a save in flight
    exported = export_graph(graph_settings)
    manifest = exported.manifest
    assert manifest.engine is not None and manifest.engine["name"] == "lightrag"
    assert manifest.engine["package"] == "lightrag-hku"
    assert manifest.counts["thread_days"] == 1 and manifest.counts["messages"] > 0
    assert manifest.counts["entities"] == reading_before.entities
    names = {m.name for m in manifest.members}
    assert names == {f"lightrag/{n}" for n in before}
    assert verify_bundle(exported.path, graph_settings, "graph").ok

    # restore into a wiped stack: no graph at all, model servers unreachable
    shutil.rmtree(graph_settings.graph_storage_path)
    restored = restore_graph(exported.path, graph_settings)
    assert restored.stale_reason is None
    assert files_of(workdir) == before
    assert statuses(graph_settings) == status_before
    after = read_graph(workdir)
    assert (after.entities, after.relations, after.days, after.messages) == (
        reading_before.entities,
        reading_before.relations,
        reading_before.days,
        reading_before.messages,
    )
    leftovers = [
        p.name
        for p in graph_settings.graph_storage_path.iterdir()
        if "." in p.name and not p.name.startswith(".varagity")
    ]
    assert leftovers == []


def test_restore_replaces_a_live_graph_and_carries_the_stale_flag(
    graph_settings: Settings, pg_url: str
) -> None:
    workdir = workdir_for(graph_settings)
    with connect(pg_url, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO app_settings (key, value) VALUES (%s, 'a source was deleted')",
            (GRAPH_STALE_KEY,),
        )
    exported = export_graph(graph_settings)
    assert exported.manifest.stale is True
    original = files_of(workdir)
    write_summary(workdir, summarize({}, entities=1, relations=2))  # the live graph moves on
    assert files_of(workdir) != original
    with connect(pg_url, autocommit=True) as conn:
        conn.execute("DELETE FROM app_settings WHERE key = %s", (GRAPH_STALE_KEY,))
    restored = restore_graph(exported.path, graph_settings)
    assert files_of(workdir) == original
    assert restored.stale_reason is not None
    with connect(pg_url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT value FROM app_settings WHERE key = %s", (GRAPH_STALE_KEY,)
        ).fetchone()
    assert row is not None


def test_a_graph_that_will_not_open_puts_the_previous_one_back(
    graph_settings: Settings, tmp_path: Path
) -> None:
    from datetime import UTC, datetime

    from varagity.backup.bundle import BundleManifest, writing_bundle

    workdir = workdir_for(graph_settings)
    original = files_of(workdir)
    good = export_graph(graph_settings).manifest
    created = datetime.now(UTC)
    with writing_bundle(graph_settings, "graph", created) as writer:
        for name in original:
            with writer.member(f"lightrag/{name}") as out:
                data = (workdir / name).read_bytes()
                if name == "kv_store_doc_status.json":
                    data = b'{"not": "a doc status'  # sound bundle, unreadable graph
                out.write(data)
        path = writer.finish(
            BundleManifest(
                **{**good.__dict__, "members": tuple(writer.members), "created_at": created}
            )
        )
    assert verify_bundle(path, graph_settings, "graph").ok
    with pytest.raises(BundleError) as caught:
        restore_graph(path, graph_settings)
    assert caught.value.code == "bundle_invalid"
    assert "would not open" in caught.value.detail
    assert files_of(workdir) == original
    assert statuses(graph_settings)


def test_export_and_restore_wait_for_no_build(graph_settings: Settings) -> None:
    """The graph lock is the single-writer gate: held by another process, an export and
    a restore are refused with the holder's name, and a build likewise."""
    exported = export_graph(graph_settings)
    proc, _ = start_worker(graph_settings, "hold-graph")
    try:
        with pytest.raises(CorpusBusy) as caught:
            export_graph(graph_settings)
        assert "worker" in caught.value.holder
        with pytest.raises(CorpusBusy):
            restore_graph(exported.path, graph_settings)
    finally:
        proc.kill()
        proc.wait()
    assert export_graph(graph_settings).path.exists()  # released by the kill


# --- kill -9 ----------------------------------------------------------------------------
@pytest.mark.parametrize("point", ["extract", "swapped"])
def test_a_killed_restore_leaves_the_old_graph_or_the_new_one(
    graph_settings: Settings, point: str
) -> None:
    workdir = workdir_for(graph_settings)
    exported = export_graph(graph_settings)
    new = files_of(workdir)
    write_summary(workdir, summarize({}, entities=7, relations=7))  # the live graph differs
    old = files_of(workdir)
    proc, _ = start_worker(graph_settings, "restore-graph", bundle=exported.path, pause=point)
    debris = [p.name for p in workdir.parent.iterdir() if p.name.startswith("lightrag.")]
    assert debris, "the kill lands while the restore has something beside the workdir"
    kill9(proc)
    statuses(graph_settings)  # the next GraphService heals, then reads
    assert files_of(workdir) in (old, new)
    assert files_of(workdir) == old  # both points are before the commit: rolled back
    assert [p.name for p in workdir.parent.iterdir() if p.name.startswith("lightrag.")] == []


def test_heal_after_a_kill_between_the_renames_and_after_the_commit(
    graph_settings: Settings,
) -> None:
    workdir = workdir_for(graph_settings)
    old = files_of(workdir)
    # between the two renames: live moved aside, the staged folder not yet in place
    os.rename(workdir, previous_dir(workdir, "r1"))
    shutil.copytree(previous_dir(workdir, "r1"), staged_dir(workdir, "r1"))
    (staged_dir(workdir, "r1") / "kv_store_x.json").write_text("{}")
    statuses(graph_settings)
    assert files_of(workdir) == old
    # after the commit: only the replaced folder's debris is left
    debris = workdir.with_name("lightrag.replaced-r2")
    shutil.copytree(workdir, debris)
    statuses(graph_settings)
    assert not debris.exists() and files_of(workdir) == old
    assert sorted(p.name for p in workdir.parent.iterdir() if not p.name.startswith(".")) == [
        "lightrag"
    ]


def test_bundle_zip_holds_the_engine_folder(graph_settings: Settings) -> None:
    exported = export_graph(graph_settings)
    with zipfile.ZipFile(exported.path) as zf:
        names = zf.namelist()
    assert names[-1] == "bundle.json"
    assert all(n.startswith("lightrag/") for n in names[:-1])
    assert not any(".tmp" in n for n in names)


@pytest.fixture(autouse=True)
def _no_leftover_engine() -> Iterator[None]:
    yield
