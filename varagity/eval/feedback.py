"""The feedback suite: thumbs-downs on answers of the live corpus, as suite questions.

A thumbs-down on a document answer on which the user also said which of the turn's
sources does answer the question (``answered_by``) or that none does
(``none_answers``) becomes one question (:func:`build_feedback_suite`):

* ``query``: the user's words, as asked;
* a marked source: ``relevant`` is that source's passage as it was shown, from the
  stored snapshot (``rel_source`` = the chunk's document path, ``text`` = the chunk's
  content, a verbatim span of the parsed text), and no key facts, so the answer is
  judged by citation (:func:`varagity.eval.answer_scoring.cites_relevant`): it passes
  when it does not abstain and cites a passage holding the marked one;
* "none does": ``"answerable": false``: it passes when the answer abstains.

A question whose marked passage's file is no longer indexed (or no longer in
``DOCS_PATH``) is left out and listed under ``skipped``, with why, so a removed
document cannot fail the gate forever. The suite is written in the standard format by
:func:`write_suite` (``queries.jsonl`` + ``suite.json`` naming ``DOCS_PATH`` as its
corpus), so ``varagity eval --suite`` and people reviewing it read it like any other.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from varagity.eval.suite import EvalQuery, RelevantPassage, Suite
from varagity.stores.corpus_queries import doc_ids_at_paths
from varagity.stores.feedback_store import FeedbackStore, SuiteRow
from varagity.stores.vector_store import PgVectorStore

SUITE_NAME = "feedback"
#: The reference answer of a "none of the sources answers" question (for people).
NOT_ANSWERED = "The documents do not say."


@dataclass(slots=True)
class FeedbackSuite:
    """The feedback questions of one corpus: each as its ``queries.jsonl`` record, and
    the marked thumbs-downs left out with why."""

    corpus: Path
    records: list[dict[str, Any]] = field(default_factory=list)
    skipped: list[dict[str, str]] = field(default_factory=list)

    @property
    def suite(self) -> Suite | None:
        """The questions as a :class:`Suite` over ``corpus``; None when there are none."""
        if not self.records:
            return None
        return Suite(
            name=SUITE_NAME,
            root=self.corpus,
            corpus=self.corpus,
            queries=tuple(_query(r) for r in self.records),
            thresholds=None,
        )


def question_id(row: SuiteRow) -> str:
    """A feedback question's id: ``fb-`` and the start of its feedback id."""
    return f"fb-{row.feedback_id[:12]}"


def _query(record: dict[str, Any]) -> EvalQuery:
    return EvalQuery(
        id=record["id"],
        query=record["query"],
        relevant=tuple(RelevantPassage(r["rel_source"], r["text"]) for r in record["relevant"]),
        answer=record.get("answer"),
        answerable=bool(record.get("answerable", True)),
    )


def record_of(row: SuiteRow) -> dict[str, Any] | str:
    """The ``queries.jsonl`` record of one marked thumbs-down, or why it has none."""
    record: dict[str, Any] = {"id": question_id(row), "query": row.question}
    if row.none_answers:
        record.update(answerable=False, answer=NOT_ANSWERED, relevant=[])
    else:
        passage = row.passage or {}
        rel, text = passage.get("relative_path"), passage.get("content")
        if not rel or not isinstance(text, str) or not text.strip():
            return f"source {row.answered_by} of the answer has no stored passage"
        if row.comment:
            record["answer"] = row.comment
        record["relevant"] = [{"rel_source": rel, "text": text}]
    record["feedback"] = {
        "feedback_id": row.feedback_id,
        "message_id": row.message_id,
        "conversation_id": row.conversation_id,
        "answered_by": row.answered_by,
        "comment": row.comment,
        "created_at": row.created_at.isoformat(),
        "answer_given": row.answer,
    }
    return record


def build_feedback_suite(
    rows: Sequence[SuiteRow], corpus: Path, indexed_paths: Collection[str]
) -> FeedbackSuite:
    """The suite of ``rows``; a question whose passage's file is not in ``corpus`` or
    not among ``indexed_paths`` is skipped."""
    out = FeedbackSuite(corpus=corpus)
    for row in rows:
        record = record_of(row)
        if isinstance(record, str):
            out.skipped.append({"id": question_id(row), "reason": record})
            continue
        missing = [
            r["rel_source"]
            for r in record["relevant"]
            if r["rel_source"] not in indexed_paths or not (corpus / r["rel_source"]).is_file()
        ]
        if missing:
            reason = f"{missing[0]} is no longer indexed in the corpus"
            out.skipped.append({"id": record["id"], "reason": reason})
            continue
        out.records.append(record)
    return out


def load_feedback_suite(pg: PgVectorStore, corpus: Path) -> FeedbackSuite:
    """The feedback suite of the corpus ``pg`` indexes from ``corpus`` (``DOCS_PATH``)."""
    rows = FeedbackStore(pg).suite_rows()
    paths = sorted({str(r.passage["relative_path"]) for r in rows if r.passage})
    indexed = {path for path, ids in doc_ids_at_paths(pg, paths).items() if ids}
    return build_feedback_suite(rows, corpus, indexed)


def write_suite(feedback: FeedbackSuite, folder: Path) -> Path:
    """Write the suite folder: ``queries.jsonl`` (one record a line, with a ``feedback``
    key saying where it came from) and ``suite.json`` (``name``, ``corpus``: the live
    corpus folder, ``skipped``). Returns the folder."""
    folder.mkdir(parents=True, exist_ok=True)
    lines = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in feedback.records)
    (folder / "queries.jsonl").write_text(lines, encoding="utf-8")
    meta = {"name": SUITE_NAME, "corpus": str(feedback.corpus), "skipped": feedback.skipped}
    (folder / "suite.json").write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    return folder
