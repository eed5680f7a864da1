"""Chat history in Postgres: conversations, their groups, messages and evidence snapshots.

The tables come from migration ``003_conversations.sql``. Three rules shape the code:

* a turn is written in one transaction (:meth:`ConversationStore.append_turn`): the
  conversation row (created on the first turn, its ``updated_at`` bumped on later ones),
  the user message, the assistant message with its provenance, and its sources;
* a source is a *snapshot* (:func:`source_snapshot`), not a join to ``chunks``: a
  reingest replaces chunk rows and ids, and an old answer must still explain itself;
  a graph turn's sources are its transcript days, with the doc_key as ``chunk_id``
  and a ``graph_transcript`` trace (:mod:`varagity.graph.evidence`);
* renaming a conversation or filing it in a group never bumps ``updated_at``, so
  organising the sidebar does not reorder the recency-sorted list.

Ids are app-generated (``uuid4`` hex). Unknown ids raise :class:`ConversationNotFound`
or :class:`GroupNotFound`, which the API answers with 404.
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from varagity.graph.evidence import day_trace
from varagity.graph.types import DayCard
from varagity.records import Quote, RetrievedChunk
from varagity.stores.vector_store import PgVectorStore

TITLE_MAX_CHARS = 60
UNTITLED = "New conversation"


class ConversationNotFound(LookupError):
    """No conversation has this id."""

    def __init__(self, conversation_id: str) -> None:
        """Name the missing id."""
        super().__init__(f"No conversation with id {conversation_id!r}")
        self.conversation_id = conversation_id


class GroupNotFound(LookupError):
    """No conversation group has this id."""

    def __init__(self, group_id: str) -> None:
        """Name the missing id."""
        super().__init__(f"No conversation group with id {group_id!r}")
        self.group_id = group_id


class Keep(enum.Enum):
    """Marker for "leave this field as it is" where ``None`` is a meaningful value."""

    KEEP = "keep"


KEEP = Keep.KEEP


@dataclass(frozen=True, slots=True)
class ConversationSummary:
    """A conversation as the sidebar lists it."""

    conversation_id: str
    title: str
    created_at: datetime
    updated_at: datetime
    group_id: str | None
    message_count: int


@dataclass(frozen=True, slots=True)
class StoredSource:
    """One piece of an answer's evidence: its rank and the snapshot taken at answer time."""

    rank: int
    chunk_id: str
    snapshot: dict[str, Any]


@dataclass(frozen=True, slots=True)
class StoredMessage:
    """A message of the transcript; the provenance fields are None on user messages."""

    message_id: str
    role: str
    content: str
    created_at: datetime
    retrieval_method: str | None = None
    latency_ms: dict[str, float] | None = None
    reasoning: str | None = None
    condensed_query: str | None = None
    chat_engine: str | None = None
    target_corpus: str | None = None
    graph_evidence: dict[str, Any] | None = None
    sources: tuple[StoredSource, ...] = ()
    index_as_of: datetime | None = None


@dataclass(frozen=True, slots=True)
class Conversation:
    """A conversation with its whole transcript, in order."""

    summary: ConversationSummary
    messages: list[StoredMessage]


@dataclass(frozen=True, slots=True)
class Group:
    """A sidebar folder of conversations."""

    group_id: str
    name: str
    created_at: datetime
    conversation_count: int


@dataclass(frozen=True, slots=True)
class AssistantReply:
    """Everything an answered turn records besides the question.

    ``sources`` (document chunks) or ``days`` (a graph turn's transcript days) are the
    numbered evidence, stored with rank = the ``[n]`` the answer cites. ``target_corpus``
    is the corpus the turn asked for and ``graph_evidence`` what the graph found
    (:func:`~varagity.graph.evidence.graph_evidence`; None on a degraded turn).
    ``index_as_of`` is when the document index last changed before the turn's
    retrieval (None on a graph turn). ``quotes`` are the answer's quotes: each document
    source's snapshot keeps those of its passage (``quotes``: text and offsets).
    """

    content: str
    sources: Sequence[RetrievedChunk]
    retrieval_method: str
    chat_engine: str
    latency_ms: Mapping[str, float] = field(default_factory=dict)
    reasoning: str | None = None
    condensed_query: str | None = None
    target_corpus: str | None = None
    graph_evidence: Mapping[str, Any] | None = None
    days: Sequence[DayCard] = ()
    index_as_of: datetime | None = None
    quotes: Sequence[Quote] = ()


@dataclass(frozen=True, slots=True)
class AppendedTurn:
    """Ids of a persisted turn; ``created`` is True when it started the conversation."""

    conversation_id: str
    user_message_id: str
    assistant_message_id: str
    created: bool


