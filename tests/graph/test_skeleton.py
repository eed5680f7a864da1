"""The graph's skeleton from the fixture ``chat.db``: every writer, conversation and day
straight from the archive, with no model."""

from __future__ import annotations

from datetime import UTC
from pathlib import Path

import pytest

from tests.support.chatdb import THREADS, ChatArchive, write_chat_db
from varagity.graph.manifest import ManifestEntry, diff
from varagity.graph.skeleton import CONVERSATION, PERSON, Presence, Skeleton, with_skeleton
from varagity.graph.sources import read_archive
from varagity.graph.types import DayCard, GraphEntity, GraphRetrieval, ThreadDay


@pytest.fixture
def archive(tmp_path: Path) -> ChatArchive:
    return write_chat_db(tmp_path / "graph-docs")


def _days(archive: ChatArchive) -> list[ThreadDay]:
    return read_archive(archive.path.parent, "chat.db", tz=UTC)


def _skeleton(days: list[ThreadDay]) -> Skeleton:
    return Skeleton.of({d.doc_key: ManifestEntry.of(d) for d in days})


def test_an_edge_for_every_writer_conversation_and_day(archive: ChatArchive) -> None:
    days = _days(archive)
    skeleton = _skeleton(days)
    names = {d.thread_id: d.thread_name for d in days}
    expected = set()
    for row in archive.conversation:
        thread = THREADS[row.thread].guid
        key = f"{thread}::{row.sent_at.date().isoformat()}"
        expected.add((row.sender, key))
    wrote_in = {
        (r.source, key)
        for r in skeleton.relations()
        if r.keywords == "wrote in"
        for key in r.doc_keys
    }
    assert wrote_in == expected
    # each relation points at the conversation's entity, by the name it goes by
    entities = {e.name: e for e in skeleton.entities()}
    for relation in skeleton.relations():
        if relation.keywords == "wrote in":
            assert entities[relation.target].type == CONVERSATION
            assert relation.target.removesuffix(" (conversation)") in set(names.values())
    # every writer is a person, "Me" included, holding the days they wrote
    people = {e.name for e in entities.values() if e.type == PERSON}
    assert people == {row.sender for row in archive.conversation}
    me = entities["Me"]
    assert set(me.doc_keys) == {k for s, k in expected if s == "Me"}


def test_two_writers_of_one_day_wrote_with_each_other(archive: ChatArchive) -> None:
    days = _days(archive)
    skeleton = _skeleton(days)
    together = {
        (r.source, r.target): set(r.doc_keys)
        for r in skeleton.relations()
        if r.keywords == "wrote with"
    }
    for day in days:
        writers = sorted(set(day.senders))
        for i, a in enumerate(writers):
            for b in writers[i + 1 :]:
                assert day.doc_key in together[(a, b)]
    assert together, "the fixture has group days"
    # a day's writers are the senders of its lines, in order of their first message
    for day in days:
        lines = [line.split("] ", 1)[1].split(": ", 1)[0] for line in day.text.splitlines()]
        assert day.senders == tuple(dict.fromkeys(lines))


def test_a_person_named_in_a_question_and_the_weekdays_of_their_days(
    archive: ChatArchive,
) -> None:
    skeleton = _skeleton(_days(archive))
    handle = next(p for p in skeleton.people if "@" in p)
    assert skeleton.named_in(f"When did {handle} write about Lisbon?") == [handle]
    assert skeleton.named_in("Who booked the apartment?") == []
    person = next(e for e in skeleton.entities([handle]) if e.name == handle)
    # the group renamed "Lisbon crew" on a later day goes by its new name
    assert person.type == PERSON and "Lisbon crew" in person.description
    # days are named with their weekday, computed: 2026-03-02 was a Monday
    lisbon = f"{THREADS['lisbon'].guid}::2026-03-02"
    wrote = [r for r in skeleton.relations([handle]) if lisbon in r.doc_keys]
    assert wrote and any("Monday 2026-03-02" in r.description for r in wrote)


