"""One error shape for every failure: ``{"code": ..., "message": ...}``."""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from varagity_api.schemas.common import ErrorBody

log = logging.getLogger(__name__)


class ApiError(Exception):
    """Raise from a route to answer with a status, a code and a message."""

    def __init__(self, status: int, code: str, message: str) -> None:
        """Remember what to answer."""
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message


def install_error_handlers(app: FastAPI) -> None:
    """Map every error to the one shape, and document it so."""
    document_error_shape(app)

    @app.exception_handler(ApiError)
    async def _api_error(_: Request, exc: ApiError) -> JSONResponse:
        return JSONResponse({"code": exc.code, "message": exc.message}, status_code=exc.status)

    @app.exception_handler(RequestValidationError)
    async def _invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        parts = []
        for err in exc.errors():
            where = ".".join(str(p) for p in err.get("loc", ()) if p != "body")
            parts.append(f"{where or 'body'}: {err.get('msg')}")
        return JSONResponse(
            {"code": "invalid_request", "message": "; ".join(parts)}, status_code=422
        )

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
        log.exception("unhandled error on %s %s", request.method, request.url.path)
        return JSONResponse(
            {"code": "internal_error", "message": f"{type(exc).__name__}: {exc}"},
            status_code=500,
        )

    @app.exception_handler(StarletteHTTPException)
    async def _http(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
        return JSONResponse({"code": code, "message": str(exc.detail)}, status_code=exc.status_code)


_VALIDATION_REF = "#/components/schemas/HTTPValidationError"
_ERROR_REF = "#/components/schemas/ErrorBody"
# Routes that answer without the stores; every other one answers 503 while they are down.
_NO_STORES = {"/api/health", "/metrics", "/v1/models"}


def document_error_shape(app: FastAPI) -> None:
    """Make the OpenAPI document say what the handlers above really send.

    FastAPI documents its own 422 body (``HTTPValidationError``); ours is the one
    ``ErrorBody`` shape, so that is what the committed document and the generated
    client types must show. Routes that need the stores also document their 503.
    """
    build = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is not None:
            return app.openapi_schema
        document = build()
        for path, operations in document.get("paths", {}).items():
            for operation in operations.values():
                responses = operation.setdefault("responses", {})
                for response in responses.values():
                    for media in response.get("content", {}).values():
                        if media.get("schema", {}).get("$ref") == _VALIDATION_REF:
                            media["schema"] = {"$ref": _ERROR_REF}
                if path not in _NO_STORES and "503" not in responses:
                    responses["503"] = {
                        "description": "The stores are unavailable (code `stores_unavailable`).",
                        "content": {"application/json": {"schema": {"$ref": _ERROR_REF}}},
                    }
        schemas = document.setdefault("components", {}).setdefault("schemas", {})
        schemas.setdefault("ErrorBody", ErrorBody.model_json_schema())
        for name in ("HTTPValidationError", "ValidationError"):
            schemas.pop(name, None)
        app.openapi_schema = document
        return document

    app.openapi = openapi  # type: ignore[method-assign]