def new_id() -> str:
    """A fresh app-generated id (32 hex characters)."""
    return uuid.uuid4().hex


def title_from_question(question: str) -> str:
    """A conversation title: the question on one line, cut near a word boundary + "…"."""
    line = " ".join(question.split())
    if not line:
        return UNTITLED
    if len(line) <= TITLE_MAX_CHARS:
        return line
    cut = line[: TITLE_MAX_CHARS - 1]
    space = cut.rfind(" ")
    if space >= TITLE_MAX_CHARS // 2:  # a word boundary that keeps most of the text
        cut = cut[:space]
    return cut.rstrip(" ,;:.-") + "…"


def source_snapshot(chunk: RetrievedChunk, quotes: Sequence[Quote] = ()) -> dict[str, Any]:
    """What the evidence panel needs about one source, frozen at answer time, with the
    answer's quotes of it."""
    rec = chunk.record
    return {
        "quotes": [{"text": q.text, "start": q.start, "end": q.end} for q in quotes],
        "score": chunk.score,
        "doc_id": rec.doc_id,
        "chunk_index": rec.chunk_index,
        "content": rec.content,
        "context": rec.context,
        "relative_path": rec.relative_path,
        "file_name": rec.file_name,
        "file_type": rec.file_type,
        "page": rec.page,
        "extraction": rec.extraction,
        "file_created_at": _iso(rec.file_created_at),
        "file_modified_at": _iso(rec.file_modified_at),
        "trace": chunk.trace.model_dump(mode="json") if chunk.trace is not None else None,
    }


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def _message(row: Sequence[Any], sources: tuple[StoredSource, ...]) -> StoredMessage:
    """A ``messages`` row (``_MESSAGE_COLUMNS`` order) with its sources."""
    (message_id, role, content, created_at, method, latency, reasoning, condensed, engine,
     corpus, graph, index_as_of) = row  # fmt: skip
    return StoredMessage(
        message_id=message_id,
        role=role,
        content=content,
        created_at=created_at,
        retrieval_method=method,
        latency_ms=latency,
        reasoning=reasoning,
        condensed_query=condensed,
        chat_engine=engine,
        target_corpus=corpus,
        graph_evidence=graph,
        sources=sources,
        index_as_of=index_as_of,
    )


def _clean_name(value: str, what: str) -> str:
    cleaned = " ".join(value.split())
    if not cleaned:
        raise ValueError(f"{what} must not be blank")
    return cleaned


_SUMMARY_COLUMNS = (
    "c.conversation_id, c.title, c.created_at, c.updated_at, c.group_id, "
    "(SELECT count(*) FROM messages m WHERE m.conversation_id = c.conversation_id)"
)
_GROUP_COLUMNS = (
    "g.group_id, g.name, g.created_at, "
    "(SELECT count(*) FROM conversations c WHERE c.group_id = g.group_id)"
)
_MESSAGE_COLUMNS = (
    "message_id, role, content, created_at, retrieval_method, latency_ms, reasoning, "
    "condensed_query, chat_engine, target_corpus, graph_evidence, index_as_of"
)


