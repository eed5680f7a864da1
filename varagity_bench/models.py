"""``varagity models bench``: what each local chat model costs on this machine.

For every model asked for, it makes the GGUF ready (verifying, or assembling on first
use), starts the same llama.cpp server ``varagity up`` starts (same flags, a free
port, a temporary log folder) and measures:

* prepare: seconds to verify (or assemble) the GGUF;
* ready: server start until ``GET /v1/models`` answers (weights loaded);
* prompt eval: tokens/s over a ~300-token prompt the server has not seen, answered
  with one token (so the time is prompt evaluation);
* generation: tokens/s of a streamed answer, first token to last (prompt excluded);
* RSS: the server's resident memory after loading and its peak (``VmHWM``) at the end;
* a sample answer to a fixed question, to see that the chat template is applied.

Numbers depend on the machine and its load; this prints them and asserts nothing.
"""

from __future__ import annotations

import json
import random
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx

from varagity.config import Settings
from varagity.local_models import LOCAL_MODELS
from varagity_bench.synthetic_text import sentence
from varagity_stack.model_servers import free_port, llm_server_process

SAMPLE_QUESTION = "What is the capital of France? Answer in one short sentence."


@dataclass
class ModelBench:
    """One model's figures."""

    name: str
    prepare_s: float
    ready_s: float
    rss_ready_mib: float
    rss_peak_mib: float
    prompt_tokens: int
    prompt_tok_s: float
    gen_tokens: int
    gen_tok_s: float
    sample: str


def _rss_mib(pid: int, field: str) -> float:
    """``VmRSS`` or ``VmHWM`` of a process in MiB (0 when unreadable)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def _unseen_prompt(rng: random.Random, sentences: int) -> str:
    text = " ".join(sentence(rng, 8, 16) for _ in range(sentences))
    return f"Summarise this report in one line.\n\n{text}"


def _complete(client: httpx.Client, url: str, model: str, content: str, **params: object) -> dict:
    body = {"model": model, "messages": [{"role": "user", "content": content}], **params}
    resp = client.post(f"{url}/chat/completions", json=body)
    resp.raise_for_status()
    return dict(resp.json())


def _stream_rate(
    client: httpx.Client, url: str, model: str, content: str, max_tokens: int
) -> tuple[int, float]:
    """(tokens after the first, seconds from first to last token) of a streamed answer."""
    body = {
        "model": model,
        "messages": [{"role": "user", "content": content}],
        "max_tokens": max_tokens,
        "temperature": 0.0,
        "stream": True,
    }
    stamps: list[float] = []
    with client.stream("POST", f"{url}/chat/completions", json=body) as resp:
        resp.raise_for_status()
        for line in resp.iter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            delta = json.loads(line[6:])["choices"][0].get("delta", {})
            if delta.get("content"):
                stamps.append(time.perf_counter())
    if len(stamps) < 2:
        return 0, 0.0
    return len(stamps) - 1, stamps[-1] - stamps[0]


def bench_model(name: str, base: Settings, log_dir: Path, seed: int = 7) -> ModelBench:
    """Measure one catalog model with the product's server flags."""
    model = LOCAL_MODELS[name]
    settings = base.model_copy(
        update={
            "LOCAL_LLM": name,
            "LLM_MODEL": model.alias,
            "LLM_PORT": free_port(),
            "LLM_BASE_URL": None,
        }
    )
    t0 = time.perf_counter()
    proc = llm_server_process(settings, log_dir)  # verifies (or assembles) the GGUF
    prepare_s = time.perf_counter() - t0
    url = settings.llm_url
    rng = random.Random(seed)
    t0 = time.perf_counter()
    proc.start()
    try:
        proc.wait_ready(timeout=600)
        ready_s = time.perf_counter() - t0
        assert proc.pid is not None
        rss_ready = _rss_mib(proc.pid, "VmRSS")
        with httpx.Client(timeout=600) as client:
            _complete(client, url, model.alias, "Say hi.", max_tokens=2)  # warm-up
            t0 = time.perf_counter()
            out = _complete(client, url, model.alias, _unseen_prompt(rng, 15), max_tokens=1)
            prompt_s = time.perf_counter() - t0
            prompt_tokens = int(out["usage"]["prompt_tokens"])
            gen_tokens, gen_s = _stream_rate(
                client,
                url,
                model.alias,
                "Write a detailed essay of at least 400 words about the history of bread.",
                64,
            )
            sample = _complete(
                client, url, model.alias, SAMPLE_QUESTION, max_tokens=48, temperature=0.0
            )["choices"][0]["message"]["content"]
        rss_peak = _rss_mib(proc.pid, "VmHWM")
    finally:
        proc.stop()
    return ModelBench(
        name=name,
        prepare_s=prepare_s,
        ready_s=ready_s,
        rss_ready_mib=rss_ready,
        rss_peak_mib=rss_peak,
        prompt_tokens=prompt_tokens,
        prompt_tok_s=prompt_tokens / prompt_s if prompt_s else 0.0,
        gen_tokens=gen_tokens,
        gen_tok_s=gen_tokens / gen_s if gen_s else 0.0,
        sample=str(sample),
    )


def format_table(rows: list[ModelBench]) -> str:
    """The figures as a Markdown table, then each model's sample answer."""
    lines = [
        "| model | prepare s | ready s | RSS ready MiB | RSS peak MiB | prompt tok/s "
        "| generation tok/s |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r.name} | {r.prepare_s:.1f} | {r.ready_s:.1f} | {r.rss_ready_mib:.0f} "
            f"| {r.rss_peak_mib:.0f} | {r.prompt_tok_s:.0f} ({r.prompt_tokens} tok) "
            f"| {r.gen_tok_s:.1f} ({r.gen_tokens} tok) |"
        )
    lines.append("")
    for r in rows:
        lines.append(f"{r.name} answers {SAMPLE_QUESTION!r}: {r.sample.strip()!r}")
    return "\n".join(lines)


def run_models_bench(names: list[str], settings: Settings) -> Iterator[ModelBench]:
    """Bench each model in turn (one server at a time), yielding each row when done."""
    with tempfile.TemporaryDirectory(prefix="varagity-models-bench-") as tmp:
        for name in names:
            yield bench_model(name, settings, Path(tmp))
