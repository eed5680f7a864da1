"""Resources wrapping the ``varagity`` domain objects."""

from __future__ import annotations

import hashlib
import pickle
from pathlib import Path
from typing import Any
from urllib.parse import quote

import dagster as dg
from pydantic import PrivateAttr

from varagity.config import Settings, get_settings
from varagity.services import Services


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


def artifact_name(partition_key: str) -> str:
    """File name of one partition's value (unique, recognisable, within name limits)."""
    name = quote(partition_key, safe="")
    if len(name) > 200:
        name = name[:150] + "-" + hashlib.sha256(partition_key.encode()).hexdigest()[:16]
    return f"{name}.pkl"


def remove_artifacts(root: Path, partition_key: str) -> int:
    """Delete every asset's stored value for a partition; returns how many files went."""
    removed = 0
    name = artifact_name(partition_key)
    if root.is_dir():
        for path in root.rglob("*.pkl"):
            if path.name == name:
                path.unlink(missing_ok=True)
                removed += 1
    return removed


class ArtifactIOManager(dg.ConfigurableIOManager):
    """Pickles per-partition values under ``VARAGITY_HOME/artifacts/<asset>/<partition>``.

    Runs ingest several partitions at once, so every asset of the documents group returns
    a ``{partition_key: value}`` dict; each entry is stored under its own partition's
    path, and inputs load back as such a dict for the partitions the run targets.
    """

    base_dir: str | None = None

    def _root(self) -> Path:
        return Path(self.base_dir) if self.base_dir else get_settings().home / "artifacts"

    def _path(self, asset_key: dg.AssetKey, partition_key: str) -> Path:
        return self._root() / "/".join(asset_key.path) / artifact_name(partition_key)

    def handle_output(self, context: dg.OutputContext, obj: dict[str, Any]) -> None:
        """Store each partition's value."""
        if not isinstance(obj, dict):
            raise TypeError(f"{context.asset_key.to_user_string()} must return a dict by partition")
        for key in context.asset_partition_keys:
            if key not in obj:
                raise KeyError(f"{context.asset_key.to_user_string()} returned nothing for {key!r}")
            path = self._path(context.asset_key, key)
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(".tmp")
            tmp.write_bytes(pickle.dumps(obj[key]))
            tmp.replace(path)

    def load_input(self, context: dg.InputContext) -> dict[str, Any]:
        """Load each targeted partition's upstream value."""
        out: dict[str, Any] = {}
        for key in context.asset_partition_keys:
            path = self._path(context.asset_key, key)
            if not path.exists():
                raise FileNotFoundError(
                    f"No stored {context.asset_key.to_user_string()} for partition {key!r}; "
                    "materialize the upstream asset for it first"
                )
            out[key] = pickle.loads(path.read_bytes())
        return out
