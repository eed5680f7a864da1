"""The FastAPI app: stores and model clients live in the lifespan, never at import."""

from __future__ import annotations

import html
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles
from starlette.concurrency import run_in_threadpool

from varagity.config import Settings, get_settings
from varagity.logging_setup import configure_logging
from varagity.observability.metrics import (
    register_corpus_collector,
    register_graph_collector,
    register_infra_collector,
    register_pipeline_collector,
)
from varagity.services import Services
from varagity.stores.migrate import MigrationError
from varagity_api.contract import document_contract
from varagity_api.deps import app_settings
from varagity_api.errors import install_error_handlers
from varagity_api.folder_watch import ingest_launcher, watch_folder
from varagity_api.guard import RequestGuard
from varagity_api.routes import api_router, root_routers
from varagity_api.routes.metrics import (
    corpus_reading,
    graph_gauges,
    infra_reading,
    pipeline_gauges,
)

log = logging.getLogger(__name__)
STATIC = Path(__file__).with_name("static")
# `npm run build` in web/ writes the client here (index.html + hashed assets/).
WEB_BUILD = STATIC / "app"


def index_page(dagster_url: str, build: Path = WEB_BUILD) -> str:
    """The web client's index.html from ``build``, or a page saying how to build it.

    Both carry ``{{DAGSTER_URL}}`` placeholders, filled here so the client can link
    citations to their partitions in the Dagster UI.
    """
    built = build / "index.html"
    page = built if built.is_file() else STATIC / "index.html"
    return page.read_text(encoding="utf-8").replace(
        "{{DAGSTER_URL}}", html.escape(dagster_url, quote=True)
    )


def create_app(settings: Settings | None = None) -> FastAPI:
    """Build the app; ``settings`` defaults to the environment's."""

    def base_settings() -> Settings:
        """The environment's settings, read once (at startup, or at the first request of
        an app served without its lifespan)."""
        if getattr(app.state, "base_settings", None) is None:
            app.state.base_settings = settings or get_settings()
        resolved: Settings = app.state.base_settings
        return resolved

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        configure_logging(base_settings().LOG_LEVEL)
        app.state.services = None
        app.state.startup_error = None
        try:
            app.state.services = await run_in_threadpool(Services.open, app.state.base_settings)
        except MigrationError as exc:  # the schema is wrong: serving it would corrupt data
            log.critical("database migration failed, not starting: %s", exc)
            raise
        except Exception as exc:  # Postgres down: serve health and a clear 503 meanwhile
            log.error("stores unavailable at startup: %s", exc)
            app.state.startup_error = f"{type(exc).__name__}: {exc}"
        register_corpus_collector(lambda: corpus_reading(app.state.services))
        register_graph_collector(lambda: graph_gauges(app_settings(app)))
        register_pipeline_collector(lambda: pipeline_gauges(app.state.services, app_settings(app)))
        register_infra_collector(lambda: infra_reading(app.state.services, app_settings(app)))
        watching, app.state.folder_watcher = await run_in_threadpool(
            watch_folder, app.state.base_settings, ingest_launcher(app)
        )
        try:
            yield
        finally:
            await run_in_threadpool(watching.close)
            if app.state.services is not None:
                await run_in_threadpool(app.state.services.close)

    app = FastAPI(
        title="Varagity",
        version="0.1.0",
        summary="Contextual-retrieval RAG over your documents, with cited streaming answers.",
        lifespan=lifespan,
    )
    install_error_handlers(app)
    app.add_middleware(RequestGuard, settings=base_settings)
    document_contract(app)
    app.include_router(api_router)
    for router in root_routers:
        app.include_router(router)

    assets = WEB_BUILD / "assets"
    # mounted when the build exists at start-up; a build made later needs a restart
    if assets.is_dir():
        app.mount("/assets", StaticFiles(directory=assets), name="web-assets")

    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    async def index() -> HTMLResponse:
        page = index_page((settings or get_settings()).dagster_url)
        return HTMLResponse(page, headers={"cache-control": "no-cache"})

    return app


app = create_app()
