"""One error shape for every failure: ``{"code": ..., "message": ...}``."""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from varagity.jobs import (
    BackfillNotFound,
    CorpusBusy,
    DagsterError,
    DagsterUnavailable,
    RunEnded,
    RunNotFound,
)
from varagity.stores.conversation_store import ConversationNotFound, GroupNotFound
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


#: How an answer names each corpus.
CORPUS_NAMES = {"rag": "documents", "graph": "message graph"}

#: OpenAPI responses of every route that calls Dagster.
DAGSTER_DOWN = {"model": ErrorBody, "description": "The Dagster webserver is unreachable."}
DAGSTER_FAILED = {"model": ErrorBody, "description": "Dagster refused or failed the request."}


def dagster_error(exc: DagsterError, *, not_found: str, ended: str = "run_ended") -> ApiError:
    """The HTTP error for a failed Dagster call: 404 ``not_found`` for an unknown run or
    job, 409 ``ended`` for acting on a run that has ended, 503 while Dagster cannot be
    reached, 502 for anything else it refused."""
    if isinstance(exc, RunNotFound | BackfillNotFound):
        return ApiError(404, not_found, str(exc))
    if isinstance(exc, RunEnded):
        return ApiError(409, ended, str(exc))
    if isinstance(exc, DagsterUnavailable):
        return ApiError(503, "dagster_unavailable", str(exc))
    return ApiError(502, "dagster_error", str(exc))


def install_error_handlers(app: FastAPI) -> None:
    """Map every error to the one shape."""

    @app.exception_handler(ApiError)
    async def _api_error(_: Request, exc: ApiError) -> JSONResponse:
        return JSONResponse({"code": exc.code, "message": exc.message}, status_code=exc.status)

    @app.exception_handler(CorpusBusy)
    async def _corpus_busy(_: Request, exc: CorpusBusy) -> JSONResponse:
        # the one writer per corpus (varagity.jobs.gate), refused wherever it is checked
        return JSONResponse(
            {
                "code": "corpus_busy",
                "message": f"the {CORPUS_NAMES.get(exc.corpus, exc.corpus)} corpus is busy: "
                f"{exc.holder} is in flight; try again once it has finished",
            },
            status_code=409,
        )

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


def not_found(exc: ConversationNotFound | GroupNotFound) -> ApiError:
    """The 404 for an unknown conversation or group id."""
    if isinstance(exc, ConversationNotFound):
        return ApiError(404, "conversation_not_found", str(exc))
    return ApiError(404, "group_not_found", str(exc))
