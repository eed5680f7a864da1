"""What the OpenAPI document must say beyond what FastAPI infers.

* Errors: FastAPI documents its own 422 body (``HTTPValidationError``); the handlers
  in :mod:`varagity_api.errors` send the one ``ErrorBody`` shape, so the document
  says that, and routes that need the stores document their 503.
* The OpenAI-compatible ``/v1`` routes answer bad input with OpenAI's 400 error (its
  client libraries read that shape), so FastAPI's 422 is dropped there.
* Access: the bearer schemes ``apiKey`` (``API_KEY``, on every route but health,
  metrics and the web client's page) and ``metricsKey`` (``METRICS_API_KEY`` or
  ``API_KEY``, on health and metrics), each optional in the document because a key is
  only needed once its setting is set; those routes document their 401.
* Server-sent events: FastAPI cannot see the payloads of a streaming response. Each
  stream's events are listed under the operation's ``x-sse-events`` (event name ->
  schema) and their models are added to the components, so the web client's
  generated types cover them.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from varagity_api.schemas.chat import (
    DoneEvent,
    ErrorEvent,
    QueuedEvent,
    ReasoningEvent,
    RetrievalEvent,
    TokenEvent,
)
from varagity_api.schemas.common import ErrorBody
from varagity_api.schemas.evaluations import EvaluationRun
from varagity_api.schemas.graph import GraphBuild
from varagity_api.schemas.ingest import IngestProgress

_VALIDATION_REF = "#/components/schemas/HTTPValidationError"
_REF = "#/components/schemas/{model}"
# Routes that answer without the stores; every other one answers 503 while they are down.
_NO_STORES = {"/api/health", "/metrics", "/v1/models"}
# Routes limited by METRICS_API_KEY instead of API_KEY (see varagity_api.guard).
_PROBES = {"/api/health", "/metrics"}
SECURITY_SCHEMES: dict[str, dict[str, str]] = {
    "apiKey": {
        "type": "http",
        "scheme": "bearer",
        "description": "The API_KEY setting; required on every route but health and metrics "
        "when API_KEY is set (always, when the API is bound beyond loopback).",
    },
    "metricsKey": {
        "type": "http",
        "scheme": "bearer",
        "description": "The METRICS_API_KEY setting (API_KEY works too); required on health "
        "and metrics only when METRICS_API_KEY is set.",
    },
}

#: (path, method) -> event name -> payload model, in the order a stream sends them.
SSE_EVENTS: dict[tuple[str, str], dict[str, type[BaseModel]]] = {
    ("/api/chat", "post"): {
        "retrieval": RetrievalEvent,
        "queued": QueuedEvent,
        "reasoning": ReasoningEvent,
        "token": TokenEvent,
        "done": DoneEvent,
        "error": ErrorEvent,
    },
    ("/api/ingest/{job_id}/events", "get"): {
        "progress": IngestProgress,
        "done": IngestProgress,
        "error": ErrorBody,
    },
    ("/api/graph/builds/{run_id}/events", "get"): {
        "progress": GraphBuild,
        "done": GraphBuild,
        "error": ErrorBody,
    },
    ("/api/evaluations/{run_id}/events", "get"): {
        "progress": EvaluationRun,
        "done": EvaluationRun,
        "error": ErrorBody,
    },
}


def _ref(model: type[BaseModel]) -> dict[str, str]:
    return {"$ref": _REF.format(model=model.__name__)}


def _add_models(document: dict[str, Any], models: list[type[BaseModel]]) -> None:
    schemas = document.setdefault("components", {}).setdefault("schemas", {})
    _, defs = models_json_schema([(m, "serialization") for m in models], ref_template=_REF)
    for name, schema in defs.get("$defs", {}).items():
        schemas.setdefault(name, schema)


def document_contract(app: FastAPI) -> None:
    """Install an ``app.openapi`` that post-processes FastAPI's document as above."""
    build = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is not None:
            return app.openapi_schema
        document = build()
        for path, operations in document.get("paths", {}).items():
            for method, operation in operations.items():
                responses = operation.setdefault("responses", {})
                if path.startswith("/v1/") and "400" in responses:
                    # the OpenAI-compatible routes answer bad input with OpenAI's 400
                    responses.pop("422", None)
                for response in responses.values():
                    for media in response.get("content", {}).values():
                        if media.get("schema", {}).get("$ref") == _VALIDATION_REF:
                            media["schema"] = _ref(ErrorBody)
                if path not in _NO_STORES and "503" not in responses:
                    responses["503"] = {
                        "description": "The stores are unavailable (code `stores_unavailable`).",
                        "content": {"application/json": {"schema": _ref(ErrorBody)}},
                    }
                scheme = "metricsKey" if path in _PROBES else "apiKey"
                operation["security"] = [{}, {scheme: []}]  # {}: no key while none is set
                responses.setdefault(
                    "401",
                    {
                        "description": "A key is set and the request lacks it or sends another"
                        " (codes `api_key_required`, `api_key_invalid`).",
                        "content": {"application/json": {"schema": _ref(ErrorBody)}},
                    },
                )
                events = SSE_EVENTS.get((path, method))
                if events:
                    operation["x-sse-events"] = {name: _ref(m) for name, m in events.items()}
        models = [ErrorBody] + [m for events in SSE_EVENTS.values() for m in events.values()]
        _add_models(document, models)
        document["components"]["securitySchemes"] = SECURITY_SCHEMES
        schemas = document["components"]["schemas"]
        for name in ("HTTPValidationError", "ValidationError"):
            schemas.pop(name, None)
        app.openapi_schema = document
        return document

    app.openapi = openapi  # type: ignore[method-assign]
