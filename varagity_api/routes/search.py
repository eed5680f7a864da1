"""``POST /api/search``: ranked chunks with their retrieval traces."""

from __future__ import annotations

from fastapi import APIRouter
from starlette.concurrency import run_in_threadpool

from varagity.observability.metrics import SEARCHES, observe_stages
from varagity_api.deps import ServicesDep
from varagity_api.schemas.common import source_from
from varagity_api.schemas.search import SearchRequest, SearchResponse

router = APIRouter(tags=["retrieval"])


@router.post("/search", response_model=SearchResponse)
async def search(body: SearchRequest, services: ServicesDep) -> SearchResponse:
    """Retrieve without generating: what the answer would be grounded on."""
    retriever = services.retriever(body.method)
    result = await run_in_threadpool(retriever.retrieve, body.query, body.k)
    SEARCHES.labels(method=retriever.method).inc()
    observe_stages("search", result.timings_ms)
    return SearchResponse(
        query=result.query,
        method=retriever.method,  # type: ignore[arg-type]
        results=[source_from(c, n) for n, c in enumerate(result.chunks, start=1)],
        timings_ms=result.timings_ms,
    )
