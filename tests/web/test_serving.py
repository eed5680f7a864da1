"""The API serves the built web client at ``/`` (or a page saying how to build it)."""

from __future__ import annotations

import re
from pathlib import Path

from fastapi.testclient import TestClient

from tests.conftest import SettingsFactory
from varagity_api.main import WEB_BUILD, create_app, index_page


def test_built_index_gets_the_dagster_url_escaped(tmp_path: Path) -> None:
    (tmp_path / "index.html").write_text(
        '<meta name="varagity-dagster-url" content="{{DAGSTER_URL}}"><div id="root"></div>',
        encoding="utf-8",
    )
    page = index_page('http://dagster:3000/?a=1&b="x"', build=tmp_path)
    assert 'content="http://dagster:3000/?a=1&amp;b=&quot;x&quot;"' in page
    assert '<div id="root">' in page


def test_without_a_build_the_page_says_how_to_build(tmp_path: Path) -> None:
    page = index_page("http://127.0.0.1:3000", build=tmp_path / "absent")
    assert "has not been built" in page
    assert "make install" in page and "npm run build" in page
    assert 'href="http://127.0.0.1:3000"' in page and "{{DAGSTER_URL}}" not in page


def test_the_app_serves_the_build_and_its_assets(make_settings: SettingsFactory) -> None:
    assert (WEB_BUILD / "index.html").is_file(), "run `make install` to build the web client"
    settings = make_settings(DAGSTER_URL="http://dagster.example:3000")
    # no lifespan: `/` needs no stores; a loopback Host, which the API answers to
    client = TestClient(create_app(settings), base_url="http://127.0.0.1")
    response = client.get("/")
    assert response.status_code == 200
    assert response.headers["cache-control"] == "no-cache"
    page = response.text
    assert '<meta name="varagity-dagster-url" content="http://dagster.example:3000"' in page
    scripts = re.findall(r'<script type="module" crossorigin src="(/assets/[^"]+\.js)"', page)
    assert len(scripts) == 1, page
    asset = client.get(scripts[0])
    assert asset.status_code == 200
    assert "javascript" in asset.headers["content-type"]
    assert client.get("/assets/nope.js").status_code == 404
