"""The page-preview benchmark runs end to end on its generated files (numbers, no limits)."""

from __future__ import annotations

import pytest

from tests.conftest import SettingsFactory
from varagity_bench.previews import bench_previews


def test_every_format_is_timed_first_and_cached(make_settings: SettingsFactory) -> None:
    result = bench_previews(2, make_settings(OCR_ENGINE="rapidocr"))
    assert result["unavailable"] == {}, result["unavailable"]
    for name in ("text_pdf", "scanned_pdf", "pptx"):
        times = result[name]
        assert set(times) == {"first_ms", "next_page_ms", "cached_ms"}
        assert all(value > 0 for value in times.values()), (name, times)


def test_fewer_than_two_pages_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 2"):
        bench_previews(1)
