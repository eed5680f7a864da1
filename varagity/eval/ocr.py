"""OCR against ground truth: character and word error rates, and seconds per page, of
every OCR engine Varagity supports, on a suite of page images with exact transcriptions
(``varagity eval --ocr``; ``eval_suites/README.md``, "OCR suite").

An OCR suite is a folder with ``manifest.jsonl``, one page a line::

    {"file": "pages/p02_letter_scan.jpg", "truth": "truth/letter.txt",
     "kinds": ["skew", "noise", "jpeg"], "layout": "letter"}

``file`` (the image) and ``truth`` (its transcription, UTF-8) are relative to the folder;
``kinds`` names the page's degradations (``clean`` alone for an undegraded page);
``layout`` and ``note`` are optional labels. Other keys are refused, so a misspelt one
is not silently ignored. ``eval_suites/ocr`` is the project's own suite and
``eval_suites/ocr/generate.py`` renders it.

Scoring. Both texts are normalised the same way (:func:`normalize`): Unicode NFKC, then
every run of whitespace (newlines included) becomes one space and the ends are trimmed;
case and punctuation are kept. Nothing reorders either text: the engine's reading order
is scored as the engine returns it, so a two-column page read across the columns costs
what it costs a reader. CER is the Levenshtein distance between the two character
strings over the transcription's length; WER the same over words (the normalised text
split on spaces). The bag WER compares the words as multisets, forgiving the reading
order: ``max(missing, extra)`` over the transcription's word count, where ``missing`` are
the transcription's words the reading lacks and ``extra`` the reading's words the
transcription lacks (counted with repeats); where it is much lower than the WER, the
words were read but put in another order. Per kind and overall, the errors and lengths
of the pages are summed before dividing (a long page weighs more than a short one); a
page counts towards each of its kinds. Seconds per page are the engine's ``recognize``
call alone, the engine's load (models read, binary found) reported apart.

An engine that is not installed here is reported as ``not installed`` with what to
install, never left out; an engine that fails on a page scores that page as an empty
reading (CER 1.0) and reports the error.
"""

from __future__ import annotations

import json
import os
import platform
import re
import time
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, get_args

import numpy as np
from PIL import Image, ImageOps

from varagity.config import OcrEngineName, Settings
from varagity.eval.suite import SuiteError
from varagity.ingest.ocr import OcrError, OcrUnavailableError, get_ocr_engine

MANIFEST = "manifest.jsonl"
#: Every engine ``OCR_ENGINE`` can name, in the order the report lists them.
ENGINES: tuple[OcrEngineName, ...] = get_args(OcrEngineName)
CLEAN = "clean"
ALL = "all"
NORMALISATION = (
    "NFKC; whitespace runs (newlines included) collapsed to one space, ends trimmed; "
    "case and punctuation kept; reading order as the engine returns it (bag WER: words "
    "as multisets, order forgiven)"
)
_REQUIRED_KEYS = frozenset({"file", "truth", "kinds"})
_OPTIONAL_KEYS = frozenset({"layout", "note"})
_KIND = re.compile(r"[a-z][a-z0-9_]*")
_WHITESPACE = re.compile(r"\s+")

EngineStatus = Literal["ok", "not installed", "failed"]


class OcrSuiteError(SuiteError):
    """The OCR suite is missing a file, holds malformed data or an unreadable image."""


# --- the suite ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class OcrPage:
    """One page image and its exact transcription."""

    id: str  # the image file's path in the suite, as the manifest gives it
    image: Path
    truth_file: Path
    truth: str
    kinds: tuple[str, ...]
    layout: str | None = None


@dataclass(frozen=True, slots=True)
class OcrSuite:
    """An OCR suite folder, its manifest validated."""

    name: str
    root: Path
    pages: tuple[OcrPage, ...]

    def limited(self, limit: int | None) -> OcrSuite:
        """The first ``limit`` pages (all of them for ``None``)."""
        if limit is None:
            return self
        if limit <= 0:
            raise OcrSuiteError("limit must be positive")
        return OcrSuite(self.name, self.root, self.pages[:limit])


def is_ocr_suite(folder: str | Path) -> bool:
    """Whether the folder holds an OCR suite's manifest."""
    return (Path(folder) / MANIFEST).is_file()


