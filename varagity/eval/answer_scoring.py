"""Scoring one generated answer against its suite question, as pure functions.

The rules (also in ``eval_suites/README.md``):

* **Normalised text**, **content words** and **abstention phrasings** are those of
  :mod:`varagity.generation.grounding` (``38,000`` is ``38000``, ``220°C`` is
  ``220 °c``, dashes are spaces). Facts, answers and passages are all compared in
  normalised form.
* **A key fact is found** in a text when one of its spellings occurs there as whole
  words (not inside a longer word or number: ``12 min`` is not in ``120 min``), a
  trailing plural ``s`` optional either way (``27 months`` matches ``27-month``).
* **Key-fact correctness** of an answer is the share of its question's facts found.
* **Abstention**: the answer matches one of the abstention phrasings ("the documents
  do not say", "could not find", "no information" ...) and states none of
  the question's key facts. An unanswerable question is answered right when the
  answer abstains and states none of its ``traps``; an answerable one when it does not
  abstain.
* **Citations.** A marker is ``[n]`` or ``[n, m]`` (each number one citation). Markers
  right after a sentence's full stop belong to that sentence, and a line holding only
  markers belongs to the sentence before it. The *claim* of a citation is its sentence
  with every marker and a leading list mark removed. A citation is **valid** when ``n``
  numbers one of the evidence passages the model was shown, and that passage
  *supports* the claim:

  - when the claim states key facts of the question, the passage contains at least one
    of those facts;
  - otherwise at least half of the claim's content words occur in the passage, and
    every number of the claim does.

  The answer stream attributes citations with a related but different rule (weighted
  word overlap, no key facts: :mod:`varagity.generation.grounding`); citations of
  claims that state key facts are checked against the facts, independently of it.

  An answer's citation validity is the share of its citations that are valid, and 0
  when it cites nothing (an uncited answer is not a grounded one).
* **Loops**: an answer loops when the stream's repetition guard cut it, or when
  :func:`varagity.generation.repetition.find_loop` (the guard's own rule) finds a loop
  in its text.
* **Judged by citation.** An answerable question without key facts but with golden
  passages (a feedback question: the user marked which passage answers) is judged by
  what the answer cites: it *cites a relevant passage* when one of its ``[n]`` names a
  shown passage from the golden passage's file that covers at least half of it
  (retrieval's rule, :func:`varagity.eval.scoring.coverage`). It passes when the answer
  does not abstain and cites a relevant passage; an unanswerable question passes when
  it abstains (:attr:`AnswerScore.passed`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from varagity.eval.scoring import MIN_COVERAGE, coverage
from varagity.generation.grounding import (
    content_words,
    is_abstention,
    is_number,
    normalize,
)
from varagity.generation.repetition import find_loop

Fact = Sequence[str]

_MARKER = re.compile(r"\[(\d{1,3}(?:\s*,\s*\d{1,3})*)\]")
_MARKERS_AFTER_STOP = re.compile(r"([.!?])((?:[ \t]*\[\d{1,3}(?:\s*,\s*\d{1,3})*\])+)")
_MARKER_AND_SPACE = re.compile(r"\s*\[\d{1,3}(?:\s*,\s*\d{1,3})*\]")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
_LIST_MARK = re.compile(r"^\s*(?:[-*•]|\d{1,2}[.)])\s+")
_WS = re.compile(r"\s+")


@lru_cache(maxsize=4096)
def _spelling_pattern(spelling: str) -> re.Pattern[str]:
    norm = normalize(spelling)
    if len(norm) > 3 and norm.endswith("s") and norm[-2].isalpha() and norm[-2] != "s":
        body = re.escape(norm[:-1]) + "s?"
    elif norm[-1:].isalpha():
        body = re.escape(norm) + "s?"
    else:
        body = re.escape(norm)
    return re.compile(rf"(?<!\w){body}(?!\w)")


def fact_in(fact: Fact, normalized_text: str) -> bool:
    """Whether any spelling of ``fact`` occurs in ``normalized_text`` (see :func:`normalize`)."""
    return any(_spelling_pattern(s).search(normalized_text) for s in fact if s.strip())


def facts_found(facts: Sequence[Fact], text: str) -> list[bool]:
    """Per fact, whether ``text`` states it."""
    norm = normalize(text)
    return [fact_in(f, norm) for f in facts]


@dataclass(frozen=True, slots=True)
class Citation:
    """One ``[n]`` of an answer and its verdict."""

    n: int
    claim: str
    valid: bool
    reason: str  # "supported", "out of range", "fact missing", "low overlap", "number missing"


def _sentences(answer: str) -> list[tuple[str, list[int]]]:
    """``(claim, cited numbers)`` per sentence, marker-only lines joined to the one before."""
    text = _MARKERS_AFTER_STOP.sub(lambda m: f"{m.group(2)}{m.group(1)}", answer)
    out: list[tuple[str, list[int]]] = []
    for raw in _SENTENCE_END.split(text):
        numbers = [int(n) for m in _MARKER.finditer(raw) for n in m.group(1).split(",")]
        claim = _LIST_MARK.sub("", _MARKER_AND_SPACE.sub("", raw))
        claim = _WS.sub(" ", claim).strip()
        if not re.search(r"\w", claim):
            if out and numbers:
                out[-1][1].extend(numbers)
            continue
        out.append((claim, numbers))
    return out


def cited(answer: str) -> list[int]:
    """Every cited number of ``answer`` in order, repeats and out-of-range ones included."""
    return [n for _claim, numbers in _sentences(answer) for n in numbers]


def supports(passage: str, claim: str, facts: Sequence[Fact], min_overlap: float = 0.5) -> str:
    """Why ``passage`` supports ``claim`` or does not: ``supported`` or the failing rule."""
    norm_claim = normalize(claim)
    norm_passage = normalize(passage)
    stated = [f for f in facts if fact_in(f, norm_claim)]
    if stated:
        return "supported" if any(fact_in(f, norm_passage) for f in stated) else "fact missing"
    words = content_words(norm_claim)
    if not words:
        return "low overlap"
    have = content_words(norm_passage)
    if any(is_number(w) and w not in have for w in words):
        return "number missing"
    if len(words & have) / len(words) < min_overlap:
        return "low overlap"
    return "supported"


def check_citations(answer: str, passages: Sequence[str], facts: Sequence[Fact]) -> list[Citation]:
    """Every citation of ``answer`` checked against the ``passages`` shown (``[1]`` first)."""
    checks = []
    for claim, numbers in _sentences(answer):
        for n in numbers:
            if not 1 <= n <= len(passages):
                checks.append(Citation(n, claim, False, "out of range"))
                continue
            reason = supports(passages[n - 1], claim, facts)
            checks.append(Citation(n, claim, reason == "supported", reason))
    return checks


@dataclass(frozen=True, slots=True)
class AnswerScore:
    """The verdicts on one answer."""

    query_id: str
    answerable: bool
    facts: tuple[bool, ...]
    traps: tuple[bool, ...]
    abstained: bool
    citations: tuple[Citation, ...]
    looped: bool = False
    relevant_cited: bool | None = None
    """Whether a citation names a shown passage holding a golden passage; None unless
    the question is judged by citation (answerable, no key facts, golden passages)."""
    answer_shown: bool = False
    """Answerable, and the shown passages state every key fact: an abstention then is a
    false one (the answer was in front of the model)."""

    @property
    def false_abstention(self) -> bool:
        """Abstained although the shown passages held the answer."""
        return self.answerable and self.answer_shown and self.abstained

    @property
    def missed_abstention(self) -> bool:
        """Unanswerable, and the answer did not abstain (or stated a trap)."""
        return not self.answerable and not self.abstention_correct

    @property
    def passed(self) -> bool:
        """The question's one verdict: unanswerable, it abstained (no trap stated);
        judged by citation, it did not abstain and cited a relevant passage; otherwise it
        did not abstain and stated every key fact."""
        if not self.answerable:
            return self.abstention_correct
        if self.relevant_cited is not None:
            return not self.abstained and self.relevant_cited
        return not self.abstained and self.fact_share == 1.0

    @property
    def fact_share(self) -> float:
        """Share of the key facts found (1.0 for a question without facts)."""
        return sum(self.facts) / len(self.facts) if self.facts else 1.0

    @property
    def abstention_correct(self) -> bool:
        """Abstained with no trap stated when unanswerable; did not abstain when answerable."""
        if self.answerable:
            return not self.abstained
        return self.abstained and not any(self.traps)

    @property
    def citation_validity(self) -> float:
        """Share of the citations that are valid; 0 when the answer cites nothing."""
        if not self.citations:
            return 0.0
        return sum(c.valid for c in self.citations) / len(self.citations)

    def to_dict(self) -> dict[str, object]:
        """JSON-ready form."""
        return {
            "id": self.query_id,
            "answerable": self.answerable,
            "facts_found": list(self.facts),
            "fact_share": round(self.fact_share, 4),
            "traps_stated": list(self.traps),
            "abstained": self.abstained,
            "abstention_correct": self.abstention_correct,
            "citation_validity": round(self.citation_validity, 4),
            "citations": [
                {"n": c.n, "valid": c.valid, "reason": c.reason, "claim": c.claim}
                for c in self.citations
            ],
            "looped": self.looped,
            "relevant_cited": self.relevant_cited,
            "passed": self.passed,
        }


def cites_relevant(
    answer: str,
    passages: Sequence[str],
    sources: Sequence[str],
    relevant: Sequence[tuple[str, str]],
) -> bool:
    """Whether a ``[n]`` of ``answer`` names a shown passage that holds a golden one.

    Args:
        answer: The answer text.
        passages: The evidence texts shown, ``[1]`` first.
        sources: Each shown passage's corpus-relative file.
        relevant: ``(rel_source, text)`` of each golden passage.
    """
    for n in dict.fromkeys(cited(answer)):
        if not 1 <= n <= min(len(passages), len(sources)):
            continue
        for rel_source, text in relevant:
            if sources[n - 1] == rel_source and coverage(text, [passages[n - 1]]) >= MIN_COVERAGE:
                return True
    return False


def score_answer(
    query_id: str,
    answer: str,
    passages: Sequence[str],
    *,
    facts: Sequence[Fact] = (),
    traps: Sequence[Fact] = (),
    answerable: bool = True,
    looped: bool = False,
    relevant: Sequence[tuple[str, str]] = (),
    sources: Sequence[str] = (),
) -> AnswerScore:
    """Score ``answer`` to one question.

    Args:
        query_id: The question's id.
        answer: The answer text (reasoning removed).
        passages: The evidence texts the model was shown, ``[1]`` first.
        facts: The question's key facts, each a list of accepted spellings.
        traps: For an unanswerable question, near-miss facts it must not state.
        answerable: Whether the corpus answers the question.
        looped: Whether the stream's repetition guard cut the answer; a loop left in
            ``answer`` is detected here too.
        relevant: ``(rel_source, text)`` of the golden passages; with no ``facts`` on an
            answerable question they judge it (:func:`cites_relevant`).
        sources: Each shown passage's corpus-relative file (for ``relevant``).
    """
    found = facts_found(facts, answer)
    norm = normalize(answer)
    abstained = is_abstention(answer) and not any(found)
    shown = " ".join(passages)
    return AnswerScore(
        query_id=query_id,
        answerable=answerable,
        facts=tuple(found),
        traps=tuple(fact_in(t, norm) for t in traps),
        abstained=abstained,
        citations=tuple(check_citations(answer, passages, facts)),
        looped=looped or find_loop(answer) is not None,
        relevant_cited=(
            cites_relevant(answer, passages, sources, relevant)
            if answerable and not facts and relevant
            else None
        ),
        answer_shown=answerable and bool(facts) and all(facts_found(facts, shown)),
    )


@dataclass(slots=True)
class AnswerSummary:
    """Suite-level answer figures."""

    n: int = 0
    n_answerable: int = 0
    answer_correctness: float = 0.0
    fully_correct: float = 0.0
    citation_validity: float = 0.0
    cited_share: float = 0.0
    abstention_accuracy: float = 0.0
    abstained_when_unanswerable: float = 0.0
    false_abstentions: int = 0
    false_abstention_rate: float = 0.0
    missed_abstentions: int = 0
    loops: int = 0
    pass_rate: float = 0.0
    failing: dict[str, list[str]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, object]:
        """JSON-ready form."""
        return {
            "n": self.n,
            "n_answerable": self.n_answerable,
            "answer_correctness": round(self.answer_correctness, 4),
            "fully_correct": round(self.fully_correct, 4),
            "citation_validity": round(self.citation_validity, 4),
            "cited_share": round(self.cited_share, 4),
            "abstention_accuracy": round(self.abstention_accuracy, 4),
            "abstained_when_unanswerable": round(self.abstained_when_unanswerable, 4),
            "false_abstentions": self.false_abstentions,
            "false_abstention_rate": round(self.false_abstention_rate, 4),
            "missed_abstentions": self.missed_abstentions,
            "loops": self.loops,
            "pass_rate": round(self.pass_rate, 4),
            "failing": self.failing,
        }


def summarize(scores: Sequence[AnswerScore]) -> AnswerSummary:
    """Suite figures over ``scores``.

    ``answer_correctness`` (mean fact share) and ``fully_correct`` are over the
    answerable questions with key facts, ``citation_validity`` and ``cited_share`` over
    every answerable question; ``abstention_accuracy`` over
    every question; ``false_abstentions`` counts the answerable questions that abstained
    and ``false_abstention_rate`` is the share of those whose shown passages held the
    answer (:attr:`AnswerScore.false_abstention`) among the answerable questions whose
    passages did; ``missed_abstentions`` counts the unanswerable questions answered;
    ``pass_rate`` is the share of questions that passed
    (:attr:`AnswerScore.passed`); ``failing`` lists, per figure, the ids that lowered it.
    """
    answerable = [s for s in scores if s.answerable]
    unanswerable = [s for s in scores if not s.answerable]
    with_facts = [s for s in answerable if s.facts]

    def mean(values: Sequence[float]) -> float:
        return sum(values) / len(values) if values else 0.0

    return AnswerSummary(
        n=len(scores),
        n_answerable=len(answerable),
        answer_correctness=mean([s.fact_share for s in with_facts]),
        fully_correct=mean([1.0 if s.fact_share == 1.0 else 0.0 for s in with_facts]),
        citation_validity=mean([s.citation_validity for s in answerable]),
        cited_share=mean([1.0 if s.citations else 0.0 for s in answerable]),
        abstention_accuracy=mean([1.0 if s.abstention_correct else 0.0 for s in scores]),
        abstained_when_unanswerable=mean(
            [1.0 if s.abstention_correct else 0.0 for s in unanswerable]
        ),
        false_abstentions=sum(1 for s in answerable if s.abstained),
        false_abstention_rate=mean(
            [1.0 if s.false_abstention else 0.0 for s in answerable if s.answer_shown]
        ),
        missed_abstentions=sum(1 for s in unanswerable if s.missed_abstention),
        loops=sum(1 for s in scores if s.looped),
        pass_rate=mean([1.0 if s.passed else 0.0 for s in scores]),
        failing={
            "answer_correctness": [s.query_id for s in with_facts if s.fact_share < 1.0],
            "citation_validity": [s.query_id for s in answerable if s.citation_validity < 1.0],
            "abstention_accuracy": [s.query_id for s in scores if not s.abstention_correct],
            "false_abstention_rate": [s.query_id for s in answerable if s.false_abstention],
            "loops": [s.query_id for s in scores if s.looped],
            "pass_rate": [s.query_id for s in scores if not s.passed],
        },
    )
