"""Records for store and generation tests: stored chunks with vectors, document rows,
retrieved chunks."""

from __future__ import annotations

import numpy as np

from varagity.records import ChunkRecord, RetrievedChunk, chunk_id_for
from varagity.stores.vector_store import DocumentRow, EmbeddedChunk

DIM = 8


def unit_vector(seed: int) -> list[float]:
    v = np.random.default_rng(seed).normal(size=DIM)
    return list(v / np.linalg.norm(v))


def stored_chunks(doc_id: str, n: int, first_index: int, path: str = "a.md") -> list[EmbeddedChunk]:
    out = []
    for i in range(n):
        rec = ChunkRecord(
            doc_id=doc_id,
            chunk_id=chunk_id_for(doc_id, i),
            original_index=first_index + i,
            chunk_index=i,
            source=f"/corpus/{path}",
            relative_path=path,
            file_name=path,
            file_type="md",
            content=f"chunk {i} of {doc_id}",
            contextualized_content=f"c {i}",
            chunk_size=800,
            chunk_overlap=100,
            chunking_strategy="recursive_character",
            embedding_model="test",
            n_tokens=4,
            content_hash="h" + doc_id,
        )
        out.append(EmbeddedChunk(rec, unit_vector(first_index + i)))
    return out


def document_row(doc_id: str, n: int, path: str = "a.md") -> DocumentRow:
    return DocumentRow(doc_id, f"/corpus/{path}", path, "md", "h" + doc_id, n)


def retrieved_chunk(n: int, text: str) -> RetrievedChunk:
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