def load_ocr_suite(folder: str | Path) -> OcrSuite:
    """Read and validate an OCR suite's manifest (module notes).

    Every image and transcription must exist; a transcription must be UTF-8 text that is
    not blank. Images are only checked to exist here: :func:`read_images` decodes them.

    Raises:
        OcrSuiteError: The folder or manifest is missing, or a line is malformed; the
            message names the manifest line and the file at fault.
    """
    root = Path(folder).expanduser().resolve()
    manifest = root / MANIFEST
    if not root.is_dir():
        raise OcrSuiteError(f"{root}: no such OCR suite folder")
    if not manifest.is_file():
        raise OcrSuiteError(f"{root}: not an OCR suite (no {MANIFEST})")
    pages: list[OcrPage] = []
    seen: set[str] = set()
    lines = manifest.read_text(encoding="utf-8").splitlines()
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"{manifest}:{number}"
        try:
            row = json.loads(line)
        except ValueError as exc:
            raise OcrSuiteError(f"{where}: not JSON ({exc})") from None
        page = _page(root, row, where)
        if page.id in seen:
            raise OcrSuiteError(f"{where}: {page.id} is listed twice")
        seen.add(page.id)
        pages.append(page)
    if not pages:
        raise OcrSuiteError(f"{manifest}: lists no page")
    return OcrSuite(root.name, root, tuple(pages))


def _page(root: Path, row: Any, where: str) -> OcrPage:
    if not isinstance(row, dict):
        raise OcrSuiteError(f"{where}: a page is a JSON object")
    missing = sorted(_REQUIRED_KEYS - row.keys())
    if missing:
        raise OcrSuiteError(f"{where}: missing {', '.join(missing)}")
    unknown = sorted(row.keys() - _REQUIRED_KEYS - _OPTIONAL_KEYS)
    if unknown:
        raise OcrSuiteError(f"{where}: unknown key(s) {', '.join(unknown)}")
    for key in ("file", "truth"):
        if not isinstance(row[key], str) or not row[key].strip():
            raise OcrSuiteError(f"{where}: {key} must be a path relative to the suite")
    image = _inside(root, row["file"], where)
    truth_file = _inside(root, row["truth"], where)
    if not image.is_file():
        raise OcrSuiteError(f"{where}: image {row['file']} not found ({image})")
    if not truth_file.is_file():
        raise OcrSuiteError(
            f"{where}: ground truth {row['truth']} of {row['file']} not found ({truth_file})"
        )
    try:
        truth = truth_file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise OcrSuiteError(f"{where}: cannot read the ground truth {truth_file}: {exc}") from None
    if not truth.strip():
        raise OcrSuiteError(f"{where}: ground truth {truth_file} is empty")
    kinds = row["kinds"]
    if (
        not isinstance(kinds, list)
        or not kinds
        or not all(isinstance(k, str) and _KIND.fullmatch(k) for k in kinds)
    ):
        raise OcrSuiteError(
            f'{where}: kinds must be a non-empty list of lower-case names (e.g. ["blur"])'
        )
    if CLEAN in kinds and len(kinds) > 1:
        raise OcrSuiteError(f"{where}: a {CLEAN} page has no other kind")
    if ALL in kinds:
        raise OcrSuiteError(f"{where}: {ALL!r} is the report's total, not a kind")
    layout = row.get("layout")
    if layout is not None and not isinstance(layout, str):
        raise OcrSuiteError(f"{where}: layout must be a string")
    return OcrPage(row["file"], image, truth_file, truth, tuple(dict.fromkeys(kinds)), layout)


def _inside(root: Path, relative: str, where: str) -> Path:
    path = (root / relative).resolve()
    if not path.is_relative_to(root):
        raise OcrSuiteError(f"{where}: {relative} lies outside the suite folder")
    return path


def read_images(suite: OcrSuite) -> dict[str, Image.Image]:
    """Decode every page image (turned upright by its EXIF orientation, as the image
    parser does), before any engine runs.

    Raises:
        OcrSuiteError: An image is missing, empty, truncated or not an image; the message
            names the file.
    """
    images: dict[str, Image.Image] = {}
    for page in suite.pages:
        try:
            with Image.open(page.image) as opened:
                opened.load()
                images[page.id] = ImageOps.exif_transpose(opened)
        except FileNotFoundError:
            raise OcrSuiteError(f"{page.image}: image not found") from None
        except (OSError, SyntaxError, ValueError, EOFError, Image.DecompressionBombError) as exc:
            raise OcrSuiteError(f"{page.image}: not a readable image: {exc}") from None
    return images


# --- scoring -----------------------------------------------------------------------------


