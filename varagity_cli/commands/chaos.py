"""``varagity chaos``: crash trials on a private stack."""

from __future__ import annotations

from typing import TYPE_CHECKING

from varagity.config import get_settings

if TYPE_CHECKING:
    from varagity_cli.common import Subparsers


def cmd_chaos(
    *,
    trials: int,
    files: int,
    seed: int,
    recovery_timeout: float,
    keep: bool,
    no_contextualize: bool,
) -> int:
    """Crash trials: kill stack components at random moments, then check the invariants."""
    from varagity_bench.chaos import ChaosConfig, run_chaos

    return run_chaos(
        get_settings(),
        ChaosConfig(
            trials=trials,
            files=files,
            seed=seed,
            recovery_timeout_s=recovery_timeout,
            keep=keep,
            contextualize=not no_contextualize,
        ),
    )


def register(sub: Subparsers) -> None:
    """Add ``chaos``."""
    chaos = sub.add_parser(
        "chaos",
        help="crash trials on a private stack: kill -9 components at random moments, check "
        "the doctor's invariants after each recovery",
    )
    chaos.add_argument("--trials", type=int, default=20)
    chaos.add_argument("--files", type=int, default=30, help="generated corpus files")
    chaos.add_argument("--seed", type=int, default=12)
    chaos.add_argument(
        "--recovery-timeout",
        type=float,
        default=300.0,
        help="seconds a trial may take to recover before it counts as not recovered",
    )
    chaos.add_argument(
        "--keep", action="store_true", help="keep the private stack's home folder afterwards"
    )
    chaos.add_argument(
        "--no-contextualize",
        action="store_true",
        help="no blurb runs (faster trials; the chat server is then idle when killed)",
    )
    chaos.set_defaults(
        func=lambda a: cmd_chaos(
            trials=a.trials,
            files=a.files,
            seed=a.seed,
            recovery_timeout=a.recovery_timeout,
            keep=a.keep,
            no_contextualize=a.no_contextualize,
        )
    )
