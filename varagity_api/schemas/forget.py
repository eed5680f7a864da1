"""The receipt a forget answers with (:mod:`varagity.forget`): per store, what was
removed and what asking the store again found, and the backups still holding it."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field


class StoreReceiptInfo(BaseModel):
    """What one store gave up."""

    store: str = Field(
        description="documents, chunks, vectors, blurbs, bm25, previews, reply_cache, "
        "snapshots; for the message graph graph_days, graph_entities, graph_relations, "
        "manifest, graph_files."
    )
    label: str = Field(description="What to call the store in a UI.")
    removed: int = Field(description="Deleted by the forget (snapshots: redacted).")
    remaining: int = Field(description="What the store still held when asked again.")
    updated: int = Field(
        description="Kept but changed: shared graph entities and relations that lost only "
        "the source's description, days extracted again without the forgotten messages."
    )
    verified: bool = Field(description="The store was asked again and holds none of it.")
    note: str | None = None


class BackupHoldingInfo(BaseModel):
    """A backup bundle that still contains the forgotten source (never rewritten)."""

    corpus: Literal["rag", "graph"]
    name: str = Field(description="The bundle's file name in varagity-exports/.")
    created_at: datetime | None
    holds: str = Field(description="What of the source it holds (2 document(s), ...).")


class ForgetReceiptInfo(BaseModel):
    """What a forget removed from every store, verified, and which backups hold it."""

    forget_id: str = Field(description="The forget's id in the ledger doctor checks.")
    kind: Literal["documents", "archive", "thread", "handle", "messages"]
    target: str = Field(description="What was forgotten: paths, an archive, a thread ...")
    forgotten_at: datetime
    verified: bool = Field(description="Every store was asked again and holds none of it.")
    stores: list[StoreReceiptInfo]
    backups: list[BackupHoldingInfo] = Field(
        description="Backup bundles whose contents still include the source."
    )
    notes: list[str]

    @classmethod
    def of(cls, receipt: Any) -> ForgetReceiptInfo:
        """From a :class:`varagity.forget.ForgetReceipt`."""
        return cls.model_validate(receipt.to_json())
