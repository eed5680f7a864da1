"""Paged files and their chunk records for the page-preview tests.

The records come from the real parser and chunker (:func:`chunk_records`); a test that
wants one passage on its own makes it with :func:`passage`, which keeps the file's
identity and content hash (a chunk is a piece of text with a file behind it).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from varagity.config import Settings
from varagity.ingest.parsing import parse_file
from varagity.ingest.stages import build_records, chunk_document
from varagity.records import ChunkRecord, utcnow
from varagity.stores.vector_store import DocumentRow, EmbeddedChunk, PgVectorStore

# Long enough to wrap over several lines of an A4 page, distinct per page.
REPORT_PAGES: tuple[str, ...] = (
    "The northern breakwater was inspected in January after the winter storms. Divers "
    "found cracked armour units along the outer face and recommended replacing forty "
    "of them before the autumn season begins.",
    "Dredging of the inner harbour removed eleven thousand cubic metres of silt. The "
    "spoil was tested for heavy metals and carried to the licensed disposal site two "
    "nautical miles offshore.",
    "Pilot boarding moves to the outer anchorage from next March. Masters must call "
    "the harbour office on channel twelve one hour before arrival to book a pilot.",
)


def chunk_records(settings: Settings, relative_path: str) -> list[ChunkRecord]:
    """The chunk records the ingest makes of a corpus file (no store involved)."""
    parsed = parse_file(settings.docs_path, relative_path, settings=settings)
    drafts = chunk_document(parsed, settings)
    return build_records(
        parsed, drafts, range(len(drafts)), settings=settings, embedding_model="test"
    )


def passage(record: ChunkRecord, content: str, *, page: int | None = None) -> ChunkRecord:
    """A chunk of ``record``'s file holding ``content`` (recorded on ``page``)."""
    return record.model_copy(update={"content": content, "page": page})


def store_records(pg: PgVectorStore, records: Sequence[ChunkRecord]) -> None:
    """Write one document's records with one-hot vectors (previews never read them)."""
    first = records[0]
    pg.write_document(
        DocumentRow(
            first.doc_id,
            first.source,
            first.relative_path,
            first.file_type,
            first.content_hash,
            len(records),
            utcnow(),
        ),
        [
            EmbeddedChunk(r, [float(i == j) for j in range(pg.embedding_dim)])
            for i, r in enumerate(records)
        ],
    )


def wide_pdf(path: Path, pages: Sequence[str] = REPORT_PAGES) -> Path:
    """A text-layer PDF, one paragraph per page."""
    from tests.support.pdf_files import text_pdf

    path.parent.mkdir(parents=True, exist_ok=True)
    return text_pdf(path, pages)
