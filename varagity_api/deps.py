"""Dependencies shared by the routes."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from varagity.config import Settings
from varagity.services import Services
from varagity_api.errors import ApiError


def get_services(request: Request) -> Services:
    """The process's open stores and clients, or 503 while they are unavailable."""
    services: Services | None = getattr(request.app.state, "services", None)
    if services is None:
        reason = getattr(request.app.state, "startup_error", None) or "still starting"
        raise ApiError(503, "stores_unavailable", f"Stores are not available: {reason}")
    return services


def get_app_settings(request: Request) -> Settings:
    """The app's effective settings: the environment's with the runtime overrides."""
    settings: Settings = request.app.state.settings
    return settings


ServicesDep = Annotated[Services, Depends(get_services)]
SettingsDep = Annotated[Settings, Depends(get_app_settings)]
