"""A small BM25 corpus both backends' tests index (the same expectations for each)."""

from __future__ import annotations

from varagity.stores.bm25.base import BM25Document


def doc(chunk_id: str, doc_id: str, index: int, content: str, context: str = "") -> BM25Document:
    return BM25Document(
        chunk_id=chunk_id,
        doc_id=doc_id,
        original_index=index,
        content=content,
        contextualized_content=context,
    )


CORPUS = [
    doc(
        "pg-0",
        "pgvector.md",
        0,
        "pgvector supports an HNSW cosine index for approximate nearest neighbour search.",
        "This chunk explains how the vector store builds its cosine index.",
    ),
    doc(
        "pg-1",
        "pgvector.md",
        1,
        "Postgres indexes are rebuilt with REINDEX after a bulk load.",
        "Maintenance of the relational store.",
    ),
    doc(
        "fz-0",
        "fuzzing.md",
        0,
        "The differential executor DiffExecutor compares two interpreters.",
        "Fuzzing harness overview.",
    ),
    doc(
        "fz-1",
        "fuzzing.md",
        1,
        "Construct a DiffExecutor with both backends, then call run_target on each input.",
        "Fuzzing harness API.",
    ),
    doc(
        "cook-0",
        "cooking.md",
        0,
        "Whisk the eggs with sugar until pale, then fold in the flour.",
        "A recipe for sponge cake.",
    ),
]
