"""Degenerate-loop detection for generated text, as a pure function and a streaming guard.

Small models sometimes fall into a loop: one sentence (or a shorter run of words)
repeated until the token cap. Measured before this guard, SmolLM2-135M answered "What
is the warranty period of the Tern K2 kettle?" with the right figure and then ~380
tokens of one sentence about another document, over and over.

The rule, shared by the answer stream (:class:`RepetitionGuard`) and the answer scorer
(:func:`find_loop`), so both count the same loops:

* the text is read as tokens: citations such as ``[3]`` and words (``\\w+``, case
  folded); punctuation, Markdown and table pipes are ignored;
* a loop is the first moment some run of :data:`NGRAM` consecutive tokens occurs for
  the :data:`OCCURRENCES`-th time. A sentence of 8 or more tokens repeated three times
  trips it on its third copy; a shorter unit repeated back to back trips it once the
  repeats span about ``NGRAM + 2 * period`` tokens (a 1-word stutter after 10 words);
* the loop starts where that run of tokens occurred for the *second* time: the text
  before it is kept (trimmed at the end of the last word before it, punctuation
  included), everything from there on is the repeated tail.

Why this does not fire on legitimate answers: list items and table rows repeat a
template but differ in their values, so they rarely share 8 consecutive tokens three
times; repeated citations (``... [1]. ... [1].``) are single tokens among different
words; punctuation-only lines (``|---|---|``) produce no tokens at all.

Streaming costs O(1) per token: the guard keeps, for each n-gram, where it was seen.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: Length of the repeated token run that counts as a loop.
NGRAM = 8
#: How many times the run must occur.
OCCURRENCES = 3

_TOKEN = re.compile(r"\[\d{1,3}\]|\w+")


@dataclass(frozen=True, slots=True)
class Loop:
    """A degenerate loop found in a text.

    Attributes:
        start: Character offset where the repeated tail begins; ``text[:keep]`` is
            what survives trimming.
        keep: Length of the text to keep: ``start`` moved back over the whitespace
            before it (so the kept text ends at a word or its punctuation).
        detected_at: Character offset just past the token that completed the loop.
        repeated: The repeated token run, space-joined (for logs and reports).
    """

    start: int
    keep: int
    detected_at: int
    repeated: str


class RepetitionGuard:
    """Watches a growing text, token by token, for a degenerate loop.

    Feed it answer deltas in order with :meth:`feed`; it returns the :class:`Loop`
    once one appears (and keeps returning it). :meth:`finish` reads the last token,
    which :meth:`feed` holds back while a later delta could still extend it.
    """

    def __init__(self, *, ngram: int = NGRAM, occurrences: int = OCCURRENCES) -> None:
        """Start on an empty text.

        Args:
            ngram: Tokens in the run that counts as repeated.
            occurrences: Times the run must occur to be a loop.
        """
        if ngram < 2 or occurrences < 2:
            raise ValueError(f"ngram and occurrences must be >= 2, got {ngram}, {occurrences}")
        self.ngram = ngram
        self.occurrences = occurrences
        self.text = ""
        self.loop: Loop | None = None
        self._scanned = 0  # text[:_scanned] has been tokenized
        self._tokens: list[str] = []
        self._starts: list[int] = []  # character offset of each token
        self._ends: list[int] = []
        self._seen: dict[tuple[str, ...], list[int]] = {}  # n-gram -> token indexes

    def feed(self, delta: str) -> Loop | None:
        """Add a delta; the loop when the text now holds one, else None."""
        if self.loop is None:
            self.text += delta
            self._scan(final=False)
        return self.loop

    def finish(self) -> Loop | None:
        """End of the text: read its last token too; the loop if any."""
        if self.loop is None:
            self._scan(final=True)
        return self.loop

    def trimmed(self) -> str:
        """The text without its repeated tail (the whole text when there is no loop)."""
        return self.text if self.loop is None else self.text[: self.loop.keep]

    def _scan(self, *, final: bool) -> None:
        for match in _TOKEN.finditer(self.text, self._scanned):
            if not final and match.end() == len(self.text):
                return  # the next delta may extend this token; read it then
            self._scanned = match.end()
            if self._add(match.group().casefold(), match.start(), match.end()):
                return

    def _add(self, token: str, start: int, end: int) -> bool:
        self._tokens.append(token)
        self._starts.append(start)
        self._ends.append(end)
        first = len(self._tokens) - self.ngram
        if first < 0:
            return False
        gram = tuple(self._tokens[first:])
        seen = self._seen.setdefault(gram, [])
        seen.append(first)
        if len(seen) < self.occurrences:
            return False
        second = seen[1]
        cut = self._starts[second]
        keep = self._keep_before(second)
        self.loop = Loop(start=cut, keep=keep, detected_at=end, repeated=" ".join(gram))
        return True

    def _keep_before(self, index: int) -> int:
        """Where the kept text ends: after the token before ``index`` and its punctuation."""
        if index == 0:
            return 0
        keep = self._ends[index - 1]
        limit = self._starts[index]
        while keep < limit and not self.text[keep].isspace():
            keep += 1
        return keep


def find_loop(text: str, *, ngram: int = NGRAM, occurrences: int = OCCURRENCES) -> Loop | None:
    """The first degenerate loop in a complete ``text``, or None; see the module doc."""
    guard = RepetitionGuard(ngram=ngram, occurrences=occurrences)
    guard.feed(text)
    return guard.finish()
