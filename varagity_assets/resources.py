"""The location's resources, shared by every domain folder under ``defs/``.

``varagity`` opens the stores and model clients of :mod:`varagity.services`; the
``artifacts`` IO manager keeps each partition's stage value on disk, or in Postgres with
``ARTIFACT_STORE=postgres`` (a run's steps on several hosts).
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import cast

import dagster as dg
from pydantic import PrivateAttr

from varagity.config import Settings, get_settings
from varagity.services import Services
from varagity.stores.postgres import database_url
from varagity.stores.step_artifacts import StepArtifacts, artifact_name


class VaragityResource(dg.ConfigurableResource):
    """Stores and model clients, opened lazily once per run (or sensor tick)."""

    _services: Services | None = PrivateAttr(default=None)

    @property
    def settings(self) -> Settings:
        """The effective settings: environment + ``.env`` + the stored runtime overrides."""
        return self.services.settings

    @property
    def services(self) -> Services:
        """Open handles, created on first use."""
        if self._services is None:
            self._services = Services.open(get_settings())
        return self._services

    def teardown_after_execution(self, context: dg.InitResourceContext) -> None:
        """Close whatever this run opened."""
        if self._services is not None:
            self._services.close()
            self._services = None


class ArtifactIOManager(dg.ConfigurableIOManager):
    """Pickles per-partition values under ``VARAGITY_HOME/artifacts/<asset>/<partition>``,
    or, with ``ARTIFACT_STORE=postgres``, in the ``step_artifacts`` table.

    Runs ingest several partitions at once, so every per-file asset returns a mapping
    ``{partition_key: value}`` (:mod:`varagity_assets.defs.ingest.per_file`); each entry
    is stored under its own partition's path, and an input loads back as the mapping
    type it is declared with, over the partitions the run targets.

    Why Postgres and not a shared folder when steps run on several hosts
    (``STEP_EXECUTOR=celery``): the database is the one service every worker already
    reaches, with its own credentials, transactions and backups; a folder shared by every
    host (NFS) would be a second shared dependency with weaker semantics (a half-written
    file seen by another host, stale attribute caches). The values are small (a file's
    text, chunk drafts and vectors: kilobytes to a few megabytes) and live only until the
    next materialization of their partition or its purge. The backend is read when a
    value is stored or loaded, never when the location loads.
    """

    base_dir: str | None = None

    def _root(self) -> Path:
        return Path(self.base_dir) if self.base_dir else get_settings().home / "artifacts"

    def _path(self, asset_key: dg.AssetKey, partition_key: str) -> Path:
        return self._root() / "/".join(asset_key.path) / artifact_name(partition_key)

    def _table(self) -> StepArtifacts | None:
        """The Postgres backend when ``ARTIFACT_STORE=postgres``, else None (files)."""
        settings = get_settings()
        if settings.ARTIFACT_STORE != "postgres":
            return None
        return StepArtifacts(database_url(settings))

    @staticmethod
    def _table_key(asset_key: dg.AssetKey) -> str:
        return "/".join(asset_key.path)

    def remove_partition(self, partition_key: str) -> int:
        """Delete every asset's stored value for a partition; returns how many values went."""
        table = self._table()
        if table is not None:
            return table.delete_partition(partition_key)
        root, name = self._root(), artifact_name(partition_key)
        removed = 0
        if root.is_dir():
            for path in root.rglob("*.pkl"):
                if path.name == name:
                    path.unlink(missing_ok=True)
                    removed += 1
        return removed

    def handle_output(self, context: dg.OutputContext, obj: Mapping[str, object]) -> None:
        """Store each partition's value."""
        if not isinstance(obj, Mapping):
            raise TypeError(
                f"{context.asset_key.to_user_string()} must return a mapping by partition"
            )
        missing = [key for key in context.asset_partition_keys if key not in obj]
        if missing:
            raise KeyError(
                f"{context.asset_key.to_user_string()} returned nothing for {missing[0]!r}"
            )
        table = self._table()
        if table is not None:
            table.write(
                self._table_key(context.asset_key),
                {key: pickle.dumps(obj[key]) for key in context.asset_partition_keys},
            )
            return
        for key in context.asset_partition_keys:
            path = self._path(context.asset_key, key)
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(".tmp")
            tmp.write_bytes(pickle.dumps(obj[key]))
            tmp.replace(path)

    def load_input(self, context: dg.InputContext) -> Mapping[str, object]:
        """Load each targeted partition's upstream value, as the input's declared type."""
        out: dict[str, object] = {}
        table = self._table()
        stored = (
            table.read(self._table_key(context.asset_key), context.asset_partition_keys)
            if table is not None
            else {}
        )
        for key in context.asset_partition_keys:
            path = self._path(context.asset_key, key)
            if table is not None and key in stored:
                out[key] = pickle.loads(stored[key])
                continue
            if table is not None or not path.exists():
                raise FileNotFoundError(
                    f"No stored {context.asset_key.to_user_string()} for partition {key!r}; "
                    "materialize the upstream asset for it first"
                )
            out[key] = pickle.loads(path.read_bytes())
        declared = context.dagster_type.typing_type
        if isinstance(declared, type) and issubclass(declared, Mapping):
            build = cast(Callable[[dict[str, object]], Mapping[str, object]], declared)
            return build(out)  # a PerFile subclass (or a plain dict)
        return out


def location_resources() -> dict[str, dg.ConfigurableResource | dg.ConfigurableIOManager]:
    """The resources every definition of the location is bound to, by key."""
    return {"varagity": VaragityResource(), "artifacts": ArtifactIOManager()}
