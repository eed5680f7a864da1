"""Server-sent events: named events whose data is a schema's JSON (see contract.py)."""

from __future__ import annotations

from pydantic import BaseModel
from sse_starlette.sse import ServerSentEvent

#: Seconds between keep-alive comments on every stream.
PING_SECONDS = 15


def sse_event(name: str, payload: BaseModel) -> ServerSentEvent:
    """One named event carrying ``payload`` as JSON."""
    return ServerSentEvent(event=name, data=payload.model_dump_json())
