"""``varagity up``: the embedded stack in the foreground."""

from __future__ import annotations

from typing import TYPE_CHECKING

from varagity.config import get_settings

if TYPE_CHECKING:
    from varagity_cli.common import Subparsers


def cmd_up(*, exit_when_indexed: bool) -> int:
    """Bring up the embedded stack in the foreground."""
    from varagity_stack import supervisor

    return supervisor.run(get_settings(), exit_when_indexed=exit_when_indexed)


def register(sub: Subparsers) -> None:
    """Add ``up``."""
    up = sub.add_parser("up", help="start the embedded stack and watch the corpus folder")
    up.add_argument(
        "--exit-when-indexed",
        action="store_true",
        help="stop once the corpus folder is fully indexed (smoke tests)",
    )
    up.set_defaults(func=lambda a: cmd_up(exit_when_indexed=a.exit_when_indexed))
