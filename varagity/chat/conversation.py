"""A turn within a stored conversation: what every front end that keeps conversations
shares (``POST /api/chat`` and ``varagity chat``).

A turn of a conversation is answered with the conversation's last
``CHAT_HISTORY_TURNS`` answered turns as its history (:func:`history`), so a follow-up
such as "and how long is it?" is condensed against them, and once answered it is saved
in one transaction (:func:`save_turn`) where the web client's sidebar lists it.
"""

from __future__ import annotations

from varagity.chat.base import Turn
from varagity.chat.turn import TurnDone, TurnRetrieval
from varagity.graph.evidence import graph_evidence
from varagity.stores.conversation_store import AppendedTurn, AssistantReply, ConversationStore


def history(store: ConversationStore, conversation_id: str, turns: int) -> tuple[Turn, ...]:
    """The last ``turns`` answered turns of the conversation, oldest first.

    Raises:
        ConversationNotFound: No conversation has this id.
    """
    return tuple(Turn(q, a) for q, a in store.history(conversation_id, turns))


def reply_of(evidence: TurnRetrieval, done: TurnDone) -> AssistantReply:
    """What the conversation records of an answered turn: the answer, its numbered
    evidence (chunks, or a graph turn's days and what the graph found) and how it was
    made."""
    return AssistantReply(
        content=done.answer,
        sources=list(evidence.chunks),
        retrieval_method=evidence.method,
        chat_engine=evidence.chat_engine,
        latency_ms=dict(done.timings_ms),
        reasoning=done.reasoning,
        condensed_query=evidence.condensed_query,
        target_corpus=evidence.target_corpus,
        graph_evidence=graph_evidence(evidence.graph) if evidence.graph else None,
        days=evidence.days,
        index_as_of=evidence.index_as_of,
        quotes=done.quotes,
    )


def save_turn(
    store: ConversationStore,
    conversation_id: str,
    question: str,
    evidence: TurnRetrieval,
    done: TurnDone,
) -> AppendedTurn:
    """Save an answered turn (creating the conversation on its first), in one
    transaction."""
    return store.append_turn(conversation_id, question, reply_of(evidence, done))
