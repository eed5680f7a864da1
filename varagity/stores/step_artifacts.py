"""Step artifacts in Postgres: what one pipeline step hands the next, by asset and
partition, for runs whose steps execute on different hosts.

The values are opaque bytes (the Dagster IO manager pickles them); this module only
stores, loads and deletes them. Each call takes one short connection from the URL it
was given: the callers are step processes that make a handful of calls each.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from urllib.parse import quote

from varagity.stores.postgres import connect


def artifact_name(partition_key: str) -> str:
    """File name of one partition's value in the artifacts folder (the IO manager's
    on-disk store): unique, recognisable, within name limits."""
    name = quote(partition_key, safe="")
    if len(name) > 200:
        name = name[:150] + "-" + hashlib.sha256(partition_key.encode()).hexdigest()[:16]
    return f"{name}.pkl"


class StepArtifacts:
    """The ``step_artifacts`` table (migration 012) on the server of ``url``."""

    def __init__(self, url: str) -> None:
        """Nothing connects until a call."""
        self.url = url

    def write(self, asset_key: str, values: Mapping[str, bytes]) -> None:
        """Store (or replace) each partition's value of ``asset_key``, in one transaction."""
        if not values:
            return
        with connect(self.url) as conn:
            with conn.cursor() as cur:
                cur.executemany(
                    "INSERT INTO step_artifacts (asset_key, partition_key, value) "
                    "VALUES (%s, %s, %s) ON CONFLICT (asset_key, partition_key) "
                    "DO UPDATE SET value = EXCLUDED.value, written_at = now()",
                    [(asset_key, key, value) for key, value in values.items()],
                )
            conn.commit()

    def read(self, asset_key: str, partition_keys: Iterable[str]) -> dict[str, bytes]:
        """The stored values of ``asset_key`` for those of ``partition_keys`` that have one."""
        keys = list(partition_keys)
        if not keys:
            return {}
        with connect(self.url) as conn:
            rows = conn.execute(
                "SELECT partition_key, value FROM step_artifacts "
                "WHERE asset_key = %s AND partition_key = ANY(%s)",
                (asset_key, keys),
            ).fetchall()
        return {str(k): bytes(v) for k, v in rows}

    def delete_partition(self, partition_key: str) -> int:
        """Delete every asset's value for ``partition_key``; returns how many rows went."""
        with connect(self.url) as conn:
            cur = conn.execute(
                "DELETE FROM step_artifacts WHERE partition_key = %s", (partition_key,)
            )
            conn.commit()
            return cur.rowcount
