"""PDF: the text layer per page (pypdfium2), OCR for pages without one.

Pages whose text layer is missing or negligible (fewer than :data:`MIN_TEXT_CHARS`
non-space characters) are rendered at ``OCR_DPI`` and read by the ``OCR_ENGINE``; they
are marked ``ocr_fallback``. A fully scanned PDF is therefore all ``ocr_fallback``.

With ``DOCLING_ARTIFACTS_PATH`` set, docling's standard PDF pipeline (layout model,
tables, reading order; Markdown output) reads the file instead. Its layout model needs
the optional ``varagity[docling-layout]`` extra.

PDFium is not thread-safe, so every call into it holds :data:`PDFIUM_LOCK`; OCR runs
outside the lock.
"""

from __future__ import annotations

import importlib
import importlib.util
import math
import re
import shutil
import threading
from pathlib import Path
from typing import Any

from PIL import Image

from varagity.config import Settings
from varagity.ingest.ocr import (
    EASYOCR_MISSING,
    MAX_OCR_PIXELS,
    TESSERACT_MISSING,
    OcrUnavailableError,
    rapidocr_model_paths,
)
from varagity.ingest.parsers.base import PageText, ParsedContent, ParseError
from varagity.ingest.parsers.image import ocr_image

MIN_TEXT_CHARS = 20
MAX_RENDER_PIXELS = MAX_OCR_PIXELS
PDFIUM_LOCK = threading.RLock()
DOCLING_LAYOUT_MISSING = (
    "DOCLING_ARTIFACTS_PATH is set, so PDFs go through docling's standard pipeline, whose "
    "layout model needs the optional docling-slim[models-local] packages ({missing} not "
    "installed): install varagity[docling-layout] or unset DOCLING_ARTIFACTS_PATH"
)

_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ufffe\uffff]")
_SENTINEL_PATH = b"/nonexistent/varagity-pdfium-error-sentinel.pdf"


def non_space_chars(text: str) -> int:
    """How many non-whitespace characters ``text`` has."""
    return sum(1 for ch in text if not ch.isspace())


def clean_layer_text(text: str) -> str:
    """Normalise PDFium's text: ``\\n`` line ends, no control characters, no trailing blanks."""
    text = _CONTROL.sub("", text.replace("\r\n", "\n").replace("\r", "\n"))
    return "\n".join(line.rstrip() for line in text.split("\n")).strip()


def open_pdf(data: bytes, name: str) -> Any:
    """Open PDF bytes with PDFium, turning each load failure into a specific ParseError.

    Args:
        data: The whole file.
        name: The file name, for messages.

    Returns:
        A ``pypdfium2.PdfDocument`` with at least one page (the caller closes it).

    Raises:
        ParseError: Empty, not a PDF, truncated or corrupt, encrypted, or without pages.
    """
    import pypdfium2 as pdfium
    import pypdfium2.raw as pdfium_c

    if not data:
        raise ParseError(f"{name}: empty file (0 bytes), not a PDF")
    if b"%PDF" not in data[:1024]:
        raise ParseError(f"{name}: not a PDF (no %PDF header at the start of the file)")
    with PDFIUM_LOCK:
        # PDFium keeps its last error code across calls and fails some loads (an empty
        # page tree) without setting one: plant a code no in-memory load can produce.
        pdfium_c.FPDF_LoadDocument(_SENTINEL_PATH, None)
        try:
            pdf = pdfium.PdfDocument(data)
        except pdfium.PdfiumError as exc:
            code = exc.err_code
            if code == pdfium_c.FPDF_ERR_PASSWORD:
                raise ParseError(f"{name}: encrypted: a password is required") from None
            if code == pdfium_c.FPDF_ERR_SECURITY:
                raise ParseError(
                    f"{name}: encrypted with an unsupported security handler"
                ) from None
            if code in (pdfium_c.FPDF_ERR_FILE, pdfium_c.FPDF_ERR_SUCCESS):
                raise ParseError(f"{name}: the PDF has no pages (empty page tree)") from None
            raise ParseError(f"{name}: not a readable PDF (truncated or corrupt): {exc}") from None
        if len(pdf) == 0:
            pdf.close()
            raise ParseError(f"{name}: the PDF has no pages")
    return pdf


