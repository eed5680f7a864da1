"""structure_aware: code at function/class boundaries (tree-sitter), Markdown at headings."""

from __future__ import annotations

import logging
from itertools import pairwise

import pytest

import varagity.chunking.code as code
from varagity.chunking.base import ChunkSpan
from varagity.chunking.code import CodeParseError, language_for, split_code
from varagity.chunking.header import chunk_header
from varagity.chunking.recursive_character import split_recursive
from varagity.chunking.structure_aware import StructureAwareChunker, split_markdown_sections
from varagity.config import load_settings
from varagity.ingest.parsers import ParsedDocument
from varagity.ingest.stages import chunk_document, embed_drafts

PYTHON = '''"""Harbour pumps."""

import math


class Pump:
    """A bilge pump."""

    def __init__(self, rate: float) -> None:
        self.rate = rate
        self.running = False

    def start(self) -> None:
        """Switch the pump on and log it."""
        self.running = True
        print(f"pump on at {self.rate} l/min")

    def volume(self, minutes: float) -> float:
        return self.rate * minutes if self.running else 0.0


def drain(tank: float, pump: Pump) -> float:
    """Minutes to empty ``tank`` litres."""
    return math.ceil(tank / pump.rate)
'''

RUST = """use std::fmt;

/// A bilge pump.
pub struct Pump {
    rate: f64,
}

impl Pump {
    pub fn new(rate: f64) -> Self {
        Pump { rate }
    }

    /// Litres moved in `minutes`.
    pub fn volume(&self, minutes: f64) -> f64 {
        self.rate * minutes
    }
}

impl fmt::Display for Pump {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "pump at {} l/min", self.rate)
    }
}
"""

C = """#include <stdio.h>

/* Litres moved by a pump running for some minutes. */
static double pump_volume(double rate, double minutes) {
    double litres = rate * minutes;
    if (litres < 0.0) {
        litres = 0.0;
    }
    return litres;
}

int main(void) {
    double v = pump_volume(12.5, 3.0);
    printf("%f litres\\n", v);
    for (int i = 0; i < 3; i++) {
        printf("pass %d\\n", i);
    }
    double w = pump_volume(8.0, 2.5);
    printf("%f more litres\\n", w);
    printf("%f litres in all\\n", v + w);
    return 0;
}
"""


def _check(text: str, spans: list[ChunkSpan], size: int) -> None:
    """Offsets exact, size cap, order, and every non-space character covered."""
    covered = bytearray(len(text))
    for s in spans:
        assert text[s.char_start : s.char_end] == s.text
        assert s.text == s.text.strip() and s.text
        assert len(s.text) <= size, (len(s.text), s.text)
        covered[s.char_start : s.char_end] = b"\x01" * (s.char_end - s.char_start)
    for a, b in pairwise(spans):
        assert b.char_start >= a.char_end, "code chunks do not overlap"
    lost = [i for i, ch in enumerate(text) if not ch.isspace() and not covered[i]]
    assert lost == [], text[lost[0] : lost[0] + 30]


def _starting_with(spans: list[ChunkSpan], prefix: str) -> ChunkSpan:
    found = [s for s in spans if s.text.lstrip().startswith(prefix)]
    assert found, f"no chunk starts with {prefix!r}: {[s.text[:30] for s in spans]}"
    return found[0]


def test_language_by_suffix() -> None:
    assert language_for("a/b/pump.py") == "python"
    assert language_for("src/lib.RS") == "rust"
    assert language_for("x.c") == "c"
    assert language_for("x.h") == "cpp"
    assert language_for("notes.md") is None
    assert language_for("data.xyz") is None
    assert language_for(None) is None


def test_python_is_cut_at_method_and_function_boundaries() -> None:
    spans = split_code(PYTHON, "python", 260, 20)
    _check(PYTHON, spans, 260)
    # no method is split across chunks: each one lies whole inside a single chunk
    for head in ("def __init__", "def start", "def volume"):
        start = PYTHON.index(head)
        end = PYTHON.index("\n\n", start)
        assert any(s.char_start <= start and end <= s.char_end for s in spans), head
    method = next(s for s in spans if "def start" in s.text)
    assert method.symbol_path == "class Pump"
    drain = next(s for s in spans if "def drain" in s.text)
    assert drain.symbol_path is None


