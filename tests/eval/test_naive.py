"""The naive baseline: its tokenizer, and a full run on a small suite with a fake embedder."""

from __future__ import annotations

import json
import zlib
from pathlib import Path

from varagity.eval.naive import CHUNK_CHARS, run_naive, tokenize
from varagity.eval.suite import load_suite


def test_tokenize_splits_identifiers_and_keeps_them() -> None:
    assert tokenize("DiffExecutor run_target HTTPServer2") == [
        "diffexecutor",
        "diff",
        "executor",
        "run_target",
        "run",
        "target",
        "httpserver2",
        "http",
        "server",
        "2",
    ]
    assert tokenize("plain words") == ["plain", "words"]


class HashEmbedder:
    """Deterministic bag-of-words vectors (no model): shared words make vectors close."""

    def _vector(self, text: str) -> list[float]:
        vec = [0.0] * 64
        for word in tokenize(text):
            vec[zlib.crc32(word.encode()) % 64] += 1.0
        norm = sum(v * v for v in vec) ** 0.5 or 1.0
        return [v / norm for v in vec]

    def embed_passages(self, texts: list[str]) -> list[list[float]]:
        return [self._vector(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._vector(text)


def _suite(tmp_path: Path) -> Path:
    corpus = tmp_path / "suite" / "corpus"
    (corpus / "src").mkdir(parents=True)
    filler = "\n".join(f"// line {i} of unrelated filler text" for i in range(60))
    pump = "fn start_pump(rate: f64) {\n    // the bilge pump starts here\n}\n"
    (corpus / "src" / "pump.rs").write_text(filler + "\n" + pump, encoding="utf-8")
    (corpus / "notes.md").write_text("Kettles boil water for tea.\n", encoding="utf-8")
    queries = [
        {
            "id": "q1",
            "query": "How does start_pump start the bilge pump?",
            "relevant": [{"rel_source": "src/pump.rs", "text": pump}],
        },
        {
            "id": "q2",
            "query": "What boils water for tea?",
            "relevant": [{"rel_source": "notes.md", "text": "Kettles boil water for tea."}],
        },
    ]
    (tmp_path / "suite" / "queries.jsonl").write_text(
        "\n".join(json.dumps(q) for q in queries), encoding="utf-8"
    )
    return tmp_path / "suite"


def test_run_naive_scores_a_small_suite(tmp_path: Path) -> None:
    suite = load_suite(_suite(tmp_path))
    result = run_naive(suite, HashEmbedder(), (1, 5))
    assert result.ok and result.config == "naive"
    assert result.overrides == {"CHUNK_CHARS": CHUNK_CHARS}
    assert [s.query_id for s in result.scores] == ["q1", "q2"]
    assert result.pass_at(5) == 1.0
    assert result.scores[1].first_rank == 1
    assert len(result.latencies_ms["total"]) == 2
