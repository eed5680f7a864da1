"""Docling's declarative (simple) pipelines, shared by the office and web families.

Office, OpenDocument, CSV and HTML files are read by docling's format backends
(python-docx, python-pptx, openpyxl, odfdo, BeautifulSoup) straight into a
``DoclingDocument``: no layout model, no OCR, no picture enrichment, no remote or local
resource fetching, so nothing is ever downloaded. One converter is built per process
(importing docling costs seconds: it pulls torch and transformers) and reused.

The document becomes :class:`PageText` pages of Markdown: one per slide or sheet where
docling records page provenance (PowerPoint, Excel, OpenDocument spreadsheets) or slide
groups (OpenDocument presentations), otherwise the whole document as one page without a
number. Docling's failures become :class:`ParseError` with a specific reason.
"""

from __future__ import annotations

import re
import threading
import zipfile
from dataclasses import dataclass
from io import BytesIO
from pathlib import Path
from typing import TYPE_CHECKING, Any

from varagity.ingest.parsers.base import PageText, ParseError

if TYPE_CHECKING:
    from docling.document_converter import DocumentConverter
    from docling_core.types.doc import DoclingDocument

# docling InputFormat values of the formats read here, by file suffix.
FORMAT_OF_SUFFIX: dict[str, str] = {
    ".docx": "docx",
    ".pptx": "pptx",
    ".xlsx": "xlsx",
    ".csv": "csv",
    ".odt": "odt",
    ".ods": "ods",
    ".odp": "odp",
    ".html": "html",
    ".htm": "html",
    ".xhtml": "html",
}
FORMAT_NAMES: dict[str, str] = {
    "docx": "a Word document",
    "pptx": "a PowerPoint presentation",
    "xlsx": "an Excel workbook",
    "csv": "CSV text",
    "odt": "an OpenDocument text",
    "ods": "an OpenDocument spreadsheet",
    "odp": "an OpenDocument presentation",
    "html": "HTML",
    "md": "Markdown text",
}
# The zip member that makes a container this format (OOXML main part, ODF content).
_REQUIRED_PART: dict[str, str] = {
    "docx": "word/document.xml",
    "pptx": "ppt/presentation.xml",
    "xlsx": "xl/workbook.xml",
    "odt": "content.xml",
    "ods": "content.xml",
    "odp": "content.xml",
}
_ODF_MIMETYPES: dict[str, str] = {
    "application/vnd.oasis.opendocument.text": "odt",
    "application/vnd.oasis.opendocument.spreadsheet": "ods",
    "application/vnd.oasis.opendocument.presentation": "odp",
}
_ODF_MANIFEST = "META-INF/manifest.xml"
_OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
_SLIDE_GROUP = re.compile(r"^slide-(\d+)$")
# Zip containers are measured before docling inflates them: a member that inflates to
# more than ZIP_BOMB_MIN_BYTES at over ZIP_MAX_RATIO times its compressed size, or
# members adding up to more than ZIP_MAX_UNZIPPED_BYTES, make a zip bomb. Real office
# XML compresses 5-30 times; a sheet of repeated cells may reach 60.
ZIP_MAX_RATIO = 200
ZIP_BOMB_MIN_BYTES = 16 * 1024 * 1024
ZIP_MAX_UNZIPPED_BYTES = 512 * 1024 * 1024
# Office XML never declares entities; a DTD with <!ENTITY is an expansion bomb.
_ENTITY = re.compile(rb"<!ENTITY", re.IGNORECASE)

_lock = threading.Lock()
_converter: list[DocumentConverter] = []


def converter() -> DocumentConverter:
    """The process's docling converter for the formats above (built on first use).

    Every format runs docling's ``SimplePipeline`` with picture classification,
    picture description and chart extraction off and remote services disallowed, and
    HTML keeps the text before its first heading (docling would file it as furniture).
    """
    with _lock:
        if not _converter:
            _converter.append(_build_converter())
        return _converter[0]