def test_small_file_is_one_chunk() -> None:
    spans = split_code(PYTHON, "python", 2000, 0)
    assert len(spans) == 1
    assert spans[0].text == PYTHON.strip()


def test_rust_impl_blocks_and_functions() -> None:
    spans = split_code(RUST, "rust", 150, 0)
    _check(RUST, spans, 150)
    new = next(s for s in spans if "pub fn new" in s.text)
    volume = next(s for s in spans if "pub fn volume" in s.text)
    assert new.symbol_path == volume.symbol_path == "impl Pump"
    # the doc comment stays with the function it documents
    assert volume.text.index("/// Litres moved") < volume.text.index("pub fn volume")
    fmt = next(s for s in spans if "fn fmt" in s.text)
    # the whole impl block fits one chunk: the chunk is the impl, nothing encloses it
    assert fmt.text.startswith("impl fmt::Display for Pump")
    assert fmt.symbol_path is None


def test_c_functions_and_oversize_function_split_inside() -> None:
    spans = split_code(C, "c", 230, 0)
    _check(C, spans, 230)
    pump = _starting_with(spans, "/* Litres moved")
    assert "static double pump_volume" in pump.text
    main_parts = [s for s in spans if s.char_start >= C.index("int main")]
    assert len(main_parts) >= 2, "main (over 230 chars) is split into statements"
    assert main_parts[0].text.startswith("int main(void)")
    assert all(s.symbol_path == "function main" for s in main_parts[1:])


def test_unstructured_oversize_node_falls_back_to_lines() -> None:
    text = "BIG = '''\n" + "\n".join(f"line {i} of a long literal" for i in range(60)) + "\n'''\n"
    spans = split_code(text, "python", 120, 0)
    _check(text, spans, 120)
    assert len(spans) > 5


def test_unicode_offsets_are_characters_not_bytes() -> None:
    text = 'def grüße() -> str:\n    return "héllo 👋 wörld"\n\n\ndef ünd() -> int:\n    return 2\n'
    spans = split_code(text, "python", 48, 0)
    _check(text, spans, 48)
    assert [s.text.split("(")[0] for s in spans] == ["def grüße", "def ünd"]
    assert spans[1].symbol_path is None


def test_parse_errors_keep_the_valid_definitions() -> None:
    broken = PYTHON.replace(
        "def volume(self, minutes: float) -> float:", "def volume(self, minutes:"
    )
    spans = split_code(broken, "python", 260, 20)
    _check(broken, spans, 260)
    start = broken.index("def drain")
    assert any(s.char_start <= start and broken.index("math.ceil") < s.char_end for s in spans)


def test_unsupported_language_falls_back_to_recursive() -> None:
    chunker = StructureAwareChunker(120, 20)
    text = "key = value\n" * 40
    assert chunker.split(text, path="conf/app.toml") == split_recursive(text, 120, 20)
    assert chunker.split(text, path="notes.xyz") == split_recursive(text, 120, 20)
    assert chunker.split(text) == split_recursive(text, 120, 20)


