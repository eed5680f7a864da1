"""``--verbose 0|1|2`` of ``varagity ask``, ``chat`` and ``search``: the retrieval trace
table and stage timings (1), the prompt and the model's raw output (2), none of it at 0.

The renderers first, on fixed events; then the commands as a user runs them, on the
session's real model servers and Postgres.
"""

from __future__ import annotations

from io import StringIO

import pytest

from tests.conftest import SettingsFactory
from tests.support.api_server import index_files
from tests.support.cli import run_cli
from tests.support.records import retrieved_chunk
from varagity.chat.turn import TokenDelta, TurnDebug, TurnDone, TurnEvent, TurnRetrieval
from varagity.graph.types import DayCard, GraphEntity, GraphRelation, GraphRetrieval
from varagity.records import RetrievalTrace, RetrievedChunk
from varagity.retrieval.base import Retrieval
from varagity_cli.commands.ask import render_turn
from varagity_cli.commands.search import render_search
from varagity_cli.main import build_parser

TRACE_HEADER = "n  source    semantic   bm25       fused  fused rank  final"
SECTIONS = ("== Retrieval trace", "== Timings (ms) ==", "== Prompt sent", "== Raw model output")


def _traced(n: int, text: str, **trace: float | int | None) -> RetrievedChunk:
    return retrieved_chunk(n, text).model_copy(update={"trace": RetrievalTrace(**trace)})  # type: ignore[arg-type]


HITS = (
    _traced(
        1,
        "Warranty: 27 months.",
        semantic_rank=2,
        semantic_score=0.81234,
        bm25_rank=1,
        bm25_score=7.3104,
        fused_score=0.032522,
        fused_rank=1,
        final_rank=1,
    ),
    _traced(
        2,
        "Lentil soup.",
        semantic_rank=1,
        semantic_score=0.9,
        fused_score=0.0161,
        fused_rank=2,
        final_rank=2,
    ),
)
TIMINGS = {
    "semantic": 12.34,
    "bm25": 4.0,
    "first_token": 210.0,
    "generate": 900.123,
    "total": 1000.5,
}
MESSAGES = (
    {"role": "system", "content": "You answer questions using only the numbered sources."},
    {"role": "user", "content": "Question: How long?\n\nSources:\n\n[1] Warranty: 27 months."},
)
RAW = "<think>check [1]</think>It is 27 months [1]. The kettle is red."


def _events(debug: TurnDebug | None) -> list[TurnEvent]:
    return [
        TurnRetrieval(HITS, "warranty", None, "hybrid", "simple", {"semantic": 12.34, "bm25": 4.0}),
        TokenDelta("It is 27 months [1]."),
        TurnDone("It is 27 months [1].", None, [1], "finished", TIMINGS, debug=debug),
    ]


DEBUG = TurnDebug(MESSAGES, RAW)


def _render(verbose: int, debug: TurnDebug | None = DEBUG) -> str:
    out = StringIO()
    assert render_turn(_events(debug), verbose=verbose, out=out, err=StringIO()) == 0
    return out.getvalue()


def test_level_0_is_the_answer_and_its_sources_only() -> None:
    out = _render(0)
    answer, _, sources = out.partition("\n\nSources:\n")
    assert answer == "It is 27 months [1]."
    assert sources.splitlines()[0] == " *[1] f1.md (chunk 0) sem #2 · bm25 #1 · fused 0.033"
    for section in SECTIONS:
        assert section not in out


def test_level_1_adds_the_trace_table_and_the_stage_timings() -> None:
    out = _render(1)
    assert out.startswith("It is 27 months [1].\n\nSources:\n")  # level 0 comes first, unchanged
    trace = out.split("== Retrieval trace: hybrid, searched for 'warranty' ==\n")[1].splitlines()
    assert trace[0] == "  " + TRACE_HEADER
    # one row a hit: each arm's rank and score (- where the arm did not find it), fused
    assert trace[2].split() == ["1", "f1.md::0", "#2", "0.8123", "#1", "7.31", "0.03252", "1", "1"]
    assert trace[3].split() == ["2", "f2.md::0", "#1", "0.9", "-", "0.0161", "2", "2"]
    timings = out.split("== Timings (ms) ==\n")[1].splitlines()
    assert [line.split() for line in timings[2:7]] == [
        ["semantic", "12.3"],
        ["bm25", "4.0"],
        ["first_token", "210.0"],
        ["generate", "900.1"],
        ["total", "1000.5"],
    ]
    assert "== Prompt sent" not in out and "== Raw model output" not in out


