"""A graph turn's record in Postgres: target_corpus, graph_evidence and cited days as
``graph_transcript`` sources, and the vocabulary migration 006 enforces."""

from __future__ import annotations

from collections.abc import Iterator

import psycopg
import pytest

from tests.support.records import retrieved_chunk
from varagity.graph.evidence import GRAPH_TRANSCRIPT, day_trace, graph_evidence, is_day_trace
from varagity.graph.types import DayCard, GraphEntity, GraphRelation, GraphRetrieval
from varagity.stores.conversation_store import AssistantReply, ConversationStore, new_id
from varagity.stores.vector_store import PgVectorStore

pytestmark = pytest.mark.integration

DAY = DayCard(
    doc_key="iMessage;-;+14155550101::2024-05-03",
    thread_name="Maya Chen",
    span="2024-05-03",
    excerpt="[09:12] Maya Chen: Sam, I finally booked the flights to Lisbon!",
    message_guids=("g-1", "g-2"),
)
FOUND = GraphRetrieval(
    entities=(GraphEntity("Maya Chen", "person", "Books the trip", (DAY.doc_key,)),),
    relations=(GraphRelation("Maya Chen", "Lisbon", "flies to", "travel", 2.0, (DAY.doc_key,)),),
    days=(DAY,),
    mode="mix",
)


@pytest.fixture
def store(pg_url: str) -> Iterator[ConversationStore]:
    pg = PgVectorStore(pg_url, embedding_dim=8)
    try:
        yield ConversationStore(pg)
    finally:
        pg.close()


def reply(**fields: object) -> AssistantReply:
    values: dict[str, object] = {
        "content": "Maya flies to Lisbon on June 14 [1].",
        "sources": [],
        "retrieval_method": "graph",
        "chat_engine": "simple",
    }
    values.update(fields)
    return AssistantReply(**values)  # type: ignore[arg-type]


def test_graph_evidence_is_the_retrieval_without_the_days() -> None:
    assert graph_evidence(FOUND) == {
        "entities": [
            {
                "name": "Maya Chen",
                "type": "person",
                "description": "Books the trip",
                "doc_keys": [DAY.doc_key],
            }
        ],
        "relations": [
            {
                "source": "Maya Chen",
                "target": "Lisbon",
                "description": "flies to",
                "keywords": "travel",
                "weight": 2.0,
                "doc_keys": [DAY.doc_key],
            }
        ],
        "mode": "mix",
    }
    trace = day_trace(DAY)
    assert trace["kind"] == GRAPH_TRANSCRIPT and is_day_trace(trace)
    assert not is_day_trace({"score": 1.0, "doc_id": "d"})  # a document snapshot


def test_a_graph_turn_round_trips(store: ConversationStore) -> None:
    cid = new_id()
    saved = store.append_turn(
        cid,
        "When does Maya fly?",
        reply(target_corpus="graph", graph_evidence=graph_evidence(FOUND), days=[DAY]),
    )
    message = store.get_conversation(cid).messages[1]
    assert message.message_id == saved.assistant_message_id
    assert message.target_corpus == "graph"
    assert message.graph_evidence == graph_evidence(FOUND)
    [source] = message.sources
    assert (source.rank, source.chunk_id) == (1, DAY.doc_key)
    assert source.snapshot == {
        "kind": "graph_transcript",
        "thread_name": "Maya Chen",
        "span": "2024-05-03",
        "excerpt": DAY.excerpt,
        "message_guids": ["g-1", "g-2"],
    }
    user = store.get_conversation(cid).messages[0]
    assert user.target_corpus is None and user.graph_evidence is None


def test_degraded_and_document_turns_keep_no_graph_evidence(store: ConversationStore) -> None:
    cid = new_id()
    chunk = retrieved_chunk(1, "Warranty: 27 months.")
    store.append_turn(cid, "Kettle?", reply(target_corpus="graph", sources=[chunk]))
    store.append_turn(cid, "Kettle again?", reply(target_corpus="rag", sources=[chunk]))
    degraded, rag = store.get_conversation(cid).messages[1::2]
    assert (degraded.target_corpus, degraded.graph_evidence) == ("graph", None)
    assert (rag.target_corpus, rag.graph_evidence) == ("rag", None)
    assert not is_day_trace(degraded.sources[0].snapshot)


def test_the_schema_refuses_an_unknown_corpus_and_stray_graph_evidence(
    store: ConversationStore,
) -> None:
    with pytest.raises(psycopg.errors.CheckViolation, match="target_corpus"):
        store.append_turn(new_id(), "q", reply(target_corpus="documents"))
    with pytest.raises(psycopg.errors.CheckViolation, match="graph_evidence"):
        store.append_turn(
            new_id(), "q", reply(target_corpus="rag", graph_evidence=graph_evidence(FOUND))
        )
    assert store.list_conversations() == []  # a refused turn leaves nothing
