"""Launching and watching Dagster work over its GraphQL API (no Dagster import).

The CLI and the API never run pipeline code themselves: they ask the Dagster
webserver to launch runs and backfills, exactly as the UI does.
"""

from __future__ import annotations

from typing import Any

import httpx

INGEST_ASSETS = (
    "parsed_document",
    "document_chunks",
    "contextualized_chunks",
    "chunk_embeddings",
    "indexed_document",
)
REINGEST_TAG = "varagity/reingest"


class DagsterError(RuntimeError):
    """The webserver is unreachable or refused the request; the message says why."""


class DagsterClient:
    """A thin GraphQL client for the Dagster webserver."""

    def __init__(self, url: str, *, timeout: float = 30.0) -> None:
        """``url`` is the webserver's base URL (the UI's address)."""
        self.url = url.rstrip("/")
        self.timeout = timeout

    def query(self, document: str, variables: dict[str, Any] | None = None) -> dict[str, Any]:
        """Run a GraphQL document; raise :class:`DagsterError` on transport or API errors."""
        try:
            response = httpx.post(
                f"{self.url}/graphql",
                json={"query": document, "variables": variables or {}},
                timeout=self.timeout,
            )
            response.raise_for_status()
        except httpx.HTTPError as exc:
            raise DagsterError(f"Dagster webserver at {self.url} is unreachable: {exc}") from exc
        body = response.json()
        if body.get("errors"):
            raise DagsterError(f"Dagster refused the request: {body['errors'][0].get('message')}")
        data: dict[str, Any] = body["data"]
        return data

    def document_partitions(self) -> list[str]:
        """Every partition key of the ``documents`` partitions."""
        data = self.query(
            '{ assetNodeOrError(assetKey: {path: ["indexed_document"]}) '
            "{ ... on AssetNode { partitionKeys } } }"
        )
        keys: list[str] = data["assetNodeOrError"].get("partitionKeys") or []
        return keys

    def launch_reingest(self, partition_keys: list[str] | None = None) -> str:
        """Backfill the ingest assets over the given (default: all) partitions, forcing
        every file to be re-processed; returns the backfill id."""
        keys = partition_keys if partition_keys is not None else self.document_partitions()
        if not keys:
            raise DagsterError("there is nothing to re-ingest: the corpus has no partitions")
        data = self.query(
            """mutation Reingest($params: LaunchBackfillParams!) {
                 launchPartitionBackfill(backfillParams: $params) {
                   __typename
                   ... on LaunchBackfillSuccess { backfillId }
                   ... on PythonError { message }
                   ... on InvalidStepError { invalidStepKey }
                   ... on InvalidOutputError { invalidOutputName }
                   ... on UnauthorizedError { message }
                 }
               }""",
            {
                "params": {
                    "partitionNames": keys,
                    "assetSelection": [{"path": [name]} for name in INGEST_ASSETS],
                    "tags": [{"key": REINGEST_TAG, "value": "true"}],
                }
            },
        )
        result = data["launchPartitionBackfill"]
        if result["__typename"] != "LaunchBackfillSuccess":
            raise DagsterError(f"the reingest backfill was refused: {result}")
        backfill_id: str = result["backfillId"]
        return backfill_id

    def backfill_status(self, backfill_id: str) -> str:
        """The backfill's status (``REQUESTED``, ``COMPLETED_SUCCESS``, ``FAILED``...)."""
        data = self.query(
            "query Status($id: String!) { partitionBackfillOrError(backfillId: $id) "
            "{ ... on PartitionBackfill { status } ... on PythonError { message } } }",
            {"id": backfill_id},
        )
        result = data["partitionBackfillOrError"]
        if "status" not in result:
            raise DagsterError(f"unknown backfill {backfill_id}: {result.get('message')}")
        status: str = result["status"]
        return status
