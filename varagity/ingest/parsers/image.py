"""Images: OCR only, one page per image (one per frame for multi-frame TIFF)."""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

from PIL import Image, ImageOps, UnidentifiedImageError

from varagity.config import Settings
from varagity.ingest.ocr import MAX_OCR_PIXELS, OcrError, OcrUnavailableError, get_ocr_engine
from varagity.ingest.parsers.base import PageText, ParsedContent, ParseError

IMAGE_SUFFIXES = frozenset({".png", ".jpg", ".jpeg", ".tif", ".tiff", ".bmp", ".webp"})
# Only TIFF frames are pages; other multi-frame formats (APNG, animated WebP) are read
# from their first frame.
MULTIPAGE_FORMATS = frozenset({"TIFF"})


def ocr_image(image: Image.Image, settings: Settings, where: str) -> str:
    """OCR one image with the configured engine, as a parser needs it.

    Args:
        image: The page or picture to read.
        settings: Varagity settings (``OCR_ENGINE`` picks the engine).
        where: What is being read, for messages (``"a.pdf: page 3"``).

    Returns:
        The recognized text, lines joined with newlines.

    Raises:
        ParseError: The engine is not installed, or it failed on this image.
    """
    try:
        engine = get_ocr_engine(settings)
    except OcrUnavailableError as exc:
        raise ParseError(f"{where} needs OCR, but {exc}") from None
    try:
        return engine.recognize(image)
    except OcrUnavailableError as exc:
        raise ParseError(f"{where} needs OCR, but {exc}") from None
    except OcrError as exc:
        raise ParseError(f"{where}: OCR failed: {exc}") from None


def _frames(image: Image.Image) -> Iterator[Image.Image]:
    count = getattr(image, "n_frames", 1) if image.format in MULTIPAGE_FORMATS else 1
    for index in range(count):
        image.seek(index)
        # a copy, turned upright when the EXIF orientation says so (phone photos)
        frame = ImageOps.exif_transpose(image)
        pixels = frame.width * frame.height
        if pixels > MAX_OCR_PIXELS:
            ratio = math.sqrt(MAX_OCR_PIXELS / pixels)
            size = (max(1, int(frame.width * ratio)), max(1, int(frame.height * ratio)))
            frame = frame.resize(size, Image.Resampling.LANCZOS)
        yield frame


class ImageParser:
    """Each image (each TIFF frame) is one OCR'd page."""

    family = "image"
    suffixes = IMAGE_SUFFIXES

    def parse(self, path: Path, settings: Settings) -> ParsedContent:
        """OCR the image with ``OCR_ENGINE``; pages are numbered from 1."""
        name = path.name
        if path.stat().st_size == 0:
            raise ParseError(f"{name}: empty file (0 bytes), not an image")
        pages: list[PageText] = []
        try:
            with Image.open(path) as image:
                for number, frame in enumerate(_frames(image), start=1):
                    where = f"{name}: page {number}" if number > 1 else name
                    text = ocr_image(frame, settings, where)
                    pages.append(PageText(page=number, text=text, extraction="ocr"))
        except UnidentifiedImageError:
            raise ParseError(
                f"{name}: not a readable image: Pillow does not recognise the content as any "
                f"image format (a {path.suffix.lower()} name on other data?)"
            ) from None
        except Image.DecompressionBombError as exc:
            raise ParseError(f"{name}: image too large to OCR: {exc}") from None
        except ParseError:
            raise
        except (OSError, SyntaxError, ValueError, EOFError) as exc:
            raise ParseError(
                f"{name}: not a readable image (truncated or corrupt): {exc}"
            ) from None
        return ParsedContent(pages=pages)
