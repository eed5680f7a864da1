"""Corpus bodies: the document list, deletions and per-file upload results."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field

from varagity.corpus import DocumentStatus
from varagity.uploads import UploadStatus
from varagity_api.schemas.forget import ForgetReceiptInfo


class DocumentInfo(BaseModel):
    """One indexed document, or one file of ``DOCS_PATH`` not indexed yet."""

    doc_id: str | None = Field(description="Null for a file not indexed yet (pending).")
    relative_path: str = Field(description="Path under DOCS_PATH.")
    file_name: str
    file_type: str = Field(description="The suffix without its dot (md, pdf, ...).")
    status: DocumentStatus = Field(
        description="indexed; no_text (indexed with 0 chunks); pending (in DOCS_PATH, not "
        "indexed yet); failed (its last ingest failed and the file has not changed since: "
        "see reason); outdated (the file changed since it was indexed); missing (indexed, "
        "the file is gone)."
    )
    reason: str | None = Field(
        default=None,
        description="For a failed file: the stage that failed and its error; else null.",
    )
    n_chunks: int | None
    n_contextualized: int | None = Field(
        description="Chunks that have their LLM blurb (written after the file became "
        "searchable); null for a file not indexed yet."
    )
    contextualizing: bool = Field(
        description="CONTEXTUALIZE is on and some chunks still wait for their blurb: the "
        "document is searchable and its chunks improve as blurbs land."
    )
    extractions: list[str] = Field(description="How the chunks' text was obtained (text, ocr).")
    content_hash: str | None = Field(description="sha256 of the bytes that were indexed.")
    size_bytes: int | None = Field(description="The file's size now; null when it is gone.")
    file_created_at: datetime | None
    file_modified_at: datetime | None = Field(
        description="The file's modification time now, or at ingest when it is gone."
    )
    ingested_at: datetime | None


class DocumentList(BaseModel):
    """The corpus, by relative path, with counts per status."""

    documents: list[DocumentInfo]
    counts: dict[str, int] = Field(description="Entries per status.")


class DeleteRequest(BaseModel):
    """Documents to delete together."""

    doc_ids: list[str] = Field(min_length=1, max_length=100_000)
    remove_file: bool = Field(
        default=False,
        description="Also remove each document's file from DOCS_PATH (never outside it), "
        "pruning folders that leaves empty. Without it the file stays and lists as pending.",
    )


class FileRemovalInfo(BaseModel):
    """What happened to one deleted document's file."""

    relative_path: str
    removed: bool
    code: str | None = Field(
        description="Why it was not removed: outside_corpus, already_gone, not_a_file, "
        "unlink_failed."
    )
    message: str | None


class DeleteResponse(BaseModel):
    """The outcome of a deletion."""

    deleted: list[str]
    not_found: list[str] = Field(description="Ids with no stored document; nothing to do.")
    files: list[FileRemovalInfo] = Field(description="Only with remove_file.")
    pruned_folders: list[str] = Field(description="Folders emptied by removing files.")
    receipt: ForgetReceiptInfo = Field(
        description="Per store, what was removed and verified gone, and the backups that "
        "still hold the documents."
    )


class UploadFileResult(BaseModel):
    """What happened to one uploaded file."""

    index: int = Field(description="Position of the file in the request.")
    name: str = Field(description="The path or file name the client sent.")
    status: UploadStatus
    relative_path: str | None = Field(description="Where it is (or would have been) stored.")
    size_bytes: int | None
    code: str | None = Field(
        description="Refusal reason: invalid_path, absolute_path, path_traversal, "
        "reserved_path, hidden_name, invalid_name, unsupported_type, too_large, "
        "invalid_mtime, duplicate_path, path_conflict, outside_corpus, write_failed."
    )
    message: str | None


class UploadResponse(BaseModel):
    """Per-file results (a partly refused batch stores the rest) and counts per status."""

    results: list[UploadFileResult]
    counts: dict[str, int]
