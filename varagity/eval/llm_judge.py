"""A graph-suite report judged again by a model, on MiniRAG's scale.

MiniRAG (arXiv 2501.06713) scores each LiHua-World answer with an API model: +1 when it
is right, 0 when it gives no information, -1 when it is wrong. The offline judge
(:mod:`varagity.eval.graph_judge`) stands in for it where no such model is reachable;
this module puts a report's answers before any OpenAI-compatible chat endpoint with that
rubric, so the two judges' figures can be set side by side and beside the published
table. Nothing is answered again: :func:`rejudge` reads a report written by
``varagity eval --graph`` and adds, for every arm, each question's score
(``llm_verdict``) and the figures per type (``llm_summary``: right, no information,
wrong, unjudged; accuracy and error rate over all questions of the type).

A reply is read leniently: a JSON object's ``score``, else the first of ``+1``, ``1``,
``0``, ``-1`` it writes as a word of its own. A reply with neither is *unjudged* (its
text kept in the verdict), never guessed; a failed call stops the run with the model
error, naming the endpoint.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from varagity.models.chat import ChatClient

#: The instructions the judging model gets (our wording of MiniRAG's rubric).
RUBRIC = (
    "You grade answers to questions about one person's chat messages. You get the "
    "question, the gold answer and the answer to grade. Score 1 when the answer gives "
    "what the gold answer says (other words or extra detail are fine), 0 when the answer "
    "says it cannot tell or gives no information, and -1 when it gives a wrong or "
    "different answer. When the gold answer is 'Insufficient information' (the chats do "
    "not say), score 1 for an answer that says it cannot tell and -1 for one that gives "
    'an answer. Reply with one JSON object and nothing else: {"score": 1}, {"score": 0} '
    'or {"score": -1}.'
)
#: Tokens a reply may take (a JSON object of one score, with room for a preamble).
REPLY_TOKENS = 24
_SCORE = re.compile(r"(?<![\w.])([+-]?1|0)(?![\w]|\.\d)")
_TYPES = ("single", "multi", "null", "all")


def read_score(reply: str) -> int | None:
    """The score a judging reply gives (see the module doc), or None."""
    text = reply.strip().removeprefix("```json").strip("`\n ")
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if isinstance(data, dict) and data.get("score") in (1, 0, -1):
        return int(data["score"])
    found = _SCORE.search(text)
    return int(found.group(1)) if found else None


@dataclass(frozen=True)
class LlmJudge:
    """A chat endpoint that scores answers with :data:`RUBRIC`."""

    client: ChatClient

    @classmethod
    def at(cls, base_url: str, model: str, api_key: str = "sk-local") -> LlmJudge:
        """The judge served at ``base_url`` (``.../v1``) as ``model``."""
        return cls(ChatClient(base_url=base_url, model=model, api_key=api_key, max_retries=2))

    def score(self, question: str, gold: str, answer: str) -> tuple[int | None, str]:
        """The score of ``answer`` and the reply it was read from.

        Raises:
            ModelError: The endpoint failed.
        """
        prompt = f"Question: {question}\nGold answer: {gold}\nAnswer to grade: {answer}"
        messages = [{"role": "system", "content": RUBRIC}, {"role": "user", "content": prompt}]
        reply = self.client.complete(messages, REPLY_TOKENS, 0.0)
        return read_score(reply), reply


def summarize(questions: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """The judge's figures per type (and ``all``) over judged ``questions``."""
    out: dict[str, dict[str, Any]] = {}
    for kind in _TYPES:
        rows = [q for q in questions if kind == "all" or q.get("type") == kind]
        scores = [q["llm_verdict"]["score"] for q in rows]
        n = len(rows)
        out[kind] = {
            "n": n,
            "right": scores.count(1),
            "no_info": scores.count(0),
            "wrong": scores.count(-1),
            "unjudged": scores.count(None),
            "accuracy": round(scores.count(1) / n, 4) if n else None,
            "error_rate": round(scores.count(-1) / n, 4) if n else None,
        }
    return out


def rejudge(
    report: Mapping[str, Any], judge: LlmJudge, progress: Callable[[str], None] = print
) -> dict[str, Any]:
    """``report`` (a graph eval report's JSON) with every answer scored by ``judge``:
    ``llm_judge`` says which endpoint and model judged, each arm gets
    ``llm_summary`` and each question ``llm_verdict`` (``score``, ``reply``).

    Raises:
        ValueError: ``report`` is no graph eval report.
        ModelError: The endpoint failed.
    """
    arms = report.get("results")
    if not isinstance(arms, list) or not all(isinstance(a, dict) for a in arms):
        raise ValueError("not a graph eval report: no 'results' list of arms")
    judged_arms = []
    for arm in arms:
        questions = arm.get("questions") or []
        judged = []
        for n, question in enumerate(questions, start=1):
            score, reply = judge.score(
                str(question.get("query", "")),
                str(question.get("gold", "")),
                str(question.get("answer", "")),
            )
            judged.append({**question, "llm_verdict": {"score": score, "reply": reply}})
            progress(f"  [{arm.get('name')} {n}/{len(questions)}] {question.get('id')}: {score}")
        judged_arms.append({**arm, "questions": judged, "llm_summary": summarize(judged)})
    return {
        **report,
        "results": judged_arms,
        "llm_judge": {
            "base_url": judge.client.base_url,
            "model": judge.client.model,
            "rubric": "MiniRAG's: +1 right, 0 no information, -1 wrong",
        },
    }


def format_summary(report: Mapping[str, Any]) -> str:
    """A table of the model judge's figures per arm and type."""
    lines = ["arm       type    n    right  no info  wrong  unjudged  accuracy  error"]
    for arm in report.get("results", ()):
        for kind, s in (arm.get("llm_summary") or {}).items():
            if not s["n"]:
                continue
            lines.append(
                f"{arm.get('name', ''):<9} {kind:<7} {s['n']:<4} {s['right']:<6} "
                f"{s['no_info']:<8} {s['wrong']:<6} {s['unjudged']:<9} "
                f"{s['accuracy']:<9.3f} {s['error_rate']:.3f}"
            )
    return "\n".join(lines)
