"""One module per resource; ``api_router`` holds the ``/api`` ones, ``root_routers``
the ones served at the root (the OpenAI-compatible ``/v1`` and ``/metrics``)."""

from fastapi import APIRouter

from varagity_api.routes import (
    backups,
    chat,
    conversations,
    documents,
    evaluations,
    feedback,
    graph,
    graph_builds,
    graph_messages,
    graph_reset,
    graph_sources,
    health,
    ingest,
    metrics,
    openai_compat,
    previews,
    search,
    settings,
)

api_router = APIRouter(prefix="/api")
for _module in (
    health,
    search,
    chat,
    conversations,
    feedback,
    settings,
    documents,
    previews,
    ingest,
    graph,
    graph_sources,
    graph_messages,
    graph_builds,
    graph_reset,
    backups,
    evaluations,
):
    api_router.include_router(_module.router)

root_routers = (openai_compat.router, metrics.router)
