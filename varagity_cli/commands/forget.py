"""``varagity forget``: forget a document, an archive, a thread, a handle or a range of
days, and print the receipt (:mod:`varagity.forget`).

Run in this process on the stores themselves (:class:`~varagity.services.Services`), as
the API's delete routes run the same domain functions: the deletes, the graph's
bounded rebuild of the days that keep other messages, the verification and the ledger
are :mod:`varagity.forget`'s. Refused while a restore of the corpus runs, or while
another process writes the graph (a build, a backup), as the API refuses.
"""

from __future__ import annotations

import json
import sys
import uuid
from datetime import date
from typing import TYPE_CHECKING, Any, TextIO

from varagity.config import get_settings
from varagity_cli.common import EXIT_OK, EXIT_USAGE, fail, open_services

if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable

    from varagity.forget import ForgetReceipt
    from varagity.graph.forgotten import ForgetRule
    from varagity.services import Services
    from varagity.stores.vector_store import PgVectorStore
    from varagity_cli.common import Subparsers

_COLUMNS = ("store", "removed", "updated", "remaining", "verified")


def render_receipt(receipt: dict[str, Any], out: TextIO) -> None:
    """The receipt (as :meth:`~varagity.forget.ForgetReceipt.to_json`) as a table: per
    store what was removed, updated and is still there, then the backups that still hold
    the source and the notes."""
    verdict = "verified" if receipt["verified"] else "NOT VERIFIED"
    out.write(
        f"Forgot {receipt['target']} ({receipt['kind']}, {verdict}; "
        f"forget {receipt['forget_id']}, {receipt['forgotten_at']})\n"
    )
    rows = [
        (
            s["label"],
            str(s["removed"]),
            str(s["updated"]),
            str(s["remaining"]),
            "yes" if s["verified"] else "NO",
        )
        for s in receipt["stores"]
    ]
    widths = [max(len(c), *(len(r[i]) for r in rows)) for i, c in enumerate(_COLUMNS)]
    out.write("  ".join(c.ljust(w) for c, w in zip(_COLUMNS, widths, strict=True)).rstrip())
    out.write("\n")
    for row in rows:
        numbers = zip(row[1:], widths[1:], strict=True)
        cells = [row[0].ljust(widths[0])] + [v.rjust(w) for v, w in numbers]
        out.write("  ".join(cells).rstrip() + "\n")
    for store in receipt["stores"]:
        if store.get("note"):
            out.write(f"  {store['label']}: {store['note']}\n")
    if receipt["backups"]:
        out.write("Backups that still hold it (delete them to forget it there too):\n")
        for b in receipt["backups"]:
            made = f", made {b['created_at']}" if b.get("created_at") else ""
            out.write(f"  {b['corpus']}/{b['name']}{made}: {b['holds']}\n")
    else:
        out.write("No backup holds it.\n")
    for note in receipt["notes"]:
        out.write(f"Note: {note}\n")


def print_receipt(receipt: ForgetReceipt, *, as_json: bool) -> int:
    """Print ``receipt`` (a table, or its JSON); the exit status: 1 when a store still
    holds part of the source."""
    body = receipt.to_json()
    if as_json:
        print(json.dumps(body, indent=2))
    else:
        render_receipt(body, sys.stdout)
    if not receipt.verified:
        unverified = ", ".join(s.store for s in receipt.stores if not s.verified)
        return fail(f"not verified: {unverified} still hold(s) part of {receipt.target}")
    return EXIT_OK


def _doc_ids(pg: PgVectorStore, ref: str) -> list[str]:
    """The stored documents ``ref`` names: a doc_id, or a path relative to ``DOCS_PATH``
    (every stored version of it)."""
    with pg.connection() as conn:
        rows = conn.execute(
            "SELECT doc_id FROM documents WHERE doc_id = %s OR relative_path = %s"
            " ORDER BY ingested_at",
            (ref, ref.strip("/")),
        ).fetchall()
    return [r[0] for r in rows]


def _refuse_while_restoring(services: Services, corpus: str) -> None:
    from varagity.backup.locks import corpus_restoring
    from varagity.corpus_lock import CorpusBusy

    holder = corpus_restoring(services.settings, corpus, pg=services.pg)  # type: ignore[arg-type]
    if holder is not None:
        raise CorpusBusy(corpus, holder)


def cmd_forget_document(*, ref: str, remove_file: bool, as_json: bool) -> int:
    """Forget the stored document ``ref`` (a doc_id or a relative path)."""
    from varagity.corpus_lock import CorpusBusy
    from varagity.forget import forget_documents

    with open_services(get_settings()) as services:
        try:
            _refuse_while_restoring(services, "rag")
        except CorpusBusy as exc:
            return fail(f"{exc.code}: {exc}")
        doc_ids = _doc_ids(services.pg, ref)
        if not doc_ids:
            return fail(f"nothing matched: no stored document has the id or path {ref!r}")
        _, receipt = forget_documents(
            services.pg, services.bm25, services.settings, doc_ids, remove_file=remove_file
        )
    return print_receipt(receipt, as_json=as_json)