def page_text(pdf: Any, index: int, name: str) -> str:
    """The cleaned text layer of one page (0-based ``index``); "" when it has none.

    Raises:
        ParseError: The page cannot be loaded.
    """
    import pypdfium2 as pdfium

    with PDFIUM_LOCK:
        try:
            page = pdf[index]
        except pdfium.PdfiumError as exc:
            raise ParseError(f"{name}: page {index + 1} is unreadable: {exc}") from None
        try:
            textpage = page.get_textpage()
            try:
                return clean_layer_text(textpage.get_text_bounded())
            finally:
                textpage.close()
        finally:
            page.close()


def render_page(pdf: Any, index: int, dpi: int) -> Image.Image:
    """Render one page (0-based ``index``) to an RGB image at ``dpi``, capped in size.

    Args:
        pdf: An open ``pypdfium2.PdfDocument``.
        index: 0-based page index.
        dpi: Resolution; lowered for huge pages so the bitmap stays under
            :data:`MAX_RENDER_PIXELS`.
    """
    with PDFIUM_LOCK:
        page = pdf[index]
        try:
            width, height = page.get_size()
            scale = dpi / 72
            pixels = width * height * scale * scale
            if pixels > MAX_RENDER_PIXELS:
                scale *= math.sqrt(MAX_RENDER_PIXELS / pixels)
            bitmap = page.render(scale=scale)
            try:
                image: Image.Image = bitmap.to_pil().convert("RGB")
            finally:
                bitmap.close()
        finally:
            page.close()
    return image


def has_text_layer(text: str) -> bool:
    """Whether a page's layer text counts (at least :data:`MIN_TEXT_CHARS` non-space)."""
    return non_space_chars(text) >= MIN_TEXT_CHARS


def _read(path: Path, name: str) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise ParseError(f"{name}: cannot read the file: {exc}") from None


class PdfParser:
    """PDF text layers per page, OCR where a page has none; docling when configured."""

    family = "pdf"
    suffixes = frozenset({".pdf"})

    def parse(self, path: Path, settings: Settings) -> ParsedContent:
        """Extract every page (1-based); see the module docstring for the rules."""
        name = path.name
        data = _read(path, name)
        pdf = open_pdf(data, name)
        try:
            if settings.DOCLING_ARTIFACTS_PATH is not None:
                usable = [has_text_layer(page_text(pdf, i, name)) for i in range(len(pdf))]
            else:
                return ParsedContent(pages=self._pages(pdf, settings, name))
        finally:
            with PDFIUM_LOCK:
                pdf.close()
        return parse_with_docling(path, settings, usable)

    @staticmethod
    def _pages(pdf: Any, settings: Settings, name: str) -> list[PageText]:
        import pypdfium2 as pdfium

        pages: list[PageText] = []
        for index in range(len(pdf)):
            number = index + 1
            layer = page_text(pdf, index, name)
            if has_text_layer(layer):
                pages.append(PageText(page=number, text=layer, extraction="text"))
                continue
            try:
                image = render_page(pdf, index, settings.OCR_DPI)
            except pdfium.PdfiumError as exc:
                raise ParseError(f"{name}: page {number} cannot be rendered: {exc}") from None
            ocr = ocr_image(image, settings, f"{name}: page {number} (no text layer)")
            if non_space_chars(ocr) >= non_space_chars(layer):
                pages.append(PageText(page=number, text=ocr, extraction="ocr_fallback"))
            else:
                pages.append(PageText(page=number, text=layer, extraction="text"))
        return pages


# --- docling's standard pipeline ------------------------------------------------------

_CONVERTERS: dict[tuple[str, str], Any] = {}
_CONVERTERS_LOCK = threading.Lock()