def normalize(text: str) -> str:
    """NFKC, whitespace runs (newlines too) collapsed to one space, ends trimmed."""
    return _WHITESPACE.sub(" ", unicodedata.normalize("NFKC", text)).strip()


def edit_distance(reference: Sequence[Any], hypothesis: Sequence[Any]) -> int:
    """Levenshtein distance (insertions, deletions, substitutions, each costing 1).

    One row of the dynamic programme at a time, each row computed with numpy: a cell's
    deletion and substitution costs come from the row above, and the insertions along
    the row are a running minimum, ``min_k<=j (t[k] + j - k)``, which is
    ``minimum.accumulate(t - j) + j``.
    """
    if not reference:
        return len(hypothesis)
    if not hypothesis:
        return len(reference)
    codes: dict[Any, int] = {}
    ref = np.array([codes.setdefault(x, len(codes)) for x in reference], dtype=np.int64)
    hyp = np.array([codes.setdefault(x, len(codes)) for x in hypothesis], dtype=np.int64)
    steps = np.arange(len(hyp) + 1, dtype=np.int64)
    row = steps.copy()
    for i, symbol in enumerate(ref, start=1):
        best = np.empty_like(row)
        best[0] = i
        best[1:] = np.minimum(row[1:] + 1, row[:-1] + (hyp != symbol))
        row = np.minimum.accumulate(best - steps) + steps
    return int(row[-1])


def _rate(errors: int, length: int) -> float:
    if length == 0:
        return 0.0 if errors == 0 else 1.0
    return errors / length


def char_error_rate(reference: str, hypothesis: str) -> float:
    """CER of a reading against its transcription, both normalised (:func:`normalize`).

    An empty transcription scores 0.0 against an empty reading and 1.0 against any other.
    """
    ref, hyp = normalize(reference), normalize(hypothesis)
    return _rate(edit_distance(ref, hyp), len(ref))


def word_error_rate(reference: str, hypothesis: str) -> float:
    """WER: the same over the normalised texts' words."""
    ref, hyp = normalize(reference).split(), normalize(hypothesis).split()
    return _rate(edit_distance(ref, hyp), len(ref))


def bag_word_errors(reference: Sequence[str], hypothesis: Sequence[str]) -> int:
    """Word errors when order is free: ``max(missing, extra)`` of the two multisets (the
    fewest insertions, deletions and substitutions once words may move at no cost)."""
    ref, hyp = Counter(reference), Counter(hypothesis)
    return max((ref - hyp).total(), (hyp - ref).total())


def bag_word_error_rate(reference: str, hypothesis: str) -> float:
    """The bag WER of two texts, normalised (:func:`normalize`)."""
    ref, hyp = normalize(reference).split(), normalize(hypothesis).split()
    return _rate(bag_word_errors(ref, hyp), len(ref))


# --- results -----------------------------------------------------------------------------


class _Rates:
    """Character, word and order-free word error rates of the counts a result holds."""

    __slots__ = ()
    chars: int
    char_errors: int
    words: int
    word_errors: int
    bag_word_errors: int

    @property
    def cer(self) -> float:
        return _rate(self.char_errors, self.chars)

    @property
    def wer(self) -> float:
        return _rate(self.word_errors, self.words)

    @property
    def bag_wer(self) -> float:
        return _rate(self.bag_word_errors, self.words)


@dataclass(frozen=True, slots=True)
class PageResult(_Rates):
    """One engine's reading of one page, scored."""

    page: str
    kinds: tuple[str, ...]
    seconds: float
    chars: int
    char_errors: int
    words: int
    word_errors: int
    bag_word_errors: int
    text: str
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "page": self.page,
            "kinds": list(self.kinds),
            "cer": round(self.cer, 4),
            "wer": round(self.wer, 4),
            "bag_wer": round(self.bag_wer, 4),
            "seconds": round(self.seconds, 3),
            "chars": self.chars,
            "char_errors": self.char_errors,
            "words": self.words,
            "word_errors": self.word_errors,
            "bag_word_errors": self.bag_word_errors,
            "error": self.error,
            "text": self.text,
        }


def score_page(page: OcrPage, text: str, seconds: float, error: str | None = None) -> PageResult:
    """Score a reading of the page against its transcription."""
    ref, hyp = normalize(page.truth), normalize(text)
    return PageResult(
        page=page.id,
        kinds=page.kinds,
        seconds=seconds,
        chars=len(ref),
        char_errors=edit_distance(ref, hyp),
        words=len(ref.split()),
        word_errors=edit_distance(ref.split(), hyp.split()),
        bag_word_errors=bag_word_errors(ref.split(), hyp.split()),
        text=text,
        error=error,
    )


