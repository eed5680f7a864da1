"""Dependencies shared by the routes."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, FastAPI, Request

from varagity.config import Settings
from varagity.jobs import DagsterClient
from varagity.services import Services
from varagity.stores.conversation_store import ConversationStore
from varagity.stores.feedback_store import FeedbackStore
from varagity_api.errors import ApiError


def get_services(request: Request) -> Services:
    """The process's open stores and clients, or 503 while they are unavailable."""
    services: Services | None = getattr(request.app.state, "services", None)
    if services is None:
        reason = getattr(request.app.state, "startup_error", None) or "still starting"
        raise ApiError(503, "stores_unavailable", f"Stores are not available: {reason}")
    return services


def app_settings(app: FastAPI) -> Settings:
    """The app's effective settings: the open services' (the environment's with the
    runtime overrides, kept current by ``PATCH /api/settings``), or the environment's
    while the stores are unavailable. One source: nothing copies them by hand."""
    services: Services | None = getattr(app.state, "services", None)
    if services is not None:
        return services.settings
    settings: Settings = app.state.base_settings
    return settings


def get_app_settings(request: Request) -> Settings:
    """:func:`app_settings` of the request's app."""
    return app_settings(request.app)


DAGSTER_TIMEOUT_S = 10.0
"""Longest wait for one GraphQL answer before a route gives up (a 503, or the sensor)."""


def dagster_client(settings: Settings) -> DagsterClient:
    """A client of the stack's Dagster webserver that gives up after DAGSTER_TIMEOUT_S."""
    return DagsterClient.for_settings(settings, timeout=DAGSTER_TIMEOUT_S)


ServicesDep = Annotated[Services, Depends(get_services)]
SettingsDep = Annotated[Settings, Depends(get_app_settings)]


def get_conversation_store(services: ServicesDep) -> ConversationStore:
    """The chat-history store over the process's Postgres pool."""
    return ConversationStore(services.pg)


ConversationStoreDep = Annotated[ConversationStore, Depends(get_conversation_store)]


def get_feedback_store(services: ServicesDep) -> FeedbackStore:
    """The answer-feedback store over the process's Postgres pool."""
    return FeedbackStore(services.pg)


FeedbackStoreDep = Annotated[FeedbackStore, Depends(get_feedback_store)]


def require_graph_enabled(settings: SettingsDep) -> None:
    """Refuse every message-graph route with ``403 graph_disabled`` while
    ``GRAPH_ENABLED=false`` (the subsystem's kill switch)."""
    if not settings.GRAPH_ENABLED:
        raise ApiError(
            403,
            "graph_disabled",
            "the message graph is disabled (GRAPH_ENABLED=false); set GRAPH_ENABLED=true "
            "to upload, build or read it",
        )
