"""Grounded answer prompts and citation parsing."""

from __future__ import annotations

from varagity.generation.answer import (
    NO_EVIDENCE_ANSWER,
    build_messages,
    cited_numbers,
    stream_answer,
)
from varagity.records import ChunkRecord, RetrievedChunk


def _chunk(n: int, text: str) -> RetrievedChunk:
    rec = ChunkRecord(
        doc_id=f"d{n}",
        chunk_id=f"d{n}::0",
        original_index=n,
        chunk_index=0,
        source=f"/c/f{n}.md",
        relative_path=f"f{n}.md",
        file_name=f"f{n}.md",
        file_type="md",
        content=text,
        contextualized_content=text,
        chunk_size=800,
        chunk_overlap=100,
        chunking_strategy="recursive_character",
        embedding_model="m",
        n_tokens=3,
        content_hash="h",
    )
    return RetrievedChunk(record=rec, score=1.0 / n)


def test_sources_are_numbered_in_rank_order() -> None:
    msgs = build_messages(
        "How long?",
        [_chunk(1, "27 months"), _chunk(2, "14 days")],
        context_tokens=8192,
        answer_tokens=256,
    )
    user = msgs[-1]["content"]
    assert user.index("[1] 27 months") < user.index("[2] 14 days")
    assert user.startswith("Question: How long?")
    assert user.rstrip().endswith('"How long?" in one or two sentences, citing sources like [1]:')
    assert "[n]" in msgs[0]["content"]


def test_long_sources_are_trimmed_to_the_budget() -> None:
    long = "word " * 5000
    msgs = build_messages("q", [_chunk(1, long)], context_tokens=2048, answer_tokens=256)
    assert len(msgs[-1]["content"]) < len(long) / 2


def test_cited_numbers() -> None:
    assert cited_numbers("A [2] and [1][2], not [7] or [0].", 3) == [2, 1]
    assert cited_numbers("no citations", 3) == []


def test_no_evidence_needs_no_model() -> None:
    class Boom:
        def stream(self, *a: object, **k: object):  # pragma: no cover - must not be called
            raise AssertionError("model called without evidence")

    out = "".join(stream_answer(Boom(), "q", [], context_tokens=8192, answer_tokens=64))
    assert out == NO_EVIDENCE_ANSWER
