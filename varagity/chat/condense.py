"""``condense_context``: make a follow-up searchable on its own.

"What about its warranty?" searches badly on its own; with the conversation in view
one LLM call names what it is about ("the Tern K2 kettle"), and the question with that
name appended, "What about its warranty? (the Tern K2 kettle)", drives retrieval. Small
models name a referent far more reliably than they rewrite a question (measurements in
:mod:`varagity.chat.prompts`). The answer prompt still gets the original question, plus
the recent turns so it can resolve the same references.

Searches the question as asked (``condensed_query`` None, the engine name still
reported) on the first turn, when the question already names the referent, under
``CONDENSE_ENABLED=false``, when the model call fails, or when its reply is not a
name from the conversation; the last three log a WARNING.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence

from varagity.chat.base import PreparedQuery, Turn
from varagity.chat.prompts import clean_condensed, condense_messages, standalone_query
from varagity.models.base import ModelError
from varagity.models.protocols import Completer

log = logging.getLogger(__name__)

#: Budget of the transcript shown to the referent call, in tokens.
CONDENSE_HISTORY_TOKENS = 1024


class CondenseContextEngine:
    """One LLM call naming the referent of each follow-up; verbatim search otherwise."""

    name = "condense_context"

    def __init__(self, completer: Completer, *, enabled: bool = True, max_tokens: int = 96) -> None:
        """Wire the model client.

        Args:
            completer: The chat model client.
            enabled: False searches every turn verbatim (the kill switch).
            max_tokens: Cap on the rewrite's length.
        """
        if max_tokens <= 0:
            raise ValueError(f"max_tokens must be positive, got {max_tokens}")
        self.completer = completer
        self.enabled = enabled
        self.max_tokens = max_tokens

    def prepare(self, question: str, history: Sequence[Turn]) -> PreparedQuery:
        """Rewrite ``question`` using ``history`` when there is one; see the module doc."""
        turns = tuple(history)
        if not turns:
            return self._verbatim(question, turns, {})
        if not self.enabled:
            log.warning("CONDENSE_ENABLED is false: searching with the question as asked")
            return self._verbatim(question, turns, {})
        messages = condense_messages(question, turns, max_history_tokens=CONDENSE_HISTORY_TOKENS)
        started = time.perf_counter()
        try:
            reply = self.completer.complete(messages, max_tokens=self.max_tokens, temperature=0.0)
        except ModelError as exc:
            log.warning("condensing the follow-up failed, searching it as asked: %s", exc)
            return self._verbatim(question, turns, _elapsed(started))
        timings = _elapsed(started)
        referent = clean_condensed(reply, self.max_tokens)
        if not referent:
            log.warning(
                "the condense call returned nothing usable (%r); searching the question as asked",
                reply[:200],
            )
            return self._verbatim(question, turns, timings)
        query = standalone_query(question, referent, turns)
        if query is None:
            log.warning(
                "the referent %r is not a name from the conversation the question lacks; "
                "searching the question as asked",
                referent,
            )
            return self._verbatim(question, turns, timings)
        return PreparedQuery(
            question=question,
            search_query=query,
            condensed_query=query,
            engine=self.name,
            history=turns,
            timings_ms=timings,
        )

    def _verbatim(
        self, question: str, turns: tuple[Turn, ...], timings: dict[str, float]
    ) -> PreparedQuery:
        return PreparedQuery(
            question=question,
            search_query=question,
            condensed_query=None,
            engine=self.name,
            history=turns,
            timings_ms=timings,
        )


def _elapsed(started: float) -> dict[str, float]:
    return {"condense": round((time.perf_counter() - started) * 1000, 2)}
