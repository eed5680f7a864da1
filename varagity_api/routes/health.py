"""``GET /api/health``: each store, each model server, Dagster, and whether ingestion
moves (``runs``: degraded while a run is stuck or a pool slot is held by a run that ended,
naming them; see :mod:`varagity.doctor`)."""

from __future__ import annotations

from collections.abc import Callable

from fastapi import APIRouter, Request
from starlette.concurrency import run_in_threadpool

from varagity.config import Settings
from varagity.doctor import stuck_summary
from varagity.jobs import DagsterClient
from varagity.services import Services
from varagity_api.deps import SettingsDep
from varagity_api.schemas.health import ComponentHealth, HealthResponse

router = APIRouter(tags=["system"])


def _probe(fn: Callable[[], object]) -> ComponentHealth:
    try:
        detail = fn()
    except Exception as exc:  # health reports failures, it never raises them
        return ComponentHealth(ok=False, detail=f"{type(exc).__name__}: {exc}"[:500])
    if isinstance(detail, list):
        detail = "models: " + ", ".join(map(str, detail))
    return ComponentHealth(ok=True, detail=str(detail)[:500])


def _dagster(settings: Settings) -> str:
    version = DagsterClient.for_settings(settings, timeout=5.0).version()
    return f"dagster {version} at {settings.dagster_url}"


def _runs(settings: Settings) -> str:
    """Raises when a run is stuck or a pool slot is held by an ended run (ingestion waits)."""
    stuck = stuck_summary(DagsterClient.for_settings(settings, timeout=5.0))
    if stuck:
        raise RuntimeError("ingestion is blocked: " + "; ".join(stuck))
    return "no stuck runs, no pool slot held by an ended run"


def check_all(
    services: Services | None, settings: Settings, startup_error: str | None
) -> HealthResponse:
    """Probe every dependency (blocking; run it in a thread)."""
    components: dict[str, ComponentHealth] = {}
    if services is None:
        down = ComponentHealth(ok=False, detail=startup_error or "not started")
        components["postgres"] = components["bm25"] = down
    else:
        components["postgres"] = _probe(services.pg.ping)
        components["bm25"] = _probe(services.bm25.ping)
        components["embedding_server"] = _probe(services.embedder.ping)
        components["llm_server"] = _probe(services.chat.ping)
        if services.reader is not None:  # None: the chat model reads graph exchanges
            components["reader_server"] = _probe(services.reader.ping)
    components["dagster"] = _probe(lambda: _dagster(settings))
    if components["dagster"].ok:
        components["runs"] = _probe(lambda: _runs(settings))
    healthy = all(c.ok for c in components.values())
    return HealthResponse(status="ok" if healthy else "degraded", components=components)


@router.get("/health", response_model=HealthResponse)
async def health(request: Request, settings: SettingsDep) -> HealthResponse:
    """Status of every dependency; ``degraded`` names what is down and why."""
    state = request.app.state
    return await run_in_threadpool(
        check_all,
        getattr(state, "services", None),
        settings,
        getattr(state, "startup_error", None),
    )
