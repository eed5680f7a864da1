"""The page-preview routes over real HTTP, on chunks stored in a real Postgres: the
envelope, the immutable image, and the reasons that replace a page (never a 5xx)."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from tests.conftest import SettingsFactory
from tests.support.api_server import serve
from tests.support.previews import REPORT_PAGES, chunk_records, passage, store_records, wide_pdf
from varagity.config import Settings
from varagity.records import chunk_id_for
from varagity.stores.vector_store import PgVectorStore

pytestmark = pytest.mark.integration


@pytest.fixture
def api(
    make_settings: SettingsFactory, pg_url: str
) -> Iterator[tuple[str, Settings, dict[str, str]]]:
    """The API over a PDF (one stored chunk per page's paragraph) and a Markdown note."""
    settings = make_settings(DATABASE_URL=pg_url)
    wide_pdf(settings.docs_path / "harbour/report.pdf")
    (settings.docs_path / "notes.md").write_text("# Notes\n\nThe pump moves water.\n")
    [record] = chunk_records(settings, "harbour/report.pdf")
    pages = [
        passage(record, text).model_copy(
            update={"chunk_index": i, "chunk_id": chunk_id_for(record.doc_id, i)}
            | {"original_index": i}
        )
        for i, text in enumerate(REPORT_PAGES)
    ]
    [note] = chunk_records(settings, "notes.md")
    note = note.model_copy(update={"original_index": 10})
    pg = PgVectorStore(pg_url, embedding_dim=settings.EMBEDDING_DIM)
    try:
        store_records(pg, pages)
        store_records(pg, [note])
    finally:
        pg.close()
    ids = {"page2": pages[1].chunk_id, "page3": pages[2].chunk_id, "note": note.chunk_id}
    with serve(settings) as base:
        yield base, settings, ids


def test_a_pdf_chunk_previews_as_an_immutable_highlighted_page(
    api: tuple[str, Settings, dict[str, str]],
) -> None:
    base, _, ids = api
    with httpx.Client(base_url=base, timeout=60) as client:
        answer = client.get(f"/api/chunks/{ids['page2']}/preview")
        assert answer.status_code == 200
        body = answer.json()
        assert body["available"] is True
        assert body["reason"] is None
        assert (body["page"], body["page_count"], body["extraction"]) == (2, 3, "text")
        assert len(body["highlights"]) >= 2
        assert all(0 <= b["x"] <= 1 and 0 <= b["y"] <= 1 for b in body["highlights"])
        image = client.get(body["image_url"])
        assert image.status_code == 200
        assert image.headers["content-type"] == "image/png"
        assert image.content.startswith(b"\x89PNG")
        assert "immutable" in image.headers["cache-control"]
        assert "max-age=31536000" in image.headers["cache-control"]
        etag = image.headers["etag"]
        again = client.get(body["image_url"], headers={"If-None-Match": etag})
        assert again.status_code == 304
        assert again.content == b""
        # the second envelope names the same image
        assert client.get(f"/api/chunks/{ids['page2']}/preview").json() == body


def test_a_quote_highlights_its_sentence_not_the_whole_passage(
    api: tuple[str, Settings, dict[str, str]],
) -> None:
    base, _, ids = api
    sentence = "Dredging of the inner harbour removed eleven thousand cubic metres of silt."
    assert REPORT_PAGES[1].startswith(sentence)
    with httpx.Client(base_url=base, timeout=60) as client:
        url = f"/api/chunks/{ids['page2']}/preview"
        whole = client.get(url).json()
        quoted = client.get(url, params={"start": 0, "end": len(sentence)}).json()
        assert quoted["available"] and quoted["page"] == whole["page"] == 2
        assert 0 < len(quoted["highlights"]) < len(whole["highlights"])
        top = max(b["y"] + b["height"] for b in quoted["highlights"])
        assert top < max(b["y"] + b["height"] for b in whole["highlights"])  # the first lines
        assert quoted["image_url"] != whole["image_url"]  # its own immutable image
        assert client.get(quoted["image_url"]).status_code == 200
        for params in ({"start": 0, "end": 10_000}, {"start": 5, "end": 5}, {"start": 3}):
            refused = client.get(url, params=params)
            assert refused.status_code == 422, params
            assert refused.json()["code"] in ("quote_out_of_range", "invalid_request")


def test_what_cannot_be_previewed_answers_with_a_reason(
    api: tuple[str, Settings, dict[str, str]],
) -> None:
    base, settings, ids = api
    with httpx.Client(base_url=base, timeout=60) as client:
        note = client.get(f"/api/chunks/{ids['note']}/preview")
        assert note.status_code == 200
        assert note.json()["available"] is False
        assert note.json()["reason"] == "not_paged"
        assert note.json()["image_url"] is None

        (settings.docs_path / "harbour/report.pdf").unlink()
        gone = client.get(f"/api/chunks/{ids['page3']}/preview")
        assert gone.status_code == 200
        assert gone.json()["reason"] == "file_missing"
        assert "report.pdf" in gone.json()["message"]

        for chunk_id in ("0123456789abcdef::7", "%00", "x" * 5000):
            unknown = client.get(f"/api/chunks/{chunk_id}/preview")
            assert unknown.status_code == 200, chunk_id
            assert (unknown.json()["available"], unknown.json()["reason"]) == (False, "not_indexed")

        for url in (
            "/api/previews/" + "0" * 64 + "/p1-" + "0" * 16 + ".png",
            "/api/previews/..%2f..%2fpg/p1-" + "0" * 16 + ".png",
            "/api/previews/" + "0" * 64 + "/..%2f..%2fpdf",
        ):
            missing = client.get(url)
            assert missing.status_code == 404, url
            assert missing.json()["code"] == "not_found"
