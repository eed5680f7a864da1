"""Loading an evaluation suite: ``queries.jsonl``, its corpus and ``thresholds.json``."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TypeVar


class SuiteError(ValueError):
    """The suite folder is missing a file or holds malformed data."""


Q = TypeVar("Q")


def first_questions(queries: tuple[Q, ...], limit: int | None) -> tuple[Q, ...]:
    """The first ``limit`` of ``queries`` (all when ``None``), for ``--limit``.

    Raises:
        SuiteError: ``limit`` is not positive.
    """
    if limit is None:
        return queries
    if limit <= 0:
        raise SuiteError(f"limit must be positive, got {limit}")
    return queries[:limit]


@dataclass(frozen=True, slots=True)
class RelevantPassage:
    """A golden passage: the corpus-relative file it comes from and its verbatim text."""

    rel_source: str
    text: str


Fact = tuple[str, ...]
"""One key fact: its accepted spellings (``("27 months", "twenty-seven months")``)."""


@dataclass(frozen=True, slots=True)
class EvalQuery:
    """One question of a suite.

    An answerable question has golden passages and (for answer scoring) key facts; an
    unanswerable one (``"answerable": false``) has neither, only optional ``traps``:
    near-miss values from the corpus an ungrounded answer would state.
    """

    id: str
    query: str
    relevant: tuple[RelevantPassage, ...]
    answer: str | None = None
    answerable: bool = True
    facts: tuple[Fact, ...] = ()
    traps: tuple[Fact, ...] = ()


@dataclass(frozen=True, slots=True)
class Thresholds:
    """The release gate: minimum Pass@k and MRR@k for ``method``."""

    method: str
    k: int
    pass_at_k: float
    mrr: float

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {"method": self.method, "k": self.k, "pass_at_k": self.pass_at_k, "mrr": self.mrr}


#: Default minimum share of the live corpus's feedback questions that must pass
#: (``answers.feedback_pass_rate``; eval_suites/README.md, "Feedback suite").
FEEDBACK_PASS_RATE = 0.5


@dataclass(frozen=True, slots=True)
class AnswerThresholds:
    """The answer gate: minimum figures for answers grounded on ``k`` passages of ``method``.

    ``feedback_pass_rate`` gates the feedback suite (the live corpus's marked
    thumbs-downs), scored apart from the golden suite.
    """

    method: str
    k: int
    answer_correctness: float
    citation_validity: float
    abstention_accuracy: float
    max_loops: int
    feedback_pass_rate: float = FEEDBACK_PASS_RATE
    max_false_abstention: float = 1.0

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "method": self.method,
            "k": self.k,
            "answer_correctness": self.answer_correctness,
            "citation_validity": self.citation_validity,
            "abstention_accuracy": self.abstention_accuracy,
            "max_loops": self.max_loops,
            "feedback_pass_rate": self.feedback_pass_rate,
            "max_false_abstention": self.max_false_abstention,
        }


@dataclass(frozen=True, slots=True)
class Suite:
    """A loaded suite."""

    name: str
    root: Path
    corpus: Path
    queries: tuple[EvalQuery, ...]
    thresholds: Thresholds | None
    answer_thresholds: AnswerThresholds | None = None

    def limited(self, limit: int | None) -> Suite:
        """The same suite with only its first ``limit`` questions (all when ``None``)."""
        return replace(self, queries=first_questions(self.queries, limit))

    @property
    def answerable(self) -> tuple[EvalQuery, ...]:
        """The questions the corpus answers (the ones retrieval is scored on)."""
        return tuple(q for q in self.queries if q.answerable)

    def corpus_files(self) -> list[str]:
        """Corpus-relative paths of the files the suite's passages come from."""
        return sorted({p.rel_source for q in self.queries for p in q.relevant})

    def corpus_fingerprint(self) -> str:
        """sha256 over every corpus file's relative path and bytes (for ingest reuse)."""
        digest = hashlib.sha256()
        for path in sorted(p for p in self.corpus.rglob("*") if p.is_file()):
            rel = path.relative_to(self.corpus).as_posix()
            if any(part.startswith(".") for part in rel.split("/")):
                continue
            digest.update(rel.encode())
            digest.update(hashlib.sha256(path.read_bytes()).digest())
        return digest.hexdigest()


def _facts(raw: Any, field: str, where: str) -> tuple[Fact, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list) or not all(
        isinstance(f, list) and f and all(isinstance(s, str) and s.strip() for s in f) for f in raw
    ):
        raise SuiteError(
            f"{where}: {field!r} must be a list of facts, each a non-empty list of spellings, "
            f'e.g. [["27 months", "twenty-seven months"]]'
        )
    return tuple(tuple(s.strip() for s in f) for f in raw)


