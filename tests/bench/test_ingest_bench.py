"""The benchmark's prompt-cache measurement, on llama_cpp.server log lines."""

from __future__ import annotations

from varagity_bench.ingest import _percentiles, prompt_cache_share

# Three requests as a verbose llama_cpp.server logs them: a cold one, one reusing a
# 300-token prefix of its live context, one restoring a cached state first.
LOG = """\
INFO:     127.0.0.1:1 - "POST /v1/chat/completions HTTP/1.1" 200 OK
Llama._create_completion: cache miss
llama_perf_context_print:        load time =     500.00 ms
llama_perf_context_print: prompt eval time =     480.00 ms /   350 tokens (    1.37 ms per token)
llama_perf_context_print:        eval time =     900.00 ms /    20 runs   (   45.00 ms per token)
Llama.generate: 300 prefix-match hit, remaining 60 prompt tokens to eval
llama_perf_context_print: prompt eval time =      90.00 ms /    60 tokens (    1.50 ms per token)
llama_perf_context_print:        eval time =     800.00 ms /    18 runs   (   44.44 ms per token)
Llama._create_completion: cache hit
Llama.generate: 290 prefix-match hit, remaining 10 prompt tokens to eval
llama_perf_context_print: prompt eval time =      20.00 ms /    10 tokens (    2.00 ms per token)
"""


def test_cache_share_counts_reused_prefixes_per_request() -> None:
    share = prompt_cache_share(LOG)
    assert (share.requests, share.prompt_tokens, share.cached_tokens) == (3, 1010, 590)
    assert abs(share.share - 590 / 1010) < 1e-9
    assert "3 requests" in str(share)


def test_no_server_lines_measure_nothing() -> None:
    share = prompt_cache_share("INFO: started\n")
    assert (share.requests, share.share) == (0, 0.0)
    assert str(share).startswith("not measured")


def test_latency_percentiles_are_nearest_rank() -> None:
    line = _percentiles([float(x) for x in range(20, 0, -1)])  # 20 samples, unsorted
    assert line == "p50 10.5 s, p95 19.0 s, min 1.0 s, max 20.0 s (n=20)"
    assert _percentiles([3.0]) == "p50 3.0 s, p95 3.0 s, min 3.0 s, max 3.0 s (n=1)"