@dataclass(frozen=True, slots=True)
class Summary(_Rates):
    """Pages pooled: errors and lengths summed before dividing."""

    pages: int
    chars: int
    char_errors: int
    words: int
    word_errors: int
    bag_word_errors: int
    seconds: float

    @classmethod
    def of(cls, results: Iterable[PageResult]) -> Summary:
        rows = list(results)
        return cls(
            pages=len(rows),
            chars=sum(r.chars for r in rows),
            char_errors=sum(r.char_errors for r in rows),
            words=sum(r.words for r in rows),
            word_errors=sum(r.word_errors for r in rows),
            bag_word_errors=sum(r.bag_word_errors for r in rows),
            seconds=sum(r.seconds for r in rows),
        )

    @property
    def seconds_per_page(self) -> float:
        return self.seconds / self.pages if self.pages else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "pages": self.pages,
            "cer": round(self.cer, 4),
            "wer": round(self.wer, 4),
            "bag_wer": round(self.bag_wer, 4),
            "seconds_per_page": round(self.seconds_per_page, 3),
            "chars": self.chars,
            "char_errors": self.char_errors,
            "words": self.words,
            "word_errors": self.word_errors,
            "bag_word_errors": self.bag_word_errors,
        }


@dataclass(slots=True)
class EngineResult:
    """One engine over the suite, or why it did not run."""

    engine: str
    status: EngineStatus
    reason: str | None = None
    load_seconds: float | None = None
    pages: list[PageResult] = field(default_factory=list)

    def summaries(self, kinds: Sequence[str]) -> dict[str, Summary]:
        """``all`` first, then each kind in the order given (kinds no page has: left out)."""
        out = {ALL: Summary.of(self.pages)}
        for kind in kinds:
            rows = [r for r in self.pages if kind in r.kinds]
            if rows:
                out[kind] = Summary.of(rows)
        return out

    def to_dict(self, kinds: Sequence[str]) -> dict[str, Any]:
        return {
            "engine": self.engine,
            "status": self.status,
            "reason": self.reason,
            "load_seconds": None if self.load_seconds is None else round(self.load_seconds, 3),
            "summary": {k: s.to_dict() for k, s in self.summaries(kinds).items()},
            "pages": [p.to_dict() for p in self.pages],
        }


@dataclass(slots=True)
class OcrReport:
    """Every engine over one suite."""

    suite: OcrSuite
    engines: list[EngineResult]
    created_at: str = field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))

    @property
    def kinds(self) -> list[str]:
        """The suite's kinds, ``clean`` first, then in order of first appearance."""
        seen = dict.fromkeys(k for p in self.suite.pages for k in p.kinds)
        return sorted(seen, key=lambda k: (k != CLEAN, list(seen).index(k)))

    def engine(self, name: str) -> EngineResult:
        """The result of one engine by name."""
        return next(e for e in self.engines if e.engine == name)

    @property
    def ok(self) -> bool:
        """Whether at least one engine read the suite."""
        return any(e.status == "ok" for e in self.engines)

    def to_dict(self) -> dict[str, Any]:
        kinds = self.kinds
        return {
            "suite": self.suite.name,
            "suite_path": str(self.suite.root),
            "created_at": self.created_at,
            "n_pages": len(self.suite.pages),
            "normalisation": NORMALISATION,
            "machine": {
                "cpus": os.cpu_count(),
                "platform": platform.platform(),
                "python": platform.python_version(),
            },
            "kinds": kinds,
            "engines": [e.to_dict(kinds) for e in self.engines],
        }


# --- running -----------------------------------------------------------------------------