def _query(line: str, where: str) -> EvalQuery:
    try:
        raw = json.loads(line)
        relevant = tuple(
            RelevantPassage(str(r["rel_source"]), str(r["text"])) for r in raw["relevant"]
        )
        answerable = raw.get("answerable", True)
        if not isinstance(answerable, bool):
            raise SuiteError(f"{where}: 'answerable' must be true or false, got {answerable!r}")
        query = EvalQuery(
            id=str(raw["id"]),
            query=str(raw["query"]),
            relevant=relevant,
            answer=raw.get("answer"),
            answerable=answerable,
            facts=_facts(raw.get("facts"), "facts", where),
            traps=_facts(raw.get("traps"), "traps", where),
        )
    except (json.JSONDecodeError, KeyError, TypeError, AttributeError) as exc:
        raise SuiteError(f"{where}: not a suite question ({type(exc).__name__}: {exc})") from exc
    if query.answerable and not relevant:
        raise SuiteError(f"{where}: question {query.id!r} has no relevant passage")
    if not query.answerable and (relevant or query.facts):
        raise SuiteError(
            f"{where}: question {query.id!r} is marked unanswerable but lists "
            "relevant passages or facts; drop them or the 'answerable' flag"
        )
    return query


def load_thresholds(path: Path) -> Thresholds:
    """Read a ``thresholds.json`` file.

    Args:
        path: The file, e.g. ``{"method": "hybrid", "k": 5, "pass_at_k": 0.8, "mrr": 0.5}``.

    Returns:
        The parsed gate.
    """
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        return Thresholds(
            method=str(raw.get("method", "hybrid")),
            k=int(raw.get("k", 5)),
            pass_at_k=float(raw["pass_at_k"]),
            mrr=float(raw["mrr"]),
        )
    except (OSError, json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
        raise SuiteError(f"{path}: unreadable thresholds ({type(exc).__name__}: {exc})") from exc


def load_answer_thresholds(path: Path) -> AnswerThresholds | None:
    """The ``answers`` section of a ``thresholds.json`` file (None when it has none).

    Args:
        path: The file, e.g. ``{..., "answers": {"answer_correctness": 0.8,
            "citation_validity": 0.6, "abstention_accuracy": 0.8, "max_loops": 0,
            "max_false_abstention": 0.05}}``; ``method`` and ``k`` default to the file's
            top-level ones, ``max_false_abstention`` (a share) to 1 (no limit).
    """
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        section = raw.get("answers")
        if section is None:
            return None
        return AnswerThresholds(
            method=str(section.get("method", raw.get("method", "hybrid"))),
            k=int(section.get("k", raw.get("k", 5))),
            answer_correctness=float(section["answer_correctness"]),
            citation_validity=float(section["citation_validity"]),
            abstention_accuracy=float(section["abstention_accuracy"]),
            max_loops=int(section["max_loops"]),
            feedback_pass_rate=float(section.get("feedback_pass_rate", FEEDBACK_PASS_RATE)),
            max_false_abstention=float(section.get("max_false_abstention", 1.0)),
        )
    except (OSError, json.JSONDecodeError, KeyError, TypeError, ValueError, AttributeError) as exc:
        raise SuiteError(
            f"{path}: unreadable answer thresholds ({type(exc).__name__}: {exc})"
        ) from exc


def load_suite(path: str | Path) -> Suite:
    """Load a suite folder.

    Args:
        path: Folder holding ``queries.jsonl`` and either ``corpus/`` or a ``suite.json``
            whose ``corpus`` entry names the corpus folder (relative to the suite folder).

    Returns:
        The suite, with absolute corpus path and optional thresholds.

    Raises:
        SuiteError: A file is missing or malformed, or a passage's file is not in the corpus.
    """
    root = Path(path).expanduser().resolve()
    queries_file = root / "queries.jsonl"
    if not queries_file.is_file():
        raise SuiteError(f"{root} is not a suite folder: no queries.jsonl")
    corpus = root / "corpus"
    name = root.name
    meta_file = root / "suite.json"
    if meta_file.is_file():
        try:
            meta = json.loads(meta_file.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise SuiteError(f"{meta_file}: invalid JSON ({exc})") from exc
        if meta.get("corpus"):
            corpus = (root / str(meta["corpus"])).resolve()
        name = str(meta.get("name") or name)
    if not corpus.is_dir():
        raise SuiteError(f"corpus folder {corpus} of suite {root} does not exist")
    lines = queries_file.read_text(encoding="utf-8").splitlines()
    queries = tuple(
        _query(line, f"{queries_file}:{n}") for n, line in enumerate(lines, 1) if line.strip()
    )
    if not queries:
        raise SuiteError(f"{queries_file} holds no questions")
    seen: set[str] = set()
    for q in queries:
        if q.id in seen:
            raise SuiteError(f"{queries_file}: question id {q.id!r} appears twice")
        seen.add(q.id)
    missing = sorted(
        {p.rel_source for q in queries for p in q.relevant if not (corpus / p.rel_source).is_file()}
    )
    if missing:
        raise SuiteError(f"passages refer to files missing from {corpus}: {', '.join(missing)}")
    thresholds_file = root / "thresholds.json"
    thresholds = None
    answer_thresholds = None
    if thresholds_file.is_file():
        thresholds = load_thresholds(thresholds_file)
        answer_thresholds = load_answer_thresholds(thresholds_file)
    return Suite(name, root, corpus, queries, thresholds, answer_thresholds)
