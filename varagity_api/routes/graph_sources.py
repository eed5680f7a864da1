"""``/api/graph/sources``: the message archives in ``GRAPH_DOCS_PATH``: list, upload,
delete.

An upload stores each file atomically after checking that it is (or belongs to) a
supported archive, then asks Dagster for its build right away; the graph-sources sensor
leaves an archive alone while such a build is in flight, and finds it on its next tick
when Dagster could not be reached. A delete removes the database and its companions;
the sensor then takes its days out of the graph in a removal run.
"""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request

from varagity_api.deps import ServicesDep, SettingsDep, require_graph_enabled
from varagity_api.errors import ApiError
from varagity_api.schemas.common import ErrorBody
from varagity_api.schemas.graph import GraphSourceList, GraphSourceRemoved, GraphUploadResponse

router = APIRouter(
    prefix="/graph/sources",
    tags=["graph"],
    dependencies=[Depends(require_graph_enabled)],
    responses={403: {"model": ErrorBody, "description": "GRAPH_ENABLED is false."}},
)

_UPLOAD_BODY = {
    "required": True,
    "content": {
        "multipart/form-data": {
            "schema": {
                "type": "object",
                "required": ["files"],
                "properties": {
                    "files": {
                        "type": "array",
                        "items": {"type": "string", "format": "binary"},
                        "description": "An archive's database (chat.db) and, sent with it, "
                        "its -wal and -shm files.",
                    },
                    "folder": {
                        "type": "string",
                        "description": "A folder under GRAPH_DOCS_PATH the files go into.",
                    },
                },
            }
        }
    },
}


@router.get("", response_model=GraphSourceList)
async def list_graph_sources(services: ServicesDep) -> GraphSourceList:
    """Every archive (and every file that is not one, with the reason) in
    ``GRAPH_DOCS_PATH``, with what the graph holds of it."""
    raise ApiError(501, "not_implemented", "graph sources")


@router.post(
    "",
    response_model=GraphUploadResponse,
    openapi_extra={"requestBody": _UPLOAD_BODY},
    responses={
        413: {"model": ErrorBody, "description": "Too many files, or a form field too large."},
        415: {"model": ErrorBody, "description": "Not multipart/form-data."},
        422: {"model": ErrorBody, "description": "The batch as a whole is malformed."},
    },
)
async def upload_graph_sources(request: Request, settings: SettingsDep) -> GraphUploadResponse:
    """Store message archives in ``GRAPH_DOCS_PATH`` and launch their builds; a file that
    is not a supported archive (or a -wal/-shm without its database) is refused with
    its reason, and the rest of the batch is stored."""
    raise ApiError(501, "not_implemented", "graph upload")


@router.delete(
    "/{path:path}",
    response_model=GraphSourceRemoved,
    responses={404: {"model": ErrorBody, "description": "No such archive."}},
)
async def delete_graph_source(path: str, services: ServicesDep) -> GraphSourceRemoved:
    """Remove an archive (its database and companions) from ``GRAPH_DOCS_PATH``; its
    days leave the graph in the removal run the sensor then requests."""
    raise ApiError(501, "not_implemented", "graph source delete")