def test_level_2_adds_the_prompt_and_the_raw_output() -> None:
    out = _render(2)
    assert "== Retrieval trace" in out and "== Timings (ms) ==" in out
    prompt = out.split("== Prompt sent to the model (2 messages) ==\n")[1]
    assert prompt.startswith(
        "--- system ---\nYou answer questions using only the numbered sources.\n"
        "--- user ---\nQuestion: How long?\n\nSources:\n\n[1] Warranty: 27 months.\n"
    )
    raw = out.split("== Raw model output (before quote checks and citation cleaning) ==\n")[1]
    assert raw == RAW + "\n"
    # a turn that kept no record (not asked for one) shows no empty sections
    assert "== Prompt sent" not in _render(2, debug=None)


def test_the_reranker_columns_appear_where_a_reranker_ran() -> None:
    reranked = (
        _traced(
            1,
            "a",
            semantic_rank=3,
            fused_score=0.03,
            fused_rank=2,
            rerank_score=4.2,
            rerank_delta=1,
            final_rank=1,
        ),
        _traced(
            2,
            "b",
            bm25_rank=1,
            fused_score=0.031,
            fused_rank=1,
            rerank_score=-1.5,
            rerank_delta=-1,
            final_rank=2,
        ),
    )
    from varagity_cli.render import trace_section

    lines = trace_section(reranked, method="reranked", query="q").splitlines()
    assert lines[2].split() == [
        "n",
        "source",
        "semantic",
        "bm25",
        "fused",
        "fused",
        "rank",
        "rerank",
        "moved",
        "final",
    ]
    assert lines[4].split()[-3:] == ["4.2", "+1", "1"]
    assert lines[5].split()[-3:] == ["-1.5", "-1", "2"]
    assert "rerank" not in trace_section(HITS, method="hybrid", query="q").splitlines()[2]


def test_a_graph_turn_shows_its_days_and_findings() -> None:
    found = GraphRetrieval(
        entities=(GraphEntity("Maya", "person"),),
        relations=(GraphRelation("Maya", "Lisbon"),),
        days=(DayCard("t1::2026-03-02", "Maya", "2026-03-02", "[09:14] Maya: We land at 7."),),
        mode="mix",
    )
    events: list[TurnEvent] = [
        TurnRetrieval(
            (), "Lisbon", None, "graph", "simple", {"graph": 80.0}, corpus="graph", graph=found
        ),
        TokenDelta("On Monday [1]."),
        TurnDone("On Monday [1].", None, [1], "finished", {"graph": 80.0, "total": 900.0}),
    ]
    out = StringIO()
    render_turn(events, verbose=1, out=out, err=StringIO())
    text = out.getvalue()
    assert "== Graph retrieval: mode mix, searched for 'Lisbon' ==" in text
    assert "  1  Maya          2026-03-02  t1::2026-03-02" in text
    assert "entities (1): Maya [person]" in text and "relations (1): Maya -> Lisbon" in text
    assert "== Retrieval trace" not in text and "== Timings (ms) ==" in text


def test_search_levels() -> None:
    result = Retrieval(
        "hyde",
        "warranty",
        list(HITS),
        {"hyde_generate": 300.0, "semantic": 12.0},
        "A kettle warranty.",
    )

    def shown(verbose: int) -> str:
        out = StringIO()
        render_search(result, verbose=verbose, out=out)
        return out.getvalue()

    level0 = shown(0)
    assert level0.startswith(
        "#1 f1.md::0 sem #2 · bm25 #1 · fused 0.033\n   Warranty: 27 months.\n"
    )
    assert level0.endswith("timings (ms): hyde_generate=300.0, semantic=12.0\n")
    assert "==" not in level0
    level1 = shown(1)
    assert level1.startswith(level0.rsplit("timings (ms)", 1)[0])
    assert "  " + TRACE_HEADER in level1 and "== Timings (ms) ==" in level1
    assert "== Passages ==" not in level1 and "Hypothetical" not in level1
    level2 = shown(2)
    assert (
        "== Hypothetical passage (HyDE: what the semantic arm searched with) ==\nA kettle warranty."
        in level2
    )
    assert (
        "== Passages ==\n--- [1] f1.md::0 ---\nWarranty: 27 months.\n"
        "--- [2] f2.md::0 ---\nLentil soup." in level2
    )