def run_ocr_eval(
    suite: OcrSuite,
    settings: Settings,
    engines: Sequence[str] = ENGINES,
    progress: Callable[[str], None] | None = None,
) -> OcrReport:
    """Read every page with every engine named and score the readings.

    The images are decoded first (a bad one stops the run before any engine spends
    time). Each engine comes from the product's factory
    (:func:`varagity.ingest.ocr.get_ocr_engine`) with ``OCR_ENGINE`` set to its name, so
    it runs with the settings ingestion uses.

    Raises:
        OcrSuiteError: An image cannot be read, or an engine name is unknown.
    """
    unknown = [name for name in engines if name not in ENGINES]
    if unknown:
        raise OcrSuiteError(
            f"unknown OCR engine(s) {', '.join(unknown)} (known: {', '.join(ENGINES)})"
        )
    say = progress or (lambda _line: None)
    images = read_images(suite)
    results: list[EngineResult] = []
    for name in engines:
        started = time.perf_counter()
        try:
            engine = get_ocr_engine(settings.model_copy(update={"OCR_ENGINE": name}))
        except OcrUnavailableError as exc:
            say(f"[{name}] not installed: {exc}")
            results.append(EngineResult(name, "not installed", str(exc)))
            continue
        except Exception as exc:  # an engine's own load error (onnxruntime, torch, ...)
            say(f"[{name}] failed to load: {exc}")
            results.append(EngineResult(name, "failed", f"{type(exc).__name__}: {exc}"))
            continue
        result = EngineResult(name, "ok", load_seconds=time.perf_counter() - started)
        for index, page in enumerate(suite.pages, start=1):
            error = None
            started = time.perf_counter()
            try:
                text = engine.recognize(images[page.id])
            except (OcrError, OcrUnavailableError) as exc:
                text, error = "", str(exc)
            seconds = time.perf_counter() - started
            scored = score_page(page, text, seconds, error)
            result.pages.append(scored)
            failed = f"  error: {error}" if error else ""
            say(
                f"[{name}] {index}/{len(suite.pages)} {page.id}: CER {scored.cer:.3f} "
                f"WER {scored.wer:.3f} {seconds:.2f} s{failed}"
            )
        results.append(result)
    return OcrReport(suite, results)


# --- output ------------------------------------------------------------------------------


def format_table(report: OcrReport) -> str:
    """Per engine, per kind (``all`` first): pages, CER, WER, bag WER, seconds per page."""
    kinds = report.kinds
    header = ("engine", "kind", "pages", "CER", "WER", "bag WER", "s/page")
    rows: list[tuple[str, ...]] = []
    notes: list[str] = []
    for result in report.engines:
        if result.status != "ok":
            rows.append((result.engine, result.status, "-", "-", "-", "-", "-"))
            notes.append(f"{result.engine}: {result.status}: {result.reason}")
            continue
        for kind, summary in result.summaries(kinds).items():
            rows.append(
                (
                    result.engine,
                    kind,
                    str(summary.pages),
                    f"{summary.cer:.3f}",
                    f"{summary.wer:.3f}",
                    f"{summary.bag_wer:.3f}",
                    f"{summary.seconds_per_page:.2f}",
                )
            )
        failures = sum(1 for p in result.pages if p.error)
        load = f"{result.engine}: loaded in {result.load_seconds or 0.0:.2f} s"
        notes.append(load + (f"; failed on {failures} page(s)" if failures else ""))
    lines = _columns(header, rows, right_from=2)
    return "\n".join([*lines, "", *notes])


def format_pages(report: OcrReport) -> str:
    """Per page: its kinds and each engine's CER (``-`` for an engine that did not run)."""
    header = ("page", "kinds", *(e.engine for e in report.engines))
    by_engine = {e.engine: {p.page: p for p in e.pages} for e in report.engines}
    rows = []
    for page in report.suite.pages:
        cells = []
        for result in report.engines:
            read = by_engine[result.engine].get(page.id)
            cells.append("-" if read is None else f"{read.cer:.3f}" + ("!" if read.error else ""))
        rows.append((Path(page.id).name, ",".join(page.kinds), *cells))
    return "\n".join(_columns(header, rows, right_from=2))


def _columns(header: Sequence[str], rows: Sequence[Sequence[str]], right_from: int) -> list[str]:
    widths = [max(len(str(c)) for c in column) for column in zip(header, *rows, strict=True)]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(
            c.rjust(w) if i >= right_from else c.ljust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        ).rstrip()

    return [line(header), line(["-" * w for w in widths]), *(line(r) for r in rows)]


def write_report(path: Path, report: OcrReport) -> Path:
    """Write the JSON report (parents created) and return its path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report.to_dict(), indent=2, ensure_ascii=False), encoding="utf-8")
    return path


def default_report_path(settings: Settings, suite: OcrSuite) -> Path:
    """``VARAGITY_HOME/eval/results/ocr-<suite>-<UTC timestamp>.json``."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
    return settings.home / "eval" / "results" / f"ocr-{suite.name}-{stamp}.json"