def _build_converter() -> DocumentConverter:
    from docling.datamodel.backend_options import HTMLBackendOptions
    from docling.datamodel.base_models import InputFormat
    from docling.datamodel.pipeline_options import ConvertPipelineOptions
    from docling.document_converter import (
        CsvFormatOption,
        DocumentConverter,
        ExcelFormatOption,
        FormatOption,
        HTMLFormatOption,
        OdpFormatOption,
        OdsFormatOption,
        OdtFormatOption,
        PowerpointFormatOption,
        WordFormatOption,
    )

    def offline() -> ConvertPipelineOptions:
        return ConvertPipelineOptions(
            do_picture_classification=False,
            do_picture_description=False,
            do_chart_extraction=False,
            enable_remote_services=False,
            allow_external_plugins=False,
        )

    options: dict[InputFormat, FormatOption] = {
        InputFormat.DOCX: WordFormatOption(pipeline_options=offline()),
        InputFormat.PPTX: PowerpointFormatOption(pipeline_options=offline()),
        InputFormat.XLSX: ExcelFormatOption(pipeline_options=offline()),
        InputFormat.CSV: CsvFormatOption(pipeline_options=offline()),
        InputFormat.ODT: OdtFormatOption(pipeline_options=offline()),
        InputFormat.ODS: OdsFormatOption(pipeline_options=offline()),
        InputFormat.ODP: OdpFormatOption(pipeline_options=offline()),
        InputFormat.HTML: HTMLFormatOption(
            pipeline_options=offline(),
            backend_options=HTMLBackendOptions.model_validate(
                {
                    "infer_furniture": False,
                    "fetch_images": False,
                    "enable_local_fetch": False,
                    "enable_remote_fetch": False,
                }
            ),
        ),
    }
    return DocumentConverter(allowed_formats=list(options), format_options=options)


def convert(source: Path | bytes, suffix: str, name: str) -> DoclingDocument:
    """Convert one file (or its already decoded bytes) with docling.

    Args:
        source: The file, or the bytes to convert in its place (HTML and CSV are
            decoded by the caller and handed over as UTF-8).
        suffix: The file's lower-case suffix, which names the expected format.
        name: The file name, for error messages and docling's format detection.

    Returns:
        The converted document.

    Raises:
        ParseError: Docling cannot read the file, its content is another format, or
            the container is a zip bomb or declares XML entities.
    """
    from docling.datamodel.base_models import ConversionStatus, DocumentStream

    expected = FORMAT_OF_SUFFIX[suffix]
    if expected in _REQUIRED_PART:
        refusal = _container_refusal(source)
        if refusal is not None:
            raise ParseError(f"not a valid {suffix} ({refusal})")
    if isinstance(source, bytes):
        stem = Path(name).stem or "document"
        doc_source: Path | DocumentStream = DocumentStream(
            name=f"{stem}{suffix}", stream=BytesIO(source)
        )
    else:
        doc_source = source
    try:
        result = converter().convert(doc_source, raises_on_error=False)
    except Exception as exc:  # docling raises for inputs it cannot even classify
        raise ParseError(_diagnose(source, suffix, f"{type(exc).__name__}: {exc}")) from None
    actual = result.input.format.value if result.input.format is not None else None
    if actual is not None and actual != expected:
        raise ParseError(
            f"not a valid {suffix} (the content is {FORMAT_NAMES.get(actual, actual)})"
        )
    ok = {ConversionStatus.SUCCESS, ConversionStatus.PARTIAL_SUCCESS}
    if result.status not in ok or result.document is None:
        errors = "; ".join(e.error_message for e in result.errors) or str(result.status.value)
        raise ParseError(_diagnose(source, suffix, errors))
    return result.document