def test_a_manifest_without_writers_records_them_without_re_extracting(
    archive: ChatArchive,
) -> None:
    days = _days(archive)
    old = {
        d.doc_key: ManifestEntry(
            d.content_sha256, d.message_guids, d.thread_name, d.span, "chat.db"
        )
        for d in days
    }
    assert Skeleton.of(old).presences == ()
    # the same text with writers unrecorded: "changed", which the engine finds unchanged
    found = diff(days, old, source="chat.db")
    assert not found.new and len(found.changed) == len(days)
    recorded = {d.doc_key: ManifestEntry.of(d) for d in days}
    assert not diff(days, recorded, source="chat.db").changed
    assert ManifestEntry.from_json(recorded[days[0].doc_key].to_json()) == recorded[days[0].doc_key]


def test_retrieval_gets_the_skeleton_of_the_people_a_question_names(
    archive: ChatArchive,
) -> None:
    days = _days(archive)
    skeleton = _skeleton(days)
    handle = "jonas.weber@icloud.com"
    theirs = [d for d in days if handle in d.senders]
    others = [d for d in days if handle not in d.senders]
    assert theirs and others
    cards = tuple(DayCard(d.doc_key, d.thread_name, d.span, d.text) for d in (*others, *theirs))
    extracted = GraphEntity("Lisbon", "Location", "A city", (theirs[0].doc_key,))
    found = GraphRetrieval(entities=(extracted,), days=cards)
    merged = with_skeleton(found, skeleton, f"What did {handle} say about the flights?")
    # the person first, what the extraction found after it
    assert merged.entities[0].name == handle and merged.entities[0].type == PERSON
    assert merged.entities[-1] == extracted
    assert {r.source for r in merged.relations if r.keywords == "wrote in"} == {handle}
    # their days before the others, retrieval's order kept within each
    assert [c.doc_key for c in merged.days] == [d.doc_key for d in (*theirs, *others)]
    # a question naming nobody is left as retrieval found it
    assert with_skeleton(found, skeleton, "Where is the apartment?") == found


def test_the_graph_view_lists_people_and_their_neighbourhood(archive: ChatArchive) -> None:
    skeleton = _skeleton(_days(archive))
    listed = {e.name: e for e in skeleton.summaries("icloud")}
    people = {n for n, e in listed.items() if e.type == PERSON}
    assert people == {p for p in skeleton.people if "icloud" in p}
    assert all("icloud" in n for n in listed)
    maya = listed["maya.chen@icloud.com"]
    assert maya.type == PERSON and maya.degree >= 2 and maya.doc_keys
    near = skeleton.neighbourhood("MAYA.CHEN@icloud.com")
    assert near is not None and near.center == "maya.chen@icloud.com"
    names = {e.name for e in near.entities}
    assert "Lisbon crew" in names and "Me" in names
    assert all(near.center in (r.source, r.target) for r in near.relations)
    assert skeleton.neighbourhood("Lisbon") is None


def test_a_person_named_by_a_handle_written_as_one_word() -> None:
    skeleton = Skeleton(
        (
            Presence("Jake Watson", "t1", "Jake Watson", "2026-09-17"),
            Presence("Chae Song-hwa", "t2", "Chae Song-hwa", "2026-04-07"),
            Presence("Li Hua", "t1", "Jake Watson", "2026-09-17"),
        )
    )
    assert skeleton.named_in("Who does JakeWatson consider the best defender?") == ["Jake Watson"]
    assert skeleton.named_in("When is ChaeSong-hwa hosting the lecture?") == ["Chae Song-hwa"]
    # five letters make a joined name ("LiHua"); fewer do not ("Li" and "Hu" are no words
    # of "LiHu")
    assert skeleton.named_in("What does LiHua want?") == ["Li Hua"]
    assert skeleton.named_in("What does LiHu want?") == []
