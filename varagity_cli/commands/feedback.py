"""``varagity feedback``: the stored ratings of answers, and the feedback suite."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Literal

from varagity.config import get_settings
from varagity_cli.common import EXIT_OK, open_services

if TYPE_CHECKING:
    from varagity_cli.common import Subparsers


def cmd_feedback_list(*, rating: Literal["up", "down"] | None, limit: int) -> int:
    """Print the stored ratings, newest first."""
    from varagity.stores.feedback_store import FeedbackStore

    with open_services(get_settings()) as services:
        rows = FeedbackStore(services.pg).recent(rating=rating, limit=limit)
    for fb in rows:
        target = "answer" if fb.source is None else f"source [{fb.source}]"
        mark = (
            f", passage [{fb.answered_by}] answers"
            if fb.answered_by is not None
            else (", none answers" if fb.none_answers else "")
        )
        comment = f" -- {fb.comment}" if fb.comment else ""
        print(
            f"{fb.updated_at:%Y-%m-%d %H:%M} {fb.rating:>4} {target}{mark} "
            f"(message {fb.message_id}, conversation {fb.conversation_id}){comment}"
        )
    if not rows:
        print("no feedback yet")
    return EXIT_OK


def cmd_feedback_export(*, folder: str) -> int:
    """Write the live corpus's feedback suite as a suite folder."""
    from varagity.eval.feedback import load_feedback_suite, write_suite

    settings = get_settings()
    with open_services(settings) as services:
        feedback = load_feedback_suite(services.pg, settings.docs_path)
    written = write_suite(feedback, Path(folder))
    print(
        f"wrote {len(feedback.records)} question(s) to {written / 'queries.jsonl'} "
        f"(corpus {feedback.corpus}; {len(feedback.skipped)} skipped)"
    )
    for skipped in feedback.skipped:
        print(f"  skipped {skipped['id']}: {skipped['reason']}")
    return EXIT_OK


def register(sub: Subparsers) -> None:
    """Add ``feedback`` with its ``list`` and ``export``."""
    fb = sub.add_parser("feedback", help="ratings of answers and the feedback suite")
    fb_sub = fb.add_subparsers(dest="feedback_command", required=True)
    fb_list = fb_sub.add_parser("list", help="the stored ratings, newest first")
    fb_list.add_argument("--rating", choices=("up", "down"))
    fb_list.add_argument("--limit", type=int, default=50)
    fb_list.set_defaults(func=lambda a: cmd_feedback_list(rating=a.rating, limit=a.limit))
    fb_export = fb_sub.add_parser(
        "export", help="write the feedback suite as a suite folder (queries.jsonl, suite.json)"
    )
    fb_export.add_argument("folder", help="where to write it")
    fb_export.set_defaults(func=lambda a: cmd_feedback_export(folder=a.folder))