def test_missing_grammar_falls_back_with_a_warning(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def no_grammar(language: str) -> object:
        raise CodeParseError(f"no tree-sitter grammar for {language!r}")

    monkeypatch.setattr(code, "_parser", no_grammar)
    chunker = StructureAwareChunker(200, 20)
    with caplog.at_level(logging.WARNING):
        spans = chunker.split(PYTHON, path="pump.py")
    assert spans == split_recursive(PYTHON, 200, 20)
    assert "pump.py" in caplog.text and "plain text" in caplog.text


def test_structure_aware_dispatches_code_by_path() -> None:
    chunker = StructureAwareChunker(260, 20)
    assert chunker.split(PYTHON, path="pkg/pump.py") == split_code(PYTHON, "python", 260, 20)


MARKDOWN = """Intro line.

# Pumps

Pumps move water.

## Bilge

Small pumps in the hull.

## Ballast

Big pumps for trim.

# Valves

""" + " ".join(f"Valve sentence {i} about seals and seats." for i in range(20))


def test_markdown_sections_merge_small_siblings_and_split_long_ones() -> None:
    spans = split_markdown_sections(MARKDOWN, 120, 10)
    _check_md(MARKDOWN, spans, 120)
    pumps = next(s for s in spans if "# Pumps" in s.text)
    assert "## Bilge" in pumps.text, "small sibling sections are merged"
    assert pumps.heading_path == "Pumps"
    valves = [s for s in spans if s.heading_path == "Valves"]
    assert len(valves) > 2
    assert spans[0].heading_path is None  # the intro before any heading


def _check_md(text: str, spans: list[ChunkSpan], size: int) -> None:
    for s in spans:
        assert text[s.char_start : s.char_end] == s.text
        assert len(s.text) <= size


def test_markdown_by_flag_or_suffix() -> None:
    chunker = StructureAwareChunker(120, 10)
    by_suffix = chunker.split(MARKDOWN, path="guide.md")
    assert by_suffix == chunker.split(MARKDOWN, path="report.docx", markdown=True)
    assert by_suffix == split_markdown_sections(MARKDOWN, 120, 10)


def test_chunk_header_lines() -> None:
    assert chunk_header("a/pump.py", None, "class Pump > def start") == (
        "File: a/pump.py\nIn: class Pump > def start"
    )
    assert chunk_header("guide.md", "Pumps > Bilge") == "File: guide.md\nSection: Pumps > Bilge"
    assert chunk_header(None) is None


def _parsed(relative_path: str, text: str, markdown: bool = False) -> ParsedDocument:
    return ParsedDocument(
        doc_id="d1",
        relative_path=relative_path,
        source=f"/corpus/{relative_path}",
        file_name=relative_path.rsplit("/", 1)[-1],
        file_type=relative_path.rsplit(".", 1)[-1],
        content_hash="h",
        size_bytes=len(text),
        text=text,
        markdown=markdown,
    )


def test_chunk_document_writes_headers_into_the_indexed_text() -> None:
    settings = load_settings(CHUNKING_STRATEGY="structure_aware", CHUNK_SIZE=260, CHUNK_OVERLAP=20)
    drafts = chunk_document(_parsed("harbour/pump.py", PYTHON), settings)
    start = next(d for d in drafts if "def start" in d.content)
    assert start.header == "File: harbour/pump.py\nIn: class Pump"
    assert start.contextualized_content.startswith(start.header)
    assert start.contextualized_content.endswith(start.content)
    off = load_settings(
        CHUNKING_STRATEGY="structure_aware", CHUNK_SIZE=260, CHUNK_OVERLAP=20, CHUNK_HEADERS=False
    )
    plain = chunk_document(_parsed("harbour/pump.py", PYTHON), off)
    assert all(d.header is None and d.contextualized_content == d.content for d in plain)
    assert [d.content for d in plain] == [d.content for d in drafts]


class RecordingEmbedder:
    model = "recording"

    def __init__(self) -> None:
        self.texts: list[str] = []

    def embed_passages(self, texts: list[str]) -> list[list[float]]:
        self.texts.extend(texts)
        return [[1.0, 0.0] for _ in texts]


def test_the_embedding_sees_the_chunk_but_not_the_header() -> None:
    settings = load_settings(CHUNKING_STRATEGY="structure_aware", CHUNK_SIZE=260, CHUNK_OVERLAP=20)
    drafts = chunk_document(_parsed("harbour/pump.py", PYTHON), settings)
    embedder = RecordingEmbedder()
    embed_drafts(drafts, embedder)
    assert embedder.texts == [d.content for d in drafts]
    assert all(d.contextualized_content.startswith("File: harbour/pump.py") for d in drafts)


def test_chunk_document_markdown_header_has_the_section() -> None:
    settings = load_settings(CHUNKING_STRATEGY="structure_aware", CHUNK_SIZE=120, CHUNK_OVERLAP=10)
    drafts = chunk_document(_parsed("guide.md", MARKDOWN, markdown=True), settings)
    valves = next(d for d in drafts if d.heading_path == "Valves")
    assert valves.header == "File: guide.md\nSection: Valves"