def test_the_commands_take_verbose_0_1_2() -> None:
    parser = build_parser()
    for command in (["ask", "q"], ["search", "q"], ["chat"]):
        assert parser.parse_args(command).verbose == 0
        assert parser.parse_args([*command, "-v", "2"]).verbose == 2
        assert parser.parse_args([*command, "--verbose", "1"]).verbose == 1
        with pytest.raises(SystemExit):
            parser.parse_args([*command, "-v", "3"])


@pytest.mark.integration
def test_ask_search_and_chat_at_each_level_on_the_real_stack(
    make_settings: SettingsFactory, pg_url: str, model_urls: dict[str, str]
) -> None:
    settings = make_settings(DATABASE_URL=pg_url, LLM_MAX_TOKENS=32, **model_urls)
    index_files(settings)
    question = "What is the warranty of the Tern K2 kettle?"

    asked = {v: run_cli("ask", question, "-k", "2", "--verbose", str(v)) for v in (0, 1, 2)}
    for v, done in asked.items():
        assert done.returncode == 0, done.stderr
        assert "[1] kettle.md (chunk 0)" in done.stdout.split("Sources:")[1]
        present = [section in done.stdout for section in SECTIONS]
        assert present == [v >= 1, v >= 1, v >= 2, v >= 2], (v, done.stdout)
        # verbosity 2 opens this project's loggers to DEBUG; LOG_LEVEL (INFO) holds otherwise
        assert ("DEBUG varagity.chat.turn: evidence for" in done.stderr) is (v == 2), done.stderr
    trace = asked[1].stdout.split("== Retrieval trace: hybrid, searched for")[1].splitlines()
    assert trace[1].split() == TRACE_HEADER.split()
    assert trace[3].split()[:2] == ["1", "kettle.md::0"] and trace[3].split()[-1] == "1"
    stages = [
        line.split()[0] for line in asked[1].stdout.split("== Timings (ms) ==")[1].splitlines()[3:]
    ]
    assert {
        "embed",
        "semantic",
        "bm25",
        "fusion",
        "hydrate",
        "first_token",
        "generate",
        "total",
    } <= set(stages), stages
    prompt = asked[2].stdout.split("== Prompt sent to the model (2 messages) ==\n")[1]
    system, user = prompt.split("--- user ---\n")
    assert system.startswith("--- system ---\nYou answer questions using only the numbered sources")
    assert user.startswith(f"Question: {question}\n\nSources:\n\n[1] ") and "27 months" in user
    raw = asked[2].stdout.split("(before quote checks and citation cleaning) ==\n")[1]
    assert raw.strip()  # what the model wrote, as written

    searched = {v: run_cli("search", "lentil soup", "-k", "2", "-v", str(v)) for v in (0, 1, 2)}
    for v, done in searched.items():
        assert done.returncode == 0, done.stderr
        assert done.stdout.startswith("#1 soup.txt::0 ")
        assert ("== Retrieval trace: hybrid, searched for 'lentil soup' ==" in done.stdout) is (
            v >= 1
        )
        assert ("== Passages ==" in done.stdout) is (v == 2)
    assert "Red lentil soup simmers for 25 minutes" in searched[2].stdout.split("== Passages ==")[1]

    chatted = run_cli("chat", "-k", "2", "-v", "2", stdin=f"{question}\n/quit\n")
    assert chatted.returncode == 0, chatted.stderr
    for section in SECTIONS:
        assert section in chatted.stdout, section
    assert f"Question: {question}" in chatted.stdout.split("== Prompt sent to the model")[1]