def _container_refusal(source: Path | bytes) -> str | None:
    """Why a zip container must not be inflated (a zip or entity bomb), or None.

    Only the central directory and the first bytes of XML members are read; a file that
    is not a readable zip is left to docling (and :func:`_diagnose`).
    """
    try:
        with zipfile.ZipFile(BytesIO(source) if isinstance(source, bytes) else source) as zf:
            members = zf.infolist()
            total = sum(m.file_size for m in members)
            if total > ZIP_MAX_UNZIPPED_BYTES:
                return (
                    f"zip bomb: its members inflate to {total} bytes, over the limit of"
                    f" {ZIP_MAX_UNZIPPED_BYTES}"
                )
            for m in members:
                ratio = m.file_size / max(1, m.compress_size)
                if m.file_size > ZIP_BOMB_MIN_BYTES and ratio > ZIP_MAX_RATIO:
                    return (
                        f"zip bomb: member {m.filename} inflates {ratio:.0f} times to"
                        f" {m.file_size} bytes (limit {ZIP_MAX_RATIO} times)"
                    )
            for m in members:
                if m.filename.endswith((".xml", ".rels")):
                    with zf.open(m) as fh:
                        if _ENTITY.search(fh.read(65536)):
                            return (
                                f"member {m.filename} declares XML entities (an entity"
                                " expansion bomb); office files never do"
                            )
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError, ValueError):
        return None
    return None


def _diagnose(source: Path | bytes, suffix: str, docling_error: str) -> str:
    """Why docling failed, in words: the container checks docling does not spell out."""
    expected = FORMAT_OF_SUFFIX[suffix]
    part = _REQUIRED_PART.get(expected)
    fallback = f"docling could not read it as {FORMAT_NAMES[expected]}: {docling_error}"
    if part is None:
        return f"not a valid {suffix} ({fallback})"
    head = source[:4096] if isinstance(source, bytes) else _head(source)
    if not head:
        return f"not a valid {suffix} (empty file)"
    if head.startswith(_OLE_MAGIC):
        return (
            f"not a valid {suffix} (a legacy binary or password-protected Office file;"
            f" save it as {suffix} without a password)"
        )
    if not head.startswith(b"PK"):
        kind = "plain text" if _looks_like_text(head) else "unknown binary data"
        return f"not a valid {suffix} ({kind}, not a zip archive)"
    try:
        with zipfile.ZipFile(BytesIO(source) if isinstance(source, bytes) else source) as zf:
            bad = zf.testzip()
            if bad is not None:
                return f"not a valid {suffix} (zip is corrupt: member {bad} fails its CRC)"
            names = set(zf.namelist())
            mimetype = zf.read("mimetype").decode("ascii", "replace") if "mimetype" in names else ""
            manifest = zf.read(_ODF_MANIFEST) if _ODF_MANIFEST in names else b""
    except (zipfile.BadZipFile, OSError, EOFError, ValueError):
        return f"not a valid {suffix} (zip is corrupt)"
    if b"encryption-data" in manifest:
        return f"not a valid {suffix} (password-protected; save it without a password)"
    other = _zip_format(names, mimetype.strip())
    if other is not None and other != expected:
        return f"not a valid {suffix} (the content is {FORMAT_NAMES[other]})"
    if part not in names:
        return f"not a valid {suffix} (zip lacks {part})"
    return f"not a valid {suffix} ({fallback})"


def _head(path: Path) -> bytes:
    with path.open("rb") as fh:
        return fh.read(4096)


def _looks_like_text(head: bytes) -> bool:
    if b"\x00" in head:
        return False
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        return exc.start > len(head) - 4  # a multi-byte character cut by the sample
    return True


def _zip_format(names: set[str], mimetype: str) -> str | None:
    if mimetype in _ODF_MIMETYPES:
        return _ODF_MIMETYPES[mimetype]
    for fmt in ("docx", "pptx", "xlsx"):
        if _REQUIRED_PART[fmt] in names:
            return fmt
    return None


@dataclass
class _TopNode:
    """A top-level body node: where it starts in docling's iteration, and its page."""

    start: int
    page: int | None = None
    sheet: str | None = None


@dataclass
class _Segment:
    """Consecutive top-level nodes that belong to one page (or one sheet)."""

    start: int
    page: int | None
    sheet: str | None
    end: int = 0