def _docling_ocr_options(settings: Settings) -> Any:
    from docling.datamodel.pipeline_options import (
        EasyOcrOptions,
        RapidOcrOptions,
        TesseractCliOcrOptions,
    )

    match settings.OCR_ENGINE:
        case "tesseract":
            binary = shutil.which("tesseract")
            if binary is None:
                raise OcrUnavailableError(TESSERACT_MISSING)
            return TesseractCliOcrOptions(lang=["eng"], tesseract_cmd=binary, psm=3)
        case "easyocr":
            if importlib.util.find_spec("easyocr_en_models") is None:
                raise OcrUnavailableError(EASYOCR_MISSING)
            if importlib.util.find_spec("easyocr") is None:
                raise OcrUnavailableError(EASYOCR_MISSING)
            models: Any = importlib.import_module("easyocr_en_models")
            return EasyOcrOptions(
                lang=["en"],
                model_storage_directory=models.model_dir(),
                download_enabled=False,
            )
    paths = rapidocr_model_paths()
    return RapidOcrOptions(
        det_model_path=str(paths["det"]),
        cls_model_path=str(paths["cls"]),
        rec_model_path=str(paths["rec"]),
    )


def _docling_converter(settings: Settings) -> Any:
    artifacts = settings.DOCLING_ARTIFACTS_PATH
    assert artifacts is not None
    key = (str(artifacts.expanduser().resolve()), settings.OCR_ENGINE)
    with _CONVERTERS_LOCK:
        if key in _CONVERTERS:
            return _CONVERTERS[key]
        missing = [m for m in ("docling_ibm_models", "torchvision") if not _importable(m)]
        if missing:
            raise ParseError(DOCLING_LAYOUT_MISSING.format(missing=", ".join(missing)))
        try:
            from docling.datamodel.base_models import InputFormat
            from docling.datamodel.pipeline_options import PdfPipelineOptions
            from docling.document_converter import DocumentConverter, PdfFormatOption

            options = PdfPipelineOptions(
                artifacts_path=key[0], do_ocr=True, ocr_options=_docling_ocr_options(settings)
            )
            converter = DocumentConverter(
                format_options={InputFormat.PDF: PdfFormatOption(pipeline_options=options)}
            )
            converter.initialize_pipeline(InputFormat.PDF)
        except ImportError as exc:
            raise ParseError(
                DOCLING_LAYOUT_MISSING.format(missing=f"import failed: {exc}")
            ) from None
        except OcrUnavailableError as exc:
            raise ParseError(f"docling's OCR step cannot run: {exc}") from None
        except (OSError, ValueError, RuntimeError) as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise ParseError(
                f"docling's standard PDF pipeline cannot start from DOCLING_ARTIFACTS_PATH="
                f"{artifacts}: {first} (download the models with docling-tools, or unset "
                "DOCLING_ARTIFACTS_PATH)"
            ) from None
        _CONVERTERS[key] = converter
        return converter


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def docling_pages(document: Any, layer_usable: list[bool]) -> list[PageText]:
    """Per-page Markdown of a ``DoclingDocument``, labelled by the page's text layer.

    Args:
        document: docling's converted document.
        layer_usable: For each page (0-based), whether it had a text layer; pages that
            did not were read by docling's OCR and are marked ``ocr_fallback``.

    Returns:
        One :class:`PageText` per page of the PDF, numbered from 1.
    """
    pages: list[PageText] = []
    for index, usable in enumerate(layer_usable):
        number = index + 1
        text = document.export_to_markdown(page_no=number, image_placeholder="")
        pages.append(
            PageText(
                page=number, text=text.strip(), extraction="text" if usable else "ocr_fallback"
            )
        )
    return pages


def parse_with_docling(path: Path, settings: Settings, layer_usable: list[bool]) -> ParsedContent:
    """Convert with docling's standard PDF pipeline (``DOCLING_ARTIFACTS_PATH`` set).

    Args:
        path: The PDF.
        settings: Varagity settings (``DOCLING_ARTIFACTS_PATH``, ``OCR_ENGINE``).
        layer_usable: Per page, whether PDFium found a text layer (labels the pages).

    Raises:
        ParseError: The layout extra or models are missing, or the conversion failed.
    """
    name = path.name
    try:
        converter = _docling_converter(settings)
    except ParseError as exc:
        raise ParseError(f"{name}: {exc}") from None
    try:
        result = converter.convert(path, raises_on_error=True)
    except ImportError as exc:
        raise ParseError(
            f"{name}: " + DOCLING_LAYOUT_MISSING.format(missing=f"import failed: {exc}")
        ) from None
    except Exception as exc:
        raise ParseError(f"{name}: docling could not convert the PDF: {exc}") from None
    return ParsedContent(pages=docling_pages(result.document, layer_usable), markdown=True)
