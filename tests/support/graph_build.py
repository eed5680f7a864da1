"""A graph build in a process of its own, as the Dagster run worker runs it.

``python -m tests.support.graph_build SPEC.json`` reads ``{"settings": {...},
"days": [{ThreadDay fields}, ...]}``, builds the graph with the real model clients
(pipmaster's installers made to fail, see :func:`guard_pipmaster`) and prints the
apply report as one JSON line.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any


def guard_pipmaster(calls: list[str] | None = None) -> list[tuple[Any, str, Any]]:
    """Make pipmaster unable to install anything (recording each attempt): its public
    install/ensure functions and methods, and the ``_run_command`` of every package
    manager (pip, async pip, uv, conda), which each of them ends in. Returns what was
    replaced, for putting back."""
    import pipmaster
    import pipmaster.async_package_manager as async_pm
    import pipmaster.backends as backends
    import pipmaster.convenience as convenience
    import pipmaster.core as core

    owners: list[Any] = [
        pipmaster,
        convenience,
        async_pm,
        core.PackageManager,
        async_pm.AsyncPackageManager,
        backends.UvPackageManager,
        backends.CondaPackageManager,
    ]
    replaced = []
    for owner in owners:
        for name in list(vars(owner)):
            lowered = name.lower()
            installs = ("install" in lowered or "ensure" in lowered) and "installed" not in lowered
            if not (installs or name == "_run_command") or name.startswith("__"):
                continue
            original = getattr(owner, name)
            if not callable(original):
                continue

            def refuse(*args: Any, _name: str = name, **kwargs: Any) -> Any:
                if calls is not None:
                    calls.append(f"{_name}{args[1:] if args else ()}")
                raise AssertionError(f"pipmaster {_name} called: nothing may install at run time")

            replaced.append((owner, name, vars(owner)[name]))
            setattr(owner, name, refuse)
    return replaced


def days_from(spec: list[dict[str, Any]]) -> tuple[Any, ...]:
    from varagity.graph.types import ThreadDay

    return tuple(ThreadDay(**{**day, "message_guids": tuple(day["message_guids"])}) for day in spec)


def main(path: str) -> None:
    from varagity.config import load_settings
    from varagity.graph.service import GraphService
    from varagity.graph.types import GraphDiff
    from varagity.models.chat import ChatClient
    from varagity.models.embeddings import EmbeddingClient

    spec = json.loads(Path(path).read_text())
    guard_pipmaster()
    settings = load_settings(**spec["settings"])
    service = GraphService(
        settings, ChatClient.from_settings(settings), EmbeddingClient.from_settings(settings)
    )
    result = service.build(GraphDiff(new=days_from(spec["days"])))
    report = result.report
    print(json.dumps({"inserted": report.inserted, "failed": report.failed}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
