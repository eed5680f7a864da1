"""Server-sent events: named events whose data is a schema's JSON (see contract.py)."""

from __future__ import annotations

import logging
from collections.abc import Generator
from typing import Any

from pydantic import BaseModel
from sse_starlette.sse import ServerSentEvent

log = logging.getLogger(__name__)

#: Seconds between keep-alive comments on every stream.
PING_SECONDS = 15


def sse_event(name: str, payload: BaseModel) -> ServerSentEvent:
    """One named event carrying ``payload`` as JSON."""
    return ServerSentEvent(event=name, data=payload.model_dump_json())


def close_quietly(events: Generator[Any, None, None]) -> None:
    """Close a turn's event stream early (which closes the model's HTTP stream)."""
    try:
        events.close()
    except ValueError:  # a worker thread is inside next(); it is collected when that returns
        log.debug("turn still running in a worker thread; left to the collector")
