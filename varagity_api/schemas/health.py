"""Health check bodies."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel


class ComponentHealth(BaseModel):
    """One dependency's state."""

    ok: bool
    detail: str


class HealthResponse(BaseModel):
    """Overall status plus each store, model server and Dagster."""

    status: Literal["ok", "degraded"]
    components: dict[str, ComponentHealth]
