"""Loading an evaluation suite: ``queries.jsonl``, its corpus and ``thresholds.json``."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any


class SuiteError(ValueError):
    """The suite folder is missing a file or holds malformed data."""


@dataclass(frozen=True, slots=True)
class RelevantPassage:
    """A golden passage: the corpus-relative file it comes from and its verbatim text."""

    rel_source: str
    text: str


@dataclass(frozen=True, slots=True)
class EvalQuery:
    """One question of a suite."""

    id: str
    query: str
    relevant: tuple[RelevantPassage, ...]
    answer: str | None = None


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


@dataclass(frozen=True, slots=True)
class Suite:
    """A loaded suite."""

    name: str
    root: Path
    corpus: Path
    queries: tuple[EvalQuery, ...]
    thresholds: Thresholds | None

    def limited(self, limit: int | None) -> Suite:
        """The same suite with only its first ``limit`` questions (all when ``None``)."""
        if limit is None:
            return self
        if limit <= 0:
            raise SuiteError(f"limit must be positive, got {limit}")
        return Suite(self.name, self.root, self.corpus, self.queries[:limit], self.thresholds)

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


def _query(line: str, where: str) -> EvalQuery:
    try:
        raw = json.loads(line)
        relevant = tuple(
            RelevantPassage(str(r["rel_source"]), str(r["text"])) for r in raw["relevant"]
        )
        query = EvalQuery(
            id=str(raw["id"]), query=str(raw["query"]), relevant=relevant, answer=raw.get("answer")
        )
    except (json.JSONDecodeError, KeyError, TypeError) as exc:
        raise SuiteError(f"{where}: not a suite question ({type(exc).__name__}: {exc})") from exc
    if not relevant:
        raise SuiteError(f"{where}: question {query.id!r} has no relevant passage")
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
    missing = sorted(
        {p.rel_source for q in queries for p in q.relevant if not (corpus / p.rel_source).is_file()}
    )
    if missing:
        raise SuiteError(f"passages refer to files missing from {corpus}: {', '.join(missing)}")
    thresholds_file = root / "thresholds.json"
    thresholds = load_thresholds(thresholds_file) if thresholds_file.is_file() else None
    return Suite(name, root, corpus, queries, thresholds)
