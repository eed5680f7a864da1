"""``varagity chat``'s rating commands and ``varagity feedback``, on a real Postgres.

The conversation is seeded through the store (nothing here generates), then resumed
with ``--conversation`` semantics: ``/good`` and ``/bad`` rate its latest answer.
"""

from __future__ import annotations

import io
import json

import pytest

from tests.conftest import SettingsFactory
from tests.support.records import retrieved_chunk
from varagity.services import Services
from varagity.stores.conversation_store import AssistantReply, ConversationStore, new_id
from varagity.stores.feedback_store import FeedbackStore
from varagity_cli.commands.chat import FeedbackCommand, chat_loop, parse_feedback
from varagity_cli.main import main

pytestmark = pytest.mark.integration


def test_the_rating_syntax() -> None:
    assert parse_feedback("/good") == FeedbackCommand("up")
    assert parse_feedback("/bad 2") == FeedbackCommand("down", source=2)
    assert parse_feedback("/bad passage 3") == FeedbackCommand("down", answered_by=3)
    assert parse_feedback("/bad none -- not in the manual") == FeedbackCommand(
        "down", none_answers=True, comment="not in the manual"
    )
    assert parse_feedback("/unrate 1") == FeedbackCommand(None, source=1)
    for bad in ("/bad 0", "/bad sideways", "/good passage 2", "/bad passage x"):
        with pytest.raises(ValueError):
            parse_feedback(bad)


def test_chat_rates_the_last_answer_and_feedback_exports_the_suite(
    make_settings: SettingsFactory, pg_url: str, tmp_path
) -> None:
    settings = make_settings(DATABASE_URL=pg_url)
    (settings.docs_path / "f1.md").write_text("Warranty: 27 months.\n")
    services = Services.open(settings)
    try:
        store = ConversationStore(services.pg)
        cid = new_id()
        reply = AssistantReply(
            content="It is 12 months [2].",
            sources=[retrieved_chunk(1, "Warranty: 27 months."), retrieved_chunk(2, "Soup.")],
            retrieval_method="hybrid",
            chat_engine="simple",
        )
        answer_id = store.append_turn(cid, "How long is the warranty?", reply).assistant_message_id
        script = "\n".join(
            [
                "/good",
                "/bad 2",
                "/bad passage 1 -- the first one says 27 months",
                "/bad 9",
                "/bad sideways",
                "/unrate 2",
                "/quit",
            ]
        )
        err = io.StringIO()
        code = chat_loop(
            services, store, conversation_id=cid, inp=io.StringIO(script + "\n"), err=err
        )
        said = err.getvalue()
        assert code == 0, said
        assert "(feedback saved: thumbs-up on the answer)" in said
        assert "(feedback saved: thumbs-down on source [2])" in said
        assert (
            "(feedback saved: thumbs-down on the answer; source [1] marked as the passage that "
            "answers (the question joins the feedback suite)" in said
        )
        assert "feedback not saved: source 9: the answer has 2 source(s)" in said
        assert "cannot read '/bad sideways'" in said and "/bad passage N" in said
        assert "(feedback saved: rating of source [2] taken back)" in said
        (only,) = FeedbackStore(services.pg).of_message(answer_id)
        assert (only.source, only.rating, only.answered_by) == (None, "down", 1)
        assert only.comment == "the first one says 27 months"
    finally:
        services.close()

    # the feedback suite, written as a suite folder; the marked passage's file is not
    # indexed in this corpus, so the question is skipped and says why
    folder = tmp_path / "suite"
    assert main(["feedback", "export", str(folder)]) == 0
    meta = json.loads((folder / "suite.json").read_text())
    assert meta["name"] == "feedback" and meta["corpus"] == str(settings.docs_path)
    assert [s["reason"] for s in meta["skipped"]] == ["f1.md is no longer indexed in the corpus"]
    assert (folder / "queries.jsonl").read_text() == ""