def _layers() -> set[Any]:
    """Body text plus speaker notes (review comments are hidden by :func:`_hide_comments`)."""
    from docling_core.types.doc import ContentLayer

    return {ContentLayer.BODY, ContentLayer.NOTES}


def _hide_comments(doc: DoclingDocument) -> None:
    """Move review-comment threads out of the notes layer: notes are content, comments not."""
    from docling_core.types.doc import ContentLayer, GroupLabel

    for group in doc.groups:
        if group.label != GroupLabel.COMMENT_SECTION:
            continue
        for node, _ in doc.iterate_items(
            root=group, with_groups=True, included_content_layers=set(ContentLayer)
        ):
            node.content_layer = ContentLayer.INVISIBLE


def _sheet_name(node: Any) -> str | None:
    from docling_core.types.doc import GroupItem, GroupLabel

    if not isinstance(node, GroupItem):
        return None
    if node.label == GroupLabel.SHEET:
        return str(node.name)
    if str(node.name).startswith("sheet: "):  # the ODS backend's sheet sections
        return str(node.name)[len("sheet: ") :]
    return None


def _top_nodes(doc: DoclingDocument) -> tuple[list[_TopNode], int]:
    """The body's top-level nodes with their page hints, and the iteration's length.

    The iteration (groups included, pictures traversed, default content layers) is the
    one docling's Markdown serializer slices with ``from_element``/``to_element``.
    """
    from docling_core.types.doc import DocItem, GroupItem

    nodes: list[_TopNode] = []
    count = 0
    for count, (node, level) in enumerate(
        doc.iterate_items(
            with_groups=True, traverse_pictures=True, included_content_layers=_layers()
        ),
        start=1,
    ):
        if level == 1:
            top = _TopNode(start=count - 1, sheet=_sheet_name(node))
            if isinstance(node, GroupItem) and (match := _SLIDE_GROUP.match(str(node.name))):
                top.page = int(match.group(1)) + 1
            nodes.append(top)
        if nodes and nodes[-1].page is None and isinstance(node, DocItem) and node.prov:
            nodes[-1].page = node.prov[0].page_no
    return nodes, count


def document_pages(doc: DoclingDocument) -> list[PageText]:
    """The document's Markdown, one :class:`PageText` per slide/sheet/page where known.

    Each top-level body node (a slide, a sheet, a paragraph) takes the page of its first
    item with provenance, or the number of an ODP ``slide-N`` group; a node without one
    stays on the page before it. A sheet's Markdown starts with its name as a heading.
    Speaker notes stay with their slide; review comments, headers and footers are left
    out. Documents without any page information become one page with ``page=None``.

    Args:
        doc: A converted document (its comment threads are moved to the invisible layer).

    Returns:
        The non-empty pages in document order, or one empty page when there is no text.
    """
    _hide_comments(doc)
    nodes, count = _top_nodes(doc)
    known = [n.page for n in nodes if n.page is not None]
    page = known[0] if known else None
    segments: list[_Segment] = []
    for node in nodes:
        page = node.page if node.page is not None else page
        last = segments[-1] if segments else None
        if last is None or node.sheet is not None or last.page != page:
            segments.append(_Segment(start=node.start, page=page, sheet=node.sheet))
    for seg, nxt in zip(segments, [*segments[1:], None], strict=True):
        seg.end = nxt.start if nxt is not None else count
    pages: list[PageText] = []
    for seg in segments:
        markdown = _markdown(doc, seg.start, seg.end)
        if markdown:
            heading = f"# {seg.sheet}\n\n" if seg.sheet else ""
            pages.append(PageText(page=seg.page, text=heading + markdown))
    return pages or [PageText(page=None, text="")]


def _markdown(doc: DoclingDocument, start: int, end: int) -> str:
    """Markdown of body items ``start``..``end`` (docling's iteration indices)."""
    return doc.export_to_markdown(
        from_element=start,
        to_element=end,
        included_content_layers=_layers(),
        escape_html=False,
        escape_underscores=False,
        image_placeholder="",
        compact_tables=True,  # no column padding: fewer tokens, same GFM table
    ).strip()
