"""A client for the ``/rerank`` protocol shared by infinity, TEI and llama.cpp.

Request (``POST {base_url}/rerank``; with the usual ``.../v1`` base URL that is
``/v1/rerank``)::

    {"model": "...", "query": "...", "documents": ["...", ...],
     "texts": ["...", ...], "top_n": 5, "return_documents": false}

``documents`` is the Cohere/infinity/llama.cpp field; ``texts`` is TEI's name for the
same list and is sent alongside it so one client speaks to all three (each server
ignores the field it does not know). Two response shapes are accepted:

* ``{"results": [{"index": 0, "relevance_score": 0.9}, ...], "model": "..."}``
  (infinity, llama.cpp, Cohere, the local embedding server);
* ``[{"index": 0, "score": 0.9}, ...]`` (TEI's bare list).

``index`` always points into the ``documents`` list that was sent. Transient failures
(connection errors, timeouts, 408/409/425/429, 5xx) are retried with exponential
backoff exactly like the OpenAI-compatible clients; everything surfaces as
:class:`~varagity.models.base.ModelError`.

With ``RERANK_BASE_URL`` unset the client targets the packaged embedding server,
whose ``/v1/rerank`` scores by embedding cosine similarity (a bi-encoder score, not a
cross-encoder judgement).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import httpx
from tenacity import RetryError

from varagity.config import Settings
from varagity.models.base import TRANSIENT_STATUS, RetryingClient, tls_context
from varagity.models.protocols import RerankResult


class _HTTPStatus(Exception):
    """A non-2xx answer, kept apart so the retry predicate can look at the code."""

    def __init__(self, status: int, body: str) -> None:
        super().__init__(f"HTTP {status}: {body[:300]}")
        self.status = status


def _is_transient(exc: BaseException) -> bool:
    if isinstance(exc, httpx.TransportError):  # connect errors, timeouts, broken pipes
        return True
    if isinstance(exc, _HTTPStatus):
        return exc.status in TRANSIENT_STATUS or exc.status >= 500
    return False


def _describe(exc: BaseException) -> str:
    if isinstance(exc, httpx.TimeoutException):
        return "request timed out"
    if isinstance(exc, httpx.TransportError):
        return f"cannot connect ({exc})"
    return f"{type(exc).__name__}: {exc}" if not isinstance(exc, _HTTPStatus) else str(exc)


def parse_rerank_response(payload: Any, n_documents: int) -> list[RerankResult]:
    """Read either response shape into results sorted best first.

    Args:
        payload: The decoded JSON body.
        n_documents: How many documents were sent (indexes are checked against it).

    Returns:
        One result per scored document, highest score first (ties keep index order).

    Raises:
        ValueError: The body is neither shape, or an index/score is invalid.
    """
    items = payload.get("results", payload.get("data")) if isinstance(payload, dict) else payload
    if not isinstance(items, list):
        raise ValueError("expected a 'results' list or a bare list of {index, score}")
    out: list[RerankResult] = []
    seen: set[int] = set()
    for item in items:
        if not isinstance(item, dict) or "index" not in item:
            raise ValueError(f"result without an index: {item!r}")
        raw = item.get("relevance_score", item.get("score"))
        if raw is None:
            raise ValueError(f"result without relevance_score/score: {item!r}")
        index, score = int(item["index"]), float(raw)
        if not 0 <= index < n_documents:
            raise ValueError(f"index {index} is out of range for {n_documents} documents")
        if index in seen:
            raise ValueError(f"index {index} scored twice")
        if not math.isfinite(score):
            raise ValueError(f"non-finite score for index {index}")
        seen.add(index)
        out.append(RerankResult(index=index, score=score))
    out.sort(key=lambda r: (-r.score, r.index))
    return out


class RerankClient(RetryingClient):
    """Scores documents against a query over ``POST {base_url}/rerank``."""

    kind = "rerank"
    _wrapped = (httpx.HTTPError, _HTTPStatus, RetryError, ValueError)

    def _open(self, api_key: str) -> None:
        self._http = httpx.Client(
            timeout=self.timeout,
            headers={"Authorization": f"Bearer {api_key}"},
            verify=tls_context(),
        )

    @classmethod
    def settings_options(cls, settings: Settings) -> dict[str, Any]:
        """``RERANK_*``: the server, model and key.

        ``RERANK_BASE_URL`` unset means the local embedding server (``embedding_url``),
        whose ``/v1/rerank`` is an embedding-similarity scorer, not a cross-encoder.
        """
        return {
            "base_url": settings.RERANK_BASE_URL or settings.embedding_url,
            "model": settings.RERANK_MODEL,
            "api_key": settings.RERANK_API_KEY,
        }

    def close(self) -> None:
        """Close the HTTP connection pool."""
        self._http.close()

    def _transient(self, exc: BaseException) -> bool:
        return _is_transient(exc)

    def _explain(self, exc: BaseException) -> str:
        return _describe(exc)

    def _post(self, query: str, documents: list[str], top_n: int | None) -> Any:
        body: dict[str, Any] = {
            "model": self.model,
            "query": query,
            "documents": documents,
            "texts": documents,  # TEI's name for the same list
            "return_documents": False,
        }
        if top_n is not None:
            body["top_n"] = top_n

        def call() -> Any:
            resp = self._http.post(f"{self.base_url}/rerank", json=body)
            if resp.status_code >= 400:
                raise _HTTPStatus(resp.status_code, resp.text)
            return resp.json()

        return self._call(call)

    def rerank(
        self, query: str, documents: Sequence[str], top_n: int | None = None
    ) -> list[RerankResult]:
        """Score ``documents`` against ``query``.

        Args:
            query: The search query.
            documents: Texts to score; result indexes point into this list.
            top_n: Ask the server for only the best ``top_n`` (None: all).

        Returns:
            Results best first. Without ``top_n`` every document is scored exactly once.

        Raises:
            ModelError: The call failed (after retries where transient) or the answer
                could not be read.
        """
        if isinstance(documents, str):
            raise TypeError("rerank() takes a list of documents, not a single string")
        docs = [d if d.strip() else " " for d in documents]
        if not docs:
            return []
        payload = self._post(query, docs, top_n)
        try:
            results = parse_rerank_response(payload, len(docs))
        except (ValueError, TypeError) as exc:
            raise self._error(f"unreadable rerank response: {exc}") from exc
        if top_n is None and len(results) != len(docs):
            raise self._error(f"sent {len(docs)} documents but got {len(results)} scores back")
        return results[:top_n] if top_n is not None else results

    def ping(self) -> list[str]:
        """Score one tiny pair to prove the endpoint works (the protocol has no model list).

        Returns:
            The model name the server reports (the configured one when it reports none).

        Raises:
            ModelError: The server is unreachable or does not speak the protocol.
        """
        payload = self._post("ping", ["pong"], None)
        try:
            parse_rerank_response(payload, 1)
        except (ValueError, TypeError) as exc:
            raise self._error(f"unreadable rerank response: {exc}") from exc
        model = payload.get("model") if isinstance(payload, dict) else None
        return [str(model or self.model)]
