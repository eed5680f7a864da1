"""``simple``: search with the question exactly as the user asked it."""

from __future__ import annotations

from collections.abc import Sequence

from varagity.chat.base import PreparedQuery, Turn


class SimpleEngine:
    """Verbatim search; the answer prompt sees no earlier turns."""

    name = "simple"

    def prepare(self, question: str, history: Sequence[Turn]) -> PreparedQuery:
        """The question is the search query; ``history`` is not used."""
        return PreparedQuery(
            question=question, search_query=question, condensed_query=None, engine=self.name
        )
