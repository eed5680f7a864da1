"""The API for a test: a corpus indexed without Dagster, and the app on a real uvicorn."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

import uvicorn
from starlette.types import ASGIApp

from varagity.config import Settings
from varagity.services import Services, ingest_file
from varagity_api.main import create_app
from varagity_stack.model_servers import free_port

CORPUS = {
    "kettle.md": "# Tern K2 kettle\n\nThe Tern K2 kettle has a warranty of 27 months.\n",
    "station/power.md": "# Aurora station\n\nWind turbines deliver a peak of 4.2 megawatts.\n",
    "soup.txt": "Red lentil soup simmers for 25 minutes with cumin and paprika.\n",
}


def index_files(settings: Settings, files: Mapping[str, str] = CORPUS) -> dict[str, str]:
    """Write ``files`` (relative path -> text) into DOCS_PATH and index them directly
    (no Dagster); returns each path's doc_id."""
    for rel, text in files.items():
        path = settings.docs_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    services = Services.open(settings)
    try:
        return {rel: ingest_file(services, rel).doc_id for rel in files}
    finally:
        services.close()


@contextmanager
def serve(settings: Settings) -> Iterator[str]:
    """The app for ``settings`` on a real uvicorn in a thread; yields its base URL."""
    with serve_app(create_app(settings)) as port:
        yield f"http://127.0.0.1:{port}"


@contextmanager
def serve_app(app: ASGIApp) -> Iterator[int]:
    """Any ASGI app on a real uvicorn on loopback, in a thread; yields its port."""
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="critical"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert time.monotonic() < deadline, "server did not start"
        time.sleep(0.05)
    try:
        yield port
    finally:
        server.should_exit = True
        thread.join(10)
