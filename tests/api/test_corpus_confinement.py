"""Issue 12 #7: uploads and deletes never reach outside the corpus folder, over real
HTTP, whatever the path looks like: ``..`` traversal, absolute and drive paths,
backslashes, percent-encoded and double-encoded dots and slashes, and symlinks inside
the corpus that point out of it. (The one route that reads a corpus file, the page
preview, takes a chunk id, never a path; its confinement to the corpus is tested in
tests/preview/test_previews.py.)"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.conftest import SettingsFactory
from tests.support.api_server import index_files, serve
from varagity.config import Settings

pytestmark = pytest.mark.integration

HOSTILE_NAMES = [
    "../escape.md",
    "..%2fescape.md",
    "%2e%2e%2fescape.md",
    "%2e%2e/escape.md",
    "%252e%252e%252fescape.md",
    "..\\escape.md",
    "sub/../../escape.md",
    "/tmp/escape.md",
    "C:\\escape.md",
    "//server/share/escape.md",
    "linkout/escape.md",  # a folder symlinked outside the corpus
    "linkout/deeper/escape.md",
]


def _outside(settings: Settings) -> set[Path]:
    """Everything next to the corpus folder but the corpus and VARAGITY_HOME (staging)."""
    keep = (settings.docs_path, settings.home)
    return {
        p
        for p in settings.docs_path.parent.rglob("*")
        if not any(p == k or k in p.parents for k in keep)
    }


@pytest.fixture
def confined(
    make_settings: SettingsFactory, pg_url: str, tmp_path: Path
) -> Iterator[tuple[str, Settings, Path]]:
    """The upload API over a corpus holding a symlink to a folder outside it."""
    settings = make_settings(DATABASE_URL=pg_url)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("outside the corpus\n")
    os.symlink(outside, settings.docs_path / "linkout", target_is_directory=True)
    with serve(settings) as base:
        yield base, settings, outside


def _upload(base: str, name: str, folder: str = "") -> dict[str, str]:
    r = httpx.post(
        f"{base}/api/documents/upload",
        files=[("files", ("x.md", b"# Escape\n\nattempt\n"))],
        data={"paths": name, "folder": folder},
        timeout=30,
    )
    if r.status_code == 422:  # a bad folder refuses the whole batch
        return {"status": "refused", **r.json()}
    assert r.status_code == 200, r.text
    (result,) = r.json()["results"]
    return dict(result)


def test_uploads_stay_inside_the_corpus(confined: tuple[str, Settings, Path]) -> None:
    base, settings, outside = confined
    root = settings.docs_path.resolve()
    before = _outside(settings)
    outcomes: dict[str, str] = {}
    for name in HOSTILE_NAMES:
        result = _upload(base, name)
        outcomes[name] = result["code"] or result["status"]
        if result["status"] == "stored":  # only a literal name inside the corpus may be
            stored = (root / result["relative_path"]).resolve()
            assert root in stored.parents, (name, result)
            assert "%" in name, (name, result)
        else:
            assert result["message"], result
    for folder in ["..", "../outside", "%2e%2e", "/tmp", "linkout", "linkout/sub"]:
        result = _upload(base, "x.md", folder)
        outcomes[f"folder={folder}"] = result["code"] or result["status"]
        if result["status"] == "stored":
            assert root in (root / result["relative_path"]).resolve().parents, (folder, result)

    assert outcomes["../escape.md"] == "path_traversal"
    assert outcomes["..\\escape.md"] == "path_traversal"
    assert outcomes["sub/../../escape.md"] == "path_traversal"
    assert outcomes["/tmp/escape.md"] == "absolute_path"
    assert outcomes["C:\\escape.md"] == "absolute_path"
    assert outcomes["//server/share/escape.md"] == "absolute_path"
    assert outcomes["linkout/escape.md"] == "outside_corpus"
    assert outcomes["linkout/deeper/escape.md"] == "outside_corpus"
    assert outcomes["folder=.."] == "path_traversal"
    assert outcomes["folder=linkout"] == "outside_corpus"
    # percent-encoding is never decoded into a path: those names are literal file names
    assert outcomes["%2e%2e%2fescape.md"] == "stored"
    assert (root / "%2e%2e%2fescape.md").is_file()
    # nothing appeared outside the corpus folder, and the outside folder is untouched
    assert _outside(settings) == before
    assert sorted(p.name for p in outside.rglob("*")) == ["secret.md"]


def test_a_percent_encoded_filename_parameter_is_not_decoded_into_a_path(
    confined: tuple[str, Settings, Path],
) -> None:
    """RFC 5987 ``filename*`` and raw encoded bytes in ``filename`` stay literal."""
    base, settings, outside = confined
    for disposition in (
        "form-data; name=\"files\"; filename*=UTF-8''%2e%2e%2fescape.md",
        'form-data; name="files"; filename="%2e%2e%2f%2e%2e%2fescape.md"',
        'form-data; name="files"; filename="..%c0%afescape.md"',
    ):
        body = (
            f"--sep\r\nContent-Disposition: {disposition}\r\n\r\n".encode()
            + b"# Escape\n\nattempt\n\r\n--sep--\r\n"
        )
        r = httpx.post(
            f"{base}/api/documents/upload",
            content=body,
            headers={"content-type": "multipart/form-data; boundary=sep"},
            timeout=30,
        )
        assert r.status_code in (200, 422), r.text
        for result in r.json().get("results", []):
            if result["status"] == "stored":
                stored = (settings.docs_path.resolve() / result["relative_path"]).resolve()
                assert settings.docs_path.resolve() in stored.parents
    assert sorted(p.name for p in outside.rglob("*")) == ["secret.md"]
    assert not (settings.docs_path.parent / "escape.md").exists()


@pytest.fixture
def indexed(
    stack_settings: Settings, tmp_path: Path
) -> Iterator[tuple[str, Settings, dict[str, str]]]:
    ids = index_files(stack_settings, {"a.md": "# A\n\nAlpha text.\n", "b.md": "# B\n\nBeta.\n"})
    with serve(stack_settings) as base:
        yield base, stack_settings, ids


def test_deletes_stay_inside_the_corpus(
    indexed: tuple[str, Settings, dict[str, str]], tmp_path: Path
) -> None:
    base, settings, ids = indexed
    docs = settings.docs_path
    victim = tmp_path / "victim.md"
    victim.write_text("must survive\n")
    # ids that look like paths never name a file: unknown ids are 404s, nothing removed
    for doc_id in (
        "..%2F..%2Fvictim.md",
        "%2e%2e%2f%2e%2e%2fvictim.md",
        "%252e%252e%252fvictim.md",
        str(victim),
    ):
        r = httpx.delete(f"{base}/api/documents/{doc_id}?remove_file=true", timeout=30)
        assert r.status_code == 404, (doc_id, r.text)
    r = httpx.post(
        f"{base}/api/documents/delete",
        json={"doc_ids": ["../../victim.md", str(victim)], "remove_file": True},
        timeout=30,
    )
    assert r.status_code == 200 and r.json()["files"] == [], r.text
    # an indexed file replaced by a symlink to a file outside: the link goes, not the target
    (docs / "a.md").unlink()
    os.symlink(victim, docs / "a.md")
    r = httpx.delete(f"{base}/api/documents/{ids['a.md']}?remove_file=true", timeout=30)
    assert r.status_code == 200, r.text
    assert not (docs / "a.md").is_symlink() and not (docs / "a.md").exists()
    assert victim.read_text() == "must survive\n"
    assert (docs / "b.md").is_file()