def _forget_in_graph(forget: Callable[[Services], ForgetReceipt], *, as_json: bool) -> int:
    """Run ``forget`` on the graph's stores and print its receipt: refused while the graph
    is off, restored or written by another process; nothing matched exits 1."""
    from varagity.corpus_lock import CorpusBusy
    from varagity.forget import NothingToForget
    from varagity.graph.folder import SourceNotFound
    from varagity.uploads import UploadRefused

    settings = get_settings()
    if not settings.GRAPH_ENABLED:
        return fail("graph_disabled: GRAPH_ENABLED is false", EXIT_USAGE)
    with open_services(settings) as services:
        try:
            _refuse_while_restoring(services, "graph")
            receipt = forget(services)
        except (SourceNotFound, NothingToForget) as exc:
            return fail(f"nothing matched: {exc}")
        except UploadRefused as exc:
            return fail(f"{exc.code}: {exc.message}", EXIT_USAGE)
        except CorpusBusy as exc:
            return fail(f"{exc.code}: {exc}")
    return print_receipt(receipt, as_json=as_json)


def cmd_forget_archive(*, path: str, as_json: bool) -> int:
    """Forget the archive at ``path`` (relative to ``GRAPH_DOCS_PATH``)."""
    from varagity.forget import forget_archive

    return _forget_in_graph(
        lambda services: forget_archive(services.settings, services.pg, services.graph, path)[1],
        as_json=as_json,
    )


def cmd_forget_messages(*, rule: ForgetRule, as_json: bool) -> int:
    """Forget the messages ``rule`` matches in every archive of ``GRAPH_DOCS_PATH``."""
    from varagity.forget import forget_messages

    return _forget_in_graph(
        lambda services: forget_messages(services.settings, services.pg, services.graph, rule),
        as_json=as_json,
    )


def _rule(args: argparse.Namespace) -> ForgetRule | None:
    from varagity.graph.forgotten import ForgetRule

    forget_id = uuid.uuid4().hex
    if args.what == "thread":
        return ForgetRule("thread", forget_id, thread_id=args.thread_id)
    if args.what == "handle":
        return ForgetRule("handle", forget_id, handle=args.handle)
    first, last = args.first, args.last
    if first > last:
        return None
    return ForgetRule(
        "range",
        forget_id,
        thread_id=args.thread,
        first_day=first.isoformat(),
        last_day=last.isoformat(),
    )


def _run(args: argparse.Namespace) -> int:
    if args.what == "document":
        return cmd_forget_document(ref=args.ref, remove_file=args.remove_file, as_json=args.json)
    if args.what == "archive":
        return cmd_forget_archive(path=args.path, as_json=args.json)
    rule = _rule(args)
    if rule is None:
        return fail(f"invalid_range: {args.first} is after {args.last}", EXIT_USAGE)
    return cmd_forget_messages(rule=rule, as_json=args.json)


def register(sub: Subparsers) -> None:
    """Add ``forget`` and its subcommands."""
    forget = sub.add_parser(
        "forget",
        help="forget a document, an archive, a thread, a handle or days of messages, and "
        "print the receipt (what each store removed, verified gone; the backups still "
        "holding it); exit 1 when nothing matched or a store still holds part of it",
    )
    what = forget.add_subparsers(dest="what", required=True)
    document = what.add_parser(
        "document", help="a stored document, by doc_id or path relative to DOCS_PATH"
    )
    document.add_argument("ref", help="a doc_id, or a path relative to DOCS_PATH")
    document.add_argument(
        "--remove-file",
        action="store_true",
        help="also delete the file from DOCS_PATH (otherwise the folder sensor ingests it "
        "again when it changes)",
    )
    archive = what.add_parser("archive", help="a message archive of GRAPH_DOCS_PATH, and its days")
    archive.add_argument("path", help="the archive's path relative to GRAPH_DOCS_PATH")
    thread = what.add_parser("thread", help="every message of a thread, in every archive")
    thread.add_argument(
        "thread_id", help="the thread's id as the graph's days name it (iMessage;-;kim@example.com)"
    )
    handle = what.add_parser("handle", help="every message a handle sent, in every thread")
    handle.add_argument("handle", help="a phone number or e-mail address, as the archive has it")
    days = what.add_parser(
        "days", help="every message of a range of days (in GRAPH_TIMEZONE), inclusive"
    )
    days.add_argument("first", type=date.fromisoformat, help="the first day, YYYY-MM-DD")
    days.add_argument("last", type=date.fromisoformat, help="the last day, YYYY-MM-DD")
    days.add_argument("--thread", help="only this thread's messages of those days")
    for parser in (document, archive, thread, handle, days):
        parser.add_argument("--json", action="store_true", help="print the receipt as JSON")
    forget.set_defaults(func=_run)
