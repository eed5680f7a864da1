"""OCR against ground truth (``varagity eval --ocr``, :mod:`varagity.eval.ocr`): the error
rates on hand-made cases, the manifest's checks, unreadable images named, engines that
are not installed listed, and the committed suite read by the default engine.

No assertion here is about time: seconds per page are reported, never checked."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

import varagity.eval.ocr as ocr_eval
from tests.conftest import SettingsFactory
from varagity.config import Settings, load_settings
from varagity.eval.ocr import (
    ENGINES,
    OcrReport,
    OcrSuiteError,
    bag_word_error_rate,
    char_error_rate,
    edit_distance,
    format_pages,
    format_table,
    load_ocr_suite,
    normalize,
    read_images,
    run_ocr_eval,
    word_error_rate,
    write_report,
)
from varagity.ingest.ocr import OcrError, OcrUnavailableError
from varagity_cli.main import main

REPO = Path(__file__).resolve().parents[2]
SUITE = REPO / "eval_suites" / "ocr"
DEFAULT_ENGINE = Settings.model_fields["OCR_ENGINE"].default
# The default engine on the undegraded pages, each (docs/models.md, "OCR engines":
# rapidocr measured 0.000): CER on a one-column page, and bag WER (words read, in any
# order) on every clean page, the two-column one included, whose columns both engines
# read across. Generous bounds, tight enough to catch a broken reading.
CLEAN_CER_BOUND = 0.05
CLEAN_BAG_WER_BOUND = 0.05


# --- the measures ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reference", "hypothesis", "distance"),
    [
        ("kitten", "sitting", 3),
        ("", "", 0),
        ("", "abc", 3),
        ("abc", "", 3),
        ("flaw", "lawn", 2),
        ("same", "same", 0),
        ("abc", "cba", 2),
        ("intention", "execution", 5),
        (["the", "cat", "sat"], ["the", "cat", "sat", "down"], 1),
        (["the", "cat", "sat"], ["cat", "the", "sat"], 2),
    ],
)
def test_edit_distance_on_hand_made_cases(reference: Any, hypothesis: Any, distance: int) -> None:
    assert edit_distance(reference, hypothesis) == distance
    assert edit_distance(hypothesis, reference) == distance


def test_character_error_rate_on_hand_made_cases() -> None:
    assert char_error_rate("kitten", "sitting") == pytest.approx(3 / 6)
    assert char_error_rate("Total 21.04", "Total 21.04") == 0.0
    assert char_error_rate("Total 21.04", "Total 21.O4") == pytest.approx(1 / 11)
    assert char_error_rate("abcd", "") == 1.0
    assert char_error_rate("ab", "abcdef") == pytest.approx(4 / 2)  # can exceed 1
    # case and punctuation count
    assert char_error_rate("Oak", "oak") == pytest.approx(1 / 3)
    assert char_error_rate("1,470.00", "1470.00") == pytest.approx(1 / 8)
    # an empty transcription
    assert char_error_rate("", "") == 0.0
    assert char_error_rate(" \n", "x") == 1.0


def test_whitespace_is_collapsed_and_nfkc_applied_before_scoring() -> None:
    assert normalize("  Dear Ms\tLindqvist,\n\nThank  you \n") == "Dear Ms Lindqvist, Thank you"
    assert char_error_rate("Dear Ms\nLindqvist,", "Dear   Ms Lindqvist, ") == 0.0
    assert word_error_rate("one\ntwo  three", "one two three") == 0.0
    assert char_error_rate("fitting", "\ufb01tting") == 0.0  # the fi ligature is two letters
    # a missing space is one character error, and two word errors (one out, one wrong)
    assert char_error_rate("Oat milk", "Oatmilk") == pytest.approx(1 / 8)
    assert word_error_rate("Oat milk 1 L", "Oatmilk 1 L") == pytest.approx(2 / 4)


def test_word_error_rate_on_hand_made_cases() -> None:
    assert word_error_rate("the cat sat", "the cat sat") == 0.0
    assert word_error_rate("the cat sat", "the cat sat down") == pytest.approx(1 / 3)
    assert word_error_rate("the cat sat", "the bat sat") == pytest.approx(1 / 3)
    assert word_error_rate("the cat sat", "") == 1.0
    # reading order is scored as returned: two columns read across cost words
    assert word_error_rate("a b c d", "a c b d") == pytest.approx(2 / 4)


def test_bag_word_error_rate_forgives_the_order_only() -> None:
    assert bag_word_error_rate("a b c d", "c d a b") == 0.0
    assert bag_word_error_rate("a b c d", "a c b d") == 0.0
    assert bag_word_error_rate("a b c d", "a b c") == pytest.approx(1 / 4)  # one missing
    assert bag_word_error_rate("a b c d", "a b c x") == pytest.approx(1 / 4)  # one wrong
    assert bag_word_error_rate("a b c d", "a b c d d e") == pytest.approx(2 / 4)  # two extra
    assert bag_word_error_rate("the the cat", "the cat") == pytest.approx(1 / 3)  # repeats count
    assert bag_word_error_rate("a b", "") == 1.0
    assert bag_word_error_rate("", "") == 0.0


# --- suites ------------------------------------------------------------------------------


def _page_image(path: Path) -> None:
    Image.new("L", (240, 60), 255).save(path)


def _suite(folder: Path, rows: list[dict[str, Any]] | None = None) -> Path:
    """A one-page suite in ``folder`` (rows replace its manifest)."""
    (folder / "pages").mkdir(parents=True)
    (folder / "truth").mkdir()
    _page_image(folder / "pages" / "a.png")
    (folder / "truth" / "a.txt").write_text("Harwick 2025\n", encoding="utf-8")
    rows = rows or [{"file": "pages/a.png", "truth": "truth/a.txt", "kinds": ["clean"]}]
    manifest = "".join(json.dumps(r) + "\n" for r in rows)
    (folder / "manifest.jsonl").write_text(manifest, encoding="utf-8")
    return folder


def test_a_suite_loads_with_its_pages_kinds_and_truths(tmp_path: Path) -> None:
    suite = load_ocr_suite(_suite(tmp_path / "s"))
    [page] = suite.pages
    assert page.id == "pages/a.png"
    assert page.kinds == ("clean",)
    assert page.truth == "Harwick 2025\n"
    assert page.image == (tmp_path / "s" / "pages" / "a.png").resolve()


@pytest.mark.parametrize(
    ("row", "said"),
    [
        ({"file": "pages/a.png", "truth": "truth/gone.txt", "kinds": ["clean"]}, "truth/gone.txt"),
        ({"file": "pages/gone.png", "truth": "truth/a.txt", "kinds": ["clean"]}, "pages/gone.png"),
        ({"file": "pages/a.png", "kinds": ["clean"]}, "missing truth"),
        ({"file": "pages/a.png", "truth": "truth/a.txt", "kinds": []}, "kinds must be"),
        ({"file": "pages/a.png", "truth": "truth/a.txt", "kinds": "blur"}, "kinds must be"),
        ({"file": "pages/a.png", "truth": "truth/a.txt", "kinds": ["Blur"]}, "kinds must be"),
        (
            {"file": "pages/a.png", "truth": "truth/a.txt", "kinds": ["clean", "blur"]},
            "no other kind",
        ),
        ({"file": "pages/a.png", "truth": "truth/a.txt", "kinds": ["all"]}, "report's total"),
        (
            {"file": "pages/a.png", "truth": "truth/a.txt", "kinds": ["blur"], "kind": "x"},
            "unknown key(s) kind",
        ),
        ({"file": "../a.png", "truth": "truth/a.txt", "kinds": ["blur"]}, "outside the suite"),
        ({"file": 7, "truth": "truth/a.txt", "kinds": ["blur"]}, "file must be a path"),
    ],
)
def test_the_manifest_is_validated(tmp_path: Path, row: dict[str, Any], said: str) -> None:
    folder = _suite(tmp_path / "s", [row])
    with pytest.raises(OcrSuiteError, match=r"manifest\.jsonl:1") as raised:
        load_ocr_suite(folder)
    assert said in str(raised.value)


def test_an_empty_ground_truth_a_duplicate_page_and_bad_json_are_refused(tmp_path: Path) -> None:
    folder = _suite(tmp_path / "s")
    (folder / "truth" / "a.txt").write_text(" \n", encoding="utf-8")
    with pytest.raises(OcrSuiteError, match=r"ground truth .*a\.txt is empty"):
        load_ocr_suite(folder)

    row = {"file": "pages/a.png", "truth": "truth/a.txt", "kinds": ["clean"]}
    folder = _suite(tmp_path / "dup", [row, row])
    with pytest.raises(OcrSuiteError, match=r"manifest\.jsonl:2: pages/a\.png is listed twice"):
        load_ocr_suite(folder)

    folder = _suite(tmp_path / "json")
    (folder / "manifest.jsonl").write_text('{"file": "pages/a.png",\n', encoding="utf-8")
    with pytest.raises(OcrSuiteError, match=r"manifest\.jsonl:1: not JSON"):
        load_ocr_suite(folder)

    (folder / "manifest.jsonl").write_text("\n", encoding="utf-8")
    with pytest.raises(OcrSuiteError, match="lists no page"):
        load_ocr_suite(folder)

    with pytest.raises(OcrSuiteError, match=r"no manifest\.jsonl"):
        load_ocr_suite(tmp_path)
    with pytest.raises(OcrSuiteError, match="no such OCR suite folder"):
        load_ocr_suite(tmp_path / "nowhere")


def _corrupt(path: Path, how: str) -> None:
    if how == "garbage":
        path.write_bytes(b"this is not an image at all")
    elif how == "empty":
        path.write_bytes(b"")
    else:  # truncated: a real page image cut in half
        data = (SUITE / "pages" / "p01_letter_clean.png").read_bytes()
        path.write_bytes(data[: len(data) // 2])


@pytest.mark.parametrize("how", ["garbage", "empty", "truncated"])
def test_a_corrupt_image_is_named_before_any_engine_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    folder = _suite(tmp_path / "s")
    _corrupt(folder / "pages" / "a.png", how)
    suite = load_ocr_suite(folder)
    monkeypatch.setattr(ocr_eval, "get_ocr_engine", _no_engine_may_load)
    with pytest.raises(OcrSuiteError, match=r"pages/a\.png: not a readable image"):
        read_images(suite)
    with pytest.raises(OcrSuiteError, match=r"pages/a\.png: not a readable image"):
        run_ocr_eval(suite, load_settings())


def test_an_image_removed_after_loading_is_named(tmp_path: Path) -> None:
    folder = _suite(tmp_path / "s")
    suite = load_ocr_suite(folder)
    (folder / "pages" / "a.png").unlink()
    with pytest.raises(OcrSuiteError, match=r"pages/a\.png: image not found"):
        read_images(suite)


def test_the_cli_names_a_corrupt_image_and_a_missing_truth(
    make_settings: SettingsFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = make_settings()
    folder = _suite(tmp_path / "s")
    _corrupt(folder / "pages" / "a.png", "garbage")
    assert main(["eval", "--ocr", "--suite", str(folder)]) == 2
    assert "pages/a.png: not a readable image" in capsys.readouterr().err
    (folder / "truth" / "a.txt").unlink()
    assert main(["eval", "--ocr", "--suite", str(folder)]) == 2
    assert "ground truth truth/a.txt of pages/a.png not found" in capsys.readouterr().err
    assert not (settings.home / "eval").exists()  # no report for a refused suite


def _no_engine_may_load(settings: Settings) -> Any:
    raise AssertionError(f"{settings.OCR_ENGINE} loaded for a suite that cannot be read")


# --- engines, faked ----------------------------------------------------------------------


class _Scripted:
    """An engine that returns prepared readings in page order (or raises one)."""

    def __init__(self, name: str, readings: list[str | Exception]) -> None:
        self.name = name
        self.readings = list(readings)

    def recognize(self, image: Image.Image) -> str:
        reading = self.readings.pop(0)
        if isinstance(reading, Exception):
            raise reading
        return reading

    def words(self, image: Image.Image) -> list[Any]:
        return []


def _two_page_suite(folder: Path) -> Path:
    rows = [
        {"file": "pages/a.png", "truth": "truth/a.txt", "kinds": ["clean"]},
        {"file": "pages/b.png", "truth": "truth/a.txt", "kinds": ["blur", "jpeg"]},
    ]
    _suite(folder, rows)
    _page_image(folder / "pages" / "b.png")
    return folder


def test_every_engine_is_listed_and_kinds_are_pooled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    engines = {
        "rapidocr": _Scripted("rapidocr", ["Harwick 2025", "Harwick 2O25"]),
        "tesseract": _Scripted("tesseract", ["Harwick  2025", OcrError("tesseract exited 1")]),
    }

    def fake(settings: Settings) -> Any:
        if settings.OCR_ENGINE == "easyocr":
            raise OcrUnavailableError("OCR_ENGINE=easyocr needs the easyocr package")
        return engines[settings.OCR_ENGINE]

    monkeypatch.setattr(ocr_eval, "get_ocr_engine", fake)
    suite = load_ocr_suite(_two_page_suite(tmp_path / "s"))
    report = run_ocr_eval(suite, load_settings())

    assert [e.engine for e in report.engines] == list(ENGINES)
    easy = report.engine("easyocr")
    assert easy.status == "not installed"
    assert easy.pages == []
    assert "easyocr package" in (easy.reason or "")

    rapid = report.engine("rapidocr").summaries(report.kinds)
    assert list(rapid) == ["all", "clean", "blur", "jpeg"]
    assert rapid["clean"].cer == 0.0
    assert rapid["blur"].cer == pytest.approx(1 / 12)
    assert rapid["all"].cer == pytest.approx(1 / 24)  # errors and lengths pooled
    assert rapid["all"].wer == pytest.approx(1 / 4)
    assert rapid["all"].bag_wer == pytest.approx(1 / 4)
    assert rapid["all"].pages == 2

    tess = report.engine("tesseract")
    assert tess.status == "ok"
    assert tess.pages[0].cer == 0.0  # whitespace collapsed
    assert tess.pages[1].error == "tesseract exited 1"
    assert tess.pages[1].cer == 1.0  # a failed page reads as nothing

    table = format_table(report)
    assert "easyocr    not installed" in table
    assert "easyocr: not installed: OCR_ENGINE=easyocr needs the easyocr package" in table
    assert "tesseract: loaded in" in table and "failed on 1 page(s)" in table
    pages = format_pages(report)
    assert "b.png" in pages and "1.000!" in pages


def test_an_engine_that_fails_to_load_is_reported_not_raised(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(settings: Settings) -> Any:
        raise RuntimeError("onnxruntime: cannot allocate")

    monkeypatch.setattr(ocr_eval, "get_ocr_engine", broken)
    suite = load_ocr_suite(_suite(tmp_path / "s"))
    report = run_ocr_eval(suite, load_settings(), engines=["rapidocr"])
    [result] = report.engines
    assert result.status == "failed"
    assert result.reason == "RuntimeError: onnxruntime: cannot allocate"
    assert not report.ok
    with pytest.raises(OcrSuiteError, match="unknown OCR engine"):
        run_ocr_eval(suite, load_settings(), engines=["paddle"])


# --- the committed suite -----------------------------------------------------------------


def test_the_committed_suite_is_small_varied_and_complete() -> None:
    suite = load_ocr_suite(SUITE)
    assert 10 <= len(suite.pages) <= 14
    kinds = {k for page in suite.pages for k in page.kinds}
    assert {"clean", "blur", "skew", "noise", "jpeg", "low_contrast"} <= kinds
    assert {"photo", "perspective", "shadow", "curvature"} <= kinds
    assert sum(1 for p in suite.pages if "photo" in p.kinds) >= 3
    assert sum(1 for p in suite.pages if p.kinds == ("clean",)) >= 3
    assert sum(page.image.stat().st_size for page in suite.pages) < 3 * 1024 * 1024
    listed = {page.image.name for page in suite.pages}
    assert listed == {p.name for p in (SUITE / "pages").iterdir()}  # no stray image
    truths = {page.truth_file.name for page in suite.pages}
    assert truths == {p.name for p in (SUITE / "truth").iterdir()}
    for page in suite.pages:
        assert page.truth.isascii() and page.truth.endswith("\n")


@pytest.fixture(scope="module")
def default_report() -> Iterator[OcrReport]:
    """The committed suite read by the default engine, once for the tests below."""
    settings = load_settings(OCR_ENGINE=DEFAULT_ENGINE, DOCLING_ARTIFACTS_PATH=None)
    yield run_ocr_eval(load_ocr_suite(SUITE), settings, engines=[DEFAULT_ENGINE])


def test_the_default_engine_reads_every_committed_page(default_report: OcrReport) -> None:
    [result] = default_report.engines
    assert result.engine == DEFAULT_ENGINE
    assert result.status == "ok", result.reason
    assert [p.page for p in result.pages] == [p.id for p in default_report.suite.pages]
    assert all(p.error is None for p in result.pages), [p.error for p in result.pages]
    assert all(p.text.strip() for p in result.pages)  # every page read as something
    assert all(p.seconds > 0 for p in result.pages)


def test_the_default_engine_reads_clean_pages_nearly_exactly(default_report: OcrReport) -> None:
    [result] = default_report.engines
    layouts = {p.id: p.layout for p in default_report.suite.pages}
    clean = [p for p in result.pages if p.kinds == ("clean",)]
    assert len(clean) >= 3
    for page in clean:
        assert page.bag_wer < CLEAN_BAG_WER_BOUND, (page.page, page.text)
        if layouts[page.page] != "two_columns":
            assert page.cer < CLEAN_CER_BOUND, (page.page, page.text)
    # degraded pages are read too, if less well: nothing is a total loss
    assert result.summaries(default_report.kinds)["all"].bag_wer < 0.3


def test_the_report_lists_every_page_and_kind(default_report: OcrReport, tmp_path: Path) -> None:
    written = json.loads(write_report(tmp_path / "r" / "ocr.json", default_report).read_text())
    assert written["suite"] == "ocr"
    assert written["n_pages"] == len(default_report.suite.pages)
    assert "whitespace" in written["normalisation"]
    [engine] = written["engines"]
    assert [p["page"] for p in engine["pages"]] == [p.id for p in default_report.suite.pages]
    assert set(engine["summary"]) == {"all", *written["kinds"]}
    assert engine["summary"]["all"]["pages"] == len(default_report.suite.pages)
    for kind in ("all", *written["kinds"]):
        assert {"cer", "wer", "bag_wer", "seconds_per_page"} <= engine["summary"][kind].keys()
    table = format_table(default_report)
    for kind in written["kinds"]:
        assert f" {kind} " in table


def test_the_cli_reports_every_engine_on_one_page(
    make_settings: SettingsFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    make_settings()
    folder = tmp_path / "one"
    folder.mkdir()
    shutil.copytree(SUITE / "pages", folder / "pages")
    shutil.copytree(SUITE / "truth", folder / "truth")
    first = (SUITE / "manifest.jsonl").read_text(encoding="utf-8").splitlines()[0]
    (folder / "manifest.jsonl").write_text(first + "\n", encoding="utf-8")
    out = tmp_path / "report.json"
    assert main(["eval", "--ocr", "--suite", str(folder), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "OCR suite one: 1 page(s)" in printed
    for name in ENGINES:
        assert name in printed
    report = json.loads(out.read_text(encoding="utf-8"))
    assert [e["engine"] for e in report["engines"]] == list(ENGINES)
    assert all(e["status"] in ("ok", "not installed") for e in report["engines"])
    assert report["engines"][0]["status"] == "ok"  # rapidocr is a default dependency
