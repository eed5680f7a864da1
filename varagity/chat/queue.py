"""The answer queue: at most ``LLM_CONCURRENCY`` answers generate at once per process,
the rest wait first in, first out and know their place.

The packaged llama.cpp server generates one completion at a time, so a second chat
would otherwise sit silently inside the model server until the first is done (and a
client's timeout might end it). Holding the line here instead lets the turn runner tell
the client in-band that it is queued, and at which position, while it waits.

Only this process's chats stand in this line. The other users of the model, the
contextualization blurbs of ingest runs (other processes, maybe other hosts), are kept
out of a turn's way through Postgres (:mod:`varagity.stores.model_claims`):
:class:`ModelTurn` claims the model for the turn from the moment the turn starts (its
query may be rewritten or expanded by the model before retrieval) until its answer
ends, blurb passes seeing the claim cut the blurb under way within a few tokens and
wait, and a turn that finds a blurb request still holding the model waits for it to
end, saying so (:data:`CONTEXT`), before it sends its own.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections import deque
from collections.abc import Generator
from typing import Literal, NamedTuple

from varagity.stores.model_claims import ModelClaims

log = logging.getLogger(__name__)

# How often a waiting turn wakes to look for a changed position.
POLL_SECONDS = 0.5
# How often a turn looks whether the blurb request holding the model has ended.
BLURB_POLL_SECONDS = 0.1
# The longest a turn waits for blurb requests: they are cut within a few tokens of the
# turn's claim, so this only matters when a worker hangs with its claim renewed.
BLURB_WAIT_LIMIT_SECONDS = 30.0

#: Why a turn waits: other chats' answers (this process's line), or contextualization
#: blurbs (ingest runs) that hold the model.
QueueReason = Literal["answers", "context"]
ANSWERS: QueueReason = "answers"
CONTEXT: QueueReason = "context"


class Wait(NamedTuple):
    """One report of a waiting turn: its place (1: next) and what it waits for."""

    position: int
    reason: QueueReason


class AnswerQueue:
    """A FIFO gate of ``slots`` concurrent answers."""

    def __init__(self, slots: int) -> None:
        """A gate letting ``slots`` (at least 1) answers generate at once."""
        self.slots = max(1, slots)
        self._cond = threading.Condition()
        self._busy = 0
        self._waiting: deque[object] = deque()

    @property
    def waiting(self) -> int:
        """How many turns wait now."""
        with self._cond:
            return len(self._waiting)

    def enter(self, heartbeat: float | None = None) -> Generator[int, None, None]:
        """Wait for a slot, yielding the 1-based queue position whenever it changes.

        Yields nothing when a slot is free at once. With ``heartbeat``, the position is
        also yielded again after that many seconds without a change, so a consumer that
        only looks at its client between events (an SSE route) notices one that went
        away while the line does not move. When the generator finishes, the caller holds
        a slot and must :meth:`leave`; closed early (the client went away), it holds none
        and its place in line is given up.
        """
        ticket = object()
        with self._cond:
            if self._busy < self.slots and not self._waiting:
                self._busy += 1
                return
            self._waiting.append(ticket)
        acquired = False
        try:
            reported, reported_at = 0, 0.0
            while True:
                with self._cond:
                    position = self._waiting.index(ticket) + 1
                    if position == 1 and self._busy < self.slots:
                        self._waiting.popleft()
                        self._busy += 1
                        acquired = True
                        self._cond.notify_all()  # the others move up
                        return
                    due = heartbeat is not None and time.monotonic() - reported_at >= heartbeat
                    if position == reported and not due:
                        self._cond.wait(POLL_SECONDS)
                        continue
                reported, reported_at = position, time.monotonic()
                yield position
        finally:
            if not acquired:
                with self._cond:
                    if ticket in self._waiting:
                        self._waiting.remove(ticket)
                    self._cond.notify_all()

    def leave(self) -> None:
        """Give back the slot :meth:`enter` granted."""
        with self._cond:
            self._busy -= 1
            self._cond.notify_all()


_lock = threading.Lock()
_queues: dict[tuple[str, int], AnswerQueue] = {}


def answer_queue(model_url: str, slots: int) -> AnswerQueue:
    """The process's queue in front of the chat model at ``model_url``."""
    with _lock:
        return _queues.setdefault((model_url, slots), AnswerQueue(slots))


class ModelTurn:
    """One turn's way to the model: the process's :class:`AnswerQueue`, then any blurb
    request still under way in another process (see the module doc).

    Without ``claims`` (a front end with no Postgres) only the line is kept. A claim
    that cannot be written (Postgres away) is logged and the turn goes on without it.
    """

    def __init__(self, line: AnswerQueue, claims: ModelClaims | None) -> None:
        """A turn that will wait in ``line`` and announce itself through ``claims``."""
        self.line = line
        self.claims = claims
        self._claim: uuid.UUID | None = None
        self._slot = False

    def enter(self, heartbeat: float | None = None) -> Generator[Wait, None, None]:
        """Wait for the model, yielding a :class:`Wait` whenever the position or the
        reason changes (and every ``heartbeat`` seconds while it does not).

        When the generator finishes the turn holds a slot and its claim and must
        :meth:`leave`; closed early, it holds neither.
        """
        done = False
        try:
            self.announce()
            for position in self.line.enter(heartbeat=heartbeat):
                yield Wait(position, ANSWERS)
            self._slot = True
            yield from self._wait_for_blurbs(heartbeat)
            done = True
        finally:
            if not done:
                self.leave()

    def announce(self) -> None:
        """Claim the model now, before the turn waits for it (blurb passes yield from
        here on): a turn whose query is rewritten or expanded by the model (condense,
        HyDE) uses it before its answer. Claims once; :meth:`leave` gives it back."""
        if self._claim is None:
            self._claim = self._make_claim()

    def leave(self) -> None:
        """Give back the slot and the claim (either may already be gone)."""
        if self._slot:
            self._slot = False
            self.line.leave()
        if self._claim is not None and self.claims is not None:
            claim, self._claim = self._claim, None
            self.claims.release(claim)

    def _make_claim(self) -> uuid.UUID | None:
        if self.claims is None:
            return None
        try:
            return self.claims.claim("turn")
        except Exception:  # the turn still gets its answer, only blurbs do not yield
            log.warning("could not claim the model for a chat turn", exc_info=True)
            return None

    def _blurbs_running(self) -> bool:
        assert self.claims is not None
        try:
            return self.claims.live("blurb") > 0
        except Exception:
            log.warning("could not look for blurb requests under way", exc_info=True)
            return False

    def _wait_for_blurbs(self, heartbeat: float | None) -> Generator[Wait, None, None]:
        """Yield ``Wait(1, "context")`` while a blurb request holds the model (a
        blurb pass that saw this turn's claim cuts it within a few tokens)."""
        if self._claim is None:
            return
        began = reported = time.monotonic()
        first = True
        while self._blurbs_running():
            now = time.monotonic()
            if now - began > BLURB_WAIT_LIMIT_SECONDS:
                log.warning("blurbs held the model %.0f s; answering anyway", now - began)
                return
            if first or (heartbeat is not None and now - reported >= heartbeat):
                first, reported = False, now
                yield Wait(1, CONTEXT)
            time.sleep(BLURB_POLL_SECONDS)
