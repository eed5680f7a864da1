"""Loading a message-graph suite: questions over a chat archive, their gold answers,
type and evidence sessions, and the graph answer gate (``eval_suites/README.md``).

A graph suite is a folder with

* ``suite.json`` (optional): ``name``; where the chats are, either ``sessions`` (a
  folder of LiHua-World session files, written into a Messages archive by
  :mod:`varagity.eval.lihua` before the build; the default is ``sessions/`` inside the
  suite) or ``archive`` (a Messages ``chat.db`` used as it is); ``queries`` (default
  ``queries.jsonl`` in the suite); ``owner`` (the speaker who is "me", ``LiHua``);
  ``timezone`` (the zone of the session stamps, ``UTC``); ``lenient_evidence`` (below);
  ``note``. Paths are relative to the suite folder, so a suite can point at data kept
  outside the repository without copying it.
* ``queries.jsonl``: one question a line, the fields of LiHua-World's own file:
  ``{"id", "query", "answer", "type": "single"|"multi"|"null", "answerable",
  "evidence": ["YYYYMMDD_HH:MM", ...]}``; ``answerable`` may be left out (it follows
  from the type); other fields are ignored.
* ``thresholds.json`` (optional): the gate (:class:`GraphThresholds`).

The evidence stamps name sessions by their ``Time:`` line; ``YYYYMMDD_HHMM`` (a session's
file name) and ``Time: YYYYMMDD_HH:MM`` are read as the same stamp. An answerable
question needs at least one, an unanswerable one (type ``null``) has none, and with a
sessions folder each must name one of its sessions. A bad entry is an error, unless
``lenient_evidence`` is true: then it is dropped, a stamp left after a tab at the end of
the gold answer (a column shifted into it) is moved back to the evidence, and each
repair is listed in :attr:`GraphSuite.problems`. LiHua-World's development questions
need that (one has ``"evidence": ["What"]`` and its stamp inside its answer).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, replace
from datetime import date
from pathlib import Path
from typing import Any, Literal, cast
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from varagity.eval.lihua import OWNER, SessionFormatError, parse_stamp, read_sessions
from varagity.eval.suite import SuiteError, first_questions

QuestionType = Literal["single", "multi", "null"]
#: The question types, in report order.
QUESTION_TYPES: tuple[QuestionType, ...] = ("single", "multi", "null")
#: Evidence-day recall is measured at this many retrieved days unless the gate says.
DEFAULT_K = 10

_SUITE_KEYS = {
    "name",
    "sessions",
    "archive",
    "queries",
    "owner",
    "timezone",
    "lenient_evidence",
    "note",
}
_THRESHOLD_KEYS = {"k", "accuracy", "max_error_rate", "null_abstention", "evidence_recall"}
_REQUIRED = ("id", "query", "answer", "type")
_SHIFTED_STAMP = re.compile(r"\t\s*(\S+)\s*$")


@dataclass(frozen=True, slots=True)
class GraphQuery:
    """One question: its gold answer, type and the sessions that answer it (canonical
    stamps, ``20260105_11:00``; none for an unanswerable question)."""

    id: str
    query: str
    answer: str
    type: QuestionType
    evidence: tuple[str, ...] = ()

    @property
    def answerable(self) -> bool:
        """Whether the chats answer it (every type but ``null``)."""
        return self.type != "null"

    @property
    def evidence_days(self) -> tuple[date, ...]:
        """The days of the evidence sessions, oldest first (what evidence-day recall
        looks for among the days graph retrieval returns)."""
        return tuple(sorted({parse_stamp(stamp).date() for stamp in self.evidence}))


@dataclass(frozen=True, slots=True)
class GraphThresholds:
    """The graph answer gate: minimum accuracy, maximum error rate (both over all
    questions), minimum share of ``null`` questions abstained, minimum evidence-day
    recall at ``k`` retrieved days; ``None`` is not gated."""

    k: int = DEFAULT_K
    accuracy: float | None = None
    max_error_rate: float | None = None
    null_abstention: float | None = None
    evidence_recall: float | None = None
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (ungated figures left out)."""
        out: dict[str, Any] = {"k": self.k}
        for key in ("accuracy", "max_error_rate", "null_abstention", "evidence_recall"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        if self.note:
            out["note"] = self.note
        return out


@dataclass(frozen=True, slots=True)
class GraphSuite:
    """A loaded graph suite; exactly one of :attr:`sessions` and :attr:`archive` is set."""

    name: str
    root: Path
    queries: tuple[GraphQuery, ...]
    sessions: Path | None = None
    archive: Path | None = None
    owner: str = OWNER
    timezone: str = "UTC"
    thresholds: GraphThresholds | None = None
    problems: tuple[str, ...] = ()

    @property
    def tz(self) -> ZoneInfo:
        """The zone of the session stamps (build the graph with it as GRAPH_TIMEZONE)."""
        return ZoneInfo(self.timezone)

    def of_type(self, kind: QuestionType) -> tuple[GraphQuery, ...]:
        """The questions of one type."""
        return tuple(q for q in self.queries if q.type == kind)

    def limited(self, limit: int | None) -> GraphSuite:
        """The same suite with only its first ``limit`` questions (all when ``None``)."""
        return replace(self, queries=first_questions(self.queries, limit))

    def fingerprint(self) -> str:
        """sha256 over what the archive is made from: every session file (or the archive
        and its ``-wal``/``-shm``) with its relative path, the owner and the zone; the
        same fingerprint means the same graph input (for build reuse)."""
        digest = hashlib.sha256(f"{self.owner}\n{self.timezone}\n".encode())
        if self.sessions is not None:
            base = self.sessions
            files = sorted(p for p in self.sessions.rglob("*.txt") if p.is_file())
        else:
            assert self.archive is not None
            base = self.archive.parent
            files = [
                p
                for p in (self.archive, *(Path(f"{self.archive}{s}") for s in ("-wal", "-shm")))
                if p.is_file()
            ]
        for path in files:
            digest.update(path.relative_to(base).as_posix().encode() + b"\0")
            digest.update(hashlib.sha256(path.read_bytes()).digest())
        return digest.hexdigest()


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise SuiteError(f"{path}: cannot be read ({exc})") from exc
    except json.JSONDecodeError as exc:
        raise SuiteError(f"{path}: invalid JSON ({exc})") from exc


def _text(raw: dict[str, Any], key: str, where: str) -> str:
    value = raw[key]
    if isinstance(value, bool) or not isinstance(value, str | int) or not str(value).strip():
        raise SuiteError(f"{where}: {key!r} must be a non-empty string, got {value!r}")
    return str(value).strip()


class _Evidence:
    """Checks a question's evidence stamps; strict (raise) or lenient (repair, report)."""

    def __init__(self, stamps: frozenset[str] | None, lenient: bool) -> None:
        self.stamps = stamps  # the sessions' stamps; None: not checked (an archive suite)
        self.lenient = lenient
        self.problems: list[str] = []

    def fault(self, message: str) -> None:
        if not self.lenient:
            raise SuiteError(
                f'{message} (to drop such entries: "lenient_evidence": true in suite.json, '
                "or lenient=True)"
            )
        self.problems.append(message)

    def stamp(self, value: Any, where: str) -> str | None:
        try:
            moment = parse_stamp(value) if isinstance(value, str) else None
        except ValueError:
            moment = None
        if moment is None:
            self.fault(f"{where}: evidence {value!r} is not a session stamp (YYYYMMDD_HH:MM)")
            return None
        stamp = moment.strftime("%Y%m%d_%H:%M")
        if self.stamps is not None and stamp not in self.stamps:
            self.fault(f"{where}: evidence {stamp} names no session of the sessions folder")
            return None
        return stamp

    def read(self, raw: dict[str, Any], answer: str, where: str) -> tuple[tuple[str, ...], str]:
        """The canonical stamps of ``raw["evidence"]`` and the (repaired) gold answer."""
        entries = raw.get("evidence", [])
        if not isinstance(entries, list):
            raise SuiteError(f"{where}: 'evidence' must be a list of stamps, got {entries!r}")
        found = [self.stamp(entry, where) for entry in entries]
        stamps = list(dict.fromkeys(s for s in found if s is not None))
        shifted = _SHIFTED_STAMP.search(answer)
        if self.lenient and shifted and not stamps:
            stamp = self.stamp(shifted.group(1), where)
            if stamp is not None:
                answer = answer[: shifted.start()].strip()
                stamps.append(stamp)
                self.problems.append(f"{where}: evidence {stamp} taken from the end of the answer")
        return tuple(stamps), answer


def _question(line: str, where: str, evidence: _Evidence) -> GraphQuery:
    try:
        raw = json.loads(line)
    except json.JSONDecodeError as exc:
        raise SuiteError(f"{where}: not JSON ({exc})") from exc
    if not isinstance(raw, dict):
        raise SuiteError(f"{where}: a question is a JSON object, got {type(raw).__name__}")
    missing = [key for key in _REQUIRED if key not in raw]
    if missing:
        raise SuiteError(f"{where}: question lacks {', '.join(repr(k) for k in missing)}")
    qid = _text(raw, "id", where)
    where = f"{where} ({qid})"
    kind = raw["type"]
    if kind not in QUESTION_TYPES:
        raise SuiteError(f"{where}: unknown type {kind!r}; one of {', '.join(QUESTION_TYPES)}")
    answerable = raw.get("answerable", kind != "null")
    if not isinstance(answerable, bool):
        raise SuiteError(f"{where}: 'answerable' must be true or false, got {answerable!r}")
    if answerable != (kind != "null"):
        raise SuiteError(
            f"{where}: type {kind!r} with 'answerable': {str(answerable).lower()}; "
            "a null question is the unanswerable kind, and only it"
        )
    if kind == "null" and raw.get("evidence"):
        raise SuiteError(f"{where}: a null question names no evidence, got {raw['evidence']!r}")
    stamps, answer = evidence.read(raw, _text(raw, "answer", where), where)
    if answerable and not stamps:
        evidence.fault(f"{where}: an answerable question needs at least one evidence stamp")
    return GraphQuery(
        id=qid,
        query=_text(raw, "query", where),
        answer=answer,
        type=cast(QuestionType, kind),
        evidence=stamps,
    )


def load_graph_thresholds(path: Path) -> GraphThresholds:
    """Read a graph suite's ``thresholds.json``.

    Args:
        path: e.g. ``{"k": 10, "accuracy": 0.6, "max_error_rate": 0.2,
            "null_abstention": 0.8, "evidence_recall": 0.9, "note": "..."}``; any
            figure may be left out (not gated), ``k`` defaults to 10.

    Raises:
        SuiteError: Not JSON, an unknown key, a figure outside [0, 1], a bad ``k``, or
            no figure at all.
    """
    raw = _read_json(path)
    if not isinstance(raw, dict):
        raise SuiteError(f"{path}: thresholds are a JSON object")
    unknown = sorted(set(raw) - _THRESHOLD_KEYS - {"note"})
    if unknown:
        raise SuiteError(
            f"{path}: unknown thresholds {', '.join(unknown)}; "
            f"known: {', '.join(sorted(_THRESHOLD_KEYS))}"
        )
    k = raw.get("k", DEFAULT_K)
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise SuiteError(f"{path}: 'k' must be a positive whole number, got {k!r}")
    figures: dict[str, float] = {}
    for key in sorted(_THRESHOLD_KEYS - {"k"}):
        if key not in raw:
            continue
        value = raw[key]
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
            raise SuiteError(f"{path}: {key!r} must be a share between 0 and 1, got {value!r}")
        figures[key] = float(value)
    if not figures:
        raise SuiteError(f"{path}: no threshold set; remove the file to disable the gate")
    note = raw.get("note", "")
    return GraphThresholds(k=k, note=str(note), **figures)


def _path_in(meta: dict[str, Any], key: str, root: Path, where: Path) -> Path | None:
    value = meta.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise SuiteError(f"{where}: {key!r} must be a path relative to the suite, got {value!r}")
    return (root / value).resolve()


def is_graph_suite(path: str | Path) -> bool:
    """Whether the folder is a graph suite (its ``suite.json`` names ``sessions`` or an
    ``archive``, or it has a ``sessions/`` folder), not a document suite."""
    root = Path(path).expanduser()
    meta_file = root / "suite.json"
    if meta_file.is_file():
        try:
            meta = json.loads(meta_file.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            meta = {}
        if isinstance(meta, dict) and ("sessions" in meta or "archive" in meta):
            return True
    return (root / "sessions").is_dir()


def load_graph_suite(path: str | Path, *, lenient: bool | None = None) -> GraphSuite:
    """Load a graph suite folder (module notes; ``eval_suites/README.md``).

    Args:
        path: The suite folder.
        lenient: Drop bad evidence entries instead of refusing the suite; ``None``
            follows the suite's ``lenient_evidence`` (default false).

    Raises:
        SuiteError: A file is missing or malformed; says which, where and why.
    """
    root = Path(path).expanduser().resolve()
    if not root.is_dir():
        raise SuiteError(f"{root} is not a suite folder")
    meta_file = root / "suite.json"
    meta: dict[str, Any] = {}
    if meta_file.is_file():
        loaded = _read_json(meta_file)
        if not isinstance(loaded, dict):
            raise SuiteError(f"{meta_file}: a JSON object is expected")
        meta = loaded
        unknown = sorted(set(meta) - _SUITE_KEYS)
        if unknown:
            raise SuiteError(
                f"{meta_file}: unknown keys {', '.join(unknown)}; "
                f"known: {', '.join(sorted(_SUITE_KEYS))}"
            )
    name = str(meta.get("name") or root.name)
    owner = meta.get("owner", OWNER)
    if not isinstance(owner, str) or not owner.strip():
        raise SuiteError(f"{meta_file}: 'owner' must be a speaker's name, got {owner!r}")
    timezone = meta.get("timezone", "UTC")
    try:
        ZoneInfo(str(timezone))
    except (ZoneInfoNotFoundError, ValueError):
        raise SuiteError(
            f"{meta_file}: 'timezone' {timezone!r} is not a known IANA time zone"
        ) from None
    if lenient is None:
        lenient = meta.get("lenient_evidence", False)
        if not isinstance(lenient, bool):
            raise SuiteError(f"{meta_file}: 'lenient_evidence' must be true or false")

    sessions = _path_in(meta, "sessions", root, meta_file)
    archive = _path_in(meta, "archive", root, meta_file)
    if sessions is not None and archive is not None:
        raise SuiteError(f"{meta_file}: name 'sessions' or 'archive', not both")
    if sessions is None and archive is None:
        sessions = root / "sessions"
        if not sessions.is_dir():
            raise SuiteError(
                f"{root} is not a graph suite: no sessions/ folder, and no 'sessions' or "
                "'archive' in suite.json"
            )
    stamps: frozenset[str] | None = None
    if sessions is not None:
        if not sessions.is_dir():
            raise SuiteError(f"sessions folder {sessions} of suite {root} does not exist")
        try:
            stamps = frozenset(s.stamp for s in read_sessions(sessions))
        except SessionFormatError as exc:
            raise SuiteError(f"suite {root}: {exc}") from exc
    elif archive is not None and not archive.is_file():
        raise SuiteError(f"archive {archive} of suite {root} does not exist")

    queries_file = _path_in(meta, "queries", root, meta_file) or root / "queries.jsonl"
    if not queries_file.is_file():
        raise SuiteError(f"{root} has no questions: {queries_file} does not exist")
    evidence = _Evidence(stamps, lenient)
    lines = queries_file.read_text(encoding="utf-8").splitlines()
    queries = tuple(
        _question(line, f"{queries_file}:{n}", evidence)
        for n, line in enumerate(lines, 1)
        if line.strip()
    )
    if not queries:
        raise SuiteError(f"{queries_file} holds no questions")
    seen: set[str] = set()
    for query in queries:
        if query.id in seen:
            raise SuiteError(f"{queries_file}: question id {query.id!r} appears twice")
        seen.add(query.id)
    thresholds_file = root / "thresholds.json"
    thresholds = load_graph_thresholds(thresholds_file) if thresholds_file.is_file() else None
    return GraphSuite(
        name=name,
        root=root,
        queries=queries,
        sessions=sessions,
        archive=archive,
        owner=owner.strip(),
        timezone=str(timezone),
        thresholds=thresholds,
        problems=tuple(evidence.problems),
    )
