"""Page previews for the evidence panel: the page a chunk came from, rendered
with the chunk's text highlighted (or only the quote an answer rests on).

For PDFs (text layer or scanned) and PowerPoint decks (converted to PDF by headless
LibreOffice), the page is found at preview time from the chunk's words, so documents
need no reingest. Every way a preview can fail is a :class:`PreviewUnavailable` with a
reason, and the client shows the chunk's text instead.
"""

from varagity.preview.service import PAGED_SUFFIXES, preview_chunk, preview_image, quote_span
from varagity.preview.types import Box, PagePreview, PreviewUnavailable, UnavailableReason

__all__ = [
    "PAGED_SUFFIXES",
    "Box",
    "PagePreview",
    "PreviewUnavailable",
    "UnavailableReason",
    "preview_chunk",
    "preview_image",
    "quote_span",
]
