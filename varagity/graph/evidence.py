"""What a graph turn records: the retrieval minus the transcripts, and each cited day.

A graph-targeted assistant message keeps, in the same snapshot discipline as document
evidence (an old answer must explain itself after the graph is rebuilt):

* ``messages.graph_evidence``: :func:`graph_evidence` of the retrieval, the entities,
  the relations and the engine's query mode, the same shape the ``retrieval`` event
  streams; NULL when the turn degraded to the documents;
* one ``message_sources`` row per numbered day: ``chunk_id`` is the day's doc_key and
  ``trace`` is :func:`day_trace`, marked ``"kind": "graph_transcript"`` (document
  snapshots carry no kind, which is what readers branch on: :func:`is_day_trace`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict
from typing import Any

from varagity.graph.types import DayCard, GraphEntity, GraphRelation, GraphRetrieval

#: ``trace["kind"]`` of a ``message_sources`` row that is a transcript day.
GRAPH_TRANSCRIPT = "graph_transcript"


def entity_json(entity: GraphEntity) -> dict[str, Any]:
    """An entity as JSON (name, type, description, doc_keys)."""
    return {**asdict(entity), "doc_keys": list(entity.doc_keys)}


def relation_json(relation: GraphRelation) -> dict[str, Any]:
    """A relation as JSON (source, target, description, keywords, weight, doc_keys)."""
    return {**asdict(relation), "doc_keys": list(relation.doc_keys)}


def graph_evidence(found: GraphRetrieval) -> dict[str, Any]:
    """``{"entities": [...], "relations": [...], "mode": ...}`` of a graph retrieval."""
    return {
        "entities": [entity_json(e) for e in found.entities],
        "relations": [relation_json(r) for r in found.relations],
        "mode": found.mode,
    }


def day_trace(day: DayCard) -> dict[str, Any]:
    """The ``message_sources.trace`` of a cited day (its doc_key goes in ``chunk_id``)."""
    return {
        "kind": GRAPH_TRANSCRIPT,
        "thread_name": day.thread_name,
        "span": day.span,
        "excerpt": day.excerpt,
        "message_guids": list(day.message_guids),
    }


def is_day_trace(trace: Mapping[str, Any]) -> bool:
    """Whether a stored source snapshot is a transcript day (else a document chunk)."""
    return trace.get("kind") == GRAPH_TRANSCRIPT