class ConversationStore:
    """Conversations, groups and turns, over the pgvector store's connection pool."""

    def __init__(self, pg: PgVectorStore) -> None:
        """Use ``pg``'s pool (its migrations created the tables)."""
        self._pg = pg

    # --- conversations -------------------------------------------------------------
    def list_conversations(
        self, *, query: str | None = None, group_id: str | None = None, limit: int = 100
    ) -> list[ConversationSummary]:
        """Most recently updated first.

        Args:
            query: Keep titles containing this text (case-insensitive); None keeps all.
            group_id: Keep conversations filed in this group; None keeps all.
            limit: Most conversations returned.

        Raises:
            GroupNotFound: ``group_id`` names no group.
        """
        if limit <= 0:
            raise ValueError(f"limit must be positive, got {limit}")
        needle = query.strip() if query is not None else ""
        with self._pg.connection() as conn:
            if group_id is not None:
                self._group(conn, group_id)  # raises GroupNotFound
            rows = conn.execute(
                f"SELECT {_SUMMARY_COLUMNS} FROM conversations c"
                " WHERE (%(q)s = '' OR strpos(lower(c.title), lower(%(q)s)) > 0)"
                " AND (%(g)s::text IS NULL OR c.group_id = %(g)s)"
                " ORDER BY c.updated_at DESC, c.created_at DESC, c.conversation_id"
                " LIMIT %(limit)s",
                {"q": needle, "g": group_id, "limit": limit},
            ).fetchall()
        return [ConversationSummary(*row) for row in rows]

    def get_conversation(self, conversation_id: str) -> Conversation:
        """The conversation with every message in order and each answer's sources.

        Raises:
            ConversationNotFound: No conversation has this id.
        """
        with self._pg.connection() as conn:
            summary = self._summary(conn, conversation_id)
            rows = conn.execute(
                f"SELECT {_MESSAGE_COLUMNS} FROM messages WHERE conversation_id = %s ORDER BY seq",
                (conversation_id,),
            ).fetchall()
            source_rows = conn.execute(
                "SELECT s.message_id, s.rank, s.chunk_id, s.trace FROM message_sources s"
                " JOIN messages m ON m.message_id = s.message_id"
                " WHERE m.conversation_id = %s ORDER BY s.message_id, s.rank",
                (conversation_id,),
            ).fetchall()
        sources: dict[str, list[StoredSource]] = {}
        for message_id, rank, chunk_id, snapshot in source_rows:
            sources.setdefault(message_id, []).append(StoredSource(rank, chunk_id, snapshot))
        messages = [_message(row, tuple(sources.get(row[0], ()))) for row in rows]
        return Conversation(summary=summary, messages=messages)

    def history(self, conversation_id: str, turns: int) -> list[tuple[str, str]]:
        """The last ``turns`` answered turns as ``(question, answer)`` pairs, oldest first.

        Raises:
            ConversationNotFound: No conversation has this id.
        """
        if turns < 0:
            raise ValueError(f"turns must be >= 0, got {turns}")
        with self._pg.connection() as conn:
            self._summary(conn, conversation_id)
            rows = conn.execute(
                "SELECT role, content FROM messages WHERE conversation_id = %s"
                " ORDER BY seq DESC LIMIT %s",
                (conversation_id, 2 * turns),
            ).fetchall()
        pairs: list[tuple[str, str]] = []
        question: str | None = None
        for role, content in reversed(rows):
            if role == "user":
                question = content
            elif question is not None:
                pairs.append((question, content))
                question = None
        return pairs

    def update_conversation(
        self,
        conversation_id: str,
        *,
        title: str | Keep = KEEP,
        group_id: str | Keep | None = KEEP,
    ) -> ConversationSummary:
        """Rename and/or move a conversation (``group_id=None`` ungroups it).

        ``updated_at`` is left alone: it tracks new turns, not organisation.

        Raises:
            ConversationNotFound: No conversation has this id.
            GroupNotFound: ``group_id`` names no group.
            ValueError: ``title`` is blank.
        """
        assignments: list[str] = []
        params: list[Any] = []
        if not isinstance(title, Keep):
            assignments.append("title = %s")
            params.append(_clean_name(title, "title"))
        if not isinstance(group_id, Keep):
            assignments.append("group_id = %s")
            params.append(group_id)
        try:
            with self._pg.connection() as conn, conn.transaction():
                if assignments:
                    updated = conn.execute(
                        f"UPDATE conversations SET {', '.join(assignments)}"
                        " WHERE conversation_id = %s RETURNING conversation_id",
                        (*params, conversation_id),
                    ).fetchone()
                    if updated is None:
                        raise ConversationNotFound(conversation_id)
                return self._summary(conn, conversation_id)
        except psycopg.errors.ForeignKeyViolation as exc:
            # the group FK is the only one an UPDATE of conversations can violate
            raise GroupNotFound(str(group_id)) from exc

    def delete_conversation(self, conversation_id: str) -> None:
        """Delete a conversation with its messages and their sources.

        Raises:
            ConversationNotFound: No conversation has this id.
        """
        with self._pg.connection() as conn:
            row = conn.execute(
                "DELETE FROM conversations WHERE conversation_id = %s RETURNING 1",
                (conversation_id,),
            ).fetchone()
        if row is None:
            raise ConversationNotFound(conversation_id)

    # --- turns ---------------------------------------------------------------------
    def append_turn(
        self, conversation_id: str, question: str, reply: AssistantReply
    ) -> AppendedTurn:
        """Persist one answered turn atomically, creating the conversation if needed.

        One transaction holds the conversation row (inserted and titled from
        ``question`` on the first turn, its ``updated_at`` bumped otherwise), the user
        message, the assistant message with its provenance, and one ``message_sources``
        row per source (rank 1-based, in the order given). Any failure leaves nothing.
        """
        user_id, assistant_id = new_id(), new_id()
        with self._pg.connection() as conn, conn.transaction():
            # Taking the conversation's row lock first serialises concurrent turns of
            # one conversation, so their messages' seq values never interleave.
            row = conn.execute(
                "INSERT INTO conversations (conversation_id, title) VALUES (%s, %s)"
                " ON CONFLICT (conversation_id) DO UPDATE SET updated_at = now()"
                " RETURNING (xmax = 0)",  # xmax is 0 on a freshly inserted row
                (conversation_id, title_from_question(question)),
            ).fetchone()
            created = bool(row and row[0])
            conn.execute(
                "INSERT INTO messages (message_id, conversation_id, role, content)"
                " VALUES (%s, %s, 'user', %s)",
                (user_id, conversation_id, question),
            )
            conn.execute(
                "INSERT INTO messages (message_id, conversation_id, role, content,"
                " retrieval_method, latency_ms, reasoning, condensed_query, chat_engine,"
                " target_corpus, graph_evidence, index_as_of)"
                " VALUES (%s, %s, 'assistant', %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                (
                    assistant_id,
                    conversation_id,
                    reply.content,
                    reply.retrieval_method,
                    Jsonb(dict(reply.latency_ms)),
                    reply.reasoning or None,
                    reply.condensed_query,
                    reply.chat_engine,
                    reply.target_corpus,
                    Jsonb(dict(reply.graph_evidence)) if reply.graph_evidence is not None else None,
                    reply.index_as_of,
                ),
            )
            rows = [
                (c.record.chunk_id, source_snapshot(c, [q for q in reply.quotes if q.source == n]))
                for n, c in enumerate(reply.sources, start=1)
            ] + [(day.doc_key, day_trace(day)) for day in reply.days]
            if rows:
                with conn.cursor() as cur:
                    cur.executemany(
                        "INSERT INTO message_sources (message_id, rank, chunk_id, trace)"
                        " VALUES (%s, %s, %s, %s)",
                        [
                            (assistant_id, rank, chunk_id, Jsonb(trace))
                            for rank, (chunk_id, trace) in enumerate(rows, start=1)
                        ],
                    )
        return AppendedTurn(conversation_id, user_id, assistant_id, created)

    # --- groups --------------------------------------------------------------------
    def create_group(self, name: str) -> Group:
        """A new, empty group.

        Raises:
            ValueError: ``name`` is blank.
        """
        group_id = new_id()
        with self._pg.connection() as conn:
            conn.execute(
                "INSERT INTO conversation_groups (group_id, name) VALUES (%s, %s)",
                (group_id, _clean_name(name, "group name")),
            )
            return self._group(conn, group_id)

    def list_groups(self) -> list[Group]:
        """Every group by name, with how many conversations it holds."""
        with self._pg.connection() as conn:
            rows = conn.execute(
                f"SELECT {_GROUP_COLUMNS} FROM conversation_groups g"
                " ORDER BY lower(g.name), g.created_at, g.group_id"
            ).fetchall()
        return [Group(*row) for row in rows]

    def rename_group(self, group_id: str, name: str) -> Group:
        """Rename a group.

        Raises:
            GroupNotFound: No group has this id.
            ValueError: ``name`` is blank.
        """
        cleaned = _clean_name(name, "group name")
        with self._pg.connection() as conn:
            row = conn.execute(
                "UPDATE conversation_groups SET name = %s WHERE group_id = %s RETURNING 1",
                (cleaned, group_id),
            ).fetchone()
            if row is None:
                raise GroupNotFound(group_id)
            return self._group(conn, group_id)

    def delete_group(self, group_id: str) -> None:
        """Delete a group; its conversations stay, ungrouped (``ON DELETE SET NULL``).

        Raises:
            GroupNotFound: No group has this id.
        """
        with self._pg.connection() as conn:
            row = conn.execute(
                "DELETE FROM conversation_groups WHERE group_id = %s RETURNING 1", (group_id,)
            ).fetchone()
        if row is None:
            raise GroupNotFound(group_id)

    # --- helpers -------------------------------------------------------------------
    @staticmethod
    def _summary(conn: psycopg.Connection, conversation_id: str) -> ConversationSummary:
        row = conn.execute(
            f"SELECT {_SUMMARY_COLUMNS} FROM conversations c WHERE c.conversation_id = %s",
            (conversation_id,),
        ).fetchone()
        if row is None:
            raise ConversationNotFound(conversation_id)
        return ConversationSummary(*row)

    @staticmethod
    def _group(conn: psycopg.Connection, group_id: str) -> Group:
        row = conn.execute(
            f"SELECT {_GROUP_COLUMNS} FROM conversation_groups g WHERE g.group_id = %s",
            (group_id,),
        ).fetchone()
        if row is None:
            raise GroupNotFound(group_id)
        return Group(*row)
