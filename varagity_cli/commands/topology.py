"""``varagity topology``: the scaled-out deployment on network-namespace hosts (as root).

``up`` starts it in the foreground (database, orchestration, serving and N worker
hosts; see :mod:`varagity_stack.topology`) and tears it down on Ctrl-C; ``down`` removes
what a launcher that died left (namespaces, their processes, veths, the bridge);
``status`` lists the hosts that exist; ``bench`` measures ingest throughput with 1..N
worker hosts beside the embedded stack (:mod:`varagity_bench.topology`).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from varagity.config import get_settings
from varagity_cli.common import EXIT_OK

if TYPE_CHECKING:
    import argparse

    from varagity_cli.common import Subparsers


def _root(arg: str | None) -> Path:
    return Path(arg) if arg else get_settings().home / "topology"


def cmd_up(args: argparse.Namespace) -> int:
    """Start the topology in the foreground."""
    from varagity_stack.topology import TopologySpec, run

    spec = TopologySpec(
        root=_root(args.root),
        workers=args.workers,
        docs_path=Path(args.docs) if args.docs else get_settings().docs_path,
        llm=args.llm,
        worker_concurrency=args.concurrency,
    )
    return run(spec)


def cmd_down(_args: argparse.Namespace) -> int:
    """Remove a topology's leftovers."""
    from varagity_stack.topology import teardown_leftovers

    removed = teardown_leftovers()
    print("\n".join(f"removed {line}" for line in removed) or "nothing to remove")
    return EXIT_OK


def cmd_status(_args: argparse.Namespace) -> int:
    """List the topology's namespaces and their processes."""
    from varagity_stack.topology import status

    print(status())
    return EXIT_OK


def cmd_bench(args: argparse.Namespace) -> int:
    """Ingest throughput with 1..N worker hosts beside the embedded stack."""
    from varagity_bench.topology import run_benchmark

    return run_benchmark(
        files=args.files,
        worker_counts=[int(n) for n in args.workers.split(",")],
        embedded=not args.no_embedded,
        timeout_s=args.timeout,
        batch=args.batch,
    )


def register(sub: Subparsers) -> None:
    """Add ``topology`` and its subcommands."""
    topo = sub.add_parser(
        "topology", help="the deployment on several network-namespace hosts (root; iproute2)"
    )
    cmds = topo.add_subparsers(dest="topology_command", required=True)
    up = cmds.add_parser("up", help="start db, orch, serving and worker hosts; Ctrl-C tears down")
    up.add_argument("--workers", type=int, default=2, help="worker hosts (default 2)")
    up.add_argument("--root", help="folder of the hosts' folders (default VARAGITY_HOME/topology)")
    up.add_argument("--docs", help="the shared corpus folder (default DOCS_PATH)")
    up.add_argument("--llm", action="store_true", help="a chat server on the serving host")
    up.add_argument("--concurrency", type=int, default=1, help="steps at once per worker")
    up.set_defaults(func=cmd_up)
    down = cmds.add_parser("down", help="remove a dead launcher's namespaces and processes")
    down.set_defaults(func=cmd_down)
    status = cmds.add_parser("status", help="the topology's hosts and their processes")
    status.set_defaults(func=cmd_status)
    bench = cmds.add_parser("bench", help="ingest chunks/s with 1..N worker hosts vs embedded")
    bench.add_argument("--files", type=int, default=60, help="generated files per measurement")
    bench.add_argument("--workers", default="1,2,3", help="worker host counts (default 1,2,3)")
    bench.add_argument("--no-embedded", action="store_true", help="skip the embedded figure")
    bench.add_argument("--batch", type=int, default=10, help="INGEST_BATCH_SIZE (default 10)")
    bench.add_argument("--timeout", type=float, default=1800, help="seconds per measurement")
    bench.set_defaults(func=cmd_bench)
