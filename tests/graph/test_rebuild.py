"""What a rebuild of a range of days takes (:func:`varagity.graph.rebuild.plan_rebuild`,
over a real synthetic ``chat.db``, no engine) and what a reset removes
(:func:`~varagity.graph.rebuild.empty_workdir`)."""

from __future__ import annotations

import shutil
from dataclasses import replace
from datetime import UTC
from pathlib import Path

from tests.support.chatdb import write_chat_db
from varagity.config import Settings, load_settings
from varagity.graph.manifest import ManifestEntry, write_manifest
from varagity.graph.rebuild import empty_workdir, plan_rebuild
from varagity.graph.sources.registry import read_archive


def _settings(tmp_path: Path) -> Settings:
    return load_settings(
        VARAGITY_HOME=tmp_path / "home", GRAPH_DOCS_PATH=tmp_path / "msgs", GRAPH_TIMEZONE="UTC"
    )


def test_a_range_takes_its_days_and_leaves_the_others(tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    write_chat_db(settings.graph_docs_path, days=4)
    days = read_archive(settings.graph_docs_path, "chat.db", tz=UTC)
    manifest = {d.doc_key: ManifestEntry.of(d) for d in days}
    assert len(days) == 8

    plan = plan_rebuild(settings, manifest, "2026-03-03", "2026-03-04")
    inside = {d.doc_key for d in days if "2026-03-03" <= d.span <= "2026-03-04"}
    assert {d.doc_key for d in plan.days} == set(plan.held) == inside and len(inside) == 4
    assert plan.outside == 4 and plan.removed == () and plan.left == ()
    assert not plan.every_day and plan.described == "days 2026-03-03..2026-03-04"

    # open ends: every day is taken
    whole = plan_rebuild(settings, manifest, None, None)
    assert {d.doc_key for d in whole.days} == set(manifest)
    assert whole.every_day and whole.described == "every day"
    assert plan_rebuild(settings, manifest, "2026-03-05", None).described == "days from 2026-03-05"

    # a day the graph holds that the archive no longer renders leaves it; a day of an
    # archive gone from the folder is left (its removal run takes it), as is a day
    # another archive owns
    gone = replace(days[0], thread_id="iMessage;-;old", source="chat.db")
    other = replace(days[1], thread_id="iMessage;-;other", source="old/chat.db")
    grown = {
        **manifest,
        gone.doc_key: ManifestEntry.of(gone),
        other.doc_key: ManifestEntry.of(other),
    }
    plan = plan_rebuild(settings, grown, None, None)
    assert plan.removed == (gone.doc_key,) and plan.left == (other.doc_key,)
    assert not plan.every_day
    owned = {**manifest, days[2].doc_key: replace(manifest[days[2].doc_key], source="x/chat.db")}
    assert days[2].doc_key not in {
        d.doc_key for d in plan_rebuild(settings, owned, None, None).days
    }


def test_an_archive_that_cannot_be_read_leaves_its_days(tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    write_chat_db(settings.graph_docs_path, days=1)
    (settings.graph_docs_path / "contacts.csv").write_text("not a handle,Maya\n")
    plan = plan_rebuild(settings, {}, None, None)
    assert plan.days == () and list(plan.unreadable) == ["chat.db"]
    assert "contacts.csv" in plan.unreadable["chat.db"] and not plan.every_day
    (settings.graph_docs_path / "contacts.csv").unlink()
    (settings.graph_docs_path / "notes.txt").write_text("no archive\n")  # not one: ignored
    assert plan_rebuild(settings, {}, None, None).every_day


def test_a_reset_empties_the_workdir_in_place_and_removes_a_restore_s_debris(
    tmp_path: Path,
) -> None:
    workdir = tmp_path / "graph" / "lightrag"
    workdir.mkdir(parents=True)
    (workdir / "kv_store_llm_response_cache.json").write_text("{}")
    (workdir / "graph_chunk_entity_relation.graphml").write_text("<graphml/>")
    write_manifest(workdir, {})
    (workdir / "nested").mkdir()
    (workdir / "nested" / "x.bin").write_bytes(b"12345")
    debris = tmp_path / "graph" / "lightrag.replaced-abc123"
    debris.mkdir()
    (debris / "old.json").write_text("{}")
    other_engine = tmp_path / "graph" / "another"
    other_engine.mkdir()
    inode = workdir.stat().st_ino

    emptied = empty_workdir(workdir)
    assert emptied.files == 5 and emptied.bytes > 5
    assert set(emptied.names) == {
        "kv_store_llm_response_cache.json",
        "graph_chunk_entity_relation.graphml",
        "varagity_manifest.json",
        "nested",
        "lightrag.replaced-abc123",
    }
    assert list(workdir.iterdir()) == [] and workdir.stat().st_ino == inode
    assert not debris.exists() and other_engine.is_dir()
    assert empty_workdir(workdir).files == 0
    shutil.rmtree(workdir)
    assert empty_workdir(workdir).files == 0 and not workdir.exists()
