"""The graph-sources sensor and contacts files: a contacts file is no archive (no
partition, not reported as unsupported), and a new, changed or removed contacts file is a
change of every archive it names the handles of, so their builds re-render the days with
the names (the manifest diff then re-extracts only the days whose text changed); and
``graph_archive`` reading an archive with its names, or failing on a broken file."""

from __future__ import annotations

import json
from pathlib import Path

import dagster as dg
import pytest

from tests.conftest import SettingsFactory
from tests.support.chatdb import write_chat_db
from tests.support.graph_pipeline import GraphHarness, requests
from varagity import pipeline
from varagity_assets.defs.graph.assets import graph_archive
from varagity_assets.defs.graph.partitions import archive_key
from varagity_assets.resources import VaragityResource


@pytest.fixture
def root(make_settings: SettingsFactory, pg_url: str, tmp_path: Path) -> Path:
    # the session's Postgres: without DATABASE_URL the resource's services would start an
    # embedded server in this test's home and leave it running
    settings = make_settings(GRAPH_DOCS_PATH=tmp_path / "graph-docs", DATABASE_URL=pg_url)
    settings.graph_docs_path.mkdir(parents=True)
    return settings.graph_docs_path


def _run_keys(result: dg.SensorResult | dg.SkipReason) -> dict[str, str]:
    return {r.partition_key or "": r.run_key or "" for r in requests(result)}


def test_a_changed_contacts_file_requests_the_builds_of_the_archives_it_names(
    root: Path,
) -> None:
    write_chat_db(root / "phone", days=1)
    write_chat_db(root / "laptop", days=1)
    h = GraphHarness()
    first = _run_keys(h.tick())
    assert set(first) == {"phone/chat.db", "laptop/chat.db"}

    # a mapping for the phone's archive only: that archive changed, the laptop's did not
    (root / "phone" / "contacts.csv").write_text("maya.chen@icloud.com,Maya Chen\n")
    named = h.tick()
    second = _run_keys(named)
    assert set(second) == {"phone/chat.db"}
    assert second["phone/chat.db"] != first["phone/chat.db"]
    assert h.partitions() == {"phone/chat.db", "laptop/chat.db"}  # no partition of its own
    assert json.loads(h.cursor or "{}")["skipped"] == {}  # not reported as unsupported
    assert isinstance(h.tick(), dg.SkipReason)  # nothing more until it changes again

    # one at the top applies to both; editing it is a change of both
    (root / "contacts.vcf").write_text("BEGIN:VCARD\nFN:Dad\nTEL:+16175550101\nEND:VCARD\n")
    both = _run_keys(h.tick())
    assert set(both) == {"phone/chat.db", "laptop/chat.db"}
    (root / "contacts.vcf").write_text("BEGIN:VCARD\nFN:Papa\nTEL:+16175550101\nEND:VCARD\n")
    again = _run_keys(h.tick())
    assert set(again) == {"phone/chat.db", "laptop/chat.db"}
    assert again["laptop/chat.db"] not in (both["laptop/chat.db"], first["laptop/chat.db"])

    # removed: the handles go back, a change as well, though to content built before
    # (the daemon launches no run key twice: this one must be new)
    (root / "contacts.vcf").unlink()
    (root / "phone" / "contacts.csv").unlink()
    back = _run_keys(h.tick())
    assert set(back) == {"phone/chat.db", "laptop/chat.db"}
    launched = {*first.values(), *second.values(), *both.values(), *again.values()}
    assert not launched & set(back.values())
    for rel in back:
        assert back[rel].startswith(first[rel])  # the first build's signature, built again
    assert all(r.job_name == pipeline.GRAPH_BUILD_JOB for r in requests(named))


def test_graph_archive_reads_the_names_and_fails_on_a_broken_file(root: Path) -> None:
    write_chat_db(root / "phone", days=1)
    (root / "contacts.csv").write_text("handle,name\nmaya.chen@icloud.com,Maya Chen\n")
    key = archive_key("phone/chat.db")
    with dg.build_asset_context(partition_key=key) as context:
        days = graph_archive(context, VaragityResource())[key]
        metadata = context.get_output_metadata("result")
    assert any("] Maya Chen: " in day.text for day in days)
    assert not any("maya.chen@icloud.com" in day.text for day in days)
    assert metadata["contacts_files"].value == ["contacts.csv"]
    assert metadata["named_handles"] == 1
    assert "+14155550178" in metadata["unnamed_handles"].value

    (root / "contacts.csv").write_text("handle,name\nMaya Chen,maya.chen@icloud.com\n")
    with (
        dg.build_asset_context(partition_key=key) as context,
        pytest.raises(dg.Failure) as failed,
    ):
        graph_archive(context, VaragityResource())
    assert "cannot name the handles of phone/chat.db" in str(failed.value)
    assert "contacts.csv: line 2: 'Maya Chen' is not a phone number" in str(failed.value)
