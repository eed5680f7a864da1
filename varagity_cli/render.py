"""How a turn's or a search's inner workings read in a terminal: the ``--verbose`` levels
of ``varagity ask``, ``chat`` and ``search``.

* level 0: the answer and its sources; each source line ends with its :func:`badges`;
* level 1: also :func:`trace_section`, the retrieval trace as a table (each hit's rank
  and score in the semantic and BM25 arms, the fused score and rank, the reranker's
  score and move where one ran; or the graph's days and findings on a graph turn), and
  :func:`timings_section`, the time of every stage;
* level 2: also :func:`prompt_section`, the messages sent to the model, and
  :func:`raw_section`, the stream as the model wrote it, before the quote check and the
  citation clean-up (:class:`~varagity.chat.turn.TurnDebug`).

Everything rendered here is the record the turn runner and the retrievers already keep
(:class:`~varagity.records.RetrievalTrace`, the stage timings): the web client's evidence
panel shows the same, in developer mode. Plain text, so it reads the same in a pipe.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from varagity.graph.types import GraphRetrieval
    from varagity.records import RetrievalTrace, RetrievedChunk

#: The ``--verbose`` levels.
VERBOSITY = (0, 1, 2)
#: A cell with nothing in it (an arm that did not find the hit, no reranker).
EMPTY = "-"


def badges(trace: RetrievalTrace | None) -> str:
    """A retrieved chunk's ranks and fused score: ``sem #2 · bm25 #1 · fused 0.032``."""
    if trace is None:
        return ""
    parts = []
    if trace.semantic_rank is not None:
        parts.append(f"sem #{trace.semantic_rank}")
    if trace.bm25_rank is not None:
        parts.append(f"bm25 #{trace.bm25_rank}")
    parts.append(f"fused {trace.fused_score:.3f}")
    return " · ".join(parts)


def score(value: float | None) -> str:
    """A score at four significant digits (cosine 0.8123, BM25 7.31, RRF 0.03279)."""
    return EMPTY if value is None else f"{value:.4g}"


def table(headers: Sequence[str], rows: Sequence[Sequence[str]], right: set[int]) -> list[str]:
    """``rows`` under ``headers`` in aligned columns (those in ``right`` right-aligned),
    a rule of dashes under the header; each line indented by two spaces."""
    widths = [max([len(h), *(len(r[i]) for r in rows)]) for i, h in enumerate(headers)]

    def line(cells: Sequence[str]) -> str:
        padded = (
            cell.rjust(w) if i in right else cell.ljust(w)
            for i, (cell, w) in enumerate(zip(cells, widths, strict=True))
        )
        return ("  " + "  ".join(padded)).rstrip()

    return [line(headers), line(["-" * w for w in widths]), *(line(r) for r in rows)]


def heading(title: str) -> str:
    """A section's first line: ``== title ==``, after a blank line."""
    return f"\n== {title} =="


def _arm(rank: int | None, value: float | None) -> str:
    return EMPTY if rank is None else f"#{rank} {score(value)}"


def _moved(delta: int | None) -> str:
    if delta is None:
        return EMPTY
    return f"+{delta}" if delta > 0 else str(delta)


def chunk_label(chunk: RetrievedChunk) -> str:
    """``path::chunk`` (with the page, ``path p.4::chunk``, where the file has pages)."""
    rec = chunk.record
    page = f" p.{rec.page}" if rec.page is not None else ""
    return f"{rec.relative_path}{page}::{rec.chunk_index}"


def trace_section(chunks: Sequence[RetrievedChunk], *, method: str, query: str) -> str:
    """The retrieval trace as a table: for each hit, in the order returned (``[n]``),
    its rank and score in each arm, its fused score and rank, and where a reranker ran
    its score and how many places it moved the hit (``rerank``, ``moved``), then the
    final rank."""
    lines = [heading(f"Retrieval trace: {method}, searched for {query!r}")]
    if not chunks:
        return "\n".join([*lines, "  (no hits)"])
    traces = [c.trace for c in chunks]
    reranked = any(t is not None and t.rerank_score is not None for t in traces)
    headers = ["n", "source", "semantic", "bm25", "fused", "fused rank"]
    if reranked:
        headers += ["rerank", "moved"]
    headers.append("final")
    rows = []
    for n, (chunk, t) in enumerate(zip(chunks, traces, strict=True), start=1):
        row = [str(n), chunk_label(chunk)]
        if t is None:
            row += [EMPTY] * (len(headers) - 2)
        else:
            row += [
                _arm(t.semantic_rank, t.semantic_score),
                _arm(t.bm25_rank, t.bm25_score),
                score(t.fused_score),
                str(t.fused_rank),
            ]
            if reranked:
                row += [score(t.rerank_score), _moved(t.rerank_delta)]
            row.append(str(t.final_rank))
        rows.append(row)
    right = {0, 4, 5, len(headers) - 1} | ({6, 7} if reranked else set())
    lines += table(headers, rows, right)
    lines.append("  semantic, bm25: the hit's rank and score in that arm (- : not found there)")
    return "\n".join(lines)


def graph_section(found: GraphRetrieval, *, query: str) -> str:
    """What a graph turn's retrieval found: its mode, the days numbered as the answer
    cites them, and the entities and relations beside them."""
    entities = ", ".join(f"{e.name} [{e.type}]" if e.type else e.name for e in found.entities)
    relations = ", ".join(f"{r.source} -> {r.target}" for r in found.relations)
    lines = [
        heading(f"Graph retrieval: mode {found.mode}, searched for {query!r}"),
        *table(
            ["n", "conversation", "day", "doc_key"],
            [[str(n), d.thread_name, d.span, d.doc_key] for n, d in enumerate(found.days, 1)],
            right={0},
        ),
        f"  entities ({len(found.entities)}): {entities or EMPTY}",
        f"  relations ({len(found.relations)}): {relations or EMPTY}",
    ]
    if found.computed is not None:
        lines.append("  answer computed from the archive (no model call)")
    return "\n".join(lines)


def timings_section(timings_ms: Mapping[str, float]) -> str:
    """Each stage's time in milliseconds, in the order the stages ran."""
    rows = [[stage, f"{ms:.1f}"] for stage, ms in timings_ms.items()]
    if not rows:
        return "\n".join([heading("Timings (ms)"), "  (none recorded)"])
    return "\n".join([heading("Timings (ms)"), *table(["stage", "ms"], rows, right={1})])


def prompt_section(messages: Sequence[Mapping[str, str]]) -> str:
    """The messages sent to the model, each under a ``--- role ---`` line."""
    lines = [heading(f"Prompt sent to the model ({len(messages)} messages)")]
    if not messages:
        lines.append("  (no model was asked: the reply is fixed or computed)")
    for message in messages:
        lines += [f"--- {message['role']} ---", message["content"].rstrip()]
    return "\n".join(lines)


def raw_section(raw: str) -> str:
    """The model's stream as it came, before the quote check and citation clean-up."""
    title = "Raw model output (before quote checks and citation cleaning)"
    return "\n".join([heading(title), raw.rstrip() or "(empty)"])


def passages_section(chunks: Sequence[RetrievedChunk]) -> str:
    """Each hit's whole text (what ``search`` shows 160 characters of)."""
    lines = [heading("Passages")]
    for n, chunk in enumerate(chunks, start=1):
        lines += [f"--- [{n}] {chunk_label(chunk)} ---", chunk.record.content.rstrip()]
    return "\n".join(lines)
