"""Thumbs up and down on answers and their sources, in Postgres (migration ``008_feedback.sql``).

A rating is about an assistant message as a whole (``source=None``) or about one of its
numbered sources (``source=n``, the ``[n]`` the answer cites); there is at most one per
(message, source), and a new one replaces it. A thumbs-down on the answer may also say
which of the turn's sources *does* answer the question (``answered_by=n``) or that none
does (``none_answers``): those are the questions of the corpus's feedback suite
(:meth:`FeedbackStore.suite_rows`, turned into suite questions by
:mod:`varagity.eval.feedback`). Feedback rows reference the message and go with it
(``ON DELETE CASCADE``).

Unknown messages raise :class:`MessageNotFound`, feedback that cannot apply to the
message (a question, a source number it does not have, a day of a graph answer marked
as the passage) :class:`InvalidFeedback`; the API answers 404 and 422.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

import psycopg

from varagity.stores.conversation_store import new_id
from varagity.stores.vector_store import PgVectorStore

Rating = Literal["up", "down"]
RATINGS: tuple[str, ...] = ("up", "down")
COMMENT_MAX_CHARS = 2000


class MessageNotFound(LookupError):
    """No message has this id."""

    def __init__(self, message_id: str) -> None:
        """Name the missing id."""
        super().__init__(f"No message with id {message_id!r}")
        self.message_id = message_id


class FeedbackNotFound(LookupError):
    """The message has no feedback on this target."""

    def __init__(self, message_id: str, source: int | None) -> None:
        """Name the message and the target."""
        target = "the answer" if source is None else f"source {source}"
        super().__init__(f"Message {message_id!r} has no feedback on {target}")
        self.message_id = message_id
        self.source = source


class InvalidFeedback(ValueError):
    """The feedback does not fit the message it is about."""


@dataclass(frozen=True, slots=True)
class Feedback:
    """One stored rating."""

    feedback_id: str
    message_id: str
    conversation_id: str
    source: int | None
    rating: str
    answered_by: int | None
    none_answers: bool
    comment: str | None
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True, slots=True)
class SuiteRow:
    """A marked thumbs-down, with what its suite question needs.

    ``question`` is the user's words; ``passage`` the stored snapshot of source
    ``answered_by`` (its ``relative_path`` and ``content`` among others), None when the
    user said no source answers.
    """

    feedback_id: str
    message_id: str
    conversation_id: str
    question: str
    answer: str
    answered_by: int | None
    none_answers: bool
    comment: str | None
    created_at: datetime
    passage: dict[str, Any] | None


_COLUMNS = (
    "f.feedback_id, f.message_id, m.conversation_id, f.source, f.rating, f.answered_by,"
    " f.none_answers, f.comment, f.created_at, f.updated_at"
)


def check_marks(
    rating: str, source: int | None, answered_by: int | None, none_answers: bool
) -> None:
    """Refuse combinations no rating can mean.

    Raises:
        InvalidFeedback: An unknown rating, a number below 1, or a passage marked
            (``answered_by``/``none_answers``) on anything but a thumbs-down on the answer,
            or both at once.
    """
    if rating not in RATINGS:
        raise InvalidFeedback(f"rating must be 'up' or 'down', got {rating!r}")
    for name, value in (("source", source), ("answered_by", answered_by)):
        if value is not None and value < 1:
            raise InvalidFeedback(f"{name} must be at least 1, got {value}")
    if answered_by is not None and none_answers:
        raise InvalidFeedback("give answered_by or none_answers, not both")
    if (answered_by is not None or none_answers) and (rating != "down" or source is not None):
        raise InvalidFeedback(
            "answered_by and none_answers say what should have answered a wrong answer: "
            "they go with rating 'down' on the answer itself (source null)"
        )


class FeedbackStore:
    """Ratings of answers, over the pgvector store's connection pool."""

    def __init__(self, pg: PgVectorStore) -> None:
        """Use ``pg``'s pool (its migrations created the table)."""
        self._pg = pg

    def put(
        self,
        message_id: str,
        rating: str,
        *,
        source: int | None = None,
        answered_by: int | None = None,
        none_answers: bool = False,
        comment: str | None = None,
    ) -> Feedback:
        """Rate an answer (``source=None``) or its source ``n``; replaces an earlier rating
        of the same target.

        Raises:
            MessageNotFound: No message has this id.
            InvalidFeedback: The message is a question, has no source ``source`` or
                ``answered_by``, the marked passage is a graph answer's day, or the
                combination is refused by :func:`check_marks`.
        """
        check_marks(rating, source, answered_by, none_answers)
        comment = comment.strip() or None if comment is not None else None
        if comment is not None and len(comment) > COMMENT_MAX_CHARS:
            raise InvalidFeedback(f"comment is over {COMMENT_MAX_CHARS} characters")
        with self._pg.connection() as conn, conn.transaction():
            row = conn.execute(
                "SELECT role FROM messages WHERE message_id = %s FOR SHARE", (message_id,)
            ).fetchone()
            if row is None:
                raise MessageNotFound(message_id)
            if row[0] != "assistant":
                raise InvalidFeedback(
                    f"message {message_id!r} is a question; feedback is given on answers"
                )
            kinds: dict[int, str | None] = dict(
                conn.execute(
                    "SELECT rank, trace->>'kind' FROM message_sources WHERE message_id = %s",
                    (message_id,),
                ).fetchall()
            )
            for name, n in (("source", source), ("answered_by", answered_by)):
                if n is not None and n not in kinds:
                    raise InvalidFeedback(
                        f"{name} {n}: the answer has {len(kinds)} source(s)"
                        + (f", numbered 1 to {len(kinds)}" if kinds else "")
                    )
            if answered_by is not None and kinds.get(answered_by) == "graph_transcript":
                raise InvalidFeedback(
                    "answered_by marks a document passage; source "
                    f"{answered_by} of this graph answer is a conversation day"
                )
            (feedback_id,) = conn.execute(
                "INSERT INTO message_feedback (feedback_id, message_id, source, rating,"
                " answered_by, none_answers, comment) VALUES (%s, %s, %s, %s, %s, %s, %s)"
                " ON CONFLICT (message_id, source) DO UPDATE SET rating = EXCLUDED.rating,"
                " answered_by = EXCLUDED.answered_by, none_answers = EXCLUDED.none_answers,"
                " comment = EXCLUDED.comment, updated_at = now()"
                " RETURNING feedback_id",
                (new_id(), message_id, source, rating, answered_by, none_answers, comment),
            ).fetchone() or (None,)
            return self._one(conn, "f.feedback_id = %s", (feedback_id,))[0]

    def of_message(self, message_id: str) -> list[Feedback]:
        """The message's ratings, the answer's first, then by source number.

        Raises:
            MessageNotFound: No message has this id.
        """
        with self._pg.connection() as conn:
            _require_message(conn, message_id)
            return self._one(conn, "f.message_id = %s", (message_id,))

    def of_conversation(self, conversation_id: str) -> dict[str, list[Feedback]]:
        """Every rating in a conversation, by message id."""
        with self._pg.connection() as conn:
            rows = self._one(conn, "m.conversation_id = %s", (conversation_id,))
        out: dict[str, list[Feedback]] = {}
        for fb in rows:
            out.setdefault(fb.message_id, []).append(fb)
        return out

    def recent(self, *, rating: str | None = None, limit: int = 500) -> list[Feedback]:
        """The newest ratings first (``rating`` keeps one kind)."""
        if limit <= 0:
            raise ValueError(f"limit must be positive, got {limit}")
        with self._pg.connection() as conn:
            rows = conn.execute(
                f"SELECT {_COLUMNS} FROM message_feedback f"
                " JOIN messages m ON m.message_id = f.message_id"
                " WHERE (%(r)s::text IS NULL OR f.rating = %(r)s)"
                " ORDER BY f.updated_at DESC, f.feedback_id LIMIT %(limit)s",
                {"r": rating, "limit": limit},
            ).fetchall()
        return [Feedback(*row) for row in rows]

    def delete(self, message_id: str, source: int | None = None) -> None:
        """Remove the rating of the answer (``source=None``) or of its source ``n``.

        Raises:
            MessageNotFound: No message has this id.
            FeedbackNotFound: The message has no rating on that target.
        """
        with self._pg.connection() as conn:
            _require_message(conn, message_id)
            row = conn.execute(
                "DELETE FROM message_feedback WHERE message_id = %s"
                " AND source IS NOT DISTINCT FROM %s RETURNING 1",
                (message_id, source),
            ).fetchone()
        if row is None:
            raise FeedbackNotFound(message_id, source)

    def suite_rows(self) -> list[SuiteRow]:
        """Every thumbs-down on a document answer that marks the passage that answers
        (or says none does), oldest first, with the question it answered and the
        marked source's snapshot."""
        with self._pg.connection() as conn:
            rows = conn.execute(
                "SELECT f.feedback_id, f.message_id, m.conversation_id, q.content, m.content,"
                " f.answered_by, f.none_answers, f.comment, f.created_at, s.trace"
                " FROM message_feedback f"
                " JOIN messages m ON m.message_id = f.message_id"
                " JOIN LATERAL (SELECT u.content FROM messages u"
                "   WHERE u.conversation_id = m.conversation_id AND u.role = 'user'"
                "   AND u.seq < m.seq ORDER BY u.seq DESC LIMIT 1) q ON true"
                " LEFT JOIN message_sources s"
                "   ON s.message_id = f.message_id AND s.rank = f.answered_by"
                " WHERE f.source IS NULL AND f.rating = 'down'"
                " AND (f.answered_by IS NOT NULL OR f.none_answers)"
                " AND coalesce(m.target_corpus, 'rag') = 'rag'"
                " ORDER BY f.created_at, f.feedback_id"
            ).fetchall()
        return [SuiteRow(*row) for row in rows]

    @staticmethod
    def _one(conn: Any, where: str, params: tuple[Any, ...]) -> list[Feedback]:
        rows = conn.execute(
            f"SELECT {_COLUMNS} FROM message_feedback f"
            f" JOIN messages m ON m.message_id = f.message_id WHERE {where}"
            " ORDER BY f.message_id, f.source NULLS FIRST",
            params,
        ).fetchall()
        return [Feedback(*row) for row in rows]


def _require_message(conn: psycopg.Connection[Any], message_id: str) -> None:
    """Raise :class:`MessageNotFound` unless a message has this id."""
    if (
        conn.execute("SELECT 1 FROM messages WHERE message_id = %s", (message_id,)).fetchone()
        is None
    ):
        raise MessageNotFound(message_id)
