"""``/api/conversations`` and ``/api/groups``: chat history and its sidebar folders.

Conversations are created by ``POST /api/chat``; here they are listed, read back with
each answer's evidence (enough to re-render the evidence panel after a reload),
renamed, filed into groups and deleted. Renaming or moving never bumps
``updated_at``, so organising the sidebar does not reorder it.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Response
from starlette.concurrency import run_in_threadpool

from varagity.graph.evidence import is_day_trace
from varagity.stores.conversation_store import (
    KEEP,
    ConversationNotFound,
    GroupNotFound,
    StoredMessage,
)
from varagity.stores.conversation_store import Conversation as StoredConversation
from varagity.stores.conversation_store import ConversationSummary as StoredSummary
from varagity.stores.conversation_store import Group as StoredGroup
from varagity.stores.feedback_store import Feedback as StoredFeedback
from varagity_api.deps import ConversationStoreDep, FeedbackStoreDep
from varagity_api.errors import ApiError, not_found
from varagity_api.schemas.common import ErrorBody, GraphEvidence, day_source_from_trace
from varagity_api.schemas.conversations import (
    ConversationDetail,
    ConversationPatch,
    ConversationSummary,
    Group,
    GroupCreate,
    GroupPatch,
    Message,
    SourceSnapshot,
)
from varagity_api.schemas.feedback import feedback_from

router = APIRouter(tags=["conversations"])

_NOT_FOUND: dict[int | str, dict[str, Any]] = {
    404: {"model": ErrorBody, "description": "Unknown conversation or group id."}
}


def _summary(row: StoredSummary) -> ConversationSummary:
    return ConversationSummary(
        conversation_id=row.conversation_id,
        title=row.title,
        created_at=row.created_at,
        updated_at=row.updated_at,
        group_id=row.group_id,
        message_count=row.message_count,
    )


def _message(row: StoredMessage, ratings: list[StoredFeedback] | None = None) -> Message:
    return Message(
        message_id=row.message_id,
        role=row.role,  # type: ignore[arg-type]  # the table's CHECK constraint
        content=row.content,
        created_at=row.created_at,
        retrieval_method=row.retrieval_method,
        chat_engine=row.chat_engine,
        condensed_query=row.condensed_query,
        reasoning=row.reasoning,
        latency_ms=row.latency_ms,
        target_corpus=row.target_corpus,  # type: ignore[arg-type]  # migration 006's CHECK
        graph_evidence=(
            GraphEvidence.model_validate(row.graph_evidence) if row.graph_evidence else None
        ),
        sources=[
            SourceSnapshot.model_validate({**s.snapshot, "n": s.rank, "chunk_id": s.chunk_id})
            for s in row.sources
            if not is_day_trace(s.snapshot)
        ],
        days=[
            day_source_from_trace(s.chunk_id, s.snapshot, s.rank)
            for s in row.sources
            if is_day_trace(s.snapshot)
        ],
        index_as_of=row.index_as_of,
        feedback=[feedback_from(f) for f in ratings or ()],
    )


def _detail(
    conversation: StoredConversation, ratings: dict[str, list[StoredFeedback]]
) -> ConversationDetail:
    return ConversationDetail(
        **_summary(conversation.summary).model_dump(),
        messages=[_message(m, ratings.get(m.message_id)) for m in conversation.messages],
    )


def _group(row: StoredGroup) -> Group:
    return Group(
        group_id=row.group_id,
        name=row.name,
        created_at=row.created_at,
        conversation_count=row.conversation_count,
    )


@router.get("/conversations", response_model=list[ConversationSummary], responses=_NOT_FOUND)
async def list_conversations(
    store: ConversationStoreDep,
    q: Annotated[
        str | None, Query(max_length=200, description="Title contains (case-insensitive).")
    ] = None,
    group_id: Annotated[str | None, Query(description="Only conversations in this group.")] = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 100,
) -> list[ConversationSummary]:
    """Conversations, most recently updated first."""
    try:
        rows = await run_in_threadpool(
            store.list_conversations, query=q, group_id=group_id, limit=limit
        )
    except GroupNotFound as exc:
        raise not_found(exc) from exc
    return [_summary(r) for r in rows]


@router.get(
    "/conversations/{conversation_id}", response_model=ConversationDetail, responses=_NOT_FOUND
)
async def get_conversation(
    conversation_id: str, store: ConversationStoreDep, feedback: FeedbackStoreDep
) -> ConversationDetail:
    """A conversation's messages in order, each answer with its sources, provenance and
    the ratings given on it."""
    try:
        conversation = await run_in_threadpool(store.get_conversation, conversation_id)
    except ConversationNotFound as exc:
        raise not_found(exc) from exc
    ratings = await run_in_threadpool(feedback.of_conversation, conversation_id)
    return _detail(conversation, ratings)


@router.patch(
    "/conversations/{conversation_id}", response_model=ConversationSummary, responses=_NOT_FOUND
)
async def update_conversation(
    conversation_id: str, body: ConversationPatch, store: ConversationStoreDep
) -> ConversationSummary:
    """Rename and/or move a conversation (``group_id: null`` ungroups it)."""
    fields = body.model_fields_set
    try:
        row = await run_in_threadpool(
            store.update_conversation,
            conversation_id,
            title=body.title if "title" in fields and body.title is not None else KEEP,
            group_id=body.group_id if "group_id" in fields else KEEP,
        )
    except (ConversationNotFound, GroupNotFound) as exc:
        raise not_found(exc) from exc
    return _summary(row)


@router.delete("/conversations/{conversation_id}", status_code=204, responses=_NOT_FOUND)
async def delete_conversation(conversation_id: str, store: ConversationStoreDep) -> Response:
    """Delete a conversation with its messages and their evidence."""
    try:
        await run_in_threadpool(store.delete_conversation, conversation_id)
    except ConversationNotFound as exc:
        raise not_found(exc) from exc
    return Response(status_code=204)


@router.get("/groups", response_model=list[Group])
async def list_groups(store: ConversationStoreDep) -> list[Group]:
    """Every group by name, with its conversation count."""
    return [_group(g) for g in await run_in_threadpool(store.list_groups)]


@router.post("/groups", response_model=Group, status_code=201)
async def create_group(body: GroupCreate, store: ConversationStoreDep) -> Group:
    """Create an empty group."""
    try:
        return _group(await run_in_threadpool(store.create_group, body.name))
    except ValueError as exc:
        raise ApiError(422, "invalid_request", str(exc)) from exc


@router.patch("/groups/{group_id}", response_model=Group, responses=_NOT_FOUND)
async def rename_group(group_id: str, body: GroupPatch, store: ConversationStoreDep) -> Group:
    """Rename a group."""
    try:
        return _group(await run_in_threadpool(store.rename_group, group_id, body.name))
    except GroupNotFound as exc:
        raise not_found(exc) from exc
    except ValueError as exc:
        raise ApiError(422, "invalid_request", str(exc)) from exc


@router.delete("/groups/{group_id}", status_code=204, responses=_NOT_FOUND)
async def delete_group(group_id: str, store: ConversationStoreDep) -> Response:
    """Delete a group; its conversations stay, ungrouped."""
    try:
        await run_in_threadpool(store.delete_group, group_id)
    except GroupNotFound as exc:
        raise not_found(exc) from exc
    return Response(status_code=204)
